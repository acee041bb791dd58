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


def leading_shapes(q_shape, k_shape, v_shape):
    """The leading axes (batch ..., heads) that queries and keys/values expand to when torch's
    ``scaled_dot_product_attention`` broadcasts them (right-aligned, size 1 against any size),
    keys and values keeping a head count (axis -3 of rank >= 4) that divides the queries'
    (grouped-query attention). Returns (queries' leading shape, keys'/values' leading shape), or
    None when they do not broadcast."""
    rank = max(len(q_shape), len(k_shape), len(v_shape))
    q, k, v = ((1,) * (rank - len(s)) + tuple(s[:-2]) for s in (q_shape, k_shape, v_shape))
    try:
        batch = tuple(torch.broadcast_shapes(q[:-1], k[:-1], v[:-1]))
        if rank >= 4 and k[-1] == v[-1] and k[-1] not in (1, q[-1]) and q[-1] % k[-1] == 0:
            return batch + q[-1:], batch + k[-1:]                 # grouped heads
        last = tuple(torch.broadcast_shapes(q[-1:], k[-1:], v[-1:]))
    except RuntimeError:
        return None
    return batch + last, batch + last


def check_broadcast(queries, keys, values) -> None:
    """Require leading axes that broadcast as torch's scaled_dot_product_attention's do."""
    if leading_shapes(queries.shape, keys.shape, values.shape) is None:
        raise ValueError(f"queries {tuple(queries.shape)}, keys {tuple(keys.shape)} and values "
                         f"{tuple(values.shape)}: their leading (batch, head) axes do not "
                         f"broadcast (right-aligned, size 1 against any size; key/value heads "
                         f"may also divide the query heads)")


def check_queries_keys(queries, keys, *, any_rank: bool = False, same_size: bool = True,
                       why: str = "", broadcast: bool = False) -> None:
    """Validate queries (B, [h,] n_q, d_q) and keys (B, [h,] n_k, d_k) together.

    any_rank: allow head axes between batch and positions (else exactly rank 3).
    same_size: also require d_q == d_k; ``why`` is added to that error message.
    broadcast: leading axes need only broadcast (checked by check_qkv), not be equal.
    """
    for name, t in (("queries", queries), ("keys", keys)):
        check_tensor(name, t)
        if any_rank:
            check_rank(name, t, range(3, 9), f"(batch, [heads,] {_LAYOUT[name]})")
        else:
            check_rank(name, t, 3, f"(batch, {_LAYOUT[name]})")
    check_same("device", queries=queries, keys=keys)
    check_same("dtype", queries=queries, keys=keys)
    if not broadcast:
        _check_leading("keys", keys, queries)
    if same_size:
        check_size("keys", keys, keys.dim() - 1, queries.shape[-1],
                   "the feature size of queries" + why)


def check_qkv(queries, keys, values, *, any_rank: bool = False, same_qk_size: bool = True,
              broadcast: bool = False) -> None:
    """Validate queries, keys and values: (B, [h,] n_q, d_q), (B, [h,] n_k, d_k), (B, [h,] n_k, d_v).
    broadcast: leading axes that broadcast as torch's are enough (``attend``)."""
    check_queries_keys(queries, keys, any_rank=any_rank, same_size=same_qk_size,
                       broadcast=broadcast)
    check_tensor("values", values)
    check_same("device", queries=queries, values=values)
    check_same("dtype", queries=queries, values=values)
    check_size("values", values, values.dim() - 2, keys.shape[-2], "the number of keys")
    if broadcast:
        check_broadcast(queries, keys, values)
        return
    _check_leading("values", values, queries)
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


def check_sequence(name: str, x, layer: torch.nn.Module, size_name: str) -> None:
    """Require a floating tensor (batch, n, size) whose last size fits ``layer`` (the door of a
    layer that reads one sequence, e.g. check_sequence("X", X, self.W_q, "input_size"))."""
    check_tensor(name, x)
    check_rank(name, x, 3, f"(batch, n, {size_name})")
    check_in_features(name, x, layer, size_name)


def check_valid_lens(valid_lens, n_queries: int, n_keys: int, batch: int | None = None) -> None:
    """Require lengths of shape (B,) or (B, n_q). Lengths outside [0, n_k], or not whole, are
    rejected when checking is free: for Python lists, and for CPU tensors outside compiled code
    (reading a GPU tensor's values would make the host wait for the device)."""
    given = valid_lens if isinstance(valid_lens, torch.Tensor) else torch.as_tensor(valid_lens)
    if given.dtype == torch.bool or given.is_complex():
        raise TypeError(f"valid_lens must hold lengths, got dtype {given.dtype}")
    batch = given.shape[0] if batch is None and given.dim() else batch
    if (given.dim() not in (1, 2) or given.shape[0] != batch
            or (given.dim() == 2 and given.shape[1] != n_queries)):
        raise ValueError(f"valid_lens of shape {tuple(given.shape)} must be ({batch},) or "
                         f"({batch}, {n_queries}): one length per sequence or per query")
    if given.device.type == "cpu" and not torch.compiler.is_compiling() and given.numel():
        low, high = torch.aminmax(given)  # free to read on the CPU
        whole = not given.is_floating_point() or bool((given == given.floor()).all())
        if low.item() < 0 or high.item() > n_keys or not whole:
            raise ValueError(f"valid_lens must be whole numbers in [0, {n_keys}] (the number of "
                             f"keys), got {given.tolist()}")


def check_same_shape(**tensors) -> None:
    """Require one shape for all tensors, e.g. check_same_shape(loss=loss, log_prob=log_prob)."""
    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if len(set(shapes.values())) > 1:
        listed = " and ".join(f"{n} {s}" for n, s in shapes.items())
        raise ValueError(f"{listed} must have the same shape")


def check_layer_args(dropout: float, **sizes) -> None:
    """The door of a layer's constructor: each size a positive int, then dropout in [0, 1),
    e.g. check_layer_args(dropout, num_hiddens=num_hiddens)."""
    check_positive_int(**sizes)
    check_probability("dropout", dropout)
