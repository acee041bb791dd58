"""Attention at long lengths (efficient.py): the online softmax, tiled exact attention and its
backward pass (gradients equal torch's, memory O(n) under autograd), sliding-window and
linear attention."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import attend
from attention_core.efficient import (
    _chunked,
    _chunked_forward,
    chunked_attention,
    linear_attention,
    online_softmax,
    sliding_window_attention,
    softmax_statistics,
)
from attention_core.worlds.complexity import saved_bytes


def sdpa(q, k, v, mask=None, is_causal=False):
    """torch's reference, with a query that sees no key given zeros (as ours)."""
    if mask is not None and is_causal:
        mask = mask & torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        is_causal = False
    if mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    empty = ~mask.any(-1, keepdim=True)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask | empty).masked_fill(empty, 0)


def test_online_softmax_survives_a_first_block_of_masked_scores():
    x = torch.tensor([[float("-inf"), float("-inf"), 1.0, 2.0]])
    torch.testing.assert_close(online_softmax(x, block_size=2), torch.softmax(x, -1))


def test_online_softmax_equals_softmax_and_its_statistics_are_exact():
    x = torch.randn(3, 1000, dtype=torch.float64) * 30
    torch.testing.assert_close(online_softmax(x, block_size=7), torch.softmax(x, -1))
    m, l = softmax_statistics(x, block_size=64)
    torch.testing.assert_close(m, x.amax(-1))
    torch.testing.assert_close(l, torch.exp(x - x.amax(-1, keepdim=True)).sum(-1))


@settings(max_examples=40, deadline=None)
@given(n_q=st.integers(1, 40), n_k=st.integers(1, 40), block=st.integers(1, 17),
       heads=st.sampled_from([0, 1, 3]), causal=st.booleans(), padded=st.booleans(),
       seed=st.integers(0, 2**16))
def test_chunked_equals_sdpa(n_q, n_k, block, heads, causal, padded, seed):
    g = torch.Generator().manual_seed(seed)
    shape = (2, heads) if heads else (2,)
    q = torch.randn(*shape, n_q, 8, generator=g)
    k = torch.randn(*shape, n_k, 8, generator=g)
    v = torch.randn(*shape, n_k, 5, generator=g)
    lens = torch.randint(0, n_k + 1, (2,), generator=g) if padded else None
    mask = None if lens is None else (torch.arange(n_k) < lens[:, None]).view(
        2, *([1] * bool(heads)), 1, n_k)
    ours = chunked_attention(q, k, v, lens, is_causal=causal, block_size=block)
    torch.testing.assert_close(ours, sdpa(q, k, v, mask, causal), atol=1e-5, rtol=1e-5)


def test_chunked_is_a_backend_of_attend_equal_to_the_others():
    q, k, v = torch.randn(2, 4, 37, 16), torch.randn(2, 4, 37, 16), torch.randn(2, 4, 37, 16)
    mask = torch.rand(2, 1, 37, 37) > 0.3
    outs = {b: attend(q, k, v, mask, is_causal=True, backend=b)[0]
            for b in ("math", "sdpa", "chunked")}
    torch.testing.assert_close(outs["chunked"], outs["math"], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(outs["sdpa"], outs["math"], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="applies no dropout"):
        attend(q, k, v, dropout_p=0.1, backend="chunked")


def test_chunked_grouped_heads_and_a_query_without_keys():
    q, k, v = torch.randn(1, 4, 9, 8), torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8)
    ref = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
    torch.testing.assert_close(chunked_attention(q, k, v, block_size=4), ref, atol=1e-5, rtol=1e-5)
    out = chunked_attention(q, k, v, torch.tensor([0]), block_size=4)
    assert torch.equal(out, torch.zeros_like(out))


def test_chunked_bad_input():
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        chunked_attention(torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4),
                          block_size=0)
    with pytest.raises(ValueError, match="keys has size 5 in dimension 2"):
        chunked_attention(torch.randn(1, 3, 4), torch.randn(1, 3, 5), torch.randn(1, 3, 4))


