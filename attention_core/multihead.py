"""Multi-head attention: several scaled dot-product attentions side by side in one layer.

Each head projects queries, keys and values to its own subspace of size
num_hiddens / num_heads, attends there, and the heads' *outputs* are concatenated and
mixed by W_o. The heads run in parallel within the layer; they are not stacked.
"""
from __future__ import annotations

import torch
from torch import nn

from ._checks import (check_in_features, check_positive_int, check_probability, check_qkv,
                      check_tensor)
from .attention import dropout_p, math_attention, sdpa_attention
from .masking import padding_mask
from .scoring import linear


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention with d2l's names (W_q, W_k, W_v, W_o).

    ``forward(queries (B, n_q, query_size), keys (B, n_k, key_size), values (B, n_k, value_size),
    valid_lens None | (B,) | (B, n_q), need_weights None | bool, *,
    is_causal False | True, head_mask None | (h,) | (B, h)) -> (B, n_q, num_hiddens)``.

    num_kv_heads (default num_heads) makes it grouped-query attention: W_k and W_v map to
    num_kv_heads heads of d_head = num_hiddens / num_heads, and query head i reads key/value
    head i // (num_heads / num_kv_heads), as torch's ``enable_gqa`` does; num_kv_heads = 1 is
    multi-query attention. head_mask multiplies each head's output before W_o (0 removes a
    head, as in Michel et al., 2019).

    By default it runs torch's fused ``scaled_dot_product_attention`` with a padding mask of
    shape (B, 1, 1, n_k) that broadcasts over heads and queries (a dense (n_q, n_k) mask
    would cost a gigabyte at 16k tokens). With ``need_weights`` (per call, or the attribute
    of the same name for every call) it runs the step-by-step version instead and keeps
    ``self.attention_weights`` (B, h, n_q, n_k). Sizes left as None make the projections lazy.
    """

    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = False, num_kv_heads: int | None = None, *,
                 query_size: int | None = None, key_size: int | None = None,
                 value_size: int | None = None, need_weights: bool = False):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        _check_sizes(num_hiddens, num_heads, num_kv_heads, dropout)
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        d_kv = num_hiddens // num_heads * num_kv_heads
        self.W_q = linear(query_size, num_hiddens, bias)
        self.W_k = linear(key_size, d_kv, bias)
        self.W_v = linear(value_size, d_kv, bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.need_weights = need_weights
        self.attention_weights = None

    @staticmethod
    def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
        """(B, n, heads * d_head) -> (B, heads, n, d_head): the heads become a batch dimension."""
        batch, n, _ = x.shape
        x = x.view(batch, n, heads, x.shape[-1] // heads)  # (B, n, heads, d_head)
        return x.transpose(1, 2)                           # (B, heads, n, d_head)

    @staticmethod
    def merge_heads(x: torch.Tensor) -> torch.Tensor:
        """(B, h, n, d_head) -> (B, n, h * d_head): concatenate the heads' outputs."""
        batch, h, n, d_head = x.shape
        x = x.transpose(1, 2)                      # (B, n, h, d_head)
        return x.reshape(batch, n, h * d_head)     # (B, n, h * d_head): [H_1, ..., H_h]

    def project_queries(self, queries: torch.Tensor) -> torch.Tensor:
        """(B, n_q, query_size) -> (B, h, n_q, d_head)."""
        return self.split_heads(self.W_q(queries), self.num_heads)

    def project_kv(self, keys: torch.Tensor, values: torch.Tensor):
        """-> keys, values (B, num_kv_heads, n_k, d_head): what a decoder's cache keeps."""
        return (self.split_heads(self.W_k(keys), self.num_kv_heads),
                self.split_heads(self.W_v(values), self.num_kv_heads))

    def forward(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                is_causal: bool = False, head_mask=None):
        _check_inputs(self, queries, keys, values, head_mask)
        q = self.split_heads(self.W_q(queries), self.num_heads)    # (B, h, n_q, d_head)
        k = self.split_heads(self.W_k(keys), self.num_kv_heads)    # (B, h_kv, n_k, d_head)
        v = self.split_heads(self.W_v(values), self.num_kv_heads)  # (B, h_kv, n_k, d_head)
        mask = padding_mask(valid_lens, q, k)  # None or (B, 1, 1 or n_q, n_k): one for all heads
        return self.attend_heads(q, k, v, mask, is_causal=is_causal, need_weights=need_weights,
                                 head_mask=head_mask)              # (B, n_q, num_hiddens)

    def attend_heads(self, q, k, v, mask=None, *, is_causal: bool = False,
                     need_weights: bool | None = None, head_mask=None) -> torch.Tensor:
        """Attention in every head at once (q, k, v from split_heads), then W_o.
        Unchecked: forward checks its inputs; a caller with its own cache checks its own."""
        need_weights = self.need_weights if need_weights is None else need_weights
        # softmax(q k^T / sqrt(d_head)) v with the heads as a batch dimension: step by step,
        # keeping the weights (B, h, n_q, n_k), or torch's fused kernel, which stores none
        attention = math_attention if need_weights else sdpa_attention
        out, self.attention_weights = attention(q, k, v, mask, is_causal=is_causal,
                                                dropout_p=dropout_p(self))  # (B, h, n_q, d_head)
        if head_mask is not None:  # (h,) or (B, h) -> broadcast over positions and features
            out = out * head_mask.to(out.dtype)[..., None, None]
        return self.W_o(self.merge_heads(out))  # (B, n_q, num_hiddens)


def check_head_mask(head_mask, batch: int, num_heads: int) -> None:
    """Require None or a tensor of shape (h,) or (B, h): one factor per head (per example)."""
    if head_mask is None:
        return
    check_tensor("head_mask", head_mask, floating=False)
    if tuple(head_mask.shape) not in ((num_heads,), (batch, num_heads)):
        raise ValueError(f"head_mask of shape {tuple(head_mask.shape)} must be ({num_heads},) or "
                         f"({batch}, {num_heads}): one factor per head")


def _check_sizes(num_hiddens, num_heads, num_kv_heads, dropout) -> None:
    """The door of MultiHeadAttention.__init__."""
    check_positive_int(num_hiddens=num_hiddens, num_heads=num_heads, num_kv_heads=num_kv_heads)
    if num_hiddens % num_heads:
        raise ValueError(f"num_hiddens ({num_hiddens}) must be divisible by num_heads "
                         f"({num_heads})")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads ({num_kv_heads}) must divide num_heads "
                         f"({num_heads}): each key/value head serves a whole group of "
                         f"query heads")
    check_probability("dropout", dropout)


def _check_inputs(layer: MultiHeadAttention, queries, keys, values, head_mask) -> None:
    """The door of MultiHeadAttention.forward: tensors, ranks and sizes that fit the layer."""
    check_qkv(queries, keys, values, same_qk_size=False)
    check_in_features("queries", queries, layer.W_q, "query_size")
    check_in_features("keys", keys, layer.W_k, "key_size")
    check_in_features("values", values, layer.W_v, "value_size")
    check_head_mask(head_mask, queries.shape[0], layer.num_heads)


def kv_cache_bytes(num_layers: int, num_kv_heads: int, d_head: int, dtype=torch.float16) -> int:
    """Bytes a decoder caches per token: a key and a value per layer and key/value head,
    2 * layers * kv_heads * d_head * bytes per number."""
    check_positive_int(num_layers=num_layers, num_kv_heads=num_kv_heads, d_head=d_head)
    return 2 * num_layers * num_kv_heads * d_head * torch.empty((), dtype=dtype).element_size()
