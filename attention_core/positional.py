"""Positions for an order-blind attention: sinusoidal, learned and rotary encodings.

Self-attention is blind to order, so each position i gets a vector added to its token's
embedding: the sinusoidal table of Vaswani et al. (2017), P[i, 2j] = sin(i * w_j),
P[i, 2j+1] = cos(i * w_j) with angular frequencies w_j = 10000^(-2j/d), or learned vectors.
Rotary embeddings (RoPE) rotate queries and keys instead of adding anything, and ALiBi adds
nothing to the tokens either: it biases each score by the distance between the two positions.
"""
from __future__ import annotations

import torch
from torch import nn

from .contracts import contract, non_negative_int, positive_int, probability, require, tensor

__all__ = ["sinusoidal_table", "frequencies", "rotation_matrix", "PositionalEncoding",
           "LearnedPositionalEncoding", "RotaryEmbedding", "alibi_slopes", "alibi_bias"]


def _fits_max_len(self, X, offset) -> bool:
    return offset + X.shape[1] <= self.max_len


def _beyond_max_len(self, X, offset) -> str:
    return (f"X has {X.shape[1]} positions (shape {tuple(X.shape)}) from offset {offset}, "
            f"beyond max_len={self.max_len}: no position vector exists beyond it")


def _even(why: str):
    """The rule that num_hiddens is even, and why."""
    return require(lambda num_hiddens: num_hiddens % 2 == 0,
                   lambda d: f"num_hiddens must be even {why}, got {d}")


@contract(max_len=positive_int, num_hiddens=positive_int,
          where=[require(lambda dtype: dtype.is_floating_point,
                         lambda dtype: f"dtype must be a floating dtype, got {dtype}", TypeError)])
def sinusoidal_table(max_len: int, num_hiddens: int, dtype=torch.float32, device=None,
                     base: float = 10000.0):
    """The table P: (max_len, num_hiddens), P[i, 2j] = sin(i w_j) and P[i, 2j+1] = cos(i w_j).
    Columns 2j and 2j+1 share the angular frequency w_j = base^(-2j/d) (``frequencies``)."""
    positions = torch.arange(max_len, dtype=dtype, device=device).reshape(-1, 1)  # (max_len, 1)
    # i * w_j: (max_len, ceil(d/2)); dividing by 1 / w_j (rather than multiplying by w_j) keeps
    # the table equal to d2l's bit for bit
    angles = positions / _periods(num_hiddens, base, dtype=dtype, device=device)
    P = torch.zeros(max_len, num_hiddens, dtype=dtype, device=device)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])  # an odd d has one sine column more
    return P


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to its input, then applies dropout.

    forward(X (B, n, num_hiddens), offset=0) -> (B, n, num_hiddens), offset + n <= max_len.
    The offset is the position of X's first row: a decoder that runs one step at a time passes
    the number of steps already taken, so step t is encoded as position t. The table is
    ``self.P`` (1, max_len, num_hiddens), a buffer that follows ``.to(device)``.
    """

    @contract(num_hiddens=positive_int, dropout=probability, max_len=positive_int)
    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000):
        super().__init__()
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", sinusoidal_table(max_len, num_hiddens).unsqueeze(0),
                             persistent=False)

    @contract(X="B n self.num_hiddens", offset=non_negative_int,
              where=[require(_fits_max_len, _beyond_max_len)])
    def forward(self, X, offset: int = 0):
        P = self.P[:, offset:offset + X.shape[1]]  # (1, n, d): positions offset .. offset + n - 1
        return self.dropout(X + P.to(X.dtype))     # (B, n, d): the same P for every sequence


def _periods(num_hiddens: int, base: float = 10000.0, dtype=torch.float64, device=None):
    """1 / omega_j = base^(2j/d) for j = 0 .. ceil(d/2) - 1 (the period in positions over 2 pi)."""
    j2 = torch.arange(0, num_hiddens, 2, dtype=dtype, device=device)  # 2j
    return torch.pow(base, j2 / num_hiddens)


@contract(num_hiddens=positive_int)
def frequencies(num_hiddens: int, base: float = 10000.0, dtype=torch.float64, device=None):
    """omega_j = 1 / base^(2j/d) for j = 0 .. ceil(d/2) - 1: the table's angular frequencies."""
    return 1.0 / _periods(num_hiddens, base, dtype, device)


@contract(num_hiddens=positive_int, where=[_even("for the rotation property")])
def rotation_matrix(delta: float, num_hiddens: int, dtype=torch.float64, device=None):
    """The (d, d) matrix M(delta) with P[i + delta] = M(delta) P[i] for every position i.

    Block diagonal, one 2x2 rotation per frequency, acting on the pair (sin, cos) of columns
    2j and 2j + 1::

        [[ cos(delta w_j), sin(delta w_j)],
         [-sin(delta w_j), cos(delta w_j)]]

    It does not depend on i: a fixed offset is a fixed linear map. For odd d, the last
    (sine-only) column has no partner, and no such linear map exists; d must be even.
    """
    M = torch.zeros(num_hiddens, num_hiddens, dtype=dtype, device=device)
    angles = delta * frequencies(num_hiddens, dtype=dtype, device=device)  # (d/2,)
    c, s = torch.cos(angles), torch.sin(angles)
    even = torch.arange(0, num_hiddens, 2, device=device)  # the sine column of each pair
    # block j fills rows and columns 2j (sine) and 2j + 1 (cosine)
    M[even, even], M[even, even + 1] = c, s
    M[even + 1, even], M[even + 1, even + 1] = -s, c
    return M


