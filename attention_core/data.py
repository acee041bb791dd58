"""Data sets the chapters use, generated from a seed: nothing is downloaded."""
from __future__ import annotations

import torch

from ._checks import check_positive_int


def regression_target(x: torch.Tensor) -> torch.Tensor:
    """The smooth function behind the kernel-regression data: 2 sin(x) + x^0.8."""
    return 2 * torch.sin(x) + x**0.8


def make_regression_data(n_train: int = 50, n_test: int = 100, x_max: float = 5.0,
                         noise: float = 0.5, seed: int = 0, dtype=torch.float32, device=None):
    """Noisy samples of ``regression_target`` for attention pooling.

    Returns (x_train (n_train,) sorted, y_train (n_train,), x_test (n_test,) evenly spaced
    on [0, x_max], y_test (n_test,) noise-free). The same seed gives the same data on any
    machine: the draws are made on the CPU in float64 and then converted.
    """
    check_positive_int(n_train=n_train, n_test=n_test)
    if not x_max > 0:
        raise ValueError(f"x_max must be positive, got {x_max}")
    if not noise >= 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    gen = torch.Generator().manual_seed(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=gen, dtype=torch.float64) * x_max)
    y_train = regression_target(x_train) + noise * torch.randn(n_train, generator=gen,
                                                               dtype=torch.float64)
    x_test = torch.linspace(0, x_max, n_test, dtype=torch.float64)
    y_test = regression_target(x_test)
    return tuple(t.to(dtype=dtype, device=device) for t in (x_train, y_train, x_test, y_test))


def make_retrieval_batch(batch: int, n_items: int = 8, dim: int = 8, noise: float = 0.3,
                         generator: torch.Generator | None = None, device=None):
    """A lookup task for attention: find the stored item whose key matches the query.

    Each example stores n_items (key, value) pairs: unit-length random keys (dim,) and scalar
    values. The query is one of the keys plus Gaussian noise of standard deviation ``noise``
    per coordinate; the target is that key's value.
    Returns queries (batch, 1, dim), keys (batch, n_items, dim), values (batch, n_items, 1),
    targets (batch, 1, 1) and the true index (batch,).
    """
    check_positive_int(batch=batch, n_items=n_items, dim=dim)
    keys = torch.randn(batch, n_items, dim, generator=generator)
    keys = keys / keys.norm(dim=-1, keepdim=True)
    values = torch.randn(batch, n_items, 1, generator=generator)
    index = torch.randint(n_items, (batch,), generator=generator)
    rows = torch.arange(batch)
    queries = (keys[rows, index] + noise * torch.randn(batch, dim, generator=generator))[:, None]
    targets = values[rows, index][:, None]
    return tuple(t.to(device) for t in (queries, keys, values, targets, index))
