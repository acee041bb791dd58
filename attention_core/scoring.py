"""Attention scoring functions, one interface for all: score(queries, keys) -> scores.

Every attention follows three steps: score each (query, key) pair, normalise the scores with
a (masked) softmax, and average the values with the weights. Only the first step differs
between the classic attention mechanisms, so each is a small module here, and
``ScoredAttention`` does the other two steps for any of them.

queries (B, n_q, d_q), keys (B, n_k, d_k) -> scores (B, n_q, n_k). Each class's ``forward``
is its formula, under a contract that says which sizes it needs.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.modules.lazy import LazyModuleMixin

from .contracts import contract, positive, positive_int

__all__ = ["SCORE_FUNCTIONS", "ScoreFunction", "DotScore", "ScaledDotScore", "CosineScore",
           "GeneralScore", "ConcatScore", "AdditiveScore"]


def linear(in_features: int | None, out_features: int, bias: bool = False) -> nn.Module:
    """A linear layer, without a bias unless asked (the projections of attention have none),
    lazy (its input size found on the first call) when the size is unknown."""
    if in_features is None:
        return nn.LazyLinear(out_features, bias=bias)
    return nn.Linear(in_features, out_features, bias=bias)


def in_features(layer: nn.Module) -> int | None:
    """A linear layer's input size, or None while it is lazy (the size found at its first call)."""
    if isinstance(layer, LazyModuleMixin) and layer.has_uninitialized_params():
        return None
    return layer.in_features


class ScoreFunction(nn.Module):
    """Base class of the scores: ``forward(queries (B, n_q, d_q), keys (B, n_k, d_k))`` ->
    scores (B, n_q, n_k), each class's formula under the contract of the sizes it needs."""


class DotScore(ScoreFunction):
    """q · k for queries (B, n_q, d) and keys (B, n_k, d): no parameters."""

    @contract(queries="B n_q d", keys="B n_k d")
    def forward(self, queries, keys):
        return queries @ keys.transpose(1, 2)


class ScaledDotScore(ScoreFunction):
    """q · k / sqrt(d) for queries (B, n_q, d) and keys (B, n_k, d): keeps the scores' variance
    at 1 for unit-variance inputs."""

    @contract(queries="B n_q d", keys="B n_k d")
    def forward(self, queries, keys):
        return queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])


class CosineScore(ScoreFunction):
    """scale * cos(q, k) for queries (B, n_q, d) and keys (B, n_k, d): the angle only, so scores
    lie in [-scale, scale]."""

    @contract(scale=positive)
    def __init__(self, scale: float = 1.0):
        super().__init__()
        self.scale = scale

    @contract(queries="B n_q d", keys="B n_k d")
    def forward(self, queries, keys):
        return self.scale * F.normalize(queries, dim=-1) @ F.normalize(keys, dim=-1).transpose(1, 2)


class GeneralScore(ScoreFunction):
    """q^T W k (Luong's "general", a bilinear form) for queries (B, n_q, query_size) and keys
    (B, n_k, key_size): W maps key space to query space."""

    @contract(query_size=positive_int, key_size=positive_int)
    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.W = nn.Linear(key_size, query_size, bias=False)  # weight: (d_q, d_k)
        self.query_size, self.key_size = query_size, key_size

    @contract(queries="B n_q self.query_size", keys="B n_k self.key_size")
    def forward(self, queries, keys):
        return queries @ self.W(keys).transpose(1, 2)  # (B, n_q, d_q) @ (B, d_q, n_k)


class ConcatScore(ScoreFunction):
    """w^T [q; k] for queries (B, n_q, query_size) and keys (B, n_k, key_size): linear in the
    concatenation, so it splits into w_q·q + w_k·k.

    The query's term is the same for every key, and the softmax cancels it: the weights do
    not depend on the query at all. Luong et al. put a tanh layer in between, which is
    additive attention.
    """

    @contract(query_size=positive_int, key_size=positive_int)
    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.query_size, self.key_size = query_size, key_size
        self.w = nn.Linear(query_size + key_size, 1, bias=False)

    @contract(queries="B n_q self.query_size", keys="B n_k self.key_size")
    def forward(self, queries, keys):
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
    """w_v^T tanh(W_q q + W_k k) for queries (B, n_q, query_size) and keys (B, n_k, key_size):
    a one-hidden-layer MLP (d_a = num_hiddens) on the pair; the sizes may be left to the first
    call."""

    @contract(num_hiddens=positive_int, query_size=positive_int, key_size=positive_int)
    def __init__(self, num_hiddens: int, *, query_size: int | None = None,
                 key_size: int | None = None):
        super().__init__()
        self.W_q = linear(query_size, num_hiddens)
        self.W_k = linear(key_size, num_hiddens)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)

    @property
    def query_size(self) -> int | None:
        return in_features(self.W_q)

    @property
    def key_size(self) -> int | None:
        return in_features(self.W_k)

    @contract(queries="B n_q self.query_size", keys="B n_k self.key_size")
    def forward(self, queries, keys):
        return additive_scores(self.W_q, self.W_k, self.w_v, queries, keys)


SCORE_FUNCTIONS = {"dot": DotScore, "scaled_dot": ScaledDotScore, "cosine": CosineScore,
                   "general": GeneralScore, "concat": ConcatScore, "additive": AdditiveScore}
