import math

import pytest
import torch

from attention_core import DotProductAttention
from attention_core.variants import (
    LocalAttention,
    local_attention,
    reinforce_loss,
    sample_hard_attention,
    window_positions,
)
from attention_core.worlds.complexity import count_ops


def dense_local(q, k, v, centers, D, gaussian):
    """Reference: mask a dense score matrix to the window, then (optionally) the Gaussian."""
    n_k = k.shape[1]
    s = torch.arange(n_k, dtype=q.dtype)
    scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
    inside = (s[None, None, :] - centers[..., None]).abs() <= D
    w = torch.softmax(scores.masked_fill(~inside, float("-inf")), -1)
    if gaussian:
        w = w * torch.exp(-((s[None, None, :] - centers[..., None]) ** 2) / (2 * (D / 2) ** 2))
    return w @ v, w


@pytest.mark.parametrize("gaussian", [False, True])
def test_windowed_equals_dense_reference(gaussian):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 5, 4), torch.randn(2, 12, 4), torch.randn(2, 12, 3)
    centers = torch.tensor([[0.0, 2.5, 5.2, 9.9, 11.0], [3.0, 3.4, 7.7, 1.0, 6.0]])
    out, w, pos = local_attention(q, k, v, centers, 2, gaussian=gaussian)
    ref_out, ref_w = dense_local(q, k, v, centers, 2, gaussian)
    torch.testing.assert_close(out, ref_out)
    dense = torch.zeros(2, 5, 13).scatter_add(2, torch.where((pos >= 0) & (pos < 12), pos, 12), w)
    torch.testing.assert_close(dense[..., :12], ref_w)


def test_window_holds_2D_plus_1_positions_around_an_integer_centre_and_2D_otherwise():
    pos, inside = window_positions(torch.tensor([[4.0, 4.5]]), 3)
    assert pos.shape == (1, 2, 7) and inside.sum(-1).tolist() == [[7, 6]]
    assert pos[0, 0][inside[0, 0]].tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert pos[0, 1][inside[0, 1]].tolist() == [2, 3, 4, 5, 6, 7]  # 4.5 +- 3 -> 1.5 .. 7.5


def test_local_m_is_global_when_the_window_covers_everything():
    q, k, v = torch.randn(2, 6, 4), torch.randn(2, 6, 4), torch.randn(2, 6, 3)
    local = LocalAttention(window=6, mode="m")
    torch.testing.assert_close(local(q, k, v), DotProductAttention()(q, k, v))


def test_local_m_centres_on_the_diagonal_and_respects_valid_lens():
    local = LocalAttention(window=1, mode="m")
    q, k, v = torch.randn(1, 5, 4), torch.randn(1, 5, 4), torch.randn(1, 5, 2)
    local(q, k, v, torch.tensor([3]))
    assert local.attention_weights.shape == (1, 5, 3)  # only the window is kept
    w = local.dense_weights()[0]
    assert torch.all(w[:, 3:] == 0)
    for t in range(3):
        assert set(torch.nonzero(w[t]).flatten().tolist()) <= {t - 1, t, t + 1}


def test_local_p_predicts_centres_inside_the_sequence_and_weights_sum_below_one():
    torch.manual_seed(0)
    local = LocalAttention(window=2, mode="p", query_size=4)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 9, 4), torch.randn(2, 9, 2)
    out = local(q, k, v, torch.tensor([9, 5]))
    assert out.shape == (2, 3, 2)
    assert torch.all((local.centers[0] >= 0) & (local.centers[0] <= 8))
    assert torch.all((local.centers[1] >= 0) & (local.centers[1] <= 4))
    sums = local.dense_weights().sum(-1)
    assert torch.all(sums <= 1 + 1e-6) and torch.all(sums > 0)
    out.sum().backward()  # the centre predictor gets a gradient through the Gaussian
    assert local.v_p.weight.grad.abs().sum() > 0


def test_local_bad_input():
    with pytest.raises(ValueError, match="window"):
        LocalAttention(window=-1)


