"""Multi-head attention: several scaled dot-product attentions side by side in one layer.

Each head projects queries, keys and values to its own subspace of size
num_hiddens / num_heads, attends there, and the heads' *outputs* are concatenated and
mixed by W_o. The heads run in parallel within the layer; they are not stacked.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ._checks import check_positive_int, check_probability
from .attention import check_qkv
from .scoring import linear
from .masking import softmax_where, valid_lens_to_mask


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention with d2l's names (W_q, W_k, W_v, W_o).

    forward(queries (batch, n_queries, d_q), keys (batch, n_keys, d_k),
            values (batch, n_keys, d_v), valid_lens None | (batch,) | (batch, n_queries),
            need_weights None | bool) -> (batch, n_queries, num_hiddens).

    By default it runs torch's fused ``scaled_dot_product_attention`` with a padding mask
    of shape (batch, 1, 1, n_keys) that broadcasts over heads and queries (a dense
    (n_queries, n_keys) mask would cost a gigabyte at 16k tokens). With ``need_weights``
    (per call, or the attribute of the same name for every call) it runs the step-by-step
    version instead and keeps ``self.attention_weights`` (batch, num_heads, n_queries, n_keys).
    Both give zero attention output for a query whose keys are all masked.
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = False, query_size: int | None = None,
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
        """(batch, n, num_hiddens) -> (batch, num_heads, n, num_hiddens / num_heads)."""
        batch, n, _ = x.shape
        return x.view(batch, n, self.num_heads, -1).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(batch, num_heads, n, d_head) -> (batch, n, num_heads * d_head): concatenate heads."""
        batch, _, n, _ = x.shape
        return x.transpose(1, 2).reshape(batch, n, -1)

    def forward(self, queries, keys, values, valid_lens=None, need_weights=None):
        check_qkv(queries, keys, values, same_qk_size=False)
        need_weights = self.need_weights if need_weights is None else need_weights
        batch, n_queries, n_keys = queries.shape[0], queries.shape[1], keys.shape[1]
        q = self.split_heads(self.W_q(queries))  # (batch, heads, n_q, d_head)
        k = self.split_heads(self.W_k(keys))     # (batch, heads, n_k, d_head)
        v = self.split_heads(self.W_v(values))   # (batch, heads, n_k, d_head)
        mask = None
        if valid_lens is not None:  # (batch, 1, 1 or n_q, n_k): broadcasts over heads
            mask = valid_lens_to_mask(valid_lens, n_keys, batch, n_queries,
                                      device=queries.device).unsqueeze(1)
        if need_weights:
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (batch, heads, n_q, n_k)
            self.attention_weights = softmax_where(scores, mask)
            out = self.dropout(self.attention_weights) @ v
        else:
            self.attention_weights = None
            p = self.dropout.p if self.training else 0.0
            if mask is None:
                out = F.scaled_dot_product_attention(q, k, v, dropout_p=p)
            else:
                # A query with no valid key would get NaN from the fused kernel: let it see
                # every key (finite values, finite gradients) and then zero its output.
                empty = ~mask.any(dim=-1, keepdim=True)  # (batch, 1, 1 or n_q, 1)
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask | empty,
                                                     dropout_p=p)
                out = out.masked_fill(empty, 0.0)
        return self.W_o(self.merge_heads(out))  # (batch, n_q, num_hiddens)
