"""Two variants of soft global attention: local attention and hard attention.

**Local attention** (Luong et al., 2015): each query looks only at a window of 2D+1 keys.
Global attention scores every key, so its work grows like n_q * n_k. Local attention picks a
centre p_t for each query and scores only the keys in [p_t - D, p_t + D]:

* local-m (monotonic): p_t = t, for source and target roughly aligned position by position;
* local-p (predictive): p_t = (S - 1) * sigmoid(v_p^T tanh(W_p q_t)), a real position in
  [0, S - 1] for a source of S tokens (numbered from 0). The window's weights are multiplied
  by a Gaussian centred on p_t with sigma = D / 2, so keys near the predicted centre count
  more. As in the paper, the product is not renormalised: local-p weights sum to less than one.

Keys are gathered window by window and scored by one small matrix product per query, so the
work and the memory really are n_q * (2D+1), not n_q * n_k.

**Hard attention** (Xu et al., 2015): sample one key instead of averaging over all of them.
Soft attention returns the expectation sum_i alpha_i v_i, a smooth function of the scores.
Hard attention draws i ~ Categorical(alpha) and returns v_i. The choice has no gradient, so
the score function is trained with the score-function (REINFORCE) estimator

    d E[L] / d theta = E[(L - b) * d log alpha_i / d theta],

where the baseline b does not change the expectation but can lower the variance.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .contracts import contract, lengths, non_negative_int, one_of, positive_int, require, tensor
from .masking import masked_softmax, padding_mask
from .scoring import linear

__all__ = ["local_attention", "LocalAttention", "sample_hard_attention", "sample_values",
           "reinforce_loss"]

# local-p weights the window by a Gaussian of sigma = D / 2, which needs D >= 1
WINDOW_FITS_MODE = require(lambda window, mode: mode != "p" or window >= 1,
                           "window (D) must be at least 1 in mode 'p': its Gaussian has "
                           "sigma = D / 2, got window=0")


# ---- local attention --------------------------------------------------------------------
def window_positions(centers: torch.Tensor, window: int):
    """Key positions of each query's window: (B, n_q, 2D+1) from centres (B, n_q).

    The window [p - D, p + D] holds 2D+1 integer positions when p is an integer and 2D
    otherwise, all among floor(p) - D ... floor(p) + D; ``in_window`` says which count.
    """
    offsets = torch.arange(-window, window + 1, device=centers.device)
    positions = centers.floor().long()[..., None] + offsets  # (B, n_q, 2D+1)
    in_window = (positions - centers[..., None]).abs() <= window
    return positions, in_window


@contract(queries="B n_q d", keys="B n_k d", values="B n_k d_v", centers="B n_q",
          window=non_negative_int, mask=tensor("B _ n_k", "bool"),
          where=[require(lambda window, gaussian: window >= 1 or not gaussian,
                         "window (D) must be at least 1 in mode 'p' (gaussian=True): its "
                         "Gaussian has sigma = D / 2, got window=0")])
def local_attention(queries, keys, values, centers, window: int, *, gaussian: bool, mask=None):
    """Scaled dot-product attention restricted to windows of half-width ``window`` (D).

    queries (B, n_q, d), keys (B, n_k, d), values (B, n_k, d_v), centers (B, n_q) in key
    positions, mask (B, _, n_k) None or boolean, _ = 1 or n_q (True = may attend).
    Returns (output (B, n_q, d_v), weights (B, n_q, 2D+1), positions (B, n_q, 2D+1));
    weights[b, i, j] belongs to key positions[b, i, j] and is 0 outside the window, outside
    the sequence and where the mask forbids it.
    """
    n_k = keys.shape[1]
    positions, usable = window_positions(centers, window)
    usable &= (positions >= 0) & (positions < n_k)
    safe = positions.clamp(0, n_k - 1)  # gather needs in-range indices; masked anyway
    if mask is not None:
        usable &= mask.expand(-1, queries.shape[1], -1).gather(2, safe)
    rows = torch.arange(keys.shape[0], device=keys.device)[:, None, None]
    k_win, v_win = keys[rows, safe], values[rows, safe]          # (B, n_q, 2D+1, d or d_v)
    scores = (queries.unsqueeze(2) @ k_win.transpose(-2, -1)).squeeze(2)    # (B, n_q, 2D+1)
    scores = scores / math.sqrt(queries.shape[-1])
    weights = masked_softmax(scores, mask=usable)      # (B, n_q, 2D+1)
    if gaussian:
        sigma = window / 2
        weights = weights * torch.exp(-((positions - centers[..., None]) ** 2) / (2 * sigma**2))
    output = (weights.unsqueeze(2) @ v_win).squeeze(2)            # (B, n_q, d_v)
    return output, weights, positions


class LocalAttention(nn.Module):
    """Luong's local attention, mode "m" (monotonic) or "p" (predictive), window half-width D.

    ``forward(queries (B, n_q, d), keys (B, n_k, d), values (B, n_k, d_v), valid_lens=None,
    centers (B, n_q) = None) -> (B, n_q, d_v)``.
    local-m uses ``centers`` if given, else p_t = t. local-p predicts the centres itself with
    W_p (d -> num_hiddens) and v_p (num_hiddens -> 1), unless ``centers`` is given. Keeps
    ``self.centers`` (B, n_q), ``self.attention_weights`` and ``self.positions`` (B, n_q, 2D+1):
    only the window's weights, never an (n_q, n_k) matrix; ``dense_weights()`` spreads them
    over all keys for a picture.
    """

    @contract(window=non_negative_int, mode=one_of("m", "p"), num_hiddens=positive_int,
              query_size=positive_int, where=[WINDOW_FITS_MODE])
    def __init__(self, window: int, mode: str = "p", num_hiddens: int = 32, *,
                 query_size: int | None = None):
        super().__init__()
        self.window, self.mode = window, mode
        if mode == "p":
            self.W_p = linear(query_size, num_hiddens)
            self.v_p = nn.Linear(num_hiddens, 1, bias=False)
        self.centers = self.attention_weights = self.positions = None
        self.n_keys = None

    def predict_centers(self, queries, last_position):
        """p_t = (S - 1) * sigmoid(v_p^T tanh(W_p q_t)), in [0, S - 1]: (B, n_q)."""
        return last_position * torch.sigmoid(self.v_p(torch.tanh(self.W_p(queries)))).squeeze(-1)

    @contract(queries="B n_q d", keys="B n_k d", values="B n_k d_v", valid_lens=lengths(),
              centers="B n_q")
    def forward(self, queries, keys, values, valid_lens=None, centers=None):
        batch, n_q, n_k = queries.shape[0], queries.shape[1], keys.shape[1]
        mask = padding_mask(valid_lens, queries, n_k)             # (B, 1 or n_q, n_k)
        if centers is None and self.mode == "m":  # p_t = t
            centers = torch.arange(n_q, device=queries.device, dtype=queries.dtype)
            centers = centers.expand(batch, n_q)
        elif centers is None:
            # the source length S of each sentence (its valid length, else n_k)
            S = (mask.sum(-1).to(queries.dtype) if mask is not None
                 else queries.new_full((batch, 1), n_k))
            centers = self.predict_centers(queries, S - 1)
        out, self.attention_weights, self.positions = local_attention(
            queries, keys, values, centers, self.window, gaussian=self.mode == "p", mask=mask)
        self.centers, self.n_keys = centers, n_k
        return out

    def dense_weights(self) -> torch.Tensor:
        """The last call's window weights placed among all keys: (B, n_q, n_k), for plotting."""
        if self.attention_weights is None:
            raise RuntimeError("dense_weights needs a forward call first")
        w, pos, n_k = self.attention_weights, self.positions, self.n_keys
        slot = torch.where((pos >= 0) & (pos < n_k), pos, n_k)  # off-sequence -> spare column
        dense = w.new_zeros(*w.shape[:2], n_k + 1)
        return dense.scatter_add(2, slot, w)[..., :n_k]


