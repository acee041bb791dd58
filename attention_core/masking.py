"""Masked softmax: attention over the valid keys only.

Sequences in a batch have different lengths; the padded positions must get exactly zero
weight. d2l fills them with -1e6, which overflows float16 and gives uniform weights to a
query with no valid key at all. We fill with the dtype's most negative finite number and
then zero the masked positions, so such a query gets all-zero weights and never a NaN.
"""
from __future__ import annotations

import torch

from ._checks import check_finite, check_rank, check_tensor


def valid_lens_to_mask(valid_lens, n_keys: int, batch: int, n_queries: int,
                       device: torch.device | None = None) -> torch.Tensor:
    """Turn valid lengths into a boolean mask, True where a key may be attended to.

    valid_lens: (batch,) one length per sequence, or (batch, n_queries) one per query.
    Returns (batch, 1, n_keys) or (batch, n_queries, n_keys); it broadcasts against scores
    of shape (batch, n_queries, n_keys).
    """
    lens = torch.as_tensor(valid_lens, device=device)
    if lens.is_complex() or lens.dtype == torch.bool:
        raise TypeError(f"valid_lens must hold integer lengths, got dtype {lens.dtype}")
    if lens.dim() == 1:
        if lens.shape[0] != batch:
            raise ValueError(f"valid_lens of shape {tuple(lens.shape)} must have one length per "
                             f"batch element ({batch}), or be ({batch}, {n_queries})")
        lens = lens[:, None]  # (batch, 1): the same length for every query
    elif lens.dim() == 2:
        if tuple(lens.shape) != (batch, n_queries):
            raise ValueError(f"valid_lens of shape {tuple(lens.shape)} must be ({batch},) or "
                             f"({batch}, {n_queries}) to match scores with batch {batch} and "
                             f"{n_queries} queries")
    else:
        raise ValueError(f"valid_lens must be (batch,) or (batch, n_queries), got shape "
                         f"{tuple(lens.shape)}")
    if lens.is_floating_point() and bool((lens != lens.round()).any()):
        raise ValueError(f"valid_lens must be whole numbers, got {lens.tolist()}")
    if bool(((lens < 0) | (lens > n_keys)).any()):
        raise ValueError(f"valid_lens must lie in [0, {n_keys}] (the number of keys), "
                         f"got {lens.tolist()}")
    positions = torch.arange(n_keys, device=lens.device)
    return positions < lens[..., None]  # (batch, 1 or n_queries, n_keys)


def softmax_where(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over the last axis, restricted to positions where ``mask`` is True.

    Masked positions get exactly 0; a row with no True position gets all zeros.
    ``scores`` may hold -inf, which counts as masked.
    """
    if mask is None:
        mask = scores != float("-inf")
    else:
        mask = mask & (scores != float("-inf"))
    lowest = torch.finfo(scores.dtype).min  # finite, so no inf - inf = NaN anywhere
    weights = torch.softmax(scores.masked_fill(~mask, lowest), dim=-1)
    return weights.masked_fill(~mask, 0.0)


def masked_softmax(scores: torch.Tensor, valid_lens=None) -> torch.Tensor:
    """Softmax over the last axis of ``scores``, ignoring keys beyond each valid length.

    scores: (batch, n_queries, n_keys), or (batch, ..., n_queries, n_keys) for several heads.
    valid_lens: None, (batch,) or (batch, n_queries); key j of a query is used iff j < length.
    Returns weights of the same shape: rows sum to 1 over the valid keys and are exactly 0
    beyond them; a query with valid length 0 gets all-zero weights.
    """
    check_tensor("scores", scores)
    check_rank("scores", scores, range(3, 9), "(batch, n_queries, n_keys) or "
               "(batch, ..., n_queries, n_keys)")
    check_finite("scores", scores, allow_neg_inf=True)
    if valid_lens is None:
        return softmax_where(scores, None)
    batch, n_queries, n_keys = scores.shape[0], scores.shape[-2], scores.shape[-1]
    mask = valid_lens_to_mask(valid_lens, n_keys, batch, n_queries, device=scores.device)
    # insert singleton axes for any head dimensions between batch and queries
    mask = mask.view(batch, *([1] * (scores.dim() - 3)), *mask.shape[1:])
    return softmax_where(scores, mask)
