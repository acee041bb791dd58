"""Masks and the masked softmax: attention over the keys a query may see, and no others.

One mask convention everywhere: a boolean tensor, True where a query may attend to a key (the
polarity of torch's ``scaled_dot_product_attention``), broadcastable against the scores
(B, [h,] n_q, n_k). Valid lengths, d2l's way of describing padding, become such a mask in one
place, ``valid_lens_to_mask``.

Masked positions get exactly zero weight. d2l fills them with -1e6, which overflows float16
and gives a query with no valid key *uniform* weights over the padding. We fill with the
dtype's most negative finite number and then zero the masked positions, so such a query gets
all-zero weights, a zero output, and never a NaN.
"""
from __future__ import annotations

import torch

from ._checks import check_rank, check_tensor, check_valid_lens


def valid_lens_to_mask(valid_lens, n_queries: int, n_keys: int, *, batch: int | None = None,
                       device=None) -> torch.Tensor:
    """Valid lengths -> boolean mask, True where key j may be attended to (j < length).

    valid_lens: (B,) one length per sequence, or (B, n_q) one per query; a tensor or a list.
    Returns (B, 1, n_k) or (B, n_q, n_k), which broadcasts against scores (B, n_q, n_k).
    Lengths outside [0, n_k] act as if clipped to it. They are rejected when checking is free:
    for Python lists, and for CPU tensors outside compiled code (reading a GPU tensor's values
    would make the host wait for the device).
    """
    check_valid_lens(valid_lens, n_queries, n_keys, batch)
    return lens_to_mask(torch.as_tensor(valid_lens, device=device), n_keys)


def lens_to_mask(lens: torch.Tensor, n_keys: int) -> torch.Tensor:
    """Lengths (B,) or (B, n_q) -> mask (B, 1 or n_q, n_k), True where key j < length."""
    if lens.dim() == 1:
        lens = lens[:, None]                             # (B, 1): one length for all queries
    return torch.arange(n_keys, device=lens.device) < lens[..., None]  # (B, 1 or n_q, n_k)


def causal_mask(n_queries: int, n_keys: int, device=None) -> torch.Tensor:
    """(n_q, n_k) boolean mask, True where key j <= query i: no query sees a later position."""
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril()


def with_head_dims(mask: torch.Tensor, rank: int) -> torch.Tensor:
    """Insert singleton axes after the batch axis so a (B, n_q, n_k) mask has ``rank`` axes,
    e.g. (B, 1, n_q, n_k) against scores (B, h, n_q, n_k)."""
    return mask.reshape(mask.shape[0], *([1] * (rank - mask.dim())), *mask.shape[1:])


def masked_softmax(scores: torch.Tensor, valid_lens=None, *, mask=None) -> torch.Tensor:
    """Softmax over the last axis of ``scores``, over the keys each query may attend to.

    scores: (B, n_q, n_k), or (B, ..., n_q, n_k) for several heads; or any shape with ``mask``.
    valid_lens: None, (B,) or (B, n_q): key j is used iff j < length.
    mask: None or boolean, broadcastable to scores, True = may attend (combined with valid_lens).
    Scores of -inf also count as masked. Returns weights of the shape of ``scores``: each row
    sums to 1 over its usable keys and is exactly 0 elsewhere; a row with no usable key is all 0.
    NaN scores propagate as in ``torch.softmax``.
    """
    _check_masked_softmax(scores, valid_lens, mask)
    if valid_lens is not None:
        lens = torch.as_tensor(valid_lens, device=scores.device)
        lens_mask = with_head_dims(lens_to_mask(lens, scores.shape[-1]), scores.dim())
        mask = lens_mask if mask is None else mask & lens_mask  # (B, [1,] 1 or n_q, n_k)
    return softmax_over(scores, mask)


def softmax_over(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """The masked softmax itself, unchecked: the weights of ``scores`` (..., n_q, n_k) over the
    keys where ``mask`` is True and the score is not -inf, exactly 0 elsewhere."""
    usable = scores != float("-inf")                              # (..., n_q, n_k)
    if mask is not None:
        usable = usable & mask                                    # broadcasts to the scores
    lowest = torch.finfo(scores.dtype).min  # finite, so no inf - inf = NaN anywhere
    weights = torch.softmax(scores.masked_fill(~usable, lowest), dim=-1)
    return weights.masked_fill(~usable, 0.0)  # a row with no usable key: all 0, not uniform


def _check_masked_softmax(scores, valid_lens, mask) -> None:
    """The door of masked_softmax: floating scores, lengths that fit them, a boolean mask."""
    check_tensor("scores", scores)
    if valid_lens is not None:
        check_rank("scores", scores, range(3, 9), "(batch, n_queries, n_keys) or "
                   "(batch, ..., n_queries, n_keys) when valid_lens is given")
        check_valid_lens(valid_lens, scores.shape[-2], scores.shape[-1], batch=scores.shape[0])
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError(f"mask must be boolean (True = may attend), got {mask.dtype}")


def padding_mask(valid_lens, queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor | None:
    """The mask of a layer's valid lengths, shaped for its scores: None when valid_lens is None,
    else (B, 1 ..., 1 or n_q, n_k) on the queries' device, one singleton per head axis."""
    if valid_lens is None:
        return None
    mask = valid_lens_to_mask(valid_lens, queries.shape[-2], keys.shape[-2],
                              batch=queries.shape[0], device=queries.device)
    return with_head_dims(mask, queries.dim())