class LearnedPositionalEncoding(nn.Module):
    """Absolute positions as learned vectors (as in BERT and GPT-2): X + E[position].

    forward(X (B, n, num_hiddens), offset=0) -> same shape, offset + n <= max_len. Unlike the
    sinusoidal table, nothing is defined beyond max_len: a longer input is an error.
    """

    @contract(num_hiddens=positive_int, dropout=probability, max_len=positive_int)
    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 512):
        super().__init__()
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        self.embedding = nn.Embedding(max_len, num_hiddens)
        nn.init.normal_(self.embedding.weight, std=0.02)

    @contract(X="B n self.num_hiddens", offset=non_negative_int,
              where=[require(_fits_max_len, _beyond_max_len)])
    def forward(self, X, offset: int = 0):
        E = self.embedding.weight[offset:offset + X.shape[1]]  # (n, d): the learned rows
        return self.dropout(X + E.to(X.dtype))                 # (B, n, d)


class RotaryEmbedding(nn.Module):
    """Rotary position embedding, RoPE (Su et al., 2021): rotate, do not add.

    Each pair (x_{2j}, x_{2j+1}) of a query or key at position i is rotated by the angle
    i * theta_j, theta_j = base^(-2j/d). Since rotations compose, the score between a query at
    position i and a key at position j, (R_i q) · (R_j k) = q · R_{j-i} k, depends on the
    positions only through j - i.
    forward(X (*lead, n, num_hiddens), positions (n,) = None) -> same shape; num_hiddens
    (the size of each query or key vector, per head) must be even.
    """

    @contract(num_hiddens=positive_int,
              where=[_even("(pairs are rotated)"), require(lambda base: base > 1,
                                   lambda base: f"base must be greater than 1, got {base}")])
    def __init__(self, num_hiddens: int, base: float = 10000.0):
        super().__init__()
        self.num_hiddens, self.base = num_hiddens, base
        self.register_buffer("theta", frequencies(num_hiddens, base, dtype=torch.float32),
                             persistent=False)  # theta_j = base^(-2j/d): (d/2,)

    @contract(X="*lead n self.num_hiddens", positions=tensor("n", "any"))
    def forward(self, X, positions=None):
        """Turn pair j of the row at position i by the angle i * theta_j."""
        if positions is None:
            positions = torch.arange(X.shape[-2], device=X.device)  # 0 .. n - 1
        angles = positions.to(torch.float32)[:, None] * self.theta  # i * theta_j: (n, d/2), float32
        cos, sin = torch.cos(angles).to(X.dtype), torch.sin(angles).to(X.dtype)
        x_even, x_odd = X[..., 0::2], X[..., 1::2]  # x_{2j} and x_{2j+1}: (..., n, d/2) each
        out = torch.empty_like(X)
        out[..., 0::2] = x_even * cos - x_odd * sin  # each pair (x, y) turns to
        out[..., 1::2] = x_even * sin + x_odd * cos  # (x cos - y sin, x sin + y cos)
        return out


@contract(num_heads=positive_int)
def alibi_slopes(num_heads: int, dtype=torch.float32, device=None) -> torch.Tensor:
    """ALiBi's slope of each head (Press et al., 2022): m_i = 2^(-8i/h) for heads i = 1 .. h,
    a geometric sequence from 2^(-8/h) to 2^(-8) (their rule for h a power of two; the package
    uses it for every h). Returns (num_heads,)."""
    i = torch.arange(1, num_heads + 1, dtype=torch.float64, device=device)
    return torch.pow(2.0, -8.0 * i / num_heads).to(dtype)


@contract(num_heads=positive_int, n_q=positive_int, n_k=positive_int,
          where=[require(lambda n_q, n_k: n_k is None or n_q <= n_k,
                         "n_q ({n_q}) must be at most n_k ({n_k}): the queries are the last "
                         "n_q of the n_k positions")])
def alibi_bias(num_heads: int, n_q: int, n_k: int | None = None, dtype=torch.float32,
               device=None) -> torch.Tensor:
    """ALiBi's bias, added to the scores: -m_h * abs(i - j) for the query at position i and the
    key at position j (``alibi_slopes``). The queries are the last n_q of n_k positions
    (n_k = n_q by default), as a decoder step with a cache sees them. Combine it with a causal
    mask, which hides j > i: then it is Press et al.'s bias -m_h (i - j). Nothing is added to
    the tokens, so any length has a bias. Returns (num_heads, n_q, n_k), a float mask for
    ``attend``."""
    n_k = n_q if n_k is None else n_k
    keys = torch.arange(n_k, device=device)
    queries = keys[n_k - n_q:]                                             # the last n_q
    distance = (queries[:, None] - keys[None, :]).abs().to(dtype)          # (n_q, n_k)
    return -alibi_slopes(num_heads, dtype, device)[:, None, None] * distance
