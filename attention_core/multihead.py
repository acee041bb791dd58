"""Multi-head attention: several scaled dot-product attentions side by side in one layer.

Each head projects queries, keys and values to its own subspace of size
num_hiddens / num_heads, attends there, and the heads' *outputs* are concatenated and
mixed by W_o. The heads run in parallel within the layer; they are not stacked.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import check_in_features, check_positive_int, check_probability, check_qkv
from .attention import _attend, dropout_p
from .masking import padding_mask
from .scoring import linear


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention with d2l's names (W_q, W_k, W_v, W_o).

    forward(queries (B, n_q, query_size), keys (B, n_k, key_size), values (B, n_k, value_size),
            valid_lens None | (B,) | (B, n_q), need_weights None | bool) -> (B, n_q, num_hiddens).

    By default it runs torch's fused ``scaled_dot_product_attention`` with a padding mask of
    shape (B, 1, 1, n_k) that broadcasts over heads and queries (a dense (n_q, n_k) mask
    would cost a gigabyte at 16k tokens). With ``need_weights`` (per call, or the attribute
    of the same name for every call) it runs the step-by-step version instead and keeps
    ``self.attention_weights`` (B, h, n_q, n_k). Sizes left as None make the projections lazy.
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = False, *, query_size: int | None = None,
                 key_size: int | None = None, value_size: int | None = None,
                 need_weights: bool = False):
        super().__init__()
        check_positive_int(num_hiddens=num_hiddens, num_heads=num_heads)
        if num_hiddens % num_heads:
            raise ValueError(f"num_hiddens ({num_hiddens}) must be divisible by num_heads "
                             f"({num_heads})")
        check_probability("dropout", dropout)
        self.num_heads = num_heads
        self.W_q = linear(query_size, num_hiddens, bias)
        self.W_k = linear(key_size, num_hiddens, bias)
        self.W_v = linear(value_size, num_hiddens, bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.need_weights = need_weights
        self.attention_weights = None

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n, num_hiddens) -> (B, h, n, num_hiddens / h)."""
        batch, n, _ = x.shape
        return x.view(batch, n, self.num_heads, -1).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, h, n, d_head) -> (B, n, h * d_head): concatenate the heads' outputs."""
        batch, _, n, _ = x.shape
        return x.transpose(1, 2).reshape(batch, n, -1)

    def forward(self, queries, keys, values, valid_lens=None, need_weights=None):
        check_qkv(queries, keys, values, same_qk_size=False)
        check_in_features("queries", queries, self.W_q, "query_size")
        check_in_features("keys", keys, self.W_k, "key_size")
        check_in_features("values", values, self.W_v, "value_size")
        q = self.split_heads(self.W_q(queries))  # (B, h, n_q, d_head)
        k = self.split_heads(self.W_k(keys))     # (B, h, n_k, d_head)
        v = self.split_heads(self.W_v(values))   # (B, h, n_k, d_head)
        out, self.attention_weights = _attend(
            q, k, v, padding_mask(valid_lens, q, k), dropout_p=dropout_p(self),
            need_weights=self.need_weights if need_weights is None else need_weights)
        return self.W_o(self.merge_heads(out))   # (B, n_q, num_hiddens)
