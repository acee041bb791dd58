"""The "triton" backend: FlashAttention-2's forward in Triton, checked against torch's SDPA.

The kernel runs in Triton's interpreter, on CPU tensors. Triton fixes interpreter or GPU when
``triton.language`` is first imported, so tests/conftest.py imports it under TRITON_INTERPRET=1
(``use_interpreter``) before any test can import it for the GPU. Where triton was imported for
the GPU first anyway, the kernel tests are skipped here and ``test_in_a_fresh_process`` runs
this file again in a process of its own; ``test_compiled_for_the_gpu`` compiles the kernel for a
GPU where there is one, in a process of its own too.
"""
import os
import subprocess
import sys

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.nn import functional as F

import attention_core as ac
from attention_core import triton_attention as ta

INTERPRETED_HERE = ta.use_interpreter()  # conftest.py called it already, before any test


@pytest.fixture
def interpreter():
    """Triton's interpreter on, for a kernel test on CPU tensors."""
    if not INTERPRETED_HERE:
        pytest.skip("triton is missing, or was imported for the GPU before this file could "
                    "switch its interpreter on (test_in_a_fresh_process runs these tests then)")


def reference(q, k, v, mask=None, is_causal=False):
    """torch's SDPA, with the mask and the causal mask combined (it takes one or the other)."""
    if is_causal:
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask = causal if mask is None else mask & causal
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                          enable_gqa=q.dim() == 4 and q.shape[1] != k.shape[1])


def qkv(batch, heads, kv_heads, n_q, n_k, d, d_v=None, requires_grad=False):
    """queries (B, [h,] n_q, d), keys (B, [h_kv,] n_k, d), values (B, [h_kv,] n_k, d_v)."""
    q_heads, kv = ((heads,), (kv_heads,)) if heads else ((), ())
    return tuple(torch.randn(batch, *h, n, e, requires_grad=requires_grad)
                 for h, n, e in ((q_heads, n_q, d), (kv, n_k, d), (kv, n_k, d_v or d)))


def padding(batch, n_q, n_k, lengths, empty_row=None):
    """A boolean mask (B, 1, n_q, n_k): sequence b has lengths[b] keys; ``empty_row`` of
    sequence 0 sees none."""
    mask = (torch.arange(n_k) < torch.tensor(lengths)[:, None])[:, None, None, :]
    mask = mask.expand(batch, 1, n_q, n_k).clone()
    if empty_row is not None:
        mask[0, 0, empty_row] = False
    return mask


# (name, (B, h or None, h_kv, n_q, n_k, d, d_v), mask kind, is_causal); blocks of 16 below, so
# every case crosses several tiles of queries and keys and ends in a partial one
CASES = [
    ("no heads, d 16", (2, None, None, 37, 37, 16, None), None, False),
    ("causal, n_q != n_k, d 48", (2, 2, 2, 37, 45, 48, None), None, True),
    ("grouped heads, causal, n_q > n_k, d 32", (1, 4, 2, 45, 37, 32, None), None, True),
    ("padding, a query with no key, d 64", (2, 2, 2, 33, 40, 64, None), "bool", False),
    ("multi-query, padding, causal, d_v != d", (2, 4, 1, 40, 33, 16, 32), "bool", True),
    ("float additive mask, grouped heads", (2, 4, 2, 35, 42, 32, None), "float", False),
]


def make_mask(kind, batch, heads, n_q, n_k):
    if kind == "bool":
        mask = padding(batch, n_q, n_k, [n_k - 5, 9][:batch], empty_row=3)
        return mask if heads else mask[:, 0]
    if kind == "float":  # broadcast over batch and heads; -inf entries, a row that is all -inf
        mask = torch.randn(n_q, n_k)
        mask[:, ::3] = float("-inf")
        mask[5] = float("-inf")
        return mask
    return None


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equals_sdpa(case, interpreter):
    _, (B, h, h_kv, n_q, n_k, d, d_v), kind, causal = case
    q, k, v = qkv(B, h, h_kv, n_q, n_k, d, d_v)
    mask = make_mask(kind, B, h, n_q, n_k)
    out, weights = ta._triton_backend(q, k, v, mask, is_causal=causal, block_m=16, block_n=16)
    assert weights is None
    torch.testing.assert_close(out, reference(q, k, v, mask, causal), atol=2e-5, rtol=1e-5)
    if kind is not None:  # the query with no key gets zeros, not NaN
        row = 5 if kind == "float" else 3
        assert out[0, ..., row, :].abs().max() == 0


