"""The regression world of chapter 2: noisy samples of a smooth function, and a Nadaraya–Watson
regression whose bandwidth is learned by gradient descent on the leave-one-out error."""
from __future__ import annotations

import torch

from .._checks import check_positive_int
from ..pooling import NWKernelRegression


def regression_target(x: torch.Tensor) -> torch.Tensor:
    """The smooth function behind the data: 2 sin(x) + x^0.8."""
    return 2 * torch.sin(x) + x**0.8


def make_regression_data(n_train: int = 50, n_test: int = 100, x_max: float = 5.0,
                         noise: float = 0.5, generator: torch.Generator | None = None,
                         dtype=torch.float32, device=None):
    """Noisy samples of ``regression_target`` for attention pooling.

    Returns (x_train (n_train,) sorted, y_train (n_train,), x_test (n_test,) evenly spaced
    on [0, x_max], y_test (n_test,) noise-free). The draws are made on the CPU in float64
    from ``generator`` (default: one seeded with 0), then converted, so the data are the
    same on every machine.
    """
    check_positive_int(n_train=n_train, n_test=n_test)
    if not x_max > 0:
        raise ValueError(f"x_max must be positive, got {x_max}")
    if not noise >= 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    x_train, _ = torch.sort(torch.rand(n_train, generator=gen, dtype=torch.float64) * x_max)
    y_train = regression_target(x_train) + noise * torch.randn(n_train, generator=gen,
                                                               dtype=torch.float64)
    x_test = torch.linspace(0, x_max, n_test, dtype=torch.float64)
    y_test = regression_target(x_test)
    return tuple(t.to(dtype=dtype, device=device) for t in (x_train, y_train, x_test, y_test))


def fit_nw_bandwidth(model: NWKernelRegression, x_train: torch.Tensor, y_train: torch.Tensor,
                     *, steps: int = 200, lr: float = 0.05, log_every: int = 50):
    """Learn the bandwidth by minimising the leave-one-out squared error with Adam.

    Each training point is predicted from all the *other* points (``exclude_self=True``):
    predicting a point from itself would reward a bandwidth of zero, which just copies y_i.
    Returns the history [(step, loss, bandwidth), ...] every ``log_every`` steps and at the end.
    """
    check_positive_int(steps=steps, log_every=log_every)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = ((model(x_train, x_train, y_train, exclude_self=True) - y_train) ** 2).mean()
        loss.backward()
        optimizer.step()
        if step % log_every == 0 or step == steps:
            history.append((step, loss.item(), model.bandwidth.item()))
    return history
