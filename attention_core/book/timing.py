"""Wall-clock timing for the chapters' plots, by ``torch.utils.benchmark``.

Times are plotted, never asserted: they change with the machine and its load. Cells that
print them are excluded from the notebook tests, and claims about growth are asserted from
operation counts (``worlds.complexity.count_ops``) instead.
"""
from __future__ import annotations

import logging

import torch

from .progress import progress


def _benchmark():
    # torch.utils.benchmark imports cpp_extension, which logs a warning on a machine with a
    # CUDA build of torch but no GPU; in a notebook that would be a stray stderr output
    logger = logging.getLogger("torch.utils.cpp_extension")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        from torch.utils import benchmark
    finally:
        logger.setLevel(level)
    return benchmark


def median_time(fn, min_run_time: float = 0.1) -> float:
    """Median seconds per call of ``fn()``; benchmark warms up, repeats, and synchronises CUDA."""
    timer = _benchmark().Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def best_times(fns: dict, rounds: int = 5, min_run_time: float = 0.05,
               num_threads: int = 1, desc: str | None = None) -> dict:
    """Each function's best median seconds per call over ``rounds`` rounds, the functions timed
    in turn within a round, on ``num_threads`` threads.

    Interleaving makes a change of load on the machine hit every function rather than one, and
    the best round is the one least disturbed: the curves a chapter plots then keep their shape
    (and their ratios) when something else runs beside the notebook.

    desc: the label of a progress bar over the rounds, shown in Jupyter while they run and then
    cleared with the cell's output so far (``book.progress``): time before printing.
    """
    benchmark = _benchmark()
    timers = {name: benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=num_threads)
              for name, fn in fns.items()}
    for t in timers.values():
        t.timeit(1)  # warm-up: first-call allocations and lazy initialisation
    best = {name: float("inf") for name in fns}
    for _ in (range(rounds) if desc is None else progress(range(rounds), desc)):
        for name, t in timers.items():
            best[name] = min(best[name], t.blocked_autorange(min_run_time=min_run_time).median)
    return best
