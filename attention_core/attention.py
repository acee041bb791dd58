"""The attention core, ``attend``, its backends, and the layers that are thin wrappers over them.

Most attention in this book takes three steps: score each (query, key) pair, turn the scores
into weights with a masked softmax, and average the values with those weights.
``math_attention`` writes the three steps out; the "sdpa" backend calls torch's fused
``scaled_dot_product_attention``, which never hands the weights back. ``attend`` is the one
function over all the backends, and takes what torch's function takes; the layers of this
module and of ``multihead`` call the backends directly, once their contracts have checked
their inputs. The backends are tested equal, and each gives a query with no key to attend to
a zero output.

Shapes: queries (B, *h, n_q, d), keys (B, *h_kv, n_k, d), values (B, *h_kv, n_k, d_v), where
*h stands for any head axes (usually none or one); mask boolean (True = may attend) or float
(added to the scores), broadcastable to (B, *h, n_q, n_k). Keys and values may have fewer
heads than queries, h_kv dividing h
(grouped-query attention): query head i reads key/value head i // (h / h_kv), as torch's
``enable_gqa`` does. ``attend`` takes what ``F.scaled_dot_product_attention`` takes, leading axes
that broadcast included, and gives its result on every backend.
"""
from __future__ import annotations

import math
from collections.abc import Callable

from torch import nn
from torch.nn import functional as F

from .contracts import (
    broadcast_like_torch,
    contract,
    grouped_heads,
    instance_of,
    leading_shapes,
    lengths,
    one_of,
    positive_int,
    probability,
    require,
    scores_mask,
)
from .masking import causal_mask, masked_softmax, padding_mask
from .scoring import SCORE_FUNCTIONS, ScoreFunction, additive_scores, in_features, linear

__all__ = ["attend", "BACKENDS", "DotProductAttention", "AdditiveAttention", "ScoredAttention",
           "SelfAttention"]


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

    queries (B, *h, n_q, d), keys (B, *h_kv, n_k, d), values (B, *h_kv, n_k, d_v); mask None,
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
        scores = queries @ keys.transpose(-2, -1) * scale                # (B, *h, n_q, n_k)
    if mask is not None and mask.is_floating_point():  # a float mask is added, as in torch
        scores, mask = scores + mask, None
    if is_causal:  # query i may not see keys j > i
        causal = causal_mask(scores.shape[-2], scores.shape[-1], device=scores.device)
        mask = causal if mask is None else mask & causal
    # 2. normalise: a softmax over the keys each query may see
    weights = masked_softmax(scores, mask=mask)              # (B, *h, n_q, n_k)
    # 3. average the values with the weights
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ values, weights                                     # (B, *h, n_q, d_v)


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


@contract(queries="*lead_q n_q d", keys="*lead_k n_k d_k", values="*lead_v n_k d_v",
          mask=scores_mask, dropout_p=probability, backend=one_of(BACKENDS),
          where=[broadcast_like_torch,
                 require(lambda queries, keys, score: score is not None
                         or keys.shape[-1] == queries.shape[-1],
                         lambda q, k, score: f"keys has size {k.shape[-1]} in dimension "
                         f"{k.dim() - 1} (shape {tuple(k.shape)}), but the feature size of "
                         f"queries is {q.shape[-1]}"),
                 require(lambda backend, need_weights, score: backend in (None, "math")
                         or not (need_weights or score is not None),
                         lambda backend, need_weights, score: f"backend {backend!r} computes "
                         f"the scaled dot product and returns no weights; need_weights and "
                         f"score need backend='math'")])
def attend(queries, keys, values, mask=None, *, is_causal: bool = False, scale=None,
           score: Callable | None = None, dropout_p: float = 0.0, need_weights: bool = False,
           backend: str | None = None, enable_gqa: bool = False):
    """Attention on any backend, with the arguments of torch's scaled_dot_product_attention.

    queries (*lead_q, n_q, d), keys (*lead_k, n_k, d_k), values (*lead_v, n_k, d_v): the
    leading axes, e.g. (B, h), broadcast as in ``F.scaled_dot_product_attention``
    (right-aligned, 1 against any size, e.g. queries (h, n_q, d) against keys (B, h, n_k, d)),
    and keys/values may have h_kv heads dividing h (grouped-query attention; recognised from
    the shapes, whatever ``enable_gqa`` says, which is accepted for torch's signature); d_k = d
    unless ``score`` is given.
    mask: None; boolean, True = may attend; or float, added to the scores (-inf hides a key), as
    torch documents ``attn_mask``; broadcastable to (B, *h, n_q, n_k).
    is_causal: query i may also not see keys j > i (top-left aligned, as in torch); unlike
    torch, it may be combined with a mask (both apply).
    scale: multiplies q·k (default 1/sqrt(d)). score: a function (queries, keys) -> scores
    that replaces the scaled dot product (additive, cosine, ...; math backend only).
    dropout_p: dropout on the weights (pass 0 at evaluation). need_weights: also return them.
    backend: "math", "sdpa", ... (``BACKENDS``); default "sdpa", or "math" when weights or a
    custom score are asked for.
    Returns (output (B, *h, n_q, d_v), weights (B, *h, n_q, n_k) or None). A query with no
    key to attend to gets zero weights and a zero output on every backend.
    """
    if need_weights or score is not None:
        backend = "math"
    queries, keys, values = broadcast_batch(queries, keys, values)
    kwargs = {"score": score} if score is not None else {}
    return BACKENDS[backend or "sdpa"](queries, keys, values, mask, is_causal=is_causal,
                                       scale=scale, dropout_p=dropout_p, **kwargs)


