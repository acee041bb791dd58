"""Layers compared by what can be counted (chapters 3, 5 and 9).

The usual table says a convolution of kernel size k needs O(n/k) layers before the first
output can depend on the last input (a centred kernel: exactly ceil((n - 1) / (k // 2))), a
recurrent layer O(n) steps, self-attention one layer.
``path_lengths`` reads those path lengths off the layers' real dependency structure: output i
depends on input j exactly when the Jacobian block d y_i / d x_j is nonzero, and we find the
smallest depth (stacked layers, or recurrent steps) at which it becomes nonzero.

``count_ops`` counts what the table's other columns are about, exactly and on any machine:
the floating-point operations, the largest tensor created, and the number of operations that
must run one after another. It runs the layer on the ``meta`` device, where tensors have
shapes but no data, so counting a 16k-token layer costs nothing.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode


def dependency_matrix(fn: Callable, n: int, d: int) -> torch.Tensor:
    """(n, n) booleans: entry (i, j) is True when output position i depends on input j.

    fn maps (1, n, d) to (1, n, d_out); the Jacobian is taken at a random input in float64
    (drawn from a generator seeded with 0), so a structural zero is exactly zero and a real
    dependence is not.
    """
    x = torch.randn(1, n, d, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(fn, x)  # (1, n, d_out, 1, n, d)
    return jac.abs().sum(dim=(0, 2, 3, 5)) > 0       # (n_out, n_in)


def path_lengths(make: Callable[[int], Callable], n: int, d: int, max_depth: int) -> torch.Tensor:
    """Smallest depth at which output i depends on input j: (n, n), inf if never within max_depth.

    That depth is the length of the *shortest* path from input j to output i; the largest
    finite entry, the longest of these shortest paths, is the maximum path length.
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


def fit_slope(lengths, values) -> float:
    """Least-squares slope of log(value) against log(length): value ~ length^slope."""
    x = torch.log(torch.tensor(lengths, dtype=torch.float64))
    y = torch.log(torch.tensor(values, dtype=torch.float64))
    A = torch.stack([x, torch.ones_like(x)], dim=1)
    return torch.linalg.lstsq(A, y[:, None]).solution[0].item()


@dataclasses.dataclass
class Counts:
    """What one call of a layer costs, counted exactly."""

    flops: int     # floating-point operations of its matrix products and convolutions
    largest: int   # elements of the largest tensor any operation created
    steps: int     # operations on the longest chain in which each must wait for the one before


# reshapes that the dispatcher does not flag as views but that, like views, move no data
_RESHAPES = {torch.ops.aten._unsafe_view.default, torch.ops.aten.unsafe_split.Tensor}


class _Depth(TorchDispatchMode):
    """Follows every operation: an output is one step deeper than its deepest input (views,
    reshapes and metadata changes add nothing), and it records the largest tensor an
    operation creates (a view creates none)."""

    def __init__(self):
        super().__init__()
        self.depth, self.keep, self.largest = {}, [], 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        level = max((self.depth.get(id(t), 0) for t in inputs), default=0)
        moves_data = not (func.is_view or func in _RESHAPES)
        level += 1 if moves_data else 0
        mutated = [a for a, arg in zip(args, func._schema.arguments, strict=False)  # no kwargs
                   if isinstance(a, torch.Tensor) and arg.alias_info is not None
                   and arg.alias_info.is_write]
        for t in outputs + mutated:
            self.depth[id(t)] = level
            self.keep.append(t)  # keep ids unique while counting (meta tensors cost no memory)
            if moves_data:
                self.largest = max(self.largest, t.numel())
        return out


def count_ops(fn: Callable, *args) -> Counts:
    """Count the cost of ``fn(*args)``: FLOPs, the largest tensor, and the sequential steps.

    Pass tensors (and modules inside ``fn``) on the ``meta`` device: the shapes flow through
    every operation, and nothing is computed or stored. Every operation but a view (a
    new shape for the same data) is a step.
    """
    flops, depth = FlopCounterMode(display=False), _Depth()
    with flops, depth:
        fn(*args)
    return Counts(flops.get_total_flops(), depth.largest, max(depth.depth.values(), default=0))


def saved_bytes(fn: Callable, *args) -> int:
    """Bytes that autograd keeps from ``fn(*args)`` until the backward, beyond the inputs.

    Every operation that needs a tensor for its gradient saves it; a saved-tensor hook sees
    each one. Tensors that share the inputs' storage (the inputs, their views) cost nothing
    extra, and a storage saved twice is counted once. Pass ``meta`` tensors with
    ``requires_grad=True``: shapes only, so a 16k-token attention costs nothing to count.
    """
    inputs = {t.untyped_storage()._cdata for t in args if isinstance(t, torch.Tensor)}
    storages = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage._cdata not in inputs:
            storages[storage._cdata] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*args)
    return sum(storages.values())
