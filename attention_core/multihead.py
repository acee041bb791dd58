"""Multi-head attention: several scaled dot-product attentions side by side in one layer.

Each head projects queries, keys and values to its own subspace of size
num_hiddens / num_heads, attends there, and the heads' *outputs* are concatenated and
mixed by W_o. The heads run in parallel within the layer; they are not stacked.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from .attention import dropout_rate, math_attention, sdpa_attention
from .contracts import (
    contract,
    instance_of,
    lengths,
    one_of,
    positive_int,
    probability,
    require,
    tensor,
)
from .masking import padding_mask
from .scoring import in_features, linear

__all__ = ["MultiHeadAttention", "kv_cache_bytes", "pool_kv_heads"]


def _head_mask_fits(queries, head_mask, self) -> bool:
    return head_mask is None or tuple(head_mask.shape) in (
        (self.num_heads,), (queries.shape[0], self.num_heads))


def _head_mask_message(queries, head_mask, self) -> str:
    return (f"head_mask of shape {tuple(head_mask.shape)} must be ({self.num_heads},) or "
            f"({queries.shape[0]}, {self.num_heads}): one factor per head")


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

    @contract(num_hiddens=positive_int, num_heads=positive_int, dropout=probability,
              num_kv_heads=positive_int, query_size=positive_int, key_size=positive_int,
              value_size=positive_int,
              where=[require(lambda num_hiddens, num_heads: num_hiddens % num_heads == 0,
                             "num_hiddens ({num_hiddens}) must be divisible by num_heads "
                             "({num_heads})"),
                     require(lambda num_kv_heads, num_heads: num_kv_heads is None
                             or num_heads % num_kv_heads == 0,
                             "num_kv_heads ({num_kv_heads}) must divide num_heads ({num_heads}): "
                             "each key/value head serves a whole group of query heads")])
    def __init__(self, num_hiddens: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = False, num_kv_heads: int | None = None, *,
                 query_size: int | None = None, key_size: int | None = None,
                 value_size: int | None = None, need_weights: bool = False):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        d_kv = num_hiddens // num_heads * num_kv_heads
        self.W_q = linear(query_size, num_hiddens, bias)
        self.W_k = linear(key_size, d_kv, bias)
        self.W_v = linear(value_size, d_kv, bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.need_weights = need_weights
        self.attention_weights = None

    @property
    def query_size(self) -> int | None:
        return in_features(self.W_q)

    @property
    def key_size(self) -> int | None:
        return in_features(self.W_k)

    @property
    def value_size(self) -> int | None:
        return in_features(self.W_v)

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

    @contract(queries="B n_q self.query_size", keys="B n_k self.key_size",
              values="B n_k self.value_size", valid_lens=lengths(),
              head_mask=tensor("*any", "any"),
              where=[require(_head_mask_fits, _head_mask_message)])
    def forward(self, queries, keys, values, valid_lens=None, need_weights=None, *,
                is_causal: bool = False, head_mask=None):
        q = self.project_queries(queries)                       # (B, h, n_q, d_head)
        k, v = self.project_kv(keys, values)                    # (B, h_kv, n_k, d_head)
        mask = padding_mask(valid_lens, q, k.shape[2])  # None or (B, 1, 1|n_q, n_k): all heads
        return self.attend_heads(q, k, v, mask, is_causal=is_causal, need_weights=need_weights,
                                 head_mask=head_mask)              # (B, n_q, num_hiddens)

    def attend_heads(self, q, k, v, mask=None, *, is_causal: bool = False,
                     need_weights: bool | None = None, head_mask=None) -> torch.Tensor:
        """Attention in every head at once, then W_o: q (B, h, n_q, d_head) from
        ``project_queries``, k and v (B, h_kv, n_k, d_head) from ``project_kv`` (or a cache of
        them), as ``forward`` and a decoder call it; mask as ``attend`` takes it."""
        need_weights = self.need_weights if need_weights is None else need_weights
        # softmax(q k^T / sqrt(d_head)) v with the heads as a batch dimension: step by step,
        # keeping the weights (B, h, n_q, n_k), or torch's fused kernel, which stores none
        attention = math_attention if need_weights else sdpa_attention
        out, self.attention_weights = attention(q, k, v, mask, is_causal=is_causal,
                                                dropout_p=dropout_rate(self))  # (B, h, n_q, d_head)
        if head_mask is not None:  # (h,) or (B, h) -> broadcast over positions and features
            out = out * head_mask.to(out.dtype)[..., None, None]
        return self.W_o(self.merge_heads(out))  # (B, n_q, num_hiddens)


@contract(num_layers=positive_int, num_kv_heads=positive_int, d_head=positive_int)
def kv_cache_bytes(num_layers: int, num_kv_heads: int, d_head: int, dtype=torch.float16) -> int:
    """Bytes a decoder caches per token: a key and a value per layer and key/value head,
    2 * layers * kv_heads * d_head * bytes per number."""
    return 2 * num_layers * num_kv_heads * d_head * torch.empty((), dtype=dtype).element_size()


@contract(layer=instance_of(MultiHeadAttention, "a MultiHeadAttention"), num_kv_heads=positive_int,
          how=one_of("mean", "first"),
          where=[require(lambda layer, num_kv_heads: layer.num_kv_heads % num_kv_heads == 0,
                         lambda layer, num_kv_heads: f"num_kv_heads ({num_kv_heads}) must divide "
                         f"the layer's num_kv_heads ({layer.num_kv_heads}): each new key/value "
                         f"head is the mean of a whole group of old ones"),
                 require(lambda layer: not nn.parameter.is_lazy(layer.W_k.weight),
                         "layer's key and value projections are lazy and not built yet: call "
                         "the layer once, or give it key_size and value_size")])
def pool_kv_heads(layer: MultiHeadAttention, num_kv_heads: int,
                  how: str = "mean") -> MultiHeadAttention:
    """Ainslie et al.'s conversion of a trained layer to grouped-query attention: a copy with
    ``num_kv_heads`` key/value heads, new head j the mean of the key (and value) projections of
    old heads j * g ... j * g + g - 1, g = layer.num_kv_heads / num_kv_heads, which are the heads
    whose query heads it now serves (how="first": old head j * g alone, the alternative they
    compare). W_q and W_o are copied unchanged."""
    pooled = copy.deepcopy(layer)
    group = layer.num_kv_heads // num_kv_heads
    for name in ("W_k", "W_v"):
        old = getattr(layer, name)
        new = nn.Linear(old.in_features, old.out_features // group, bias=old.bias is not None,
                        device=old.weight.device, dtype=old.weight.dtype)
        with torch.no_grad():  # rows of head j are j * d_head ... (j + 1) * d_head - 1
            for new_p, old_p in zip(new.parameters(), old.parameters()):  # weight, bias
                grouped = old_p.unflatten(0, (num_kv_heads, group, -1))  # (new, group, d_head..)
                new_p.copy_((grouped.mean(1) if how == "mean" else grouped[:, 0]).flatten(0, 1))
        setattr(pooled, name, new)
    pooled.num_kv_heads = num_kv_heads
    return pooled
