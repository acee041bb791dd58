"""Attention at long lengths: the online softmax, exact attention tile by tile (as FlashAttention
computes it, in plain PyTorch), sliding-window attention and linear attention.

Exact attention over n keys needs an (n_q, n_k) score matrix if computed in one go: 4 GB in
float32 at 32k tokens. ``chunked_attention`` computes the same result from (block, block) tiles,
keeping for each query only a running maximum, a running sum and a running output (the online
softmax of Milakov & Gimelshein, 2018), so its extra memory grows linearly in n. It is a
``torch.autograd.Function``: the forward saves only the inputs, the output and each query's
log-sum-exp L, and the backward recomputes every tile's weights as exp(S - L) (FlashAttention's
recomputation), so training keeps O(n) memory too. It is also the attention core's "chunked"
backend.

``sliding_window_attention`` lets each query see the keys within ``window`` positions (the last
``window`` for causal attention), computed block by block, so time and memory grow linearly in n.
``linear_attention`` (Katharopoulos et al., 2020) replaces exp(q.k) by phi(q).phi(k) with
phi = elu + 1, which lets the sum over keys be computed once: O(n) time and memory.
"""
from __future__ import annotations

import math

import torch
from torch.nn import functional as F

from .attention import BACKENDS, share_kv_heads
from .contracts import contract, grouped_heads, lengths, positive_int, require, scores_mask
from .masking import masked_softmax, padding_mask

__all__ = ["softmax_statistics", "online_softmax", "chunked_attention",
           "sliding_window_attention", "linear_attention"]


# ---- the online softmax ----------------------------------------------------------------
@contract(x="*lead n", block_size=positive_int)
def softmax_statistics(x: torch.Tensor, block_size: int = 128):
    """x (*lead, n): one pass over the last axis in blocks, the running maximum m and the sum
    l = sum_j exp(x_j - m), rescaled whenever the maximum grows:
    l <- l * exp(m_old - m_new) + sum_block exp(x_j - m_new). Returns (m, l), each (...,)."""
    # start below every score, not at -inf: a first block of masked (-inf) scores would
    # otherwise give exp(-inf - (-inf)) = nan
    m = torch.full(x.shape[:-1], torch.finfo(x.dtype).min, dtype=x.dtype, device=x.device)
    l = torch.zeros(x.shape[:-1], dtype=x.dtype, device=x.device)                # (...,)
    for start in range(0, x.shape[-1], block_size):
        block = x[..., start:start + block_size]                                  # (..., b)
        m_new = torch.maximum(m, block.amax(-1))
        l = l * torch.exp(m - m_new) + torch.exp(block - m_new[..., None]).sum(-1)
        m = m_new
    return m, l


@contract(x="*lead n", block_size=positive_int)
def online_softmax(x: torch.Tensor, block_size: int = 128) -> torch.Tensor:
    """The softmax of x (*lead, n) over its last axis from the streamed statistics:
    exp(x - m) / l."""
    m, l = softmax_statistics(x, block_size)
    return torch.exp(x - m[..., None]) / l[..., None]


# ---- exact attention, tile by tile -------------------------------------------------------
def _tile(mask, q_slice, k_slice):
    """The part of a broadcastable mask (..., n_q or 1, n_k or 1) that covers one tile."""
    rows = q_slice if mask.shape[-2] > 1 else slice(None)
    cols = k_slice if mask.shape[-1] > 1 else slice(None)
    return mask[..., rows, cols]


def _online_step(m, l, acc, s, v):
    """Fold one tile into a block of queries' running state: scores s (..., bq, bk) and the
    tile's values v (..., bk, d_v) into the running maximum m (..., bq), the running sum l
    (..., bq) and the running weighted sum of values acc (..., bq, d_v)."""
    m_new = torch.maximum(m, s.amax(-1))            # (..., bq)
    alpha = torch.exp(m - m_new)                    # (..., bq): rescales what came before
    p = torch.exp(s - m_new[..., None])             # (..., bq, bk): 0 where s is masked
    l = alpha * l + p.sum(-1)                       # (..., bq)
    acc = alpha[..., None] * acc + p @ v            # (..., bq, d_v)
    return m_new, l, acc


