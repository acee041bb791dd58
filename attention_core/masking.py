"""Masks and the masked softmax: attention over the keys a query may see, and no others.

One mask convention everywhere: a boolean tensor, True where a query may attend to a key (the
polarity of torch's ``scaled_dot_product_attention``), broadcastable against the scores
(B, *h, n_q, n_k). Valid lengths, d2l's way of describing padding, become such a mask in one
place, ``valid_lens_to_mask``.

Masked positions get exactly zero weight. d2l fills them with -1e6, which overflows float16
and gives a query with no valid key *uniform* weights over the padding. We fill with the
dtype's most negative finite number and then zero the masked positions, so such a query gets
all-zero weights, a zero output, and never a NaN.
"""
from __future__ import annotations

import torch

from .contracts import contract, lengths, require, size, tensor

__all__ = ["valid_lens_to_mask", "causal_mask", "masked_softmax"]


@contract(n_queries=size("n_q"), n_keys=size("n_k"), valid_lens=lengths(per="B n_q", upto="n_k"))
def valid_lens_to_mask(valid_lens, n_queries: int, n_keys: int, *, device=None) -> torch.Tensor:
    """Valid lengths -> boolean mask, True where key j may be attended to (j < length).

    valid_lens: (B,) one length per sequence, or (B, n_q) one per query; a tensor or a list.
    Returns (B, 1, n_k) or (B, n_q, n_k), which broadcasts against scores (B, n_q, n_k).
    """
    lens = torch.as_tensor(valid_lens, device=device)
    if lens.dim() == 1:
        lens = lens[:, None]                             # (B, 1): one length for all queries
    return torch.arange(n_keys, device=lens.device) < lens[..., None]  # (B, 1 or n_q, n_k)


@contract(n_queries=size("n_q"), n_keys=size("n_k"))
def causal_mask(n_queries: int, n_keys: int, device=None) -> torch.Tensor:
    """(n_q, n_k) boolean mask, True where key j <= query i: no query sees a later position."""
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril()


@contract(scores="*lead n_k", valid_lens=lengths(per="scores[0] scores[-2]", upto="n_k"),
          mask=tensor("*m", "bool", "(True = may attend)"),
          where=[require(lambda scores, valid_lens: valid_lens is None or scores.dim() >= 3,
                         "scores must be (batch, n_queries, n_keys) or (batch, ..., n_queries, "
                         "n_keys) when valid_lens is given")])
def masked_softmax(scores: torch.Tensor, valid_lens=None, *, mask=None) -> torch.Tensor:
    """Softmax over the last axis of ``scores``, over the keys each query may attend to.

    scores: (*lead, n_k), e.g. (B, n_q, n_k), or (B, h, n_q, n_k) for several heads.
    valid_lens: None, (B,) or (B, n_q) for scores (B, ..., n_q, n_k): key j is used iff
    j < length. mask: None or boolean, broadcastable to scores, True = may attend (combined with
    valid_lens). Scores of -inf also count as masked. Returns weights of the shape of
    ``scores``: each row sums to 1 over its usable keys and is exactly 0 elsewhere; a row with
    no usable key is all 0. NaN scores propagate as in ``torch.softmax``.
    """
    usable = scores != float("-inf")                              # (..., n_q, n_k)
    if valid_lens is not None:
        usable = usable & padding_mask(valid_lens, scores, scores.shape[-1])
    if mask is not None:
        usable = usable & mask                                    # broadcasts to the scores
    lowest = torch.finfo(scores.dtype).min  # finite, so no inf - inf = NaN anywhere
    weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=-1)
    return weights.masked_fill(~usable, 0.0)  # a row with no usable key: all 0, not uniform


def padding_mask(valid_lens, queries: torch.Tensor, n_keys: int) -> torch.Tensor | None:
    """The mask of valid lengths that a layer has checked, shaped for its scores: None when
    valid_lens is None, else (B, 1 ..., 1 or n_q, n_k) on the queries' device, one singleton
    axis for each head axis of queries (B, *h, n_q, d)."""
    if valid_lens is None:
        return None
    mask = valid_lens_to_mask.__wrapped__(valid_lens, queries.shape[-2], n_keys,
                                          device=queries.device)       # (B, 1 or n_q, n_k)
    return mask.reshape(mask.shape[0], *[1] * (queries.dim() - 3), *mask.shape[1:])
