"""Attention pooling without learned parameters: Nadaraya–Watson kernel regression.

A query x attends to keys x_i and returns the weighted average of their values y_i:

    f(x) = sum_i alpha(x, x_i) y_i,   alpha(x, x_i) = K((x - x_i) / h) / sum_j K((x - x_j) / h)

Each kernel K is written as its logarithm, so that the weights are a softmax of
"attention scores" log K. That is the same computation, and it stays exact when h is so
small that K itself would underflow to 0 for every key (a plain ratio would give 0/0).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_choice, check_positive, check_rank, check_same, check_tensor
from .masking import masked_softmax


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


def kernel_scores(x_query: torch.Tensor, x_train: torch.Tensor, kernel: str = "gaussian",
                  bandwidth=1.0) -> torch.Tensor:
    """Attention scores log K((x_query - x_train) / bandwidth): (n_queries, n_train)."""
    u = (x_query[:, None] - x_train[None, :]) / bandwidth  # (n_queries, n_train)
    return KERNELS[kernel](u)


def check_pooling(x_train, y_train, x_query, kernel: str = "gaussian", bandwidth=1.0) -> None:
    """Keys x_train and values y_train (n_train,), queries x_query (n_queries,), a known
    kernel, and a positive bandwidth (a Python number; a tensor is checked for shape only)."""
    for name, t in (("x_train", x_train), ("y_train", y_train), ("x_query", x_query)):
        check_tensor(name, t)
        check_rank(name, t, 1, "a 1-D tensor of scalars (n,)")
    check_same("device", x_train=x_train, y_train=y_train, x_query=x_query)
    if x_train.shape != y_train.shape:
        raise ValueError(f"x_train and y_train must have the same shape, got "
                         f"{tuple(x_train.shape)} and {tuple(y_train.shape)}")
    check_choice("kernel", kernel, KERNELS)
    if isinstance(bandwidth, torch.Tensor):
        check_rank("bandwidth", bandwidth, 0, "a scalar tensor")
    else:
        check_positive("bandwidth", bandwidth)


def nadaraya_watson(x_train: torch.Tensor, y_train: torch.Tensor, x_query: torch.Tensor,
                    kernel: str = "gaussian", bandwidth: float = 1.0):
    """Nadaraya–Watson estimate at each query point.

    x_train: (n_train,) keys; y_train: (n_train,) values; x_query: (n_queries,) queries.
    kernel: "gaussian", "boxcar", "epanechnikov" or "constant" (average pooling).
    bandwidth: h > 0, the width of the kernel in units of x.
    Returns (predictions (n_queries,), weights (n_queries, n_train)); every row of weights
    sums to 1, except for a query that no key reaches (a boxcar or Epanechnikov kernel
    narrower than the gap to the nearest key), whose weights and prediction are 0.
    """
    check_pooling(x_train, y_train, x_query, kernel, bandwidth)
    weights = masked_softmax(kernel_scores(x_query, x_train, kernel, bandwidth))
    return weights @ y_train, weights


class NWKernelRegression(nn.Module):
    """Nadaraya–Watson regression with a Gaussian kernel whose bandwidth is learned.

    The bandwidth is stored as its logarithm so that gradient steps can never make it
    negative. ``forward(x_query, x_train, y_train)`` returns predictions (n_queries,) and
    keeps ``self.attention_weights`` (n_queries, n_train). With ``exclude_self=True`` the
    queries must be the training points themselves and each ignores its own key
    (leave-one-out): otherwise the best "bandwidth" is 0, which just copies each y_i.
    """

    def __init__(self, bandwidth: float = 1.0):
        super().__init__()
        check_positive("bandwidth", bandwidth)
        self.log_bandwidth = nn.Parameter(torch.tensor(math.log(bandwidth)))
        self.attention_weights = None

    @property
    def bandwidth(self) -> torch.Tensor:
        return self.log_bandwidth.exp()

    def forward(self, x_query, x_train, y_train, exclude_self: bool = False):
        check_pooling(x_train, y_train, x_query)
        if exclude_self and x_query.shape != x_train.shape:
            raise ValueError(f"exclude_self needs the queries to be the training points, got "
                             f"x_query {tuple(x_query.shape)} and x_train {tuple(x_train.shape)}")
        scores = kernel_scores(x_query, x_train, "gaussian", self.bandwidth.to(x_query.dtype))
        # leave-one-out: query i may not attend to key i
        mask = ~torch.eye(len(x_train), dtype=torch.bool, device=x_train.device) if exclude_self else None
        self.attention_weights = masked_softmax(scores, mask=mask)
        return self.attention_weights @ y_train
