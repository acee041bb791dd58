import pytest
import torch

from attention_core import AdditiveAttention, DotProductAttention, MultiHeadAttention


def qkv(batch=2, n_q=3, n_k=5, d_q=4, d_k=4, d_v=6, device="cpu", dtype=torch.float32):
    return (torch.randn(batch, n_q, d_q, device=device, dtype=dtype),
            torch.randn(batch, n_k, d_k, device=device, dtype=dtype),
            torch.randn(batch, n_k, d_v, device=device, dtype=dtype))


def test_dot_product_matches_hand_computation():
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[2.0, 0.0], [0.0, 2.0]]])
    v = torch.tensor([[[10.0], [20.0]]])
    attn = DotProductAttention()
    out = attn(q, k, v)
    # scores 2/sqrt(2) and 0 -> weights sigmoid(sqrt 2) and 1 - that
    a = torch.sigmoid(torch.tensor(2**0.5))
    torch.testing.assert_close(attn.attention_weights, torch.tensor([[[a, 1 - a]]]))
    torch.testing.assert_close(out, torch.tensor([[[10 * a + 20 * (1 - a)]]]))


@pytest.mark.parametrize("make", [lambda: DotProductAttention(),
                                  lambda: AdditiveAttention(8),
                                  lambda: AdditiveAttention(8, query_size=4, key_size=4)])
def test_shapes_masking_and_weights(make, device):
    attn = make().to(device)
    q, k, v = qkv(device=device)
    out = attn(q, k, v, torch.tensor([2, 5], device=device))
    assert out.shape == (2, 3, 6)
    w = attn.attention_weights
    assert w.shape == (2, 3, 5) and torch.all(w[0, :, 2:] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, device=device))
    torch.testing.assert_close(out, w @ v)


def test_additive_handles_different_query_and_key_sizes():
    attn = AdditiveAttention(16, query_size=3, key_size=7)
    q, k, v = qkv(d_q=3, d_k=7)
    assert attn(q, k, v).shape == (2, 3, 6)
    assert attn.W_q.weight.shape == (16, 3) and attn.W_k.weight.shape == (16, 7)
    assert attn.w_v.weight.shape == (1, 16)
    assert all(m.bias is None for m in (attn.W_q, attn.W_k, attn.w_v))


def test_all_masked_query_gets_zero_output():
    for attn in (DotProductAttention(), AdditiveAttention(8)):
        q, k, v = qkv()
        out = attn(q, k, v, torch.tensor([0, 3]))
        assert torch.all(out[0] == 0) and torch.isfinite(out).all()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision(dtype, device):
    if device.type == "cpu" and dtype == torch.float16:
        pass  # torch supports float16 matmul on CPU; keep the check
    attn = DotProductAttention()
    q, k, v = qkv(device=device, dtype=dtype)
    out = attn(q, k, v, torch.tensor([1, 4], device=device))
    ref = DotProductAttention()(*(t.double() for t in (q, k, v)), torch.tensor([1, 4], device=device))
    assert out.dtype == dtype
    torch.testing.assert_close(out.double(), ref, atol=2e-2, rtol=2e-2)


def test_large_scores_do_not_overflow():
    q = torch.full((1, 2, 4), 1e2)
    k = torch.full((1, 3, 4), 1e2)
    v = torch.randn(1, 3, 2)
    attn = DotProductAttention()
    out = attn(q, k, v)  # scores of 2e4
    assert torch.isfinite(out).all() and torch.isfinite(attn.attention_weights).all()


def test_self_attention_without_positions_is_permutation_equivariant():
    torch.manual_seed(1)
    x = torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    mha = MultiHeadAttention(16, 4).eval()
    for attn in (DotProductAttention(), AdditiveAttention(8), mha):
        with torch.no_grad():
            out, out_perm = attn(x, x, x), attn(x[:, perm], x[:, perm], x[:, perm])
        torch.testing.assert_close(out_perm, out[:, perm], atol=1e-5, rtol=1e-5)


def test_dropout_only_in_training():
    attn = DotProductAttention(dropout=0.5)
    q, k, v = qkv()
    attn.eval()
    torch.testing.assert_close(attn(q, k, v), attn(q, k, v))
    attn.train()
    assert not torch.equal(attn(q, k, v), attn(q, k, v))


@pytest.mark.parametrize("call, err, words", [
    (lambda a: a(torch.randn(2, 3), torch.randn(2, 3, 4), torch.randn(2, 3, 4)), ValueError,
     "queries must be (batch, n_queries, d_q), got shape (2, 3)"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(3, 5, 4), torch.randn(3, 5, 6)), ValueError,
     "keys has size 3 in dimension 0"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 4, 6)), ValueError,
     "values has size 4 in dimension 1"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 5, 3), torch.randn(2, 5, 6)), ValueError,
     "keys has size 3 in dimension 2"),
    (lambda a: a(*qkv(), torch.tensor([1, 9])), ValueError, "valid_lens must lie in [0, 5]"),
    (lambda a: a(torch.ones(2, 3, 4, dtype=torch.long), torch.randn(2, 5, 4), torch.randn(2, 5, 6)),
     TypeError, "queries must have a floating dtype"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 5, 4).double(), torch.randn(2, 5, 6)),
     ValueError, "share one dtype"),
])
def test_dot_product_bad_input(call, err, words):
    with pytest.raises(err) as info:
        call(DotProductAttention())
    assert words in str(info.value)


def test_constructor_bad_input():
    with pytest.raises(ValueError, match="dropout must be in"):
        DotProductAttention(dropout=1.5)
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        AdditiveAttention(0)
    with pytest.raises(ValueError, match="query_size"):
        AdditiveAttention(8, query_size=5)(*qkv())
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiHeadAttention(10, 3)


@pytest.mark.parametrize("make", [DotProductAttention, lambda: AdditiveAttention(8),
                                  lambda: MultiHeadAttention(8, 2)])
@pytest.mark.parametrize("args, err, words", [
    ((torch.randn(2, 3, 4), torch.randn(2, 5), torch.randn(2, 5, 6)), ValueError,
     "keys must be (batch, n_keys, d_k), got shape (2, 5)"),
    ((torch.randn(2, 3, 4), torch.randn(2, 5, 4), "values"), TypeError,
     "values must be a torch.Tensor, got str"),
    ((torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 6, 6)), ValueError,
     "values has size 6 in dimension 1"),
])
def test_every_attention_names_the_bad_argument(make, args, err, words):
    with pytest.raises(err) as info:
        make()(*args)
    assert words in str(info.value)
