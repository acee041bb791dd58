"""Wall-clock timing for the chapters' plots, by ``torch.utils.benchmark``.

Times are plotted, never asserted: they change with the machine and its load. Cells that
print them are excluded from the notebook tests, and claims about growth are asserted from
operation counts (``worlds.complexity.count_ops``) instead.
"""
from __future__ import annotations

import logging

import torch


def median_time(fn, min_run_time: float = 0.1) -> float:
    """Median seconds per call of ``fn()``; benchmark warms up, repeats, and synchronises CUDA."""
    # torch.utils.benchmark imports cpp_extension, which logs a warning on a machine with a
    # CUDA build of torch but no GPU; in a notebook that would be a stray stderr output
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        from torch.utils import benchmark
    finally:
        logger.setLevel(level)
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median
