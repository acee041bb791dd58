import math

import pytest
import torch

from attention_core import PositionalEncoding, sinusoidal_table


def test_table_matches_the_formula():
    P = sinusoidal_table(50, 8, dtype=torch.float64)
    for i in (0, 7, 49):
        for j in range(4):
            angle = i / 10000 ** (2 * j / 8)
            assert P[i, 2 * j].item() == pytest.approx(math.sin(angle))
            assert P[i, 2 * j + 1].item() == pytest.approx(math.cos(angle))


def test_odd_size_has_one_more_sine_column():
    P = sinusoidal_table(10, 5)
    assert P.shape == (10, 5)
    torch.testing.assert_close(P[:, 4], torch.sin(torch.arange(10.0) / 10000 ** (4 / 5)))


def test_module_adds_table_and_follows_device_and_dtype(device):
    pe = PositionalEncoding(6, max_len=20).to(device)
    assert pe.P.shape == (1, 20, 6) and pe.P.device.type == device.type
    X = torch.zeros(2, 7, 6, device=device, dtype=torch.bfloat16)
    out = pe(X)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out[1], pe.P[0, :7].to(torch.bfloat16))


def test_bad_input():
    pe = PositionalEncoding(6, max_len=5)
    with pytest.raises(ValueError, match=r"X must be \(batch, n, num_hiddens\), "
                                         r"got shape \(7, 6\)"):
        pe(torch.zeros(7, 6))
    with pytest.raises(ValueError, match="num_hiddens is 6"):
        pe(torch.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="beyond max_len=5"):
        pe(torch.zeros(1, 6, 6))
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        PositionalEncoding(0)


def test_table_bad_input():
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        sinusoidal_table(0, 4)
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        sinusoidal_table(5, 2.5)
    with pytest.raises(TypeError, match="floating dtype"):
        sinusoidal_table(5, 4, dtype=torch.long)


from attention_core.positional import (  # noqa: E402
    LearnedPositionalEncoding,
    RotaryEmbedding,
    frequencies,
    rotation_matrix,
)


def test_rotation_maps_every_position_to_its_shift():
    P = sinusoidal_table(120, 16, dtype=torch.float64)
    for delta in (0, 1, 7, 50):
        M = rotation_matrix(delta, 16)
        torch.testing.assert_close(P[: 120 - delta] @ M.T, P[delta:], atol=1e-12, rtol=0)
        torch.testing.assert_close(M @ M.T, torch.eye(16, dtype=torch.float64))  # a rotation


def test_dot_products_depend_only_on_the_offset():
    P = sinusoidal_table(100, 32, dtype=torch.float64)
    G = P @ P.T
    torch.testing.assert_close(G[1:, 1:], G[:-1, :-1], atol=1e-12, rtol=0)
    offsets = torch.arange(5, dtype=torch.float64)
    expected = torch.cos(offsets[:, None] * frequencies(32)).sum(1)  # sum_j cos(delta w_j)
    torch.testing.assert_close(G[0, :5], expected)


def test_rope_scores_depend_only_on_the_offset_and_keep_norms():
    rope = RotaryEmbedding(8)
    q, k = torch.randn(8).expand(1, 30, 8), torch.randn(8).expand(1, 30, 8)
    S = rope(q) @ rope(k).transpose(1, 2)
    torch.testing.assert_close(S[0, 1:, 1:], S[0, :-1, :-1], atol=1e-5, rtol=0)
    x = torch.randn(2, 4, 30, 8)  # works with a heads dimension
    torch.testing.assert_close(rope(x).norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rope(x)[..., 0, :], x[..., 0, :])  # position 0 is not rotated
    # shifting every position by the same amount leaves every score unchanged
    qs, ks = torch.randn(1, 30, 8), torch.randn(1, 30, 8)
    shift = torch.arange(30) + 5
    torch.testing.assert_close(rope(qs, shift) @ rope(ks, shift).transpose(1, 2),
                               rope(qs) @ rope(ks).transpose(1, 2), atol=1e-4, rtol=1e-4)


def test_rope_position_offset_matches_rotation_of_the_table_frequencies():
    rope = RotaryEmbedding(4, base=100.0)
    x = torch.tensor([[[1.0, 0.0, 1.0, 0.0]]])
    out = rope(x, positions=torch.tensor([3]))
    theta = frequencies(4, base=100.0)
    expected = torch.tensor([math.cos(3 * theta[0]), math.sin(3 * theta[0]),
                             math.cos(3 * theta[1]), math.sin(3 * theta[1])])
    torch.testing.assert_close(out[0, 0], expected.float())


