"""Self-attention: queries, keys and values all come from one sequence.

Each position x_i is projected three ways, q_i = W_Q x_i, k_i = W_K x_i, v_i = W_V x_i, and
attends to every position of the same sequence:

    y_i = sum_j softmax_j(q_i · k_j / sqrt(d)) v_j,   or in matrix form   Y = softmax(Q K^T / sqrt(d)) V.
"""
from __future__ import annotations

from torch import nn

from ._checks import check_positive_int, check_rank, check_size, check_tensor
from .attention import DotProductAttention
from .scoring import linear


class SelfAttention(nn.Module):
    """Single-head self-attention with projections W_q, W_k, W_v (bias-free).

    forward(X (batch, n, d_in), valid_lens None | (batch,) | (batch, n)) -> (batch, n, num_hiddens);
    keeps ``self.attention_weights`` (batch, n, n). ``d_in`` None makes the projections lazy.
    """

    def __init__(self, num_hiddens: int, d_in: int | None = None, dropout: float = 0.0):
        super().__init__()
        check_positive_int(num_hiddens=num_hiddens)
        self.W_q = linear(d_in, num_hiddens)
        self.W_k = linear(d_in, num_hiddens)
        self.W_v = linear(d_in, num_hiddens)
        self.attention = DotProductAttention(dropout)

    @property
    def attention_weights(self):
        return self.attention.attention_weights

    def forward(self, X, valid_lens=None):
        check_tensor("X", X)
        check_rank("X", X, 3, "(batch, n, d_in)")
        if not isinstance(self.W_q, nn.LazyLinear):
            check_size("X", X, 2, self.W_q.in_features, "d_in")
        return self.attention(self.W_q(X), self.W_k(X), self.W_v(X), valid_lens)
