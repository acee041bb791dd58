"""Timing for the chapters' plots: interleaved rounds, each the median of blocks of calls.

Times change with the machine and its load. Cells that print them are excluded from the
notebooks' output comparison; claims about growth are asserted from operation counts
(``worlds.complexity.count_ops``), and a folded check asserts at most a generous band on a
ratio of times measured in the same run, never an absolute time.

On one CPU thread the clock is the thread's CPU time (``time.thread_time``): time the timing
thread spends waiting for other programs is not counted, so a busy machine hardly moves the
numbers. With several threads or on CUDA it is the wall clock.
"""
from __future__ import annotations

import statistics
import time

import torch

from .progress import progress


def best_times(fns: dict, rounds: int = 5, min_run_time: float = 0.05,
               num_threads: int = 1, desc: str | None = None) -> dict:
    """Each function's best median seconds per call over ``rounds`` rounds, the functions timed
    in turn within a round, on ``num_threads`` threads.

    Interleaving makes a change of load on the machine hit every function rather than one, and
    the best round is the one least disturbed: the curves a chapter plots then keep their shape
    (and their ratios) when something else runs beside the notebook.

    A round times a function in blocks of calls until the blocks fill ``min_run_time``, and takes
    the median seconds per call over its blocks, as ``torch.utils.benchmark``'s
    ``blocked_autorange`` does. The block size comes from the function's time in the round
    before (the warm-up call, for the first): about a tenth of ``min_run_time``, or one call of
    a longer function. ``blocked_autorange`` sizes its blocks anew on every call, by running the
    function in blocks of 1, 10, 100, ... calls until a block is 10,000 times its timer's
    overhead, which here made each round of a 1 ms function take 2-3 times ``min_run_time``, and
    each round of a long one take two calls to time one.

    desc: the label of a progress bar over the rounds, shown in Jupyter while they run and then
    cleared with the cell's output so far (``book.progress``): time before printing.
    """
    # warm-up (first-call allocations, lazy initialisation), which also sizes the first blocks
    per_call = {name: _block(fn, 1, num_threads) for name, fn in fns.items()}
    best = {name: float("inf") for name in fns}
    for _ in (range(rounds) if desc is None else progress(range(rounds), desc)):
        for name, fn in fns.items():
            number = max(1, int(min_run_time / 10 / max(per_call[name], 1e-9)))
            blocks, total = [], 0.0
            while total < min_run_time:
                seconds = _block(fn, number, num_threads)
                blocks.append(seconds / number)
                total += seconds
            per_call[name] = statistics.median(blocks)
            best[name] = min(best[name], per_call[name])
    return best


def _block(fn, number: int, num_threads: int) -> float:
    """Seconds of ``number`` calls of ``fn()`` on ``num_threads`` threads, CUDA synchronised
    before and after (the kernels a call launches are part of its time): CPU time of this
    thread when it does all the work (one thread, no CUDA), else wall-clock time."""
    threads = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        cuda = torch.cuda.is_available()
        sync = torch.cuda.synchronize if cuda else (lambda: None)
        clock = time.thread_time if num_threads == 1 and not cuda else time.perf_counter
        sync()
        start = clock()
        for _ in range(number):
            fn()
        sync()
        return clock() - start
    finally:
        torch.set_num_threads(threads)
