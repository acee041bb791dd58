import pytest
import torch

from attention_core import cues
from attention_core.attention import ScoredAttention
from attention_core.data import make_retrieval_batch
from attention_core.scoring import GeneralScore
from attention_core.train import fit_retrieval, gradient_draws, retrieval_loss
from attention_core.utils import median_time


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


def test_cues_bad_input():
    _, keys = cues.make_scene()
    with pytest.raises(ValueError, match="goal must be one of"):
        cues.query_vector("sleep")
    with pytest.raises(ValueError, match=r"keys must be \(n_objects, 5\)"):
        cues.cue_weights(keys[:, :3])
    with pytest.raises(ValueError, match=r"query must be \(5,\)"):
        cues.cue_weights(keys, torch.ones(3))
    with pytest.raises(ValueError, match="sharpness must be non-negative"):
        cues.cue_weights(keys, sharpness=-1.0)


def test_retrieval_batch_targets_are_the_matching_values():
    q, k, v, t, idx = make_retrieval_batch(16, n_items=5, dim=4, noise=0.0,
                                           generator=torch.Generator().manual_seed(0))
    assert q.shape == (16, 1, 4) and k.shape == (16, 5, 4) and v.shape == (16, 5, 1)
    torch.testing.assert_close(k.norm(dim=-1), torch.ones(16, 5))
    rows = torch.arange(16)
    torch.testing.assert_close(q[:, 0], k[rows, idx])  # no noise: the query is the key
    torch.testing.assert_close(t[:, 0], v[rows, idx])
    again = make_retrieval_batch(16, n_items=5, dim=4, noise=0.0, generator=torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip((q, k, v, t, idx), again))
    with pytest.raises(ValueError, match="n_items must be a positive int"):
        make_retrieval_batch(4, n_items=0)


def _model():
    m = ScoredAttention(GeneralScore(8, 8))
    torch.nn.init.zeros_(m.score.W.weight)
    return m


@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_both_modes_learn_the_lookup(mode):
    history = fit_retrieval(_model(), mode, steps=150, log_every=50, n_eval=500)
    assert history[0][0] == 0 and history[0][2] < 0.25
    assert history[-1][2] > 0.8


def test_soft_gradient_is_exact_and_hard_is_noisy():
    data = make_retrieval_batch(32, generator=torch.Generator().manual_seed(2))
    model = _model()
    assert gradient_draws(model, data, "soft", 5).std(0).abs().max() == 0
    assert gradient_draws(model, data, "hard", 20).std(0).abs().max() > 0
    with pytest.raises(ValueError, match="mode must be 'soft' or 'hard'"):
        retrieval_loss(model, data, "medium")


def test_median_time():
    calls = []
    assert median_time(lambda: calls.append(1), repeats=3, warmup=2) >= 0
    assert len(calls) == 5
    with pytest.raises(ValueError, match="repeats must be positive"):
        median_time(lambda: None, repeats=0)
