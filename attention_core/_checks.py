"""Input validation shared by every public function.

Errors name the argument and the shape it got, so a reader sees *which* tensor is wrong
instead of a broadcasting error ten frames deep.
"""
from __future__ import annotations

from typing import Sequence

import torch


def check_tensor(name: str, x, *, floating: bool = True) -> torch.Tensor:
    """Require a tensor (of floating dtype unless ``floating=False``)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if floating and not x.is_floating_point():
        raise TypeError(f"{name} must have a floating dtype, got {x.dtype} with shape {tuple(x.shape)}")
    return x


def check_rank(name: str, x: torch.Tensor, ranks: int | Sequence[int], meaning: str) -> None:
    """Require ``x.dim()`` to be one of ``ranks``; ``meaning`` spells out the expected layout."""
    ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if x.dim() not in ranks:
        raise ValueError(f"{name} must be {meaning}, got shape {tuple(x.shape)}")


def check_size(name: str, x: torch.Tensor, dim: int, expected: int, what: str) -> None:
    """Require ``x.shape[dim] == expected``; ``what`` says where ``expected`` came from."""
    if x.shape[dim] != expected:
        raise ValueError(
            f"{name} has size {x.shape[dim]} in dimension {dim} (shape {tuple(x.shape)}), "
            f"but {what} is {expected}"
        )


def check_finite(name: str, x: torch.Tensor, *, allow_neg_inf: bool = False) -> None:
    """Reject NaN (and +inf; -inf too unless allowed): they would spread silently."""
    bad = torch.isnan(x) | (x == float("inf"))
    if not allow_neg_inf:
        bad |= x == float("-inf")
    if bool(bad.any()):
        n = int(bad.sum())
        raise ValueError(f"{name} (shape {tuple(x.shape)}) contains {n} NaN or infinite values")


def check_same_device(**tensors: torch.Tensor) -> None:
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"tensors must be on one device, got {listed}")


def check_same_dtype(**tensors: torch.Tensor) -> None:
    dtypes = {name: t.dtype for name, t in tensors.items() if t is not None}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n} is {d}" for n, d in dtypes.items())
        raise ValueError(f"tensors must share one dtype, got {listed}")


def check_positive_int(**values) -> None:
    """Require each keyword's value to be an int >= 1, e.g. check_positive_int(num_heads=h)."""
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")


def check_probability(name: str, value: float) -> None:
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
