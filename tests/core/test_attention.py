"""attend and the layers over it (attention.py): the three steps by hand, torch's contract on
every backend (leading axes that broadcast, grouped heads, boolean or float masks, is_causal,
scale) with its gradients, the masked and padded cases, and the errors a bad argument gets."""
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

from attention_core import (
    BACKENDS,
    AdditiveAttention,
    DotProductAttention,
    MultiHeadAttention,
    SelfAttention,
    attend,
    causal_mask,
)
from attention_core.contracts import leading_shapes


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
    ref = DotProductAttention()(*(t.double() for t in (q, k, v)),
                                torch.tensor([1, 4], device=device))
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
     "queries must be (batch, [heads,] n_queries, d), got shape (2, 3)"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(3, 5, 4), torch.randn(3, 5, 6)), ValueError,
     "keys has size 3 in dimension 0"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 4, 6)), ValueError,
     "values has size 4 in dimension 1"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 5, 3), torch.randn(2, 5, 6)), ValueError,
     "keys has size 3 in dimension 2"),
    (lambda a: a(*qkv(), torch.tensor([1, 9])), ValueError,
     "valid_lens must be whole numbers in [0, 5]"),
    (lambda a: a(torch.ones(2, 3, 4, dtype=torch.long), torch.randn(2, 5, 4), torch.randn(2, 5, 6)),
     TypeError, "queries must have a floating dtype"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 5, 4).double(), torch.randn(2, 5, 6)),
     ValueError, "share one dtype"),
    (lambda a: a(torch.randn(2, 3, 4), torch.randn(2, 4, 5, 4), torch.randn(2, 4, 5, 6)),
     ValueError, "must have the rank of queries"),
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
     "keys must be (batch, "),
    ((torch.randn(2, 3, 4), torch.randn(2, 5, 4), "values"), TypeError,
     "values must be a torch.Tensor, got str"),
    ((torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 6, 6)), ValueError,
     "values has size 6 in dimension 1"),
])
def test_every_attention_names_the_bad_argument(make, args, err, words):
    with pytest.raises(err) as info:
        make()(*args)
    assert words in str(info.value)


def test_self_attention_is_attention_over_its_own_projections():
    torch.manual_seed(0)
    sa = SelfAttention(6, input_size=4)
    X = torch.randn(2, 5, 4)
    Y = sa(X, torch.tensor([5, 3]))
    Q, K, V = sa.W_q(X), sa.W_k(X), sa.W_v(X)
    w = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(6), -1)
    torch.testing.assert_close(Y[0], w[0] @ V[0])
    assert Y.shape == (2, 5, 6) and torch.all(sa.attention_weights[1, :, 3:] == 0)


def test_self_attention_is_permutation_equivariant():
    sa = SelfAttention(8, input_size=8)
    X, perm = torch.randn(2, 9, 8), torch.randperm(9)
    torch.testing.assert_close(sa(X[:, perm]), sa(X)[:, perm])


def test_self_attention_bad_input():
    with pytest.raises(ValueError, match=r"X must be \(batch, n, input_size\)"):
        SelfAttention(4, input_size=4)(torch.randn(5, 4))
    with pytest.raises(ValueError, match="input_size is 4"):
        SelfAttention(4, input_size=4)(torch.randn(1, 5, 3))
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        SelfAttention(0)


