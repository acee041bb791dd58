"""Attention layers that keep their weights for inspection: scaled dot-product, additive, and
attention with any score function from ``scoring``.

All follow the three steps of every attention: score each (query, key) pair, normalise the
scores with a masked softmax, and average the values with those weights.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import (check_positive_int, check_probability, check_rank, check_same_device,
                      check_same_dtype, check_size, check_tensor)
from .masking import masked_softmax
from .scoring import (SCORE_FUNCTIONS, ScoreFunction, additive_scores, check_queries_keys,
                      linear)


def check_qkv(queries, keys, values, *, same_qk_size: bool) -> None:
    """Validate (batch, n_queries, d_q), (batch, n_keys, d_k), (batch, n_keys, d_v)."""
    check_queries_keys(queries, keys, same_size=same_qk_size)
    check_tensor("values", values)
    check_rank("values", values, 3, "(batch, n_keys, d_v)")
    check_same_device(queries=queries, values=values)
    check_same_dtype(queries=queries, values=values)
    check_size("values", values, 0, queries.shape[0], "the batch size of queries")
    check_size("values", values, 1, keys.shape[1], "the number of keys")


class DotProductAttention(nn.Module):
    """Scaled dot-product attention: scores q·k / sqrt(d).

    forward(queries (batch, n_queries, d), keys (batch, n_keys, d),
            values (batch, n_keys, d_v), valid_lens None | (batch,) | (batch, n_queries))
    -> (batch, n_queries, d_v); keeps ``self.attention_weights`` (batch, n_queries, n_keys).
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values, same_qk_size=True)
        d = queries.shape[-1]
        # Dividing by sqrt(d) keeps the scores' variance at 1 whatever d is, so the softmax
        # neither saturates nor loses its gradient as d grows.
        scores = torch.bmm(queries, keys.transpose(1, 2)) / math.sqrt(d)  # (batch, n_q, n_k)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (batch, n_q, d_v)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: scores w_v^T tanh(W_q q + W_k k).

    W_q: d_q -> h and W_k: d_k -> h map query and key into one hidden space of size
    ``num_hiddens`` (h), so queries and keys may have different sizes.
    forward(queries (batch, n_queries, d_q), keys (batch, n_keys, d_k),
            values (batch, n_keys, d_v), valid_lens) -> (batch, n_queries, d_v);
    keeps ``self.attention_weights`` (batch, n_queries, n_keys).
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, query_size: int | None = None,
                 key_size: int | None = None):
        super().__init__()
        check_positive_int(num_hiddens=num_hiddens)
        check_probability("dropout", dropout)
        self.W_q = linear(query_size, num_hiddens)
        self.W_k = linear(key_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None, projected_keys=None):
        """projected_keys: optional W_k(keys), computed once when the keys are reused."""
        check_qkv(queries, keys, values, same_qk_size=False)
        if projected_keys is not None and projected_keys.shape[:2] != keys.shape[:2]:
            raise ValueError(f"projected_keys {tuple(projected_keys.shape)} must match keys "
                             f"{tuple(keys.shape)} in (batch, n_keys)")
        for name, t, layer, size in (("queries", queries, self.W_q, "query_size"),
                                     ("keys", keys, self.W_k, "key_size")):
            if not isinstance(layer, nn.LazyLinear):
                check_size(name, t, 2, layer.in_features, f"this layer's {size}")
        scores = additive_scores(self.W_q, self.W_k, self.w_v, queries, keys,
                                 projected_keys)  # (batch, n_q, n_k)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)  # (batch, n_q, d_v)


class ScoredAttention(nn.Module):
    """Attention with any score function: score, masked softmax, weighted sum of values.

    forward(queries (batch, n_queries, d_q), keys (batch, n_keys, d_k),
            values (batch, n_keys, d_v), valid_lens None | (batch,) | (batch, n_queries))
    -> (batch, n_queries, d_v); keeps ``self.attention_weights`` (batch, n_queries, n_keys).
    """

    def __init__(self, score: ScoreFunction, dropout: float = 0.0):
        super().__init__()
        if not isinstance(score, ScoreFunction):
            raise TypeError(f"score must be a ScoreFunction (one of {sorted(SCORE_FUNCTIONS)}), "
                            f"got {type(score).__name__}")
        check_probability("dropout", dropout)
        self.score = score
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, queries, keys, values, valid_lens=None):
        check_qkv(queries, keys, values, same_qk_size=self.score.needs_same_size)
        self.attention_weights = masked_softmax(self.score(queries, keys), valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)
