"""The attention core, ``attend``, and the layers that are thin wrappers over it.

Every attention in this book takes three steps: score each (query, key) pair, turn the
scores into weights with a masked softmax, and average the values with those weights.
``attend`` does the three steps for every layer. Its step-by-step "math" backend is the
reference; the "sdpa" backend calls torch's fused ``scaled_dot_product_attention``, which
never hands the weights back and is used whenever no weights are asked for. The two are
tested equal, and every backend gives a query with no key to attend to a zero output.

Shapes: queries (B, [h,] n_q, d), keys (B, [h,] n_k, d), values (B, [h,] n_k, d_v);
mask boolean (True = may attend) or float (added to the scores), broadcastable to
(B, [h,] n_q, n_k). Keys and values may have fewer heads than queries, h_kv dividing h
(grouped-query attention): query head i reads key/value head i // (h / h_kv), as torch's
``enable_gqa`` does. ``attend`` takes what ``F.scaled_dot_product_attention`` takes, leading axes
that broadcast included, and gives its result on every backend.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from ._checks import (check_choice, check_in_features, check_positive_int, check_probability,
                      check_layer_args, check_qkv, check_sequence, check_tensor, leading_shapes)
from .masking import causal_mask, padding_mask, softmax_over
from .scoring import SCORE_FUNCTIONS, ScoreFunction, additive_scores, linear


def share_kv_heads(queries, keys, values):
    """Grouped-query attention by copying: repeat each key/value head for its group of
    h / h_kv query heads (head i reads head i // (h / h_kv)). A no-op when the counts agree."""
    if keys.dim() < 4 or keys.shape[-3] == queries.shape[-3]:
        return keys, values
    group = queries.shape[-3] // keys.shape[-3]
    return keys.repeat_interleave(group, dim=-3), values.repeat_interleave(group, dim=-3)


def broadcast_batch(queries, keys, values):
    """Expand the leading (batch, head) axes of queries, keys and values to those they broadcast
    to, as torch does (views, no copies); grouped key/value heads stay grouped."""
    if queries.shape[:-2] == keys.shape[:-2] == values.shape[:-2]:      # the usual case
        return queries, keys, values
    lead_q, lead_kv = leading_shapes(queries.shape, keys.shape, values.shape)
    if queries.shape[:-2] == lead_q and keys.shape[:-2] == values.shape[:-2] == lead_kv:
        return queries, keys, values
    return (queries.expand(*lead_q, *queries.shape[-2:]), keys.expand(*lead_kv, *keys.shape[-2:]),
            values.expand(*lead_kv, *values.shape[-2:]))


def math_attention(queries, keys, values, mask=None, *, is_causal=False, scale=None,
                   dropout_p=0.0, score=None):
    """softmax(Q K^T / sqrt(d)) V, the three steps written out; returns (output, weights).

    queries (B, [h,] n_q, d), keys (B, [h,] n_k, d), values (B, [h,] n_k, d_v); mask None,
    boolean (True = may attend) or float (added to the scores). ``scale`` replaces 1/sqrt(d);
    ``score(q, k)`` replaces q·k.
    """
    keys, values = share_kv_heads(queries, keys, values)  # grouped heads (ch. 7), else no-op
    # 1. score: every query against every key
    if score is not None:
        scores = score(queries, keys)                                    # additive, cosine, ...
    elif scale is None:
        scores = queries @ keys.transpose(-2, -1) / math.sqrt(queries.shape[-1])
    else:
        scores = queries @ keys.transpose(-2, -1) * scale                # (B, [h,] n_q, n_k)
    if mask is not None and mask.is_floating_point():  # a float mask is added, as in torch
        scores, mask = scores + mask, None
    if is_causal:  # query i may not see keys j > i
        causal = causal_mask(scores.shape[-2], scores.shape[-1], device=scores.device)
        mask = causal if mask is None else mask & causal
    # 2. normalise: a softmax over the keys each query may see
    weights = softmax_over(scores, mask)                                 # (B, [h,] n_q, n_k)
    # 3. average the values with the weights
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ values, weights                                     # (B, [h,] n_q, d_v)


def sdpa_attention(queries, keys, values, mask=None, *, is_causal=False, scale=None,
                   dropout_p=0.0):
    """torch's fused kernel; returns (output, None): it never writes the weights to memory."""
    # grouped heads are read in place, never copied
    gqa = {"enable_gqa": True} if keys.dim() >= 4 and keys.shape[-3] != queries.shape[-3] else {}
    if mask is None:
        return F.scaled_dot_product_attention(queries, keys, values, dropout_p=dropout_p,
                                              is_causal=is_causal, scale=scale, **gqa), None
    if mask.is_floating_point():  # added to the scores; torch zeroes a row of -inf itself
        if is_causal:
            causal = causal_mask(queries.shape[-2], keys.shape[-2], device=mask.device)
            mask = mask.masked_fill(~causal, float("-inf"))
        return F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask,
                                              dropout_p=dropout_p, scale=scale, **gqa), None
    if is_causal:  # the fused kernel takes a mask or is_causal, not both
        mask = mask & causal_mask(queries.shape[-2], keys.shape[-2], device=mask.device)
    # A query with no key to attend to would get NaN from the fused kernel: let it see every
    # key (finite values, finite gradients), then zero its output.
    empty = ~mask.any(dim=-1, keepdim=True)                              # (..., n_q or 1, 1)
    out = F.scaled_dot_product_attention(queries, keys, values, attn_mask=mask | empty,
                                         dropout_p=dropout_p, scale=scale, **gqa)
    return out.masked_fill(empty, 0.0), None