# ---- the core: attend -------------------------------------------------------------------
def reference(q, k, v, mask=None, is_causal=False):
    """Attention written from its definition, one query at a time, in float64."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & mask
    if is_causal:
        allowed = allowed & causal_mask(scores.shape[-2], scores.shape[-1])
    w = torch.where(allowed, scores.exp(), torch.zeros_like(scores))
    w = w / w.sum(-1, keepdim=True).clamp_min(1e-300)
    return w @ v, w


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize("is_causal", [False, True])
def test_every_backend_equals_the_definition(backend, is_causal, device):
    q, k, v = (torch.randn(2, 3, n, 8, device=device) for n in (6, 6, 6))
    mask = torch.rand(2, 1, 6, 6, device=device) > 0.3
    mask[0, 0, 2] = False  # a query with no key at all: zero output, not NaN
    out, weights = attend(q, k, v, mask, is_causal=is_causal, backend=backend,
                          need_weights=backend == "math")
    ref_out, ref_w = reference(q.cpu(), k.cpu(), v.cpu(), mask.cpu(), is_causal)
    torch.testing.assert_close(out.cpu().double(), ref_out, atol=1e-5, rtol=1e-5)
    assert torch.all(out[0, :, 2] == 0)
    if weights is not None:
        torch.testing.assert_close(weights.cpu().double(), ref_w, atol=1e-6, rtol=1e-5)


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 3), heads=st.integers(0, 3), n_q=st.integers(1, 7),
       n_k=st.integers(1, 7), d=st.integers(1, 9), causal=st.booleans(), data=st.data())
def test_property_fused_equals_step_by_step(batch, heads, n_q, n_k, d, causal, data):
    head_dims = (heads,) if heads else ()
    q = torch.randn(batch, *head_dims, n_q, d)
    k, v = torch.randn(batch, *head_dims, n_k, d), torch.randn(batch, *head_dims, n_k, 3)
    lens = data.draw(st.lists(st.integers(0, n_k), min_size=batch, max_size=batch))
    mask = (torch.arange(n_k) < torch.tensor(lens)[:, None]).reshape(
        batch, *([1] * len(head_dims)), 1, n_k)
    fused, none = attend(q, k, v, mask, is_causal=causal)
    step, weights = attend(q, k, v, mask, is_causal=causal, need_weights=True)
    assert none is None and weights.shape == (batch, *head_dims, n_q, n_k)
    torch.testing.assert_close(fused, step, atol=1e-5, rtol=1e-5)


def test_custom_score_and_scale():
    q, k, v = torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 5)
    out, w = attend(q, k, v, score=lambda q, k: q @ k.transpose(1, 2))  # unscaled dot
    torch.testing.assert_close(w, torch.softmax(q @ k.transpose(1, 2), -1))
    out2, _ = attend(q, k, v, scale=1.0, need_weights=True)
    torch.testing.assert_close(out, out2)


def test_attend_bad_input():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    with pytest.raises(ValueError, match=r"mask of shape \(2, 4\) does not broadcast"):
        attend(q, k, v, torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"mask must be boolean \(True = may attend\) or floating"):
        attend(q, k, v, torch.ones(2, 1, 5, dtype=torch.long))
    with pytest.raises(ValueError, match="backend must be one of"):
        attend(q, k, v, backend="flash")
    with pytest.raises(ValueError, match="need_weights and score need backend='math'"):
        attend(q, k, v, backend="sdpa", need_weights=True)
    with pytest.raises(ValueError, match="dropout_p must be in"):
        attend(q, k, v, dropout_p=1.0)


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
    mask_shape = (mask_lead[draw(st.integers(0, len(mask_lead))):]
                  + [draw(st.sampled_from([1, n_q])), n_k])
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


@pytest.mark.slow
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
    out, weights = attend(q, k, v, need_weights=True)  # (h, n, d) against (B, h, n, d)
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


@pytest.mark.parametrize("q_shape, k_shape", [((2, 5, 8), (2, 3, 7, 8)),     # 2 vs 3 heads
                                              ((2, 4, 5, 8), (2, 3, 7, 8)),  # 3 does not divide 4
                                              ((4, 5, 8), (2, 7, 8))])       # batch 4 vs 2
def test_shapes_torch_refuses_are_refused_with_the_shapes_named(q_shape, k_shape):
    q, k = torch.randn(q_shape), torch.randn(k_shape)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, k)
    with pytest.raises(ValueError, match=r"queries \(.*\), keys \(.*\) "
                                         r"and values .* do not broadcast"):
        attend(q, k, k)
