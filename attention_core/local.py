"""Local attention (Luong et al., 2015): each query looks only at a window of 2D+1 keys.

Global attention scores every key, so its work grows like n_queries * n_keys. Local attention
picks a centre p_t for each query and scores only the keys in [p_t - D, p_t + D]:

* local-m (monotonic): p_t = t, for source and target roughly aligned position by position;
* local-p (predictive): p_t = S * sigmoid(v_p^T tanh(W_p q_t)), S the source length, and the
  window's weights are multiplied by a Gaussian centred on p_t with sigma = D / 2, so that
  keys near the predicted centre count more. As in the paper, the product is not
  renormalised: local-p weights sum to less than one.

Keys are gathered window by window, so the work really is n_queries * (2D+1), not n^2.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_rank, check_size, check_tensor
from .attention import check_qkv
from .masking import softmax_where, valid_lens_to_mask
from .scoring import linear


def window_positions(centers: torch.Tensor, window: int):
    """Key positions of each query's window: (batch, n_q, 2D+1) from centres (batch, n_q).

    The window [p - D, p + D] holds 2D+1 integer positions when p is an integer and 2D
    otherwise, all among floor(p) - D ... floor(p) + D; ``in_window`` says which count.
    """
    offsets = torch.arange(-window, window + 1, device=centers.device)
    positions = centers.floor().long()[..., None] + offsets  # (batch, n_q, 2D+1)
    in_window = (positions - centers[..., None]).abs() <= window
    return positions, in_window


def local_attention(queries, keys, values, centers, window: int, *, gaussian: bool,
                    valid_lens=None):
    """Scaled dot-product attention restricted to windows of half-width ``window`` (D).

    queries (batch, n_q, d), keys (batch, n_k, d), values (batch, n_k, d_v),
    centers (batch, n_q) in key positions, valid_lens None | (batch,) | (batch, n_q).
    Returns (output (batch, n_q, d_v), weights (batch, n_q, 2D+1), positions (batch, n_q, 2D+1));
    weights[b, i, j] belongs to key positions[b, i, j], and is 0 outside the window,
    outside the sequence and beyond the valid length.
    """
    batch, n_q, _ = queries.shape
    n_k = keys.shape[1]
    positions, mask = window_positions(centers, window)
    mask &= (positions >= 0) & (positions < n_k)
    if valid_lens is not None:
        lens = valid_lens_to_mask(valid_lens, n_k, batch, n_q, device=queries.device)
        lens = lens.sum(-1, keepdim=True)  # (batch, 1 or n_q, 1): the valid length itself
        mask &= positions < lens
    safe = positions.clamp(0, n_k - 1)  # gather needs in-range indices; masked anyway
    batch_idx = torch.arange(batch, device=queries.device)[:, None, None]
    k_win, v_win = keys[batch_idx, safe], values[batch_idx, safe]  # (batch, n_q, W, d)
    scores = (queries.unsqueeze(2) * k_win).sum(-1) / math.sqrt(queries.shape[-1])
    weights = softmax_where(scores, mask)  # (batch, n_q, W)
    if gaussian:
        sigma = window / 2
        weights = weights * torch.exp(-((positions - centers[..., None]) ** 2) / (2 * sigma**2))
    output = (weights.unsqueeze(-1) * v_win).sum(2)  # (batch, n_q, d_v)
    return output, weights, positions


class LocalAttention(nn.Module):
    """Luong's local attention, mode "m" (monotonic) or "p" (predictive), window half-width D.

    forward(queries (batch, n_q, d), keys (batch, n_k, d), values (batch, n_k, d_v),
            valid_lens=None, centers=None) -> (batch, n_q, d_v).
    local-m uses ``centers`` if given, else p_t = t. local-p predicts the centres itself with
    W_p (d -> num_hiddens) and v_p (num_hiddens -> 1). Keeps ``self.centers`` and
    ``self.attention_weights`` (batch, n_q, n_k), the window weights placed among all keys.
    """

    def __init__(self, window: int, mode: str = "p", query_size: int | None = None,
                 num_hiddens: int = 32):
        super().__init__()
        if not isinstance(window, int) or window < 0:
            raise ValueError(f"window (D) must be a non-negative int, got {window!r}")
        if mode not in ("m", "p"):
            raise ValueError(f"mode must be 'm' (monotonic) or 'p' (predictive), got {mode!r}")
        self.window, self.mode = window, mode
        if mode == "p":
            self.W_p = linear(query_size, num_hiddens)
            self.v_p = nn.Linear(num_hiddens, 1, bias=False)
        self.centers = self.attention_weights = None

    def predict_centers(self, queries, source_lengths):
        """p_t = S * sigmoid(v_p^T tanh(W_p q_t)), in [0, S]: (batch, n_q)."""
        return source_lengths * torch.sigmoid(self.v_p(torch.tanh(self.W_p(queries)))).squeeze(-1)

    def forward(self, queries, keys, values, valid_lens=None, centers=None):
        check_qkv(queries, keys, values, same_qk_size=True)
        batch, n_q, n_k = queries.shape[0], queries.shape[1], keys.shape[1]
        if centers is not None:
            check_tensor("centers", centers)
            check_rank("centers", centers, 2, "(batch, n_queries)")
            check_size("centers", centers, 1, n_q, "the number of queries")
        elif self.mode == "m":
            centers = torch.arange(n_q, device=queries.device, dtype=queries.dtype).expand(batch, n_q)
        else:
            S = torch.full((batch, 1), float(n_k), device=queries.device, dtype=queries.dtype)
            if valid_lens is not None:
                lens = torch.as_tensor(valid_lens, device=queries.device).to(queries.dtype)
                S = lens.reshape(batch, -1)
            # the last valid key sits at S - 1: keep the centre inside the sequence
            centers = self.predict_centers(queries, S - 1)
        out, weights, positions = local_attention(queries, keys, values, centers, self.window,
                                                  gaussian=self.mode == "p", valid_lens=valid_lens)
        self.centers = centers
        dense = torch.zeros(batch, n_q, n_k + 1, device=weights.device, dtype=weights.dtype)
        # positions outside [0, n_k) carry weight 0; send them to a spare column n_k
        slot = torch.where((positions >= 0) & (positions < n_k), positions, n_k)
        self.attention_weights = dense.scatter_add(2, slot, weights)[..., :n_k]
        return out
