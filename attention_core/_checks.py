"""Input validation at the public entry points.

Errors name the argument and the shape it got, so a reader sees *which* tensor is wrong
instead of a broadcasting error ten frames deep. Every check here reads only shapes, dtypes,
devices and Python values: none looks at a tensor's values, so none synchronises with a GPU,
and all of them work on the ``meta`` device and under ``torch.compile``.
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


def check_same(what: str, **tensors) -> None:
    """Require one device (``what="device"``) or one dtype (``what="dtype"``) for all tensors."""
    values = {name: getattr(t, what) for name, t in tensors.items() if t is not None}
    if len(set(values.values())) > 1:
        listed = ", ".join(f"{n}: {v}" for n, v in values.items())
        raise ValueError(f"tensors must share one {what}, got {listed}")


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


def check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")


def check_in_features(name: str, x: torch.Tensor, layer: torch.nn.Module, size_name: str) -> None:
    """Require the last dimension of ``x`` to fit ``layer`` (skipped while the layer is lazy)."""
    if not isinstance(layer, torch.nn.LazyLinear):
        check_size(name, x, -1, layer.in_features, f"this layer's {size_name}")


_LAYOUT = {"queries": "n_queries, d_q", "keys": "n_keys, d_k", "values": "n_keys, d_v"}


def check_queries_keys(queries, keys, *, any_rank: bool = False, same_size: bool = True,
                       why: str = "") -> None:
    """Validate queries (B, [h,] n_q, d_q) and keys (B, [h,] n_k, d_k) together.

    any_rank: allow head axes between batch and positions (else exactly rank 3).
    same_size: also require d_q == d_k; ``why`` is added to that error message.
    """
    for name, t in (("queries", queries), ("keys", keys)):
        check_tensor(name, t)
        if any_rank:
            check_rank(name, t, range(3, 9), f"(batch, [heads,] {_LAYOUT[name]})")
        else:
            check_rank(name, t, 3, f"(batch, {_LAYOUT[name]})")
    check_same("device", queries=queries, keys=keys)
    check_same("dtype", queries=queries, keys=keys)
    _check_leading("keys", keys, queries)
    if same_size:
        check_size("keys", keys, keys.dim() - 1, queries.shape[-1],
                   "the feature size of queries" + why)


def check_qkv(queries, keys, values, *, any_rank: bool = False, same_qk_size: bool = True) -> None:
    """Validate queries, keys and values: (B, [h,] n_q, d_q), (B, [h,] n_k, d_k), (B, [h,] n_k, d_v)."""
    check_queries_keys(queries, keys, any_rank=any_rank, same_size=same_qk_size)
    check_tensor("values", values)
    check_same("device", queries=queries, values=values)
    check_same("dtype", queries=queries, values=values)
    _check_leading("values", values, queries)
    check_size("values", values, values.dim() - 2, keys.shape[-2], "the number of keys")
    if values.dim() >= 4:
        check_size("values", values, values.dim() - 3, keys.shape[-3], "the number of key heads")


def _check_leading(name: str, x: torch.Tensor, queries: torch.Tensor) -> None:
    """Same rank as the queries, and the same batch (and head) sizes; keys and values may have
    fewer heads than queries (grouped-query attention) if their count divides the queries'."""
    if x.dim() != queries.dim():
        raise ValueError(f"{name} of shape {tuple(x.shape)} must have the rank of queries "
                         f"{tuple(queries.shape)}")
    heads = x.dim() - 3  # the head axis, for ranks >= 4
    for dim in range(x.dim() - 2):
        if dim == heads and dim > 0 and queries.shape[dim] % max(x.shape[dim], 1) == 0 \
                and x.shape[dim] > 0:
            continue  # query head i reads key/value head i // (h_q / h_kv)
        check_size(name, x, dim, queries.shape[dim],
                   "the batch size of queries" if dim == 0 else
                   f"the size of queries in dimension {dim} (or a divisor of it, for grouped "
                   f"heads)" if dim == heads else f"the size of queries in dimension {dim}")