BACKENDS: dict[str, Callable] = {"math": math_attention, "sdpa": sdpa_attention}
"""The ways to compute attention, by name; each returns (output, weights or None)."""


def attend(queries, keys, values, mask=None, *, is_causal: bool = False, scale=None,
           score: Callable | None = None, dropout_p: float = 0.0, need_weights: bool = False,
           backend: str | None = None, enable_gqa: bool = False):
    """Attention, the one function every layer of the book calls.

    queries (B, [h,] n_q, d), keys (B, [h,] n_k, d), values (B, [h,] n_k, d_v); their leading
    axes broadcast as in ``F.scaled_dot_product_attention`` (right-aligned, 1 against any size,
    e.g. queries (h, n_q, d) against keys (B, h, n_k, d)), and keys/values may have h_kv heads
    dividing h (grouped-query attention; recognised from the shapes, whatever ``enable_gqa``
    says, which is accepted for torch's signature).
    mask: None; boolean, True = may attend; or float, added to the scores (-inf hides a key), as
    torch documents ``attn_mask``; broadcastable to (B, [h,] n_q, n_k).
    is_causal: query i may also not see keys j > i (top-left aligned, as in torch); unlike
    torch, it may be combined with a mask (both apply).
    scale: multiplies q·k (default 1/sqrt(d)). score: a function (queries, keys) -> scores
    that replaces the scaled dot product (additive, cosine, ...; math backend only).
    dropout_p: dropout on the weights (pass 0 at evaluation). need_weights: also return them.
    backend: "math", "sdpa", ... (``BACKENDS``); default "sdpa", or "math" when weights or a
    custom score are asked for.
    Returns (output (B, [h,] n_q, d_v), weights (B, [h,] n_q, n_k) or None). A query with no
    key to attend to gets zero weights and a zero output on every backend.
    """
    _check_attend(queries, keys, values, mask, score, dropout_p, need_weights, backend)
    return _attend(queries, keys, values, mask, is_causal=is_causal, scale=scale, score=score,
                   dropout_p=dropout_p, need_weights=need_weights, backend=backend)


def _attend(queries, keys, values, mask=None, *, is_causal=False, scale=None, score=None,
            dropout_p=0.0, need_weights=False, backend=None):
    """``attend`` without the checks, for layers that validated their inputs at the door."""
    if need_weights or score is not None:
        backend = "math"
    queries, keys, values = broadcast_batch(queries, keys, values)
    kwargs = {"score": score} if score is not None else {}
    return BACKENDS[backend or "sdpa"](queries, keys, values, mask, is_causal=is_causal,
                                       scale=scale, dropout_p=dropout_p, **kwargs)


def _check_attend(queries, keys, values, mask, score, dropout_p, need_weights, backend) -> None:
    """The door of ``attend``: the tensors, the mask, the dropout and the backend."""
    check_qkv(queries, keys, values, any_rank=True, same_qk_size=score is None, broadcast=True)
    check_mask(mask, queries, keys, values)
    check_probability("dropout_p", dropout_p)
    if backend is not None:
        check_choice("backend", backend, BACKENDS)
        if backend != "math" and (need_weights or score is not None):
            raise ValueError(f"backend {backend!r} computes the scaled dot product and returns "
                             f"no weights; need_weights and score need backend='math'")


def check_mask(mask, queries, keys, values=None) -> None:
    """Require a boolean (True = may attend) or float (added to the scores) mask that broadcasts
    against the scores (B, [h,] n_q, n_k), whose leading axes are the queries' broadcast
    against the keys' and values'."""
    if mask is None:
        return
    check_tensor("mask", mask, floating=False)
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(f"mask must be boolean (True = may attend) or floating (added to the "
                        f"scores), got {mask.dtype}")
    values = keys if values is None else values
    lead = leading_shapes(queries.shape, keys.shape, values.shape)
    scores_shape = (*(queries.shape[:-2] if lead is None else lead[0]), queries.shape[-2],
                    keys.shape[-2])
    try:
        fits = torch.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' "
                         f"shape {scores_shape} (batch, [heads,] n_queries, n_keys)")


def dropout_p(module: nn.Module) -> float:
    """The dropout probability a layer applies now: its ``dropout.p`` in training, else 0."""
    return module.dropout.p if module.training else 0.0


