"""Hard attention (Xu et al., 2015): sample one key instead of averaging over all of them.

Soft attention returns the expectation sum_i alpha_i v_i, a smooth function of the scores,
so gradients flow through the weights. Hard attention draws one index i ~ Categorical(alpha)
and returns v_i. The choice has no gradient, so the score function is trained with the
score-function (REINFORCE) estimator:

    d E[L] / d theta = E[(L - b) * d log alpha_i / d theta],

where b is a baseline that does not change the expectation but lowers the variance.
"""
from __future__ import annotations

import torch

from ._checks import check_rank, check_tensor
from .masking import masked_softmax


def sample_hard_attention(scores, values, valid_lens=None, generator=None):
    """Draw one key per query from softmax(scores) and return its value.

    scores (batch, n_queries, n_keys), values (batch, n_keys, d_v).
    Returns (output (batch, n_queries, d_v), index (batch, n_queries), log_prob (batch, n_queries)),
    where log_prob is differentiable with respect to the scores.
    """
    check_tensor("values", values)
    check_rank("values", values, 3, "(batch, n_keys, d_v)")
    weights = masked_softmax(scores, valid_lens)
    if bool((weights.sum(-1) == 0).any()):
        raise ValueError("hard attention cannot sample for a query whose keys are all masked "
                         "(valid length 0)")
    batch, n_q, n_k = weights.shape
    index = torch.multinomial(weights.detach().reshape(-1, n_k), 1, generator=generator)
    index = index.reshape(batch, n_q)
    log_prob = torch.log(weights.gather(2, index[..., None]).squeeze(-1))
    output = values.gather(1, index[..., None].expand(-1, -1, values.shape[-1]))
    return output, index, log_prob


def reinforce_loss(loss, log_prob, baseline=0.0):
    """Surrogate whose gradient is the REINFORCE estimate: mean((L - b) * log p).

    loss: per-sample loss (no gradient is taken through it), log_prob: same shape.
    """
    if loss.shape != log_prob.shape:
        raise ValueError(f"loss {tuple(loss.shape)} and log_prob {tuple(log_prob.shape)} must "
                         f"have the same shape")
    return ((loss.detach() - baseline) * log_prob).mean()