@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(batch=st.integers(1, 2), heads=st.sampled_from([(0, 0), (1, 1), (2, 1), (4, 2)]),
       n_q=st.integers(1, 40), n_k=st.integers(1, 40), d=st.integers(1, 64),
       causal=st.booleans(), data=st.data())
def test_property_equals_sdpa(batch, heads, n_q, n_k, d, causal, data):
    if not INTERPRETED_HERE:
        pytest.skip("triton's interpreter is off in this process")
    (h, h_kv) = heads
    q, k, v = qkv(batch, h, h_kv, n_q, n_k, d)
    lengths = data.draw(st.lists(st.integers(0, n_k), min_size=batch, max_size=batch))
    mask = padding(batch, n_q, n_k, lengths)
    mask = mask if h else mask[:, 0]
    out, _ = ta._triton_backend(q, k, v, mask, is_causal=causal, block_m=16, block_n=16)
    torch.testing.assert_close(out, reference(q, k, v, mask, causal), atol=2e-5, rtol=1e-5)


def test_attend_backend_with_its_default_blocks(interpreter):
    """Through attend, blocks of 64: a partial second tile of queries and of keys."""
    q, k, v = qkv(1, 2, 2, 70, 90, 32)
    mask = padding(1, 70, 90, [80])
    out, _ = ac.attend(q, k, v, mask, is_causal=True, backend="triton")
    torch.testing.assert_close(out, reference(q, k, v, mask, True), atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(ta.triton_attention(q, k, v, scale=0.3),
                               F.scaled_dot_product_attention(q, k, v, scale=0.3),
                               atol=2e-5, rtol=1e-5)


def test_gradients_equal_sdpas(interpreter):
    """The backward is efficient._chunked_backward, from the kernel's saved lse: padding, a
    query with no key, causal, grouped heads."""
    q, k, v = qkv(2, 4, 2, 21, 27, 16, requires_grad=True)
    mask = padding(2, 21, 27, [20, 9], empty_row=3)
    grad = torch.randn(2, 4, 21, 16)
    out, _ = ac.attend(q, k, v, mask, is_causal=True, backend="triton")
    got = torch.autograd.grad(out, (q, k, v), grad)
    expected = torch.autograd.grad(ac.attend(q, k, v, mask, is_causal=True, backend="sdpa")[0],
                                   (q, k, v), grad)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("backend", ["triton", "chunked"])
def test_half_precision_gradients_are_float32_sdpas_rounded(interpreter, backend):
    """float16 inputs: the backward loop runs in float32 (a float16 P met the float32 lse and
    the products failed on CUDA) and returns float16 gradients, those of float32 SDPA on the
    same rounded inputs to within float16's precision."""
    q, k, v = (t.half() for t in qkv(2, 4, 2, 33, 40, 16))
    mask = padding(2, 33, 40, [31, 12])
    grad = torch.randn(2, 4, 33, 16).half()
    half = [t.clone().requires_grad_() for t in (q, k, v)]
    got = torch.autograd.grad(ac.attend(*half, mask, is_causal=True, backend=backend)[0], half,
                              grad)
    exact = [t.float().requires_grad_() for t in (q, k, v)]
    expected = torch.autograd.grad(reference(*exact, mask, is_causal=True), exact, grad.float())
    for g, e in zip(got, expected):
        assert g.dtype == torch.float16
        torch.testing.assert_close(g.float(), e, atol=5e-3, rtol=5e-3)


def test_gradient_of_a_float_mask_equals_sdpas(interpreter):
    q, k, v = qkv(2, None, None, 19, 23, 16, requires_grad=True)
    mask = torch.randn(19, 23, requires_grad=True)
    grad = torch.randn(2, 19, 16)
    got = torch.autograd.grad(ta._triton_backend(q, k, v, mask)[0], (q, k, v, mask), grad)
    expected = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                                   (q, k, v, mask), grad)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-5)


def test_meta_gives_shapes_without_running_the_kernel():
    q, k, v = (torch.empty(2, 4, n, e, device="meta") for n, e in ((5, 16), (7, 16), (7, 24)))
    out, _ = ac.attend(q, k[:, :2], v[:, :2], is_causal=True, backend="triton")
    assert out.shape == (2, 4, 5, 24) and out.device.type == "meta"