class DotProductAttention(nn.Module):
    """Scaled dot-product attention that keeps its weights: softmax(q·k / sqrt(d)) v.

    ``forward(queries (B, [h,] n_q, d), keys (B, [h,] n_k, d), values (B, [h,] n_k, d_v),
    valid_lens None | (B,) | (B, n_q)) -> (B, [h,] n_q, d_v)``; keeps
    ``self.attention_weights`` (B, [h,] n_q, n_k).
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values, any_rank=True)
        mask = padding_mask(valid_lens, queries, keys)
        out, self.attention_weights = _attend(queries, keys, values, mask,
                                              dropout_p=dropout_p(self), need_weights=True)
        return out


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: scores w_v^T tanh(W_q q + W_k k).

    W_q: d_q -> d_a and W_k: d_k -> d_a map query and key into one hidden space of size
    ``num_hiddens`` (d_a), so queries and keys may have different sizes.
    ``forward(queries (B, n_q, d_q), keys (B, n_k, d_k), values (B, n_k, d_v), valid_lens,
    projected_keys=None) -> (B, n_q, d_v)``; keeps ``self.attention_weights`` (B, n_q, n_k).
    ``projected_keys``: W_k(keys), for a caller that reuses the same keys at every step.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, *, query_size: int | None = None,
                 key_size: int | None = None):
        super().__init__()
        check_layer_args(dropout, num_hiddens=num_hiddens)
        self.W_q = linear(query_size, num_hiddens)
        self.W_k = linear(key_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None, projected_keys=None):
        self._check_inputs(queries, keys, values, projected_keys)

        def score(q, k):
            return additive_scores(self.W_q, self.W_k, self.w_v, q, k, projected_keys)

        out, self.attention_weights = math_attention(queries, keys, values,
                                                     padding_mask(valid_lens, queries, keys),
                                                     score=score, dropout_p=dropout_p(self))
        return out

    def _check_inputs(self, queries, keys, values, projected_keys) -> None:
        """The door of forward: the tensors, their sizes against W_q and W_k, projected_keys."""
        check_qkv(queries, keys, values, same_qk_size=False)
        check_in_features("queries", queries, self.W_q, "query_size")
        check_in_features("keys", keys, self.W_k, "key_size")
        if projected_keys is not None and projected_keys.shape[:2] != keys.shape[:2]:
            raise ValueError(f"projected_keys {tuple(projected_keys.shape)} must match keys "
                             f"{tuple(keys.shape)} in (batch, n_keys)")


class ScoredAttention(nn.Module):
    """Attention with any score function of ``scoring``: score, masked softmax, weighted sum.

    ``forward(queries (B, n_q, d_q), keys (B, n_k, d_k), values (B, n_k, d_v),
    valid_lens None | (B,) | (B, n_q)) -> (B, n_q, d_v)``; keeps
    ``self.attention_weights`` (B, n_q, n_k).
    """

    def __init__(self, score: ScoreFunction, dropout: float = 0.0):
        super().__init__()
        _check_score(score, dropout)
        self.score = score
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        self._check_inputs(queries, keys, values)
        out, self.attention_weights = _attend(queries, keys, values,
                                              padding_mask(valid_lens, queries, keys),
                                              score=self.score.formula, dropout_p=dropout_p(self))
        return out

    def _check_inputs(self, queries, keys, values) -> None:
        """The door of forward: the tensors, and the sizes this layer's score fixes."""
        check_qkv(queries, keys, values, same_qk_size=self.score.needs_same_size)
        self.score.check_sizes(queries, keys)


def _check_score(score, dropout) -> None:
    """The door of ScoredAttention's constructor: a ScoreFunction and a dropout in [0, 1)."""
    if not isinstance(score, ScoreFunction):
        raise TypeError(f"score must be a ScoreFunction (one of {sorted(SCORE_FUNCTIONS)}), "
                        f"got {type(score).__name__}")
    check_probability("dropout", dropout)


class SelfAttention(nn.Module):
    """Single-head self-attention: queries, keys and values are projections of one sequence.

    Y = softmax(Q K^T / sqrt(d)) V with Q = X W_q^T, K = X W_k^T, V = X W_v^T (no biases).
    forward(X (B, n, input_size), valid_lens None | (B,) | (B, n)) -> (B, n, num_hiddens);
    keeps ``self.attention_weights`` (B, n, n). input_size None makes the projections lazy.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, *, input_size: int | None = None):
        super().__init__()
        check_layer_args(dropout, num_hiddens=num_hiddens)
        self.W_q = linear(input_size, num_hiddens)                       # d_in -> d, no bias
        self.W_k = linear(input_size, num_hiddens)
        self.W_v = linear(input_size, num_hiddens)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, X, valid_lens=None):
        check_sequence("X", X, self.W_q, "input_size")
        Q, K, V = self.W_q(X), self.W_k(X), self.W_v(X)                  # (B, n, d) each
        mask = padding_mask(valid_lens, Q, K)                             # (B, 1 or n, n) or None
        Y, self.attention_weights = math_attention(Q, K, V, mask, dropout_p=dropout_p(self))
        return Y                                   # softmax(Q K^T / sqrt(d)) V: (B, n, d)