def _chunked_forward(queries, keys, values, mask=None, *, is_causal=False, scale=None,
                     block_size=256):
    """Exact attention, tile by tile: for each block of queries, a pass over the blocks of keys
    that folds each tile in with _online_step, then output = acc / l. Returns the output and,
    for the backward pass, each query's log-sum-exp L = m + log l (+inf for a query that sees no
    key, so that exp(s - L) = 0 for it)."""
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    scale = 1.0 / math.sqrt(queries.shape[-1]) if scale is None else scale
    out = queries.new_empty(*queries.shape[:-1], values.shape[-1])      # (..., n_q, d_v)
    lse = queries.new_empty(queries.shape[:-1])                         # (..., n_q)
    for q0 in range(0, n_q, block_size):                                # queries outside
        q1 = min(q0 + block_size, n_q)
        q = queries[..., q0:q1, :] * scale                              # (..., bq, d)
        # start below every score, not at -inf, so that a row that has seen only masked keys
        # computes exp(-inf) = 0 and never exp(-inf - (-inf)) = nan
        m = q.new_full(q.shape[:-1], torch.finfo(q.dtype).min)          # (..., bq) running max
        l = q.new_zeros(q.shape[:-1])                                   # (..., bq) running sum
        acc = q.new_zeros(*q.shape[:-1], values.shape[-1])              # (..., bq, d_v)
        for k0, k1 in _key_blocks(q0, q1, n_k, block_size, is_causal):  # keys inside
            s = _tile_scores(q, keys[..., k0:k1, :], mask, q0, q1, k0, k1, is_causal)  # S
            m, l, acc = _online_step(m, l, acc, s, values[..., k0:k1, :])
        # a query that saw no key keeps l = 0: its output is 0, as on every backend
        seen = l > 0
        out[..., q0:q1, :] = torch.where(seen[..., None], acc / l.clamp_min(1e-30)[..., None], 0.0)
        lse[..., q0:q1] = torch.where(seen, m + torch.log(l.clamp_min(1e-30)), float("inf"))
    return out, lse


def _key_blocks(q0, q1, n_k, block_size, is_causal):
    """The (start, end) of every key block that queries q0..q1-1 may see: with a causal mask
    query i sees keys j <= i, so key blocks that start after q1 - 1 are skipped."""
    k_end = min(n_k, q1) if is_causal else n_k
    return [(k0, min(k0 + block_size, n_k)) for k0 in range(0, k_end, block_size)]


def _tile_scores(q, k, mask, q0, q1, k0, k1, is_causal):
    """One tile of scores S = q k^T (q already scaled), (..., bq, bk), with the mask's tile
    applied: a float mask is added, a boolean one (and the causal mask) sets hidden scores
    to -inf."""
    s = q @ k.transpose(-2, -1)                                         # (..., bq, bk)
    allowed = None
    if mask is not None:
        tile = _tile(mask, slice(q0, q1), slice(k0, k1))                # (..., bq or 1, bk or 1)
        if mask.dtype == torch.bool:
            allowed = tile
        else:
            s = s + tile
    if is_causal and k1 - 1 > q0:                                       # a tile on the diagonal
        causal = (torch.arange(q0, q1, device=s.device)[:, None]
                  >= torch.arange(k0, k1, device=s.device))            # (bq, bk)
        allowed = causal if allowed is None else allowed & causal
    return s if allowed is None else s.masked_fill(~allowed, float("-inf"))


def _chunked_backward(queries, keys, values, mask, out, lse, grad_out, *, is_causal=False,
                      scale=None, block_size=256):
    """The backward pass of tiled attention, tile by tile, from the saved output and L.

    Each tile's weights are recomputed as P = exp(S - L); then, with D = rowsum(dO * O),
    dV += P^T dO, dP = dO V^T, dS = P * (dP - D), dQ += dS K, dK += dS^T Q (scaled).
    Returns (dQ, dK, dV, d_mask), d_mask None unless mask is a float mask that needs a
    gradient (it is dS, summed to the mask's shape).
    """
    n_q, n_k = queries.shape[-2], keys.shape[-2]
    scale = 1.0 / math.sqrt(queries.shape[-1]) if scale is None else scale
    # half-precision inputs: the loop runs in float32 (as FlashAttention's backward does), and
    # its P = exp(S - L) then meets a float32 L, whatever dtype the forward saved L in
    dtypes = queries.dtype, keys.dtype, values.dtype
    work = torch.promote_types(queries.dtype, torch.float32)
    queries, keys, values, out, lse, grad_out = (
        t.to(work) for t in (queries, keys, values, out, lse, grad_out))
    delta = (grad_out * out).sum(-1)                                    # D: (..., n_q)
    grad_q = torch.zeros_like(queries)
    grad_k, grad_v = torch.zeros_like(keys), torch.zeros_like(values)
    grad_mask = torch.zeros_like(mask) if mask is not None and mask.requires_grad else None
    for q0 in range(0, n_q, block_size):
        q1 = min(q0 + block_size, n_q)
        q = queries[..., q0:q1, :] * scale                              # (..., bq, d)
        do = grad_out[..., q0:q1, :]                                    # (..., bq, d_v)
        L, D = lse[..., q0:q1, None], delta[..., q0:q1, None]           # (..., bq, 1)
        for k0, k1 in _key_blocks(q0, q1, n_k, block_size, is_causal):
            k, v = keys[..., k0:k1, :], values[..., k0:k1, :]
            s = _tile_scores(q, k, mask, q0, q1, k0, k1, is_causal)
            p = torch.exp(s - L)                        # (..., bq, bk): the forward's weights
            grad_v[..., k0:k1, :] += p.transpose(-2, -1) @ do
            ds = p * (do @ v.transpose(-2, -1) - D)     # dS = P * (dP - D)
            grad_q[..., q0:q1, :] += ds @ k * scale
            grad_k[..., k0:k1, :] += ds.transpose(-2, -1) @ q            # q holds the scale
            if grad_mask is not None:
                tile = _tile(grad_mask, slice(q0, q1), slice(k0, k1))
                tile += ds.sum_to_size(tile.shape)
    return grad_q.to(dtypes[0]), grad_k.to(dtypes[1]), grad_v.to(dtypes[2]), grad_mask


