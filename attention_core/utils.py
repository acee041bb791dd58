"""Reproducibility and device choice, the first cell of every chapter."""
from __future__ import annotations

import random

import torch


def set_seed(seed: int = 0) -> None:
    """Seed Python's and torch's generators (CPU and every GPU)."""
    random.seed(seed)
    torch.manual_seed(seed)


def get_device() -> torch.device:
    """CUDA when a GPU is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def median_time(fn, repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` in seconds, after ``warmup`` untimed calls.

    For the chapters' scaling plots; cells that print its results are excluded from nbval's
    comparison, and the claims they support are asserted as ratios or slopes.
    """
    import time

    if repeats < 1:
        raise ValueError(f"repeats must be positive, got {repeats}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]
