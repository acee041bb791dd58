"""Attention scoring functions, one interface for all: score(queries, keys) -> scores.

Every attention follows three steps: score each (query, key) pair, normalise the scores with
a (masked) softmax, and average the values with the weights. Only the first step differs
between the classic attention mechanisms, so each is a small module here, and
``ScoredAttention`` does the other two steps for any of them.

queries (B, n_q, d_q), keys (B, n_k, d_k) -> scores (B, n_q, n_k). Each class writes its
formula in ``formula(queries, keys)``; ``forward`` validates the inputs first.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ._checks import check_queries_keys, check_size


def linear(in_features: int | None, out_features: int, bias: bool = False) -> nn.Module:
    """A linear layer, lazy (input size found on the first call) when the size is unknown."""
    if in_features is None:
        return nn.LazyLinear(out_features, bias=bias)
    return nn.Linear(in_features, out_features, bias=bias)


def _in_features(layer: nn.Module) -> int | None:
    return None if isinstance(layer, nn.LazyLinear) else layer.in_features


class ScoreFunction(nn.Module):
    """Base class. ``needs_same_size``: the score is only defined when d_q == d_k."""

    needs_same_size = False

    def forward(self, queries, keys):
        self.check(queries, keys)
        return self.formula(queries, keys)

    def formula(self, queries, keys):
        """The score itself, (B, n_q, d_q), (B, n_k, d_k) -> (B, n_q, n_k); inputs unchecked."""
        raise NotImplementedError

    def expected_sizes(self):
        """(d_q, d_k) fixed by this score's parameters; None where any size works."""
        return None, None

    def check(self, queries, keys):
        check_queries_keys(queries, keys, same_size=self.needs_same_size,
                           why=f" ({type(self).__name__} needs d_q == d_k)")
        self.check_sizes(queries, keys)

    def check_sizes(self, queries, keys):
        """Only the sizes this score's parameters fix (for callers that checked the rest)."""
        d_q, d_k = self.expected_sizes()
        if d_q is not None:
            check_size("queries", queries, 2, d_q, "this score's query_size")
        if d_k is not None:
            check_size("keys", keys, 2, d_k, "this score's key_size")


class DotScore(ScoreFunction):
    """q · k: no parameters; needs d_q == d_k."""

    needs_same_size = True

    def formula(self, queries, keys):
        return queries @ keys.transpose(1, 2)


class ScaledDotScore(ScoreFunction):
    """q · k / sqrt(d): keeps the scores' variance at 1 for unit-variance inputs."""

    needs_same_size = True

    def formula(self, queries, keys):
        return queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])


class CosineScore(ScoreFunction):
    """scale * cos(q, k): the angle only, so scores lie in [-scale, scale]; needs d_q == d_k."""

    needs_same_size = True

    def __init__(self, scale: float = 1.0):
        super().__init__()
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        self.scale = scale

    def formula(self, queries, keys):
        return self.scale * F.normalize(queries, dim=-1) @ F.normalize(keys, dim=-1).transpose(1, 2)


class GeneralScore(ScoreFunction):
    """q^T W k (Luong's "general", a bilinear form): W maps key space to query space."""

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.W = nn.Linear(key_size, query_size, bias=False)  # weight: (d_q, d_k)

    def expected_sizes(self):
        return self.W.out_features, self.W.in_features

    def formula(self, queries, keys):
        return queries @ self.W(keys).transpose(1, 2)  # (B, n_q, d_q) @ (B, d_q, n_k)


class ConcatScore(ScoreFunction):
    """w^T [q; k]: linear in the concatenation, so it splits into w_q·q + w_k·k.

    The query's term is the same for every key, and the softmax cancels it: the weights do
    not depend on the query at all. Luong et al. put a tanh layer in between, which is
    additive attention.
    """

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.query_size = query_size
        self.w = nn.Linear(query_size + key_size, 1, bias=False)

    def expected_sizes(self):
        return self.query_size, self.w.in_features - self.query_size

    def formula(self, queries, keys):
        w_q, w_k = self.w.weight[0, : self.query_size], self.w.weight[0, self.query_size:]
        # [q; k] for every pair without building it: (B, n_q, 1) + (B, 1, n_k)
        return (queries @ w_q)[:, :, None] + (keys @ w_k)[:, None, :]


def additive_scores(W_q: nn.Module, W_k: nn.Module, w_v: nn.Module, queries, keys,
                    projected_keys=None):
    """w_v^T tanh(W_q q + W_k k) for every (query, key) pair: (B, n_q, n_k).

    projected_keys: W_k(keys), for a caller that attends to the same keys many times (a
    decoder, once per output step) and projects them once.
    """
    queries = W_q(queries)                                           # (B, n_q, d_a)
    keys = W_k(keys) if projected_keys is None else projected_keys   # (B, n_k, d_a)
    # every query meets every key: (B, n_q, 1, d_a) + (B, 1, n_k, d_a)
    features = torch.tanh(queries.unsqueeze(2) + keys.unsqueeze(1))
    return w_v(features).squeeze(-1)


class AdditiveScore(ScoreFunction):
    """w_v^T tanh(W_q q + W_k k): a one-hidden-layer MLP (d_a = num_hiddens) on the pair."""

    def __init__(self, num_hiddens: int, *, query_size: int | None = None,
                 key_size: int | None = None):
        super().__init__()
        self.W_q = linear(query_size, num_hiddens)
        self.W_k = linear(key_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)

    def expected_sizes(self):
        return _in_features(self.W_q), _in_features(self.W_k)

    def formula(self, queries, keys):
        return additive_scores(self.W_q, self.W_k, self.w_v, queries, keys)


SCORE_FUNCTIONS = {"dot": DotScore, "scaled_dot": ScaledDotScore, "cosine": CosineScore,
                   "general": GeneralScore, "concat": ConcatScore, "additive": AdditiveScore}

