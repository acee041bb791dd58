"""CNN, RNN and self-attention compared by what can be measured: dependency and time.

The usual table says a convolution of kernel size k needs O(n/k) layers before the first
output can depend on the last input, a recurrent layer O(n) steps, self-attention one layer.
Here we read those path lengths off the layers' real dependency structure: output i depends
on input j exactly when the Jacobian block d y_i / d x_j is nonzero, and we find the smallest
depth (stacked layers, or recurrent steps) at which it becomes nonzero.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn


def dependency_matrix(fn: Callable, n: int, d: int, seed: int = 0) -> torch.Tensor:
    """(n, n) booleans: entry (i, j) is True when output position i depends on input j.

    fn maps (1, n, d) to (1, n, d_out); the Jacobian is taken at a random input in float64,
    so a structural zero is exactly zero and a real dependence is not.
    """
    x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(fn, x)  # (1, n, d_out, 1, n, d)
    return jac.abs().sum(dim=(0, 2, 3, 5)) > 0       # (n_out, n_in)


def path_lengths(make: Callable[[int], Callable], n: int, d: int, max_depth: int) -> torch.Tensor:
    """Smallest depth at which output i depends on input j: (n, n), inf if never within max_depth.

    make(depth) returns the function to test at that depth (e.g. that many stacked layers).
    """
    result = torch.full((n, n), math.inf)
    for depth in range(1, max_depth + 1):
        reached = dependency_matrix(make(depth), n, d) & torch.isinf(result)
        result[reached] = depth
        if not torch.isinf(result).any():
            break
    return result


def stacked(layers: list[nn.Module]) -> Callable:
    """Apply layers in turn to (batch, n, d); a Conv1d sees (batch, d, n)."""
    def fn(x):
        for layer in layers:
            if isinstance(layer, nn.Conv1d):
                x = layer(x.transpose(1, 2)).transpose(1, 2)
            else:
                x = layer(x)
        return x
    return fn


def limited_recurrence(cell: nn.GRUCell, steps: int) -> Callable:
    """Each output y_i is the GRU state after reading only x_{i-steps+1} .. x_i from zero.

    y_i can then depend on x_j only through at most ``steps`` applications of the cell, so the
    smallest ``steps`` at which y_i depends on x_j is the number of recurrent steps between them.
    """
    def fn(x):  # (1, n, d) -> (1, n, hidden)
        n, d = x.shape[1], x.shape[2]
        padded = torch.cat([x.new_zeros(1, steps - 1, d), x], dim=1)
        windows = padded.unfold(1, steps, 1)[0].permute(0, 2, 1)  # (n, steps, d)
        h = x.new_zeros(n, cell.hidden_size)
        for t in range(steps):
            h = cell(windows[:, t], h)
        return h[None]
    return fn


def fit_slope(lengths, times) -> float:
    """Least-squares slope of log(time) against log(length): time ~ length^slope."""
    x = torch.log(torch.tensor(lengths, dtype=torch.float64))
    y = torch.log(torch.tensor(times, dtype=torch.float64))
    A = torch.stack([x, torch.ones_like(x)], dim=1)
    return torch.linalg.lstsq(A, y[:, None]).solution[0].item()
