"""Chapter 2's solutions: Nadaraya–Watson attention pooling with vector queries and keys.

In the chapter a query x and a key x_i are numbers, and the score is log K((x - x_i) / sigma).
With inputs in R^d the difference x - x_i is a vector. Every kernel of the chapter is even,
K(u) = K(-u), so it depends on u only through |u|; its radial version in R^d reads the length
of the scaled difference, K(||x - x_i|| / sigma). For the Gaussian that is
exp(-||x - x_i||^2 / (2 sigma^2)), the product of one Gaussian per coordinate.
"""
from __future__ import annotations

import torch

from ..contracts import contract, one_of, positive
from ..masking import masked_softmax
from ..pooling import KERNELS


def kernel_scores_nd(x_query: torch.Tensor, x_train: torch.Tensor, kernel: str = "gaussian",
                     bandwidth=1.0) -> torch.Tensor:
    """Attention scores log K(||x_query - x_train|| / bandwidth): (n_queries, n_train).

    x_query: (n_queries, d) queries; x_train: (n_train, d) keys; d = 1 gives the chapter's
    kernel_scores on x_query[:, 0] and x_train[:, 0].
    """
    u = (x_query[:, None, :] - x_train[None, :, :]) / bandwidth  # (n_queries, n_train, d)
    return KERNELS[kernel](u.norm(dim=-1))                        # (n_queries, n_train)


@contract(x_train="n_train d", y_train="n_train *d_v", x_query="n_q d", kernel=one_of(*KERNELS),
          bandwidth=positive)
def nadaraya_watson_nd(x_train: torch.Tensor, y_train: torch.Tensor, x_query: torch.Tensor,
                       kernel: str = "gaussian", bandwidth: float = 1.0):
    """Nadaraya–Watson estimate at queries in R^d:

        f(x) = sum_i alpha(x, x_i) y_i,   alpha(x, x_i) = softmax_i(log K(||x - x_i|| / sigma)).

    x_train: (n_train, d) keys; y_train: (n_train,) values (or (n_train, d_v) vectors);
    x_query: (n_queries, d) queries; kernel and bandwidth as in ``nadaraya_watson``.
    Returns (predictions (n_queries,) or (n_queries, d_v), weights (n_queries, n_train)).
    Only the scores differ from the chapter's nadaraya_watson: the softmax over the keys
    and the weighted sum of the values are the same two lines.
    A query that no key reaches (a compact kernel narrower than the distance to the
    nearest key) gets zero weights and a zero prediction, as in the chapter.
    """
    scores = kernel_scores_nd(x_query, x_train, kernel, bandwidth)  # (n_queries, n_train)
    weights = masked_softmax(scores)                    # rows sum to 1
    return weights @ y_train, weights


