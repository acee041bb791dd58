"""Sinusoidal positional encoding (Vaswani et al., 2017).

Self-attention is blind to order, so each position i gets a fixed vector P[i] added to its
token's embedding: P[i, 2j] = sin(i / 10000^(2j/d)), P[i, 2j+1] = cos(i / 10000^(2j/d)).
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import check_probability, check_rank, check_size, check_tensor


def sinusoidal_table(max_len: int, num_hiddens: int, dtype=torch.float32, device=None):
    """The table P: (max_len, num_hiddens). Columns 2j and 2j+1 share frequency 1/10000^(2j/d)."""
    for name, v in (("max_len", max_len), ("num_hiddens", num_hiddens)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not torch.empty(0, dtype=dtype).is_floating_point():
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    positions = torch.arange(max_len, dtype=dtype, device=device).reshape(-1, 1)
    freqs = torch.pow(10000, torch.arange(0, num_hiddens, 2, dtype=dtype, device=device)
                      / num_hiddens)
    angles = positions / freqs  # (max_len, ceil(d / 2))
    P = torch.zeros(max_len, num_hiddens, dtype=dtype, device=device)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])  # an odd d has one sine column more
    return P


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to its input, then applies dropout.

    forward(X (batch, n, num_hiddens)) -> (batch, n, num_hiddens), with n <= max_len.
    The table is ``self.P`` (1, max_len, num_hiddens), a buffer that follows ``.to(device)``.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000):
        super().__init__()
        for name, v in (("num_hiddens", num_hiddens), ("max_len", max_len)):
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        check_probability("dropout", dropout)
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", sinusoidal_table(max_len, num_hiddens).unsqueeze(0),
                             persistent=False)

    def forward(self, X):
        check_tensor("X", X)
        check_rank("X", X, 3, "(batch, n, num_hiddens)")
        check_size("X", X, 2, self.num_hiddens, "num_hiddens")
        if X.shape[1] > self.max_len:
            raise ValueError(f"X has {X.shape[1]} positions (shape {tuple(X.shape)}), more than "
                             f"max_len={self.max_len}")
        return self.dropout(X + self.P[:, : X.shape[1]].to(X.dtype))