class _ChunkedAttention(torch.autograd.Function):
    """Tiled attention whose forward saves only the inputs, the output and L, and whose
    backward recomputes the tiles: O(n d) memory with autograd too."""

    @staticmethod
    def forward(ctx, queries, keys, values, mask, is_causal, scale, block_size):
        out, lse = _chunked_forward(queries, keys, values, mask, is_causal=is_causal,
                                    scale=scale, block_size=block_size)
        ctx.save_for_backward(queries, keys, values, mask, out, lse)
        ctx.is_causal, ctx.scale, ctx.block_size = is_causal, scale, block_size
        return out

    @staticmethod
    def backward(ctx, grad_out):
        queries, keys, values, mask, out, lse = ctx.saved_tensors
        grads = _chunked_backward(queries, keys, values, mask, out, lse, grad_out,
                                  is_causal=ctx.is_causal, scale=ctx.scale,
                                  block_size=ctx.block_size)
        return (*grads, None, None, None)


def _chunked(queries, keys, values, mask=None, *, is_causal=False, scale=None, block_size=256):
    """Tiled attention, differentiable: grouped heads are copied first (autograd sums each
    group's gradients back), then _ChunkedAttention."""
    keys, values = share_kv_heads(queries, keys, values)
    return _ChunkedAttention.apply(queries, keys, values, mask, is_causal, scale, block_size)


@contract(queries="B *h n_q d", keys="B *h_kv n_k d", values="B *h_kv n_k d_v",
          valid_lens=lengths(), mask=scores_mask, block_size=positive_int, where=[grouped_heads])
def chunked_attention(queries, keys, values, valid_lens=None, *, is_causal: bool = False,
                      mask=None, scale=None, block_size: int = 256) -> torch.Tensor:
    """Exact scaled dot-product attention from (block_size, block_size) tiles, differentiable.

    queries (B, *h, n_q, d), keys (B, *h_kv, n_k, d), values (B, *h_kv, n_k, d_v); valid_lens
    None | (B,) | (B, n_q); mask boolean (True = may attend) or float (added to the scores),
    broadcastable to (B, *h, n_q, n_k); is_causal: query i sees keys j <= i. Never holds more
    than one tile of scores, in the forward pass or the backward: extra memory
    O(n_q * (d_v + block_size)), not O(n_q * n_k); for the backward it keeps the output and one
    log-sum-exp per query. Tiles that the causal mask hides entirely are skipped. The default
    block, 256, fits a tile's working set (4 b d + b^2 float32 numbers at d = 64) in a 1 MiB L2
    cache. Returns (B, *h, n_q, d_v); a query with no key gets zeros, and zero gradients.
    """
    lens_mask = padding_mask(valid_lens, queries, keys.shape[-2])       # (B, 1.., 1|n_q, n_k)
    if lens_mask is not None:
        mask = lens_mask if mask is None else mask & lens_mask
    return _chunked(queries, keys, values, mask, is_causal=is_causal, scale=scale,
                    block_size=block_size)


@contract(where=[require(lambda dropout_p: dropout_p == 0, "the chunked backend applies no "
                         "dropout to the weights: use backend='math' or 'sdpa' in training with "
                         "dropout")])
def _chunked_backend(queries, keys, values, mask=None, *, is_causal=False, scale=None,
                     dropout_p=0.0):
    return _chunked(queries, keys, values, mask, is_causal=is_causal, scale=scale), None


BACKENDS["chunked"] = _chunked_backend


# ---- sliding windows --------------------------------------------------------------------
@contract(queries="B *h n d", keys="B *h_kv n d", values="B *h_kv n d_v", window=positive_int,
          valid_lens=lengths(per="B", upto="n"), where=[grouped_heads])
