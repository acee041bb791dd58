"""FlashAttention-2's forward pass written in Triton: the algorithm of
``efficient._chunked_forward`` once more, as one program per tile of queries instead of a loop
over tensors.

``efficient._chunked_forward`` loops over blocks of queries and, inside, over blocks of keys,
folding each (block, block) tile of scores into a running maximum m, a running sum l and a running
output acc (the online softmax). Here the outer loop is gone: Triton launches one program per
(block of BLOCK_M queries, batch * head), all at once, and each program runs the inner loop over
blocks of BLOCK_N keys itself, holding its m, l and acc in registers. It writes the output and,
per query, the log-sum-exp lse = m + log l, from which a backward pass recomputes any tile of
weights as P = exp(S - lse) without storing the (n_q, n_k) matrix.

The backward pass is ``efficient._chunked_backward``, the PyTorch tile loop run backwards; the
forward and that backward are joined into one differentiable operator with ``torch.library``,
which also gives the ``meta`` device and ``torch.compile`` a shape-only version of it.

Where it runs: on CUDA tensors, compiled for the GPU; or on CPU tensors under Triton's
interpreter (``TRITON_INTERPRET=1``), which runs each program in NumPy -- slowly, but the same
code, which is how the tests check it. Triton chooses between the two when ``triton.language``
is first imported (it jits its own functions, tl.zeros, tl.sum, ..., then) and at each
``@triton.jit``: set the variable before anything imports triton, or call ``use_interpreter()``.
``import attention_core`` does not import triton: the kernel is handed to ``triton.jit`` at its
first launch, in the mode triton was imported in.

Also the attention core's "triton" backend: ``attend(..., backend="triton")``.
"""
from __future__ import annotations

import math
import os
import sys

import torch

from .attention import BACKENDS, share_kv_heads
from .contracts import contract, grouped_heads, require, scores_mask

__all__ = ["triton_attention", "use_interpreter", "flash_attention_kernel"]

BLOCK_M = 64        # queries per program
BLOCK_N = 64        # keys per tile of the inner loop
MAX_HEAD_SIZE = 128  # d and d_v, padded to a power of two >= 16 inside the kernel
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_BACKWARD_BLOCK = 128  # the tile size of the PyTorch backward pass

# What this kernel handles: float16, bfloat16 or float32; d and d_v up to 128; no dropout
KERNEL_LIMITS = [
    require(lambda queries: queries.dtype in DTYPES,
            lambda q: f"backend 'triton' takes float16, bfloat16 or float32 tensors, got "
            f"{q.dtype}", TypeError),
    require(lambda queries, values: max(queries.shape[-1], values.shape[-1]) <= MAX_HEAD_SIZE,
            lambda q, v: f"backend 'triton' takes head sizes d, d_v up to {MAX_HEAD_SIZE}, got "
            f"queries {tuple(q.shape)} and values {tuple(v.shape)}"),
    require(lambda dropout_p: dropout_p == 0,
            "the triton backend applies no dropout to the weights: use backend='math' or "
            "'sdpa' in training with dropout")]

tl = None  # triton.language, imported at the kernel's first launch (see _JitAtFirstUse)


def _import_triton():
    """triton, or a clear error where it is not installed."""
    try:
        import triton
        import triton.language
    except ImportError as error:
        raise RuntimeError("backend 'triton' needs the triton package, which torch's Linux "
                           "wheel brings (pip install triton elsewhere)") from error
    return triton


def _interpreting(triton) -> bool:
    """Whether Triton runs kernels in its interpreter in this process. Triton reads its knob
    (TRITON_INTERPRET, unless set in Python) at each ``@triton.jit``, and first when
    triton.language is imported, to jit its own functions (tl.zeros, tl.sum, ...): that first
    reading decides, since a kernel must run as the functions it calls do."""
    return type(triton.language.zeros).__name__ == "InterpretedFunction"


def use_interpreter() -> bool:
    """Run the kernel in Triton's interpreter, on CPU tensors (and on CUDA tensors, copied):
    import triton under TRITON_INTERPRET=1, unless it is imported already. Call it before
    anything imports triton (torch.compile may). True if kernels run in the interpreter; the
    variable is restored, so processes started later choose for themselves."""
    if "triton.language" not in sys.modules:
        before = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            import triton.language  # noqa: F401
        except ImportError:
            return False
        finally:
            if before is None:
                del os.environ["TRITON_INTERPRET"]
            else:
                os.environ["TRITON_INTERPRET"] = before
    return _interpreting(sys.modules["triton"])