# ---- the clear errors ------------------------------------------------------------------------
def test_dropout_is_refused():
    q, k, v = qkv(1, None, None, 3, 4, 16)
    with pytest.raises(ValueError, match="no dropout"):
        ac.attend(q, k, v, dropout_p=0.1, backend="triton")


@pytest.mark.parametrize("dtype, d, error, match", [
    (torch.float64, 16, TypeError, "float16, bfloat16 or float32"),
    (torch.float32, 129, ValueError, "up to 128"),
])
def test_what_the_kernel_does_not_take(dtype, d, error, match):
    q = torch.randn(1, 3, d, dtype=dtype)
    with pytest.raises(error, match=match):
        ta.triton_attention(q, q, q)


def test_the_door_checks_shapes():
    with pytest.raises(ValueError, match="mask of shape"):
        ta.triton_attention(*qkv(2, None, None, 3, 4, 16), torch.ones(3, 3, dtype=torch.bool))


def test_cpu_tensors_without_the_interpreter(monkeypatch):
    pytest.importorskip("triton")
    monkeypatch.setattr(ta, "_interpreting", lambda triton: False)
    with pytest.raises(RuntimeError, match="CUDA tensors, or on CPU tensors under Triton's "
                                           "interpreter: set TRITON_INTERPRET=1"):
        ac.attend(*qkv(1, None, None, 3, 4, 16), backend="triton")


def test_the_mode_triton_was_imported_in_holds(interpreter, monkeypatch):
    """TRITON_INTERPRET changed after triton's import: the kernel still runs as triton.language
    does (its own functions were jitted then), and the variable is left as it was."""
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    q, k, v = qkv(1, None, None, 5, 6, 16)
    torch.testing.assert_close(ta.triton_attention(q, k, v), reference(q, k, v),
                               atol=2e-5, rtol=1e-5)
    assert os.environ["TRITON_INTERPRET"] == "0"


@pytest.mark.slow
def test_importing_attention_core_imports_no_triton():
    run = _run("import sys, attention_core; print('triton' in sys.modules)", {})
    assert run.stdout.strip() == "False", run.stderr[-3000:]


def test_without_triton(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # `import triton` raises ImportError
    with pytest.raises(RuntimeError, match="needs the triton package"):
        ac.attend(*qkv(1, None, None, 3, 4, 16), backend="triton")


# ---- where this process cannot interpret, and on a GPU ----------------------------------------
def _run(code_or_args, env):
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | env
    args = code_or_args if isinstance(code_or_args, list) else ["-c", code_or_args]
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=environment)


def test_in_a_fresh_process():
    if INTERPRETED_HERE or "triton.language" not in sys.modules:
        pytest.skip("the kernel tests ran in this process (or triton is missing)")
    run = _run(["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist", __file__],
               {"TRITON_INTERPRET": "1"})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_compiled_for_the_gpu():
    """The kernel compiled (no interpreter) on CUDA tensors, float32 and float16."""
    code = """if True:
        import torch
        from torch.nn import functional as F
        import attention_core as ac
        for dtype, tol in ((torch.float32, 1e-4), (torch.float16, 3e-3)):
            q, k, v = (torch.randn(2, 4, n, 48, device="cuda", dtype=dtype, requires_grad=True)
                       for n in (100, 130, 130))
            mask = torch.rand(2, 1, 100, 130, device="cuda") > 0.3
            out, _ = ac.attend(q, k, v, mask, backend="triton")
            ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            torch.testing.assert_close(out, ref, atol=tol, rtol=tol)
            grads = torch.autograd.grad(out.sum(), (q, k, v))
            for g, e in zip(grads, torch.autograd.grad(ref.sum(), (q, k, v))):
                torch.testing.assert_close(g, e, atol=10 * tol, rtol=10 * tol)
            k2, v2 = k[:, :2], v[:, :2]
            out, _ = ac.attend(q, k2, v2, is_causal=True, backend="triton")
            ref = F.scaled_dot_product_attention(q, k2, v2, is_causal=True, enable_gqa=True)
            torch.testing.assert_close(out, ref, atol=tol, rtol=tol)
        print("ok")
    """
    run = _run(code, {})
    assert run.stdout.strip() == "ok", run.stdout[-3000:] + run.stderr[-3000:]
