"""The cues of chapter 1: a desk of objects, saliency and goals."""
import pytest
import torch

from attention_core.worlds import cues


def test_scene_saliency_and_goals():
    names, keys = cues.make_scene()
    assert keys.shape == (5, len(cues.FEATURES))
    assert names[int(cues.saliency(keys).argmax())][0] == "coffee cup"
    for goal, winner in (("none", "coffee cup"), ("read", "book"), ("drink", "coffee cup"),
                         ("write", "notebook")):
        w = cues.cue_weights(keys, cues.query_vector(goal))
        torch.testing.assert_close(w.sum(), torch.tensor(1.0))
        assert names[int(w.argmax())][0] == winner


def test_sharpness_limits():
    _, keys = cues.make_scene()
    read = cues.query_vector("read")
    torch.testing.assert_close(cues.cue_weights(keys, read, 0.0), torch.full((5,), 0.2))
    assert cues.cue_weights(keys, read, 200.0).max() > 0.999


def test_no_goal_cup_wins_at_every_positive_sharpness_and_nothing_wins_at_zero():
    names, keys = cues.make_scene()
    torch.testing.assert_close(cues.cue_weights(keys, sharpness=0.0), torch.full((5,), 0.2))
    for beta in (0.1, 1.0, 5.0, 50.0):
        assert names[int(cues.cue_weights(keys, sharpness=beta).argmax())][0] == "coffee cup"


def test_saliency_weight_never_overturns_the_goal():
    names, keys = cues.make_scene()
    s = cues.saliency(keys)
    for goal in ("read", "drink", "write"):
        q = cues.query_vector(goal)
        match = (keys @ q).sort(descending=True).values
        # the saliency term's spread is smaller than the goal's lead over the runner-up ...
        assert cues.SALIENCY_WEIGHT * (s.max() - s.min()) < match[0] - match[1]
        # ... so the winner is the same with and without it, at every sharpness
        for beta in (1.0, 5.0, 50.0):
            with_eye = cues.cue_weights(keys, q, beta)
            goal_only = cues.cue_weights(keys, q, beta, saliency_weight=0.0)
            assert int(with_eye.argmax()) == int(goal_only.argmax())
    read = cues.query_vector("read")
    cup = [en for en, _ in names].index("coffee cup")
    goal_only = cues.cue_weights(keys, read, saliency_weight=0.0)
    assert cues.cue_weights(keys, read)[cup] > goal_only[cup]


def test_cues_bad_input():
    _, keys = cues.make_scene()
    with pytest.raises(ValueError, match="goal must be one of"):
        cues.query_vector("sleep")
    with pytest.raises(ValueError, match=r"keys must be \(n_objects, 5\)"):
        cues.cue_weights(keys[:, :3])
    with pytest.raises(ValueError, match=r"query must be \(5\), got shape \(3,\)"):
        cues.cue_weights(keys, torch.ones(3))
    with pytest.raises(ValueError, match="sharpness must be non-negative"):
        cues.cue_weights(keys, sharpness=-1.0)
    with pytest.raises(ValueError, match="saliency_weight must be non-negative"):
        cues.cue_weights(keys, cues.query_vector("read"), saliency_weight=-0.1)