def test_local_p_rejects_a_zero_window_whose_gaussian_would_have_no_width():
    with pytest.raises(ValueError, match="window.*mode 'p'.*sigma"):
        LocalAttention(window=0, mode="p", query_size=4)
    x = torch.randn(1, 3, 4)
    with pytest.raises(ValueError, match="window.*mode 'p'.*sigma"):
        local_attention(x, x, x, torch.zeros(1, 3), 0, gaussian=True)
    local = LocalAttention(window=0, mode="m")  # local-m has no Gaussian: a window of one key
    out = local(x, x, x)
    torch.testing.assert_close(out, x)  # each query sees only its own position
    with pytest.raises(ValueError, match="mode must be"):
        LocalAttention(2, mode="x")
    with pytest.raises(ValueError, match="centers has size 2"):
        LocalAttention(2, "m")(torch.randn(1, 3, 4), torch.randn(1, 5, 4), torch.randn(1, 5, 2),
                               centers=torch.zeros(1, 2))


def test_hard_attention_samples_in_proportion_to_the_weights():
    scores = torch.log(torch.tensor([[[0.7, 0.2, 0.1]]])).expand(4000, 1, 3).contiguous()
    values = torch.arange(3.0).reshape(1, 3, 1).expand(4000, 3, 1)
    gen = torch.Generator().manual_seed(0)
    out, index, log_prob = sample_hard_attention(scores, values, generator=gen)
    freq = torch.bincount(index.flatten(), minlength=3).float() / 4000
    torch.testing.assert_close(freq, torch.tensor([0.7, 0.2, 0.1]), atol=0.03, rtol=0)
    torch.testing.assert_close(out.squeeze(-1), index.float())
    torch.testing.assert_close(log_prob, torch.log(torch.tensor([0.7, 0.2, 0.1]))[index])


def test_reinforce_gradient_is_unbiased():
    """The mean of many REINFORCE estimates equals the exact gradient of E[L]."""
    theta = torch.zeros(1, 1, 3, requires_grad=True)
    loss_of = torch.tensor([1.0, 4.0, 9.0])  # L(i) for each choice
    p = torch.softmax(theta, -1)
    (p.flatten() @ loss_of).backward()
    exact = theta.grad.clone()
    theta.grad = None
    n = 20000
    gen = torch.Generator().manual_seed(1)
    values = loss_of.reshape(1, 3, 1).expand(n, 3, 1)
    _, index, log_prob = sample_hard_attention(theta.expand(n, 1, 3), values, generator=gen)
    reinforce_loss(loss_of[index], log_prob, baseline=loss_of.mean()).backward()
    torch.testing.assert_close(theta.grad / 1.0, exact, atol=0.05, rtol=0)


def test_hard_bad_input():
    with pytest.raises(ValueError, match=r"valid_lens must be whole numbers in \[1, 3\]"):
        sample_hard_attention(torch.zeros(1, 1, 3), torch.zeros(1, 3, 1), torch.tensor([0]))
    with pytest.raises(ValueError, match=r"log_prob of shape \(2,\) has batch = \(2,\), but "
                       r"loss has batch = \(3,\)"):
        reinforce_loss(torch.zeros(3), torch.zeros(2))


def test_local_attention_work_and_memory_grow_linearly():
    """Counted on the meta device: global attention scores n^2 pairs, local n (2D + 1)."""
    D, d = 4, 8
    for n in (64, 128, 256):
        x = torch.empty(1, n, d, device="meta")
        centers = torch.arange(n, dtype=torch.float32, device="meta")[None]
        local = count_ops(lambda x=x, centers=centers: local_attention(x, x, x, centers, D,
                                                                       gaussian=False))
        dense = count_ops(lambda x=x: DotProductAttention()(x, x, x))
        assert local.flops == 2 * 2 * n * (2 * D + 1) * d   # scores and weighted sum, by windows
        assert dense.flops == 2 * 2 * n * n * d
        assert local.largest == n * (2 * D + 1) * d           # the gathered windows of keys
        assert dense.largest == n * n                         # the score matrix


def test_local_p_centres_follow_valid_lengths_on_meta():
    local = LocalAttention(window=2, mode="p", query_size=4).to("meta")
    q = torch.empty(2, 3, 4, device="meta")
    out = local(q, q.new_empty(2, 9, 4), q.new_empty(2, 9, 2), torch.tensor([9, 5]))
    assert out.shape == (2, 3, 2) and out.device.type == "meta"