class _JitAtFirstUse:
    """``@triton.jit``, applied at the first launch rather than at import, in the mode triton
    was imported in: compiled for the GPU, or run by the interpreter (TRITON_INTERPRET=1).
    ``kernel[grid](...)`` launches it."""

    def __init__(self, fn):
        self.fn = fn
        self.jitted = None

    def __getitem__(self, grid):
        global tl
        triton = _import_triton()
        tl = triton.language                    # the kernel's `tl`, looked up in this module
        return lambda *args, **kwargs: self._launch(triton, grid, *args, **kwargs)

    def _launch(self, triton, grid, *args, **kwargs):
        interpret = _interpreting(triton)
        if bool(triton.knobs.runtime.interpret) != interpret:
            # TRITON_INTERPRET changed since triton was imported: jit and run as it was then
            with triton.knobs.runtime.scope():
                triton.knobs.runtime.interpret = interpret
                return self._launch(triton, grid, *args, **kwargs)
        if self.jitted is None:
            self.jitted = triton.jit(self.fn)
        return self.jitted[grid](*args, **kwargs)


# ---- the kernel: one program per (block of queries, batch * head) ----------------------------
@_JitAtFirstUse
def flash_attention_kernel(
        Q, K, V, Out, Lse, Mask,                # q (Z, H, n_q, d), k (Z, H_kv, n_k, d), v (.., d_v)
        mask_stride_z, mask_stride_h, mask_stride_m, mask_stride_n,  # 0 where the mask broadcasts
        H, H_kv, n_q, n_k, d, d_v, scale,
        HAS_MASK: tl.constexpr, MASK_IS_BOOL: tl.constexpr, IS_CAUSAL: tl.constexpr,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
        BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr):
    start = tl.program_id(0) * BLOCK_M           # this program's first query
    zh = tl.program_id(1)                        # which (batch, head)
    z, h = zh // H, zh % H
    zh_kv = z * H_kv + h // (H // H_kv)          # grouped heads: head h reads kv head h // group
    rows = start + tl.arange(0, BLOCK_M)         # query positions        (BLOCK_M,)
    cols0 = tl.arange(0, BLOCK_N)                # key positions in a tile (BLOCK_N,)
    dims, dims_v = tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_DV)  # features, padded
    row_ok = rows < n_q

    q = tl.load(Q + (zh * n_q + rows[:, None]) * d + dims[None, :],
                mask=row_ok[:, None] & (dims[None, :] < d), other=0.0)        # (BLOCK_M, BLOCK_D)
    # running state of each query: start m below every score but finite, so that a query that
    # has seen only masked keys computes e^(-inf - m) = 0, never e^(-inf + inf) = nan
    m = tl.full([BLOCK_M], -3.4028234663852886e38, tl.float32)   # running max   (float32 min)
    l = tl.zeros([BLOCK_M], tl.float32)                         # running sum
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)             # running sum of P V

    # causal: query i sees keys j <= i, so no key after this block's last query is visible
    end = tl.minimum(n_k, start + BLOCK_M) if IS_CAUSAL else n_k
    for k0 in range(0, end, BLOCK_N):            # the inner loop over tiles of keys
        cols = k0 + cols0
        col_ok = cols < n_k
        k = tl.load(K + (zh_kv * n_k + cols[:, None]) * d + dims[None, :],
                    mask=col_ok[:, None] & (dims[None, :] < d), other=0.0)    # (BLOCK_N, BLOCK_D)
        v = tl.load(V + (zh_kv * n_k + cols[:, None]) * d_v + dims_v[None, :],
                    mask=col_ok[:, None] & (dims_v[None, :] < d_v), other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale  # S = Q K^T * scale
        visible = row_ok[:, None] & col_ok[None, :]                 # (BLOCK_M, BLOCK_N)
        if HAS_MASK:  # the mask's tile, read through its strides
            mask_tile = tl.load(Mask + z * mask_stride_z + h * mask_stride_h
                                + rows[:, None] * mask_stride_m + cols[None, :] * mask_stride_n,
                                mask=visible, other=0)
            if MASK_IS_BOOL:
                visible = visible & (mask_tile != 0)                     # True = may attend
            else:
                s = s + mask_tile.to(tl.float32)                         # added to the scores
        if IS_CAUSAL:
            visible = visible & (rows[:, None] >= cols[None, :])
        s = tl.where(visible, s, float("-inf"))

        m_new = tl.maximum(m, tl.max(s, 1))      # m_new = max(m, rowmax(S))
        alpha = tl.exp(m - m_new)                # alpha = e^(m - m_new): rescales what came before
        p = tl.exp(s - m_new[:, None])           # P = e^(S - m_new), 0 where masked
        l = alpha * l + tl.sum(p, 1)             # l = alpha l + rowsum(P)
        acc = alpha[:, None] * acc + tl.dot(p.to(v.dtype), v, input_precision="ieee")  # + P V
        m = m_new

    seen = l > 0                                 # a query with no visible key: l = 0, acc = 0
    l = tl.where(seen, l, 1.0)
    out = acc / l[:, None]                       # O = acc / l (zeros for a query with no key)
    tl.store(Out + (zh * n_q + rows[:, None]) * d_v + dims_v[None, :], out.to(q.dtype),
             mask=row_ok[:, None] & (dims_v[None, :] < d_v))
    # lse = m + log l, for the backward's P = e^(S - lse); +inf for a query with no key (P = 0)
    tl.store(Lse + zh * n_q + rows, tl.where(seen, m + tl.log(l), float("inf")), mask=row_ok)


# ---- the host side: shapes in, one launch, shapes out -----------------------------------------
def _as_4d(x):
    """(B, [h...,] n, e) -> a contiguous (Z, H, n, e): no heads is one head; more leading axes
    are folded into Z."""
    x = x.unsqueeze(-3) if x.dim() == 3 else x.reshape(-1, *x.shape[-3:])
    return x.contiguous()


def _launch(queries, keys, values, mask, is_causal, scale, block_m, block_n):
    """Run the kernel: returns out (queries.shape[:-1], d_v) and lse (queries.shape[:-1])."""
    triton = _import_triton()
    if queries.device.type != "cuda" and not _interpreting(triton):
        raise RuntimeError("backend 'triton' runs on CUDA tensors, or on CPU tensors under "
                           "Triton's interpreter: set TRITON_INTERPRET=1 before triton is "
                           "first imported (Triton decides then), e.g. at the start of the "
                           "process")
    q, k, v = _as_4d(queries), _as_4d(keys), _as_4d(values)
    (Z, H, n_q, d), (H_kv, n_k), d_v = q.shape, k.shape[1:3], v.shape[-1]
    out = q.new_empty(Z, H, n_q, d_v)
    lse = q.new_empty(Z, H, n_q, dtype=torch.float32)
    if out.numel() == 0:
        return out.reshape(*queries.shape[:-1], d_v), lse.reshape(queries.shape[:-1])
    if mask is None:
        mask4, strides = q, (0, 0, 0, 0)        # a placeholder pointer, never read
    else:
        mask4 = mask.expand(*queries.shape[:-1], n_k)  # broadcast axes get stride 0, no copy
        mask4 = mask4.unsqueeze(-3) if mask4.dim() == 3 else mask4.reshape(-1, *mask4.shape[-3:])
        if mask4.dtype == torch.bool:
            mask4 = mask4.view(torch.uint8)     # same bytes, read as 0 / 1
        strides = mask4.stride()
    block_d, block_dv = (max(16, triton.next_power_of_2(e)) for e in (d, d_v))  # tl.dot: >= 16
    # float32 tiles take twice the shared memory: with fewer tiles in flight (stages) a d = 128
    # kernel stays under the 99 KB that every GPU since sm_80 has
    stages = 1 if q.element_size() == 4 and max(block_d, block_dv) > 64 else 2
    grid = (triton.cdiv(n_q, block_m), Z * H)
    flash_attention_kernel[grid](
        q, k, v, out, lse, mask4, *strides, H, H_kv, n_q, n_k, d, d_v, scale,
        HAS_MASK=mask is not None, MASK_IS_BOOL=mask is not None and mask.dtype == torch.bool,
        IS_CAUSAL=is_causal, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_D=block_d,
        BLOCK_DV=block_dv, num_warps=4, num_stages=stages)
    return out.reshape(*queries.shape[:-1], d_v), lse.reshape(queries.shape[:-1])


# ---- one differentiable operator: the Triton forward, the PyTorch tile-loop backward ----------
@torch.library.custom_op("attention_core::flash_attention", mutates_args=())
def _flash_attention(queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                     mask: torch.Tensor | None, is_causal: bool, scale: float,
                     block_m: int, block_n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _launch(queries, keys, values, mask, is_causal, scale, block_m, block_n)


@_flash_attention.register_fake
def _(queries, keys, values, mask, is_causal, scale, block_m, block_n):
    """Shapes only (the meta device, torch.compile's tracing): out and lse, never computed."""
    out = queries.new_empty(*queries.shape[:-1], values.shape[-1])
    return out, queries.new_empty(queries.shape[:-1], dtype=torch.float32)


def _setup_context(ctx, inputs, output):
    queries, keys, values, mask, is_causal, scale, _, _ = inputs
    ctx.save_for_backward(queries, keys, values, mask, *output)
    ctx.is_causal, ctx.scale = is_causal, scale


def _backward(ctx, grad_out, grad_lse):
    """The PyTorch tile loop run backwards, from the saved lse (grad_lse: lse is not an output
    anyone differentiates)."""
    from .efficient import _chunked_backward
    queries, keys, values, mask, out, lse = ctx.saved_tensors
    # the kernel reads grouped key/value heads in place; the backward loop wants one per query
    # head, so it gets copies and each group's gradients are summed back onto its shared head
    keys_full, values_full = share_kv_heads(queries, keys, values)
    grad_q, grad_k, grad_v, grad_mask = _chunked_backward(
        queries, keys_full, values_full, mask, out, lse, grad_out, is_causal=ctx.is_causal,
        scale=ctx.scale, block_size=_BACKWARD_BLOCK)
    if keys_full is not keys:
        grad_k = grad_k.unflatten(-3, (keys.shape[-3], -1)).sum(-3)
        grad_v = grad_v.unflatten(-3, (values.shape[-3], -1)).sum(-3)
    return grad_q, grad_k, grad_v, grad_mask, None, None, None, None


_flash_attention.register_autograd(_backward, setup_context=_setup_context)


@contract(where=KERNEL_LIMITS)
def _triton_backend(queries, keys, values, mask=None, *, is_causal=False, scale=None,
                    dropout_p=0.0, block_m=BLOCK_M, block_n=BLOCK_N):
    """The "triton" backend of ``attend``: (output, None); it never writes the weights."""
    scale = 1.0 / math.sqrt(queries.shape[-1]) if scale is None else float(scale)
    out, _ = _flash_attention(queries, keys, values, mask, is_causal, scale, block_m, block_n)
    return out, None


BACKENDS["triton"] = _triton_backend


@contract(queries="B *h n_q d", keys="B *h_kv n_k d", values="B *h_kv n_k d_v",
          mask=scores_mask, where=[grouped_heads])
def triton_attention(queries, keys, values, mask=None, *, is_causal: bool = False,
                     scale=None) -> torch.Tensor:
    """Exact scaled dot-product attention, FlashAttention-2's forward in Triton.

    queries (B, *h, n_q, d), keys (B, *h_kv, n_k, d), values (B, *h_kv, n_k, d_v), h_kv
    dividing h (grouped heads, read in place); mask None, boolean (True = may attend) or float
    (added to the scores), broadcastable to (B, *h, n_q, n_k); is_causal: query i sees keys
    j <= i. float16, bfloat16 or float32; d, d_v <= 128. CUDA tensors, or CPU tensors under
    TRITON_INTERPRET=1. Differentiable (the backward is PyTorch's tile loop). Returns
    (B, *h, n_q, d_v); a query with no key to attend to gets zeros.
    """
    return _triton_backend(queries, keys, values, mask, is_causal=is_causal, scale=scale)[0]
