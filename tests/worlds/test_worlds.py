import pytest
import torch

import attention_core as ac
from attention_core.attention import ScoredAttention
from attention_core.scoring import GeneralScore
from attention_core.worlds import cues
from attention_core.worlds.regression import fit_nw_bandwidth, make_regression_data
from attention_core.worlds.retrieval import (fit_retrieval, gradient_draws, make_retrieval_batch,
                                             retrieval_accuracy, retrieval_loss)


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
    assert cues.cue_weights(keys, read)[cup] > cues.cue_weights(keys, read, saliency_weight=0.0)[cup]


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
    with pytest.raises(ValueError, match="saliency_weight must be non-negative"):
        cues.cue_weights(keys, cues.query_vector("read"), saliency_weight=-0.1)


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
    held_out = make_retrieval_batch(500, generator=torch.Generator().manual_seed(1))
    model = _model()
    history = fit_retrieval(model, mode, held_out, steps=150, log_every=50,
                            generator=torch.Generator().manual_seed(0))
    assert [h[0] for h in history] == [0, 50, 100, 150]
    assert history[0][2] < 0.25 and history[-1][2] > 0.8
    assert history[-1][2] == retrieval_accuracy(model, held_out)


def test_soft_gradient_is_exact_and_hard_is_noisy():
    data = make_retrieval_batch(32, generator=torch.Generator().manual_seed(2))
    model = _model()
    assert gradient_draws(model, data, "soft", 5).std(0).abs().max() == 0
    assert gradient_draws(model, data, "hard", 20).std(0).abs().max() > 0
    with pytest.raises(ValueError, match=r"mode must be one of \['hard', 'soft'\]"):
        retrieval_loss(model, data, "medium")


def test_fit_nw_bandwidth_history_and_bad_input():
    x, y, _, _ = make_regression_data(n_train=30)
    history = fit_nw_bandwidth(ac.NWKernelRegression(2.0), x, y, steps=40, log_every=20)
    assert [h[0] for h in history] == [20, 40]
    assert history[-1][1] < history[0][1] and history[-1][2] < 2.0
    with pytest.raises(ValueError, match="steps must be a positive int"):
        fit_nw_bandwidth(ac.NWKernelRegression(), x, y, steps=0)


# --- the fetch world of chapter 7 -------------------------------------------------------

from attention_core.worlds.fetch import (FetchModel, FetchTask, head_importance,  # noqa: E402
                                         make_fetch_batch, prune_greedily, slot_accuracy,
                                         train_fetch, train_fetch_all)


def test_fetch_batch_names_two_different_items_and_their_labels():
    task = FetchTask(n_items=5, n_labels=7)
    queries, items, targets, picked = make_fetch_batch(64, task, torch.Generator().manual_seed(0))
    assert queries.shape == (64, 1, 10) and items.shape == (64, 5, 17) and targets.shape == (64, 2)
    assert torch.all(picked[:, 0] != picked[:, 1])
    rows = torch.arange(64)
    colour = items[..., :5].argmax(-1)
    shape = items[..., 5:10].argmax(-1)
    # the query's colour is item a's, its shape item b's; colours and shapes are all different
    assert torch.equal(queries[:, 0, :5].argmax(-1), colour[rows, picked[:, 0]])
    assert torch.equal(queries[:, 0, 5:].argmax(-1), shape[rows, picked[:, 1]])
    assert torch.all(colour.sort(-1).values == torch.arange(5))
    assert torch.equal(targets, items[..., 10:].argmax(-1).gather(1, picked))


def test_fetch_bad_input():
    with pytest.raises(ValueError, match="batch must be a positive int"):
        make_fetch_batch(0)
    with pytest.raises(ValueError, match=r"num_kv_heads \(3\) must divide num_heads \(4\)"):
        FetchModel(num_heads=4, num_kv_heads=3)


def test_fetch_side_by_side_equals_one_after_another():
    """Two worker threads, three models: the same histories and weights, bit for bit."""
    def models():
        out = []
        for h in (1, 2, 4):
            torch.manual_seed(0)
            out.append(FetchModel(num_heads=h))
        return out

    alone, together = models(), models()
    histories = [train_fetch(m, steps=200, generator=torch.Generator().manual_seed(3), progress=False)
                 for m in alone]
    assert train_fetch_all(together, seed=3, workers=2, steps=200, progress=False) == histories
    for a, b in zip(alone, together):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
            assert torch.equal(x, y), name
    assert histories[0] != histories[1]  # the models did differ


def test_fetch_side_by_side_bad_input_and_errors():
    with pytest.raises(ValueError, match="models must be a non-empty sequence of FetchModel"):
        train_fetch_all([])
    with pytest.raises(ValueError, match="workers must be a positive int"):
        train_fetch_all([FetchModel()], workers=0)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        train_fetch_all([FetchModel()], steps=0)
    wrong = FetchModel(FetchTask(n_items=5))  # its items are wider than the batches it gets
    wrong.task = FetchTask()
    with pytest.raises(RuntimeError):  # a worker's error reaches the caller
        train_fetch_all([FetchModel(), wrong], steps=5, workers=2, progress=False)


def test_two_heads_learn_the_fetch_and_one_head_cannot():
    """A short run: two heads solve the task, one head stays near one slot right."""
    test = make_fetch_batch(1000, generator=torch.Generator().manual_seed(1))
    accuracy = {}
    for h in (1, 2):
        torch.manual_seed(0)
        model = FetchModel(num_heads=h)
        train_fetch(model, steps=600, generator=torch.Generator().manual_seed(2))
        accuracy[h] = slot_accuracy(model, test)
    assert accuracy[2] > 0.95 and accuracy[1] < 0.65, accuracy
    path = prune_greedily(model, test)
    assert [len(removed) for removed, _ in path] == [0, 1]
    assert path[0][1] == pytest.approx(accuracy[2]) and path[1][1] < 0.75  # one head is not enough
    importance = head_importance(model, test)
    assert importance.shape == (2,) and torch.all(importance > 0)
