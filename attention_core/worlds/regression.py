"""The regression task of chapter 2: noisy samples of a smooth function, and a Nadaraya–Watson
regression whose bandwidth is learned by gradient descent on the leave-one-out error."""
from __future__ import annotations

import torch

from ..contracts import contract, non_negative, positive, positive_int
from ..pooling import NWKernelRegression
from .training import fit


def regression_target(x: torch.Tensor) -> torch.Tensor:
    """The smooth function behind the data: 2 sin(x) + x^0.8."""
    return 2 * torch.sin(x) + x**0.8


@contract(n_train=positive_int, n_test=positive_int, x_max=positive, noise=non_negative)
def make_regression_data(n_train: int = 50, n_test: int = 100, x_max: float = 5.0,
                         noise: float = 0.5, generator: torch.Generator | None = None,
                         dtype=torch.float32, device=None):
    """Noisy samples of ``regression_target`` for attention pooling.

    Returns (x_train (n_train,) sorted, y_train (n_train,), x_test (n_test,) evenly spaced
    on [0, x_max], y_test (n_test,) noise-free). The draws are made on the CPU in float64
    from ``generator`` (default: one seeded with 0), then converted, so the data are the
    same on every machine.
    """
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    f64 = dict(generator=gen, dtype=torch.float64)
    x_train, _ = torch.sort(torch.rand(n_train, **f64) * x_max)  # x_i ~ U[0, x_max], sorted
    epsilon = noise * torch.randn(n_train, **f64)                  # epsilon_i ~ N(0, noise^2)
    y_train = regression_target(x_train) + epsilon                 # y_i = f(x_i) + epsilon_i
    x_test = torch.linspace(0, x_max, n_test, dtype=torch.float64)  # evenly spaced queries
    y_test = regression_target(x_test)                              # the truth, without noise
    return tuple(t.to(dtype=dtype, device=device) for t in (x_train, y_train, x_test, y_test))


@contract(steps=positive_int, lr=positive, log_every=positive_int)
def fit_nw_bandwidth(model: NWKernelRegression, x_train: torch.Tensor, y_train: torch.Tensor,
                     *, steps: int = 200, lr: float = 0.05, log_every: int = 50,
                     exclude_self: bool = True):
    """Learn the bandwidth by minimising the leave-one-out squared error with Adam (``fit``):

        L = (1/n) sum_i (f_{-i}(x_i) - y_i)^2,

    where f_{-i} is the estimate from every training point but the i-th (``exclude_self=True``):
    predicting a point from itself (``exclude_self=False``) would reward a bandwidth of zero,
    which just copies y_i. Every step reads the whole training set.
    Returns the history [(step, loss, bandwidth), ...] every ``log_every`` steps and at the end.
    """
    history = []

    def loss(model, _):
        y_loo = model(x_train, x_train, y_train, exclude_self)  # (n_train,): f_{-i}(x_i)
        return ((y_loo - y_train) ** 2).mean()                   # L, a scalar

    def log(step, value):  # after the step: the loss before it, the bandwidth after it
        if step % log_every == 0 or step == steps:
            history.append((step, value.item(), model.bandwidth.item()))

    fit(model, lambda: range(steps), loss, steps_per_epoch=steps, lr=lr, progress=False,
        on_step=log)
    return history
