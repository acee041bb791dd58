"""Training loops the chapters share. Deterministic given the seed and the data."""
from __future__ import annotations

import torch

from .pooling import NWKernelRegression


def fit_nw_bandwidth(model: NWKernelRegression, x_train: torch.Tensor, y_train: torch.Tensor,
                     *, steps: int = 200, lr: float = 0.05, log_every: int = 50):
    """Learn the bandwidth by minimising the leave-one-out squared error with Adam.

    Each training point is predicted from all the *other* points (``exclude_self=True``):
    predicting a point from itself would reward a bandwidth of zero, which just copies y_i.
    Returns the history [(step, loss, bandwidth), ...] every ``log_every`` steps and at the end.
    """
    if steps < 1 or log_every < 1:
        raise ValueError(f"steps and log_every must be positive, got {steps} and {log_every}")
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
