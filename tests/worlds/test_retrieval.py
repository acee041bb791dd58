"""The retrieval task of chapter 3: soft and hard attention, and hard attention's exact
objective, learn a noisy lookup."""
import pytest
import torch

from attention_core.attention import ScoredAttention
from attention_core.scoring import GeneralScore
from attention_core.worlds.retrieval import (
    fit_retrieval,
    gradient_draws,
    make_retrieval_batch,
    retrieval_accuracy,
    retrieval_loss,
)


def test_retrieval_batch_targets_are_the_matching_values():
    q, k, v, t, idx = make_retrieval_batch(16, n_items=5, dim=4, noise=0.0,
                                           generator=torch.Generator().manual_seed(0))
    assert q.shape == (16, 1, 4) and k.shape == (16, 5, 4) and v.shape == (16, 5, 1)
    torch.testing.assert_close(k.norm(dim=-1), torch.ones(16, 5))
    rows = torch.arange(16)
    torch.testing.assert_close(q[:, 0], k[rows, idx])  # no noise: the query is the key
    torch.testing.assert_close(t[:, 0], v[rows, idx])
    again = make_retrieval_batch(16, n_items=5, dim=4, noise=0.0,
                                 generator=torch.Generator().manual_seed(0))
    assert all(torch.equal(a, b) for a, b in zip((q, k, v, t, idx), again, strict=True))
    with pytest.raises(ValueError, match="n_items must be a positive int"):
        make_retrieval_batch(4, n_items=0)


def _model():
    m = ScoredAttention(GeneralScore(8, 8))
    torch.nn.init.zeros_(m.score.W.weight)
    return m


@pytest.mark.parametrize("mode", ["soft", "hard", "expected"])
def test_every_mode_learns_the_lookup(mode):
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
    with pytest.raises(ValueError, match=r"mode must be one of \['expected', 'hard', 'soft'\]"):
        retrieval_loss(model, data, "medium")


def test_expected_mode_is_hard_attentions_objective_without_the_sampling():
    data = make_retrieval_batch(32, generator=torch.Generator().manual_seed(3))
    model = _model()
    torch.nn.init.normal_(model.score.W.weight, std=0.5, generator=torch.Generator().manual_seed(4))
    queries, keys, values, targets, _ = data
    expected, mse = retrieval_loss(model, data, "expected")
    soft, _ = retrieval_loss(model, data, "soft")
    alpha = torch.softmax(model.score(queries, keys), dim=-1)                   # (32, 1, 8)
    spread = (alpha * (values.transpose(1, 2) - alpha @ values) ** 2).sum(-1).mean()
    torch.testing.assert_close(expected, soft + spread)  # E[L(v_i)] = L(E[v]) + variance
    assert mse == expected.item()
    exact = torch.autograd.grad(expected, model.score.W.weight)[0].flatten()
    draws = gradient_draws(model, data, "hard", 4000, generator=torch.Generator().manual_seed(5))
    error = draws.std(0) / 4000 ** 0.5                   # the Monte Carlo error of the mean
    assert ((draws.mean(0) - exact).abs() < 4 * error + 1e-6).all()  # REINFORCE aims at it
