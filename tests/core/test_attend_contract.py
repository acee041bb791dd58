"""attend speaks torch's contract: whatever F.scaled_dot_product_attention accepts (leading axes
that broadcast, grouped heads, boolean or float masks, is_causal, scale), every backend gives
its result, and its gradients."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import BACKENDS, attend
from attention_core.contracts import leading_shapes


def backends():
    """Every backend; 'triton' only where its kernel can run here (the interpreter, or CUDA)."""
    names = sorted(BACKENDS)
    if "triton" in names:
        from attention_core.triton_attention import use_interpreter
        if not use_interpreter():
            names.remove("triton")
    return names


def torch_reference(q, k, v, mask, causal, scale):
    """torch's SDPA; ours also takes a mask together with is_causal (both apply)."""
    if causal and mask is not None:
        tril = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask = mask & tril if mask.dtype == torch.bool else mask.masked_fill(~tril, float("-inf"))
        causal = False
    gqa = (max(q.dim(), k.dim()) >= 4 and k.shape[-3] not in (1, q.shape[-3])
           and q.shape[-3] % k.shape[-3] == 0)                  # axis -3 is a head axis
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale,
                                          enable_gqa=gqa)


@st.composite
def problems(draw):
    """Shapes torch accepts: ranks 3-5, batch axes of size 1 that broadcast, q/k/v of different
    ranks, grouped heads, n_q != n_k, d != d_v; a boolean or float mask that broadcasts."""
    rank = draw(st.integers(3, 5))
    lead = [draw(st.integers(1, 3)) for _ in range(rank - 2)]      # batch ..., heads

    def variant(lead, allow_group):
        out = [1 if draw(st.booleans()) and draw(st.booleans()) else s for s in lead]
        grouped = allow_group and rank >= 4 and lead[-1] in (2, 4) and draw(st.booleans())
        if grouped:
            out[-1] = lead[-1] // 2                                  # grouped heads
        # fewer leading axes; grouped heads keep a batch axis (rank 3 has no head axis)
        drop = draw(st.integers(0, len(out) - (2 if grouped else 1)))
        return out[drop:] if all(s == 1 for s in out[:drop]) else out
    if rank >= 4 and draw(st.booleans()):
        lead[-1] = draw(st.sampled_from([2, 4]))
    n_q, n_k, d, d_v = (draw(st.integers(1, 9)) for _ in range(4))
    kv = variant(lead, allow_group=True)
    shapes = dict(q=variant(lead, False) + [n_q, d], k=kv + [n_k, d], v=kv + [n_k, d_v])
    mask_kind = draw(st.sampled_from([None, "bool", "float"]))
    scores_lead = leading_shapes(shapes["q"], shapes["k"], shapes["v"])[0]  # torch judges below
    mask_lead = [1 if draw(st.booleans()) else s for s in scores_lead]
    mask_shape = mask_lead[draw(st.integers(0, len(mask_lead))):] + [draw(st.sampled_from([1, n_q])), n_k]
    return shapes, mask_kind, mask_shape, draw(st.booleans()), \
        draw(st.sampled_from([None, 0.3])), draw(st.integers(0, 2**16))


def build(shapes, mask_kind, mask_shape, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(shapes[n], generator=g, dtype=dtype, requires_grad=True) for n in "qkv")
    mask = None
    if mask_kind == "bool":
        mask = torch.rand(mask_shape, generator=g) > 0.3               # rows may be all False
    elif mask_kind == "float":
        mask = torch.randn(mask_shape, generator=g, dtype=dtype)
        mask = mask.masked_fill(torch.rand(mask_shape, generator=g) > 0.7, float("-inf"))
    return q, k, v, mask


@settings(max_examples=100, deadline=None)
@given(problem=problems())
def test_every_backend_gives_torchs_result_and_gradients(problem):
    shapes, mask_kind, mask_shape, causal, scale, seed = problem
    q, k, v, mask = build(shapes, mask_kind, mask_shape, seed)
    expected = torch_reference(q, k, v, mask, causal, scale)
    grad_out = torch.randn(expected.shape, dtype=expected.dtype)
    expected_grads = torch.autograd.grad(expected, (q, k, v), grad_out)
    for backend in backends():
        if backend == "triton":                                        # float32 kernel
            q32, k32, v32 = (t.detach().float() for t in (q, k, v))
            out, _ = attend(q32, k32, v32, None if mask is None else
                            (mask if mask.dtype == torch.bool else mask.float()),
                            is_causal=causal, scale=scale, backend=backend)
            torch.testing.assert_close(out, expected.float(), atol=1e-5, rtol=1e-5)
            continue
        out, _ = attend(q, k, v, mask, is_causal=causal, scale=scale, backend=backend)
        torch.testing.assert_close(out, expected, atol=1e-10, rtol=1e-10, msg=backend)
        for got, want in zip(torch.autograd.grad(out, (q, k, v), grad_out), expected_grads):
            torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10, msg=backend)


def test_broadcast_examples_from_torchs_documentation_of_shapes():
    q, k, v = torch.randn(3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 6)
    out, weights = attend(q, k, v, need_weights=True)                 # (h, n, d) against (B, h, n, d)
    assert out.shape == (2, 3, 5, 6) and weights.shape == (2, 3, 5, 7)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    out, _ = attend(q, k, v, enable_gqa=True)                          # accepted, as in torch
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, enable_gqa=True))


def test_a_float_mask_of_minus_infinity_hides_a_key_like_a_boolean_one():
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 9, 8), torch.randn(2, 4, 9, 8)
    allowed = torch.rand(2, 1, 6, 9) > 0.5
    additive = torch.zeros(allowed.shape).masked_fill(~allowed, float("-inf"))
    for backend in ("math", "sdpa", "chunked"):
        torch.testing.assert_close(attend(q, k, v, additive, backend=backend)[0],
                                   attend(q, k, v, allowed, backend=backend)[0])


@pytest.mark.parametrize("q_shape, k_shape", [((2, 5, 8), (2, 3, 7, 8)),        # 2 vs 3 heads
                                              ((2, 4, 5, 8), (2, 3, 7, 8)),     # 3 does not divide 4
                                              ((4, 5, 8), (2, 7, 8))])          # batch 4 vs 2
def test_shapes_torch_refuses_are_refused_with_the_shapes_named(q_shape, k_shape):
    q, k = torch.randn(q_shape), torch.randn(k_shape)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, k)
    with pytest.raises(ValueError, match=r"queries \(.*\), keys \(.*\) and values .* do not broadcast"):
        attend(q, k, k)