def test_learned_positions():
    pe = LearnedPositionalEncoding(6, max_len=10)
    X = torch.zeros(2, 4, 6)
    torch.testing.assert_close(pe(X)[0], pe.embedding.weight[:4])
    assert pe.embedding.weight.requires_grad
    with pytest.raises(ValueError, match="beyond max_len=10"):
        pe(torch.zeros(1, 11, 6))


def test_positional_extras_bad_input():
    with pytest.raises(ValueError, match="must be even"):
        rotation_matrix(1, 5)
    with pytest.raises(ValueError, match="num_hiddens must be even"):
        RotaryEmbedding(7)
    with pytest.raises(ValueError, match="num_hiddens is 8"):
        RotaryEmbedding(8)(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match=r"positions has size 4 in dimension 0 \(shape \(4,\)\), "
                                         r"but n of X is 3"):
        RotaryEmbedding(8)(torch.randn(2, 3, 8), positions=torch.arange(4))
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        LearnedPositionalEncoding(4, max_len=0)


def test_learned_and_sinusoidal_take_arguments_in_one_order():
    """num_hiddens, dropout, max_len for both (issue: LearnedPositionalEncoding(32, 0.1) raised)."""
    for cls in (PositionalEncoding, LearnedPositionalEncoding):
        pe = cls(32, 0.1, 64)
        assert pe.dropout.p == 0.1 and pe.max_len == 64


def test_table_frequencies_are_the_frequencies():
    """Column pair j of the table oscillates at frequencies()[j] (radians per position)."""
    P = sinusoidal_table(50, 12, dtype=torch.float64)
    i = torch.arange(50, dtype=torch.float64)[:, None]
    torch.testing.assert_close(P[:, 0::2], torch.sin(i * frequencies(12)))
    torch.testing.assert_close(P[:, 1::2], torch.cos(i * frequencies(12)))


@pytest.mark.parametrize("make", [lambda: PositionalEncoding(6, max_len=12),
                                  lambda: LearnedPositionalEncoding(6, max_len=12)])
def test_offset_encodes_step_t_as_position_t(make):
    pe = make().eval()
    X = torch.randn(2, 9, 6)
    whole = pe(X)
    steps = torch.cat([pe(X[:, t:t + 1], offset=t) for t in range(9)], dim=1)
    torch.testing.assert_close(steps, whole)
    with pytest.raises(ValueError, match="from offset 8, beyond max_len=12"):
        pe(torch.randn(1, 5, 6), offset=8)
    with pytest.raises(ValueError, match="offset must be an int >= 0"):
        pe(X, offset=-1)


# --- ALiBi ------------------------------------------------------------------------------

def test_alibi_slopes_are_press_et_al_s_geometric_sequence():
    from attention_core.positional import alibi_slopes
    assert alibi_slopes(8).tolist() == [2.0 ** -k for k in range(1, 9)]   # 1/2 ... 1/256
    assert alibi_slopes(4).tolist() == [2.0 ** -k for k in (2, 4, 6, 8)]  # 1/4 ... 1/256


def test_alibi_bias_is_minus_slope_times_distance_and_the_last_queries_of_a_cache():
    from attention_core.positional import alibi_bias, alibi_slopes
    bias = alibi_bias(2, 5)
    i, j = torch.arange(5)[:, None], torch.arange(5)[None, :]
    torch.testing.assert_close(bias, -alibi_slopes(2)[:, None, None] * (i - j).abs().float())
    assert bias.shape == (2, 5, 5) and torch.all(bias.diagonal(dim1=1, dim2=2) == 0)
    # one decoder step at position 4 with a cache of 5 keys: the last row of the full bias
    torch.testing.assert_close(alibi_bias(2, 1, 5), bias[:, 4:])


def test_alibi_bias_with_a_causal_mask_favours_near_keys_and_depends_on_the_offset_only():
    from attention_core import attend
    from attention_core.positional import alibi_bias
    n = 6
    q, k = torch.zeros(1, 2, n, 4), torch.zeros(1, 2, n, 4)   # equal scores: only the bias acts
    v = torch.eye(n).expand(1, 2, n, n)
    out, w = attend(q, k, v, alibi_bias(2, n), is_causal=True, need_weights=True)
    assert torch.all(w.triu(1) == 0)                               # the causal mask still holds
    row = w[0, :, -1]                                              # the last query's weights
    assert torch.all(row[:, 1:] > row[:, :-1])                     # nearer keys weigh more
    fused, _ = attend(q, k, v, alibi_bias(2, n), is_causal=True, backend="sdpa")
    torch.testing.assert_close(fused, out)


def test_alibi_bad_input():
    from attention_core.positional import alibi_bias, alibi_slopes
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        alibi_slopes(0)
    with pytest.raises(ValueError, match=r"n_q \(5\) must be at most n_k \(3\)"):
        alibi_bias(2, 5, 3)