@pytest.mark.parametrize("n,w", [(1, 1), (10, 3), (16, 4), (33, 8), (7, 20)])
@pytest.mark.parametrize("causal", [False, True])
def test_sliding_window_equals_dense_attention_with_a_band_mask(n, w, causal):
    torch.manual_seed(n * w)
    q, k, v = torch.randn(2, 3, n, 8), torch.randn(2, 3, n, 8), torch.randn(2, 3, n, 6)
    lens = torch.tensor([n, max(n // 2, 1)])
    i, j = torch.arange(n)[:, None], torch.arange(n)
    band = (j <= i) & (j >= i - w) if causal else (j - i).abs() <= w
    mask = band & (j < lens.view(2, 1, 1, 1))
    ours = sliding_window_attention(q, k, v, w, is_causal=causal, valid_lens=lens)
    torch.testing.assert_close(ours, sdpa(q, k, v, mask), atol=1e-5, rtol=1e-5)


def test_sliding_window_bad_input():
    x = torch.randn(1, 6, 4)
    with pytest.raises(ValueError, match="window must be a positive int"):
        sliding_window_attention(x, x, x, 0)
    with pytest.raises(ValueError, match=r"keys has size 5 in dimension 1 .*, "
                                         r"but n of queries is 6"):
        sliding_window_attention(x, torch.randn(1, 5, 4), torch.randn(1, 5, 4), 2)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_equals_its_quadratic_definition(causal):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 2, 50, 8, dtype=torch.float64), \
        torch.randn(2, 2, 50, 8, dtype=torch.float64), torch.randn(2, 2, 50, 5, dtype=torch.float64)
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    a = phi_q @ phi_k.transpose(-2, -1)             # (n, n) kernel scores: the O(n^2) way
    if causal:
        a = a.tril()
    ref = (a @ v) / (a.sum(-1, keepdim=True) + 1e-6)
    torch.testing.assert_close(linear_attention(q, k, v, is_causal=causal, chunk_size=7), ref)


FUNCTIONS = {
    "chunked": lambda q, k, v, lens: chunked_attention(q, k, v, lens, is_causal=True, block_size=4),
    "sliding": lambda q, k, v, lens: sliding_window_attention(q, k, v, 3, is_causal=True,
                                                              valid_lens=lens),
    "linear": lambda q, k, v, lens: linear_attention(q, k, v, is_causal=True, chunk_size=4),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_meta_device_shapes(name):
    x = torch.empty(2, 2, 10, 8, device="meta")
    assert FUNCTIONS[name](x, x, x, torch.tensor([5, 3], device="meta")).shape == (2, 2, 10, 8)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_compiles_without_graph_breaks(name):
    y, lens = torch.randn(2, 2, 10, 8), torch.tensor([5, 3])
    compiled = torch.compile(FUNCTIONS[name], fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(y, y, y, lens), FUNCTIONS[name](y, y, y, lens))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradients_flow_and_are_finite(name):
    q = torch.randn(2, 2, 10, 8, requires_grad=True)
    FUNCTIONS[name](q, q, q, torch.tensor([10, 0])).sum().backward()
    assert torch.isfinite(q.grad).all() and q.grad.abs().sum() > 0


def reference(q, k, v, mask, causal):
    """torch's SDPA, with our mask-and-causal combination spelled out for it."""
    if causal and mask is not None:
        tril = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask = mask & tril if mask.dtype == torch.bool else mask.masked_fill(~tril, float("-inf"))
        causal = False
    gqa = k.dim() == 4 and k.shape[-3] != q.shape[-3]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=gqa)


def make(g, dtype, batch, heads, kv_heads, n_q, n_k, d, d_v, mask_kind):
    """Inputs and a mask: None, boolean from lengths (a length may be 0), random boolean, or a
    float mask with some -inf entries that needs a gradient."""
    lead, lead_kv = ((batch, heads), (batch, kv_heads)) if heads else ((batch,), (batch,))
    q = torch.randn(*lead, n_q, d, generator=g, dtype=dtype, requires_grad=True)
    k = torch.randn(*lead_kv, n_k, d, generator=g, dtype=dtype, requires_grad=True)
    v = torch.randn(*lead_kv, n_k, d_v, generator=g, dtype=dtype, requires_grad=True)
    ones = (1,) * (1 if heads else 0)
    if mask_kind == "lengths":
        lens = torch.randint(0, n_k + 1, (batch,), generator=g)
        mask = (torch.arange(n_k) < lens[:, None]).view(batch, *ones, 1, n_k)
    elif mask_kind == "random":
        mask = torch.rand(batch, *ones, n_q, n_k, generator=g) > 0.4
    elif mask_kind == "float":
        hidden = torch.rand(n_q, n_k, generator=g) > 0.7
        mask = torch.randn(n_q, n_k, generator=g, dtype=dtype).masked_fill(hidden, float("-inf"))
        mask.requires_grad_()
    else:
        mask = None
    return q, k, v, mask


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(n_q=st.integers(1, 33), n_k=st.integers(1, 33), block=st.integers(1, 20),
       heads=st.sampled_from([(0, 0), (4, 4), (4, 2), (4, 1)]), causal=st.booleans(),
       mask_kind=st.sampled_from([None, "lengths", "random", "float"]),
       seed=st.integers(0, 2**16))
def test_gradients_equal_sdpas_in_float64(n_q, n_k, block, heads, causal, mask_kind, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v, mask = make(g, torch.float64, 2, *heads, n_q, n_k, 8, 5, mask_kind)
    ours = _chunked(q, k, v, mask, is_causal=causal, block_size=block)
    theirs = reference(q, k, v, mask, causal)
    inputs = (q, k, v) + ((mask,) if mask_kind == "float" else ())
    grad_out = torch.randn(ours.shape, generator=g, dtype=torch.float64)
    torch.testing.assert_close(ours, theirs, atol=1e-10, rtol=1e-10)
    for a, b in zip(torch.autograd.grad(ours, inputs, grad_out),
                    torch.autograd.grad(theirs, inputs, grad_out)):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_equal_sdpas_in_float32_through_attend(causal):
    g = torch.Generator().manual_seed(3)
    q, k, v, mask = make(g, torch.float32, 2, 4, 2, 300, 270, 32, 32, "lengths")
    grad_out = torch.randn(2, 4, 300, 32, generator=g)
    grads = [torch.autograd.grad(attend(q, k, v, mask, is_causal=causal, backend=b)[0], (q, k, v),
                                 grad_out) for b in ("chunked", "sdpa")]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("causal, mask_kind, heads", [(True, None, (2, 2)),
                                                       (False, "lengths", (2, 1)),
                                                       (True, "float", (2, 2)),
                                                       (True, "random", (0, 0))])
def test_gradcheck(causal, mask_kind, heads):
    g = torch.Generator().manual_seed(4)
    q, k, v, mask = make(g, torch.float64, 2, *heads, 6, 7, 4, 3, mask_kind)
    inputs = (q, k, v) + ((mask,) if mask_kind == "float" else ())

    def fn(q, k, v, *float_mask):
        return _chunked(q, k, v, float_mask[0] if float_mask else mask, is_causal=causal,
                        block_size=3)
    assert torch.autograd.gradcheck(fn, inputs)


def test_a_query_without_keys_gets_zero_output_and_zero_gradient():
    q, k, v = (torch.randn(2, 9, 8, requires_grad=True) for _ in range(3))
    out = chunked_attention(q, k, v, torch.tensor([9, 0]), block_size=4)
    dq, dk, dv = torch.autograd.grad(out.sum(), (q, k, v))
    assert torch.equal(out[1], torch.zeros_like(out[1]))
    assert torch.isfinite(dq).all()
    for grad in (dq, dk, dv):
        assert torch.equal(grad[1], torch.zeros_like(grad[1]))


@pytest.mark.parametrize("n", [512, 4096])
def test_autograd_keeps_the_output_and_the_log_sum_exp_only(n):
    q, k, v = (torch.empty(1, 2, n, 64, device="meta", requires_grad=True) for _ in range(3))
    chunked = saved_bytes(lambda q, k, v: chunked_attention(q, k, v, block_size=128), q, k, v)
    assert chunked == 4 * 2 * (n * 64 + n)                          # output and L, float32
    bare_loop = saved_bytes(lambda q, k, v: _chunked_forward(q, k, v, block_size=128)[0], q, k, v)
    assert bare_loop >= 4 * 2 * n * n                               # every tile, kept