def dropout_rate(module: nn.Module) -> float:
    """The dropout probability a layer applies now: its ``dropout.p`` in training, else 0."""
    return module.dropout.p if module.training else 0.0


class DotProductAttention(nn.Module):
    """Scaled dot-product attention that keeps its weights: softmax(q·k / sqrt(d)) v.

    ``forward(queries (B, *h, n_q, d), keys (B, *h_kv, n_k, d), values (B, *h_kv, n_k, d_v),
    valid_lens None | (B,) | (B, n_q)) -> (B, *h, n_q, d_v)``, h_kv dividing h (grouped heads);
    keeps ``self.attention_weights`` (B, *h, n_q, n_k).
    """

    @contract(dropout=probability)
    def __init__(self, dropout: float = 0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    @contract(queries="B *h n_q d", keys="B *h_kv n_k d", values="B *h_kv n_k d_v",
              valid_lens=lengths(), where=[grouped_heads])
    def forward(self, queries, keys, values, valid_lens=None):
        mask = padding_mask(valid_lens, queries, keys.shape[-2])         # (B, [1,] 1|n_q, n_k)
        out, self.attention_weights = math_attention(queries, keys, values, mask,
                                                     dropout_p=dropout_rate(self))
        return out


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: scores w_v^T tanh(W_q q + W_k k).

    W_q: d_q -> d_a and W_k: d_k -> d_a map query and key into one hidden space of size
    ``num_hiddens`` (d_a), so queries and keys may have different sizes.
    ``forward(queries (B, n_q, query_size), keys (B, n_k, key_size), values (B, n_k, d_v),
    valid_lens, projected_keys (B, n_k, d_a) = None) -> (B, n_q, d_v)``; keeps
    ``self.attention_weights`` (B, n_q, n_k). ``projected_keys``: W_k(keys), for a caller that
    reuses the same keys at every step.
    """

    @contract(num_hiddens=positive_int, dropout=probability, query_size=positive_int,
              key_size=positive_int)
    def __init__(self, num_hiddens: int, dropout: float = 0.0, *, query_size: int | None = None,
                 key_size: int | None = None):
        super().__init__()
        self.W_q = linear(query_size, num_hiddens)
        self.W_k = linear(key_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    @property
    def query_size(self) -> int | None:
        return in_features(self.W_q)

    @property
    def key_size(self) -> int | None:
        return in_features(self.W_k)

    @contract(queries="B n_q self.query_size", keys="B n_k self.key_size", values="B n_k d_v",
              valid_lens=lengths(), projected_keys="B n_k d_a")
    def forward(self, queries, keys, values, valid_lens=None, projected_keys=None):
        def score(q, k):
            return additive_scores(self.W_q, self.W_k, self.w_v, q, k, projected_keys)

        mask = padding_mask(valid_lens, queries, keys.shape[1])          # (B, 1 or n_q, n_k)
        out, self.attention_weights = math_attention(queries, keys, values, mask, score=score,
                                                     dropout_p=dropout_rate(self))
        return out


class ScoredAttention(nn.Module):
    """Attention with any score function of ``scoring``: score, masked softmax, weighted sum.

    ``forward(queries (B, n_q, d_q), keys (B, n_k, d_k), values (B, n_k, d_v),
    valid_lens None | (B,) | (B, n_q)) -> (B, n_q, d_v)``; keeps
    ``self.attention_weights`` (B, n_q, n_k).
    """

    @contract(score=instance_of(ScoreFunction, f"a ScoreFunction (one of "
                                               f"{sorted(SCORE_FUNCTIONS)})"),
              dropout=probability)
    def __init__(self, score: ScoreFunction, dropout: float = 0.0):
        super().__init__()
        self.score = score
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    @contract(queries="B n_q d_q", keys="B n_k d_k", values="B n_k d_v", valid_lens=lengths())
    def forward(self, queries, keys, values, valid_lens=None):
        # the score's own contract checks the sizes it needs (d_q == d_k, or its weights')
        mask = padding_mask(valid_lens, queries, keys.shape[1])          # (B, 1 or n_q, n_k)
        out, self.attention_weights = math_attention(queries, keys, values, mask,
                                                     score=self.score, dropout_p=dropout_rate(self))
        return out


class SelfAttention(nn.Module):
    """Single-head self-attention: queries, keys and values are projections of one sequence.

    Y = softmax(Q K^T / sqrt(d)) V with Q = X W_q^T, K = X W_k^T, V = X W_v^T (no biases).
    forward(X (B, n, input_size), valid_lens None | (B,) | (B, n)) -> (B, n, num_hiddens);
    keeps ``self.attention_weights`` (B, n, n). input_size None makes the projections lazy.
    """

    @contract(num_hiddens=positive_int, dropout=probability, input_size=positive_int)
    def __init__(self, num_hiddens: int, dropout: float = 0.0, *, input_size: int | None = None):
        super().__init__()
        self.W_q = linear(input_size, num_hiddens)                       # d_in -> d, no bias
        self.W_k = linear(input_size, num_hiddens)
        self.W_v = linear(input_size, num_hiddens)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    @property
    def input_size(self) -> int | None:
        return in_features(self.W_q)

    @contract(X="B n self.input_size", valid_lens=lengths(per="B n", upto="n"))
    def forward(self, X, valid_lens=None):
        Q, K, V = self.W_q(X), self.W_k(X), self.W_v(X)                  # (B, n, d) each
        mask = padding_mask(valid_lens, Q, K.shape[1])                    # (B, 1 or n, n) or None
        Y, self.attention_weights = math_attention(Q, K, V, mask, dropout_p=dropout_rate(self))
        return Y                                   # softmax(Q K^T / sqrt(d)) V: (B, n, d)
