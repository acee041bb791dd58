"""The tiled attention's backward pass: gradients equal torch's, memory O(n) under autograd."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import attend
from attention_core.efficient import _chunked, _chunked_forward, chunked_attention
from attention_core.worlds.complexity import saved_bytes


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


@pytest.mark.parametrize("causal, mask_kind, heads", [(True, None, (2, 2)), (False, "lengths", (2, 1)),
                                                       (True, "float", (2, 2)), (True, "random", (0, 0))])
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