def sliding_window_attention(queries, keys, values, window: int, *, is_causal: bool = False,
                             valid_lens=None, scale=None) -> torch.Tensor:
    """Each query i attends to the keys j with ``|i - j| <= window`` (i - window <= j <= i when
    causal), for self-attention-shaped inputs: queries (B, *h, n, d), keys (B, *h_kv, n, d),
    values (B, *h_kv, n, d_v), h_kv dividing h.

    Queries are taken in blocks of ``window``; a block's keys lie in the block itself and the
    ones before and after it, so scores are (n / window) tiles of (window, 3 window): time and
    memory grow linearly in n. Returns (B, *h, n, d_v).
    """
    n = queries.shape[-2]
    keys, values = share_kv_heads(queries, keys, values)
    w = window
    scale = 1.0 / math.sqrt(queries.shape[-1]) if scale is None else scale
    blocks = -(-n // w)
    pad_end = blocks * w - n

    def windows(x):  # (..., n, e) -> (..., blocks, 3w, e): each block's keys, with w either side
        x = F.pad(x, (0, 0, w, w + pad_end))
        return x.unfold(-2, 3 * w, w).transpose(-2, -1)

    q = F.pad(queries, (0, 0, 0, pad_end)).unflatten(-2, (blocks, w))        # (..., blocks, w, d)
    kw, vw = windows(keys), windows(values)                                    # views, no copy
    lens = padding_mask(valid_lens, queries, n)                                # (B, 1.., 1, n)
    limit = None if lens is None else lens.sum(-1, keepdim=True)[..., None]    # (B, 1.., 1, 1, 1)
    # a group of blocks at a time, so the scores held never exceed ~1M numbers whatever n is
    group = max(1, 1_000_000 // (w * 3 * w * max(1, q[..., :1, :1, :1].numel())))
    outs = []
    for b0 in range(0, blocks, group):
        b1 = min(b0 + group, blocks)
        scores = q[..., b0:b1, :, :] @ kw[..., b0:b1, :, :].transpose(-2, -1) * scale
        i = torch.arange(b0 * w, b1 * w, device=q.device).view(b1 - b0, w, 1)  # query positions
        j = (torch.arange(b0, b1, device=q.device).view(-1, 1, 1) * w - w
             + torch.arange(3 * w, device=q.device))                            # key positions
        allowed = (j >= 0) & (j < n) & (j >= i - w) & ((j <= i) if is_causal else (j <= i + w))
        if limit is not None:
            allowed = allowed & (j < limit)
        weights = masked_softmax(scores, mask=allowed)              # no key: zeros
        outs.append(weights @ vw[..., b0:b1, :, :])
    return torch.cat(outs, dim=-3).flatten(-3, -2)[..., :n, :]


# ---- linear attention -------------------------------------------------------------------
@contract(queries="B *h n_q d", keys="B *h_kv n_k d", values="B *h_kv n_k d_v",
          chunk_size=positive_int, where=[grouped_heads])
def linear_attention(queries, keys, values, *, is_causal: bool = False, chunk_size: int = 64,
                     eps: float = 1e-6) -> torch.Tensor:
    """queries (B, *h, n_q, d), keys (B, *h_kv, n_k, d), values (B, *h_kv, n_k, d_v) -> (B, *h,
    n_q, d_v): attention with the kernel phi(q).phi(k), phi = elu + 1, in place of
    exp(q.k / sqrt(d)):
    out_i = phi(q_i)^T S / phi(q_i)^T z with S = sum_j phi(k_j) v_j^T and z = sum_j phi(k_j),
    over all j (or j <= i when causal). S is (d, d_v): the cost is O(n d d_v), linear in n.
    Causal attention carries S and z from chunk to chunk and is exact within each chunk.
    """
    keys, values = share_kv_heads(queries, keys, values)
    q, k = F.elu(queries) + 1, F.elu(keys) + 1
    if not is_causal:
        S = k.transpose(-2, -1) @ values                     # (..., d, d_v)
        z = k.sum(-2)                                        # (..., d)
        return (q @ S) / ((q * z[..., None, :]).sum(-1, keepdim=True) + eps)
    S = q.new_zeros(*q.shape[:-2], q.shape[-1], values.shape[-1])
    z = q.new_zeros(*q.shape[:-2], q.shape[-1])
    outs = []
    for start in range(0, q.shape[-2], chunk_size):
        qc, kc, vc = (t[..., start:start + chunk_size, :] for t in (q, k, values))
        a = (qc @ kc.transpose(-2, -1)).tril()               # within the chunk: j <= i
        numerator = qc @ S + a @ vc
        denominator = (qc * z[..., None, :]).sum(-1, keepdim=True) + a.sum(-1, keepdim=True)
        outs.append(numerator / (denominator + eps))
        S = S + kc.transpose(-2, -1) @ vc
        z = z + kc.sum(-2)
    return torch.cat(outs, dim=-2)
