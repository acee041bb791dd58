"""Independent trainings side by side: one Python thread each, one CPU thread each.

The chapters' models are small, so a training step is many short operations, and a second
intra-op thread buys little. PyTorch's operations release the GIL while they compute, so two
trainings in two Python threads, each on one CPU thread, keep two cores busy, and finish
sooner than one after the other. A training that draws its batches from its own generator, and
its other random numbers from the global one only if no other training draws from it, computes
exactly what it computes alone on one thread.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent import futures
from typing import TypeVar

import torch

from ..contracts import contract, positive_int, require

T = TypeVar("T")


@contract(workers=positive_int, total=positive_int,
          where=[require(lambda trainings: bool(trainings) and all(callable(t) for t in trainings),
                         lambda trainings: f"trainings must be a non-empty sequence of "
                         f"callables, got {trainings!r:.80}")])
def side_by_side(trainings: Sequence[Callable[[Callable[[], None]], T]], *, total: int,
                 workers: int | None = None, desc: str = "training",
                 progress: bool = True) -> list[T]:
    """Run ``training(tick)`` for each training, ``workers`` at a time (by default one per
    intra-op thread the caller has, ``torch.get_num_threads()``, so one at a time where that is
    1), each on one CPU thread, and return their results in order. Each training calls
    ``tick()`` after every step; one progress bar (tqdm, display only) counts the ``total``
    steps of all of them and is drawn from the caller's thread, as Jupyter widgets expect.
    The first error raised by a training is raised here."""
    from tqdm.auto import tqdm  # the book's extra: imported only when a model trains

    trainings = list(trainings)
    caller_threads = torch.get_num_threads()
    workers = min(len(trainings), caller_threads) if workers is None else workers
    done = [0] * len(trainings)

    def run(i):
        def tick():
            done[i] += 1  # one writer per entry; the bar only reads
        threads = torch.get_num_threads()  # this thread's own setting
        torch.set_num_threads(1)
        try:
            return trainings[i](tick)
        finally:
            torch.set_num_threads(threads)

    try:
        with tqdm(total=total, disable=not progress, desc=desc, mininterval=0.5) as bar, \
                futures.ThreadPoolExecutor(workers) as pool:
            jobs = [pool.submit(run, i) for i in range(len(trainings))]
            pending = set(jobs)
            while pending:
                _, pending = futures.wait(pending, timeout=0.5,
                                          return_when=futures.FIRST_EXCEPTION)
                bar.update(min(sum(done), total) - bar.n)
                if any(job.done() and job.exception() is not None for job in jobs):
                    for job in pending:  # those not started; result() below raises the error
                        job.cancel()
                    break
            return [job.result() for job in jobs]
    finally:
        # set_num_threads also sets the count that threads started later begin with, which the
        # workers' last call may have left at 1: give it back the caller's
        torch.set_num_threads(caller_threads)
