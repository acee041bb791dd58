"""Wall-clock timing for the chapters' plots, by ``torch.utils.benchmark``.

Times are plotted, never asserted: they change with the machine and its load. Cells that
print them are excluded from the notebook tests, and claims about growth are asserted from
operation counts (``worlds.complexity.count_ops``) instead.
"""
from __future__ import annotations

import logging
import time

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

    A round times a function whose last call took ``min_run_time`` or more once, alone; a
    quicker one by ``blocked_autorange``, in blocks of calls that fill ``min_run_time``. (For a
    long call, ``blocked_autorange`` would spend a second call sizing its block of one.)

    desc: the label of a progress bar over the rounds, shown in Jupyter while they run and then
    cleared with the cell's output so far (``book.progress``): time before printing.
    """
    benchmark = _benchmark()
    timers = {name: benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=num_threads)
              for name, fn in fns.items()}
    # warm-up (first-call allocations, lazy initialisation), which also finds the long calls
    last = {name: _one_call(fn, num_threads) for name, fn in fns.items()}
    best = {name: float("inf") for name in fns}
    for _ in (range(rounds) if desc is None else progress(range(rounds), desc)):
        for name, t in timers.items():
            if last[name] >= min_run_time:  # one call is the whole measurement: time just it
                last[name] = _one_call(fns[name], num_threads)
            else:  # blocked_autorange first sizes a block of calls, then times blocks of it
                last[name] = t.blocked_autorange(min_run_time=min_run_time).median
            best[name] = min(best[name], last[name])
    return best


def _one_call(fn, num_threads: int) -> float:
    """Seconds of one call of ``fn()`` on ``num_threads`` threads, CUDA synchronised before and
    after, as benchmark's timer does."""
    threads = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
        sync()
        start = time.perf_counter()
        fn()
        sync()
        return time.perf_counter() - start
    finally:
        torch.set_num_threads(threads)
