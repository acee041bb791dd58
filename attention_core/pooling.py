"""Attention pooling without learned parameters: Nadaraya–Watson kernel regression.

A query x attends to keys x_i and returns the weighted average of their values y_i:

    f(x) = sum_i alpha(x, x_i) y_i,
    alpha(x, x_i) = K((x - x_i) / sigma) / sum_j K((x - x_j) / sigma)

Each kernel K is written as its logarithm, so that the weights are a softmax of
"attention scores" log K. That is the same computation, and it stays exact when sigma is so
small that K itself would underflow to 0 for every key (a plain ratio would give 0/0).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from .contracts import contract, one_of, positive, positive_or_scalar, require
from .masking import masked_softmax

__all__ = ["KERNELS", "kernel_scores", "nadaraya_watson", "NWKernelRegression"]


def _gaussian(u):      # K(u) = exp(-u^2 / 2)
    return -0.5 * u**2


def _boxcar(u):        # K(u) = 1 if |u| <= 1 else 0
    return torch.where(u.abs() <= 1, 0.0, float("-inf")).to(u.dtype)


def _epanechnikov(u):  # K(u) = max(0, 1 - u^2)
    inside = u.abs() < 1
    return torch.where(inside, torch.log1p(-(u * inside) ** 2), float("-inf")).to(u.dtype)


def _constant(u):      # K(u) = 1: every key counts the same, i.e. average pooling
    return torch.zeros_like(u)


KERNELS = {"gaussian": _gaussian, "boxcar": _boxcar,
           "epanechnikov": _epanechnikov, "constant": _constant}
"""Log-kernels log K(u) by name; -inf marks a key the kernel ignores."""


@contract(x_query="n_q", x_train="n_train", kernel=one_of(*KERNELS))
def kernel_scores(x_query: torch.Tensor, x_train: torch.Tensor, kernel: str = "gaussian",
                  bandwidth=1.0) -> torch.Tensor:
    """Attention scores log K((x_query - x_train) / bandwidth) of queries x_query (n_q,) against
    keys x_train (n_train,): (n_q, n_train). bandwidth: a number, or a tensor that broadcasts
    against the scores, e.g. (s, 1, 1) for s bandwidths at once, giving (s, n_q, n_train)."""
    u = (x_query[:, None] - x_train[None, :]) / bandwidth  # (n_queries, n_train)
    return KERNELS[kernel](u)


@contract(x_train="n_train", y_train="n_train", x_query="n_q", kernel=one_of(*KERNELS),
          bandwidth=positive_or_scalar,
          where=[require(lambda exclude_self, x_query, x_train: not exclude_self
                         or x_query.shape == x_train.shape,
                         lambda exclude_self, q, x: f"exclude_self needs the queries to be the "
                         f"training points, got x_query {tuple(q.shape)} and x_train "
                         f"{tuple(x.shape)}")])
def nadaraya_watson(x_train: torch.Tensor, y_train: torch.Tensor, x_query: torch.Tensor,
                    kernel: str = "gaussian", bandwidth: float = 1.0, exclude_self: bool = False):
    """Nadaraya–Watson estimate at each query point:

        f(x) = sum_i alpha(x, x_i) y_i,   alpha(x, x_i) = softmax_i(log K((x - x_i) / sigma)).

    x_train (n_train,) keys; y_train (n_train,) values; x_query (n_q,) queries.
    kernel: "gaussian", "boxcar", "epanechnikov" or "constant" (average pooling).
    bandwidth: sigma > 0, the width of the kernel in units of x (a float or a scalar tensor).
    exclude_self: leave-one-out; the queries are the training points and query i ignores key i.
    Returns (predictions (n_q,), weights (n_q, n_train)); every row of weights
    sums to 1, except for a query that no key reaches (a boxcar or Epanechnikov kernel
    narrower than the gap to the nearest key), whose weights and prediction are 0.
    """
    scores = kernel_scores(x_query, x_train, kernel, bandwidth)  # (n_q, n_train)
    mask = None  # True where query i may attend to key j
    if exclude_self:  # leave-one-out: every key but the query's own, (n_train, n_train)
        mask = ~torch.eye(len(x_train), dtype=torch.bool, device=x_train.device)
    weights = masked_softmax(scores, mask=mask)  # (n_q, n_train): rows sum to 1
    return weights @ y_train, weights            # (n_queries,): sum_i alpha_i y_i


class NWKernelRegression(nn.Module):
    """Nadaraya–Watson regression with a Gaussian kernel whose bandwidth is learned.

    The bandwidth is stored as its logarithm so that gradient steps can never make it
    negative. ``forward(x_query (n_q,), x_train (n_train,), y_train (n_train,))`` returns
    predictions (n_q,) and keeps ``self.attention_weights`` (n_q, n_train). With
    ``exclude_self=True`` the
    queries must be the training points themselves and each ignores its own key
    (leave-one-out): otherwise the best "bandwidth" is 0, which just copies each y_i.
    """

    @contract(bandwidth=positive)
    def __init__(self, bandwidth: float = 1.0):
        super().__init__()
        self.log_bandwidth = nn.Parameter(torch.tensor(math.log(bandwidth)))  # log sigma
        self.attention_weights = None

    @property
    def bandwidth(self) -> torch.Tensor:
        return self.log_bandwidth.exp()  # sigma = exp(log sigma) > 0 for every log sigma

    @contract(x_query="n_q", x_train="n_train", y_train="n_train")
    def forward(self, x_query, x_train, y_train, exclude_self: bool = False):
        # the estimate of nadaraya_watson with the Gaussian kernel and the learned sigma
        y_hat, self.attention_weights = nadaraya_watson(
            x_train, y_train, x_query, "gaussian", self.bandwidth, exclude_self)
        return y_hat  # (n_queries,)