# ---- hard attention ---------------------------------------------------------------------
@contract(scores="B n_q n_k", values="B n_k d_v", valid_lens=lengths(at_least=1))
def sample_hard_attention(scores, values, valid_lens=None, generator=None):
    """Hard attention: draw one key per query from alpha = softmax(scores) and return its value.

    scores (B, n_q, n_k), values (B, n_k, d_v); valid_lens: every query needs a key to draw.
    Returns (output (B, n_q, d_v), index (B, n_q), log_prob (B, n_q)), where log_prob = log
    alpha_i is differentiable with respect to the scores.
    """
    weights = masked_softmax(scores, valid_lens)       # alpha: (B, n_q, n_k)
    return sample_values(weights, values, generator)


@contract(weights="B n_q n_k", values="B n_k d_v")
def sample_values(weights, values, generator=None, *, greedy: bool = False):
    """i ~ Categorical(alpha) for each query (with ``greedy``, the most weighted key instead),
    and its value v_i. weights (B, n_q, n_k) alpha, values (B, n_k, d_v). Returns
    (output (B, n_q, d_v), index (B, n_q), log_prob = log alpha_i (B, n_q))."""
    if greedy:
        index = weights.argmax(-1)                                # (B, n_q)
    else:
        index = torch.multinomial(weights.detach().flatten(0, 1), 1, generator=generator)
        index = index.view(weights.shape[:2])                     # i: (B, n_q), no gradient
    log_prob = torch.log(weights.gather(2, index[..., None]).squeeze(-1))   # log alpha_i
    output = values.gather(1, index[..., None].expand(-1, -1, values.shape[-1]))   # v_i
    return output, index, log_prob


@contract(loss="*batch", log_prob="*batch")
def reinforce_loss(loss, log_prob, baseline=0.0):
    """Surrogate whose gradient is the REINFORCE estimate, mean((L - b) * grad log alpha_i):
    L is held constant (detached); only log alpha_i has a gradient.

    loss: per-sample loss (no gradient is taken through it), log_prob: the same shape.
    """
    return ((loss.detach() - baseline) * log_prob).mean()
