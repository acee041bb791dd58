"""One training loop for every model the book trains: ``fit``, and the schedules of its rate.

Each task supplies its batches and its loss; ``fit`` does the rest, in one order everywhere:
the loss of a batch, ``optimizer_step`` (zero the gradients, backpropagate, clip, step), then
the schedule's step. A task's training function is a call of ``fit``, so the same seeds give
the same weights whichever task trains.
"""
from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable

import torch
from torch import nn

from ..contracts import contract, positive, positive_int


def optimizer_step(model: nn.Module, optimizer: torch.optim.Optimizer, loss: torch.Tensor,
                   clip: float | None = None) -> None:
    """One update: zero the gradients, backpropagate ``loss``, rescale the gradient to norm
    ``clip`` if it is longer (no clipping for None), and let ``optimizer`` take its step."""
    optimizer.zero_grad()
    loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)  # rescale if ||grad|| > clip
    optimizer.step()


@contract(steps_per_epoch=positive_int, epochs=positive_int, lr=positive, clip=positive,
          threads=positive_int)
def fit(model: nn.Module, batches: Callable[[], Iterable], loss: Callable, *,
        steps_per_epoch: int, epochs: int = 1, lr: float,
        optimizer: Callable[..., torch.optim.Optimizer] = torch.optim.Adam,
        schedule: Callable[[int, int], float] | None = None, clip: float | None = None,
        threads: int | None = None, progress: bool = True, desc: str = "training",
        on_step: Callable[[int, torch.Tensor], None] | None = None,
        on_epoch: Callable[[int, nn.Module], None] | None = None) -> list[float]:
    """Train ``model`` for ``epochs`` epochs and return each epoch's mean recorded loss.

    batches: called at the start of every epoch, returns that epoch's ``steps_per_epoch``
    batches (draw them lazily from a generator: a generator's draws then come in the order
    of the steps). loss: ``loss(model, batch)`` returns the loss to minimise, or (loss,
    record) when another number is to be recorded (a detached tensor, e.g. the loss without
    a penalty). optimizer: ``optimizer(model.parameters(), lr=lr)``, Adam unless given (a
    ``functools.partial`` adds its other arguments). schedule: ``schedule(step, total
    steps)``, a factor of ``lr`` at each step (``torch.optim.lr_scheduler.LambdaLR``); None
    keeps ``lr``. clip: the largest norm of the gradient (None: no clipping). threads: the
    CPU threads while training (then the caller's number again); None leaves them. progress:
    a tqdm bar, display only.

    on_step(step, record): after every step, step counting from 1 over the run. on_epoch(epoch,
    model): after every epoch, epoch counting from 1, for example to score the model on a
    validation split; it may switch the model to evaluation mode, and training resumes in
    training mode. Neither draws from the batches' generator unless it means to change them.
    The model is left in training mode.
    """
    from tqdm.auto import tqdm  # the book's extra: imported only when a model trains

    optimizer = optimizer(model.parameters(), lr=lr)
    total = epochs * steps_per_epoch
    scheduler = (None if schedule is None else
                 torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: schedule(step, total)))
    history, step = [], 0
    model.train()
    with cpu_threads(threads), tqdm(total=total, disable=not progress, desc=desc,
                                    mininterval=0.5) as bar:
        for epoch in range(1, epochs + 1):
            records = []
            for batch in batches():
                out = loss(model, batch)
                value, record = out if isinstance(out, tuple) else (out, out)
                optimizer_step(model, optimizer, value, clip)
                if scheduler is not None:
                    scheduler.step()
                step += 1
                records.append(record.detach())  # kept on the device: no wait per step
                bar.update(1)
                if on_step is not None:
                    on_step(step, records[-1])
            history.append(torch.stack(records).mean().item())  # one host read per epoch
            bar.set_postfix(epoch=epoch, loss=f"{history[-1]:.3f}", refresh=False)
            if on_epoch is not None:
                on_epoch(epoch, model)
                model.train()
    return history


@contextlib.contextmanager
def cpu_threads(threads: int | None):
    """Inside the block, torch computes on ``threads`` CPU threads (None: as many as before);
    after it, on as many as before."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if threads is not None:
            torch.set_num_threads(before)


# ---- schedules: factor(step, total steps) of the peak rate --------------------------------
def linear_decay(step: int, total: int) -> float:
    """The learning rate falls linearly from its peak to 0 over the run."""
    return 1 - step / total


# A schedule with a warmup is a record (its kind and its warmup) rather than a closure, so that
# a recipe holding one compares and prints by value.
@dataclasses.dataclass(frozen=True, init=False)
class WarmupLinearDecay:
    """A linear rise over ``warmup`` steps to the peak rate, then a linear fall to 0 at the
    last step: factor(step) = min((step + 1) / warmup, (total - step) / (total - warmup)), step
    counting from 0."""

    warmup: int

    @contract(warmup=positive_int)
    def __init__(self, warmup: int):
        object.__setattr__(self, "warmup", warmup)

    def __call__(self, step: int, total: int) -> float:
        return min((step + 1) / self.warmup, (total - step) / max(total - self.warmup, 1))


@dataclasses.dataclass(frozen=True, init=False)
class InverseSqrtWarmup:
    """Vaswani et al.'s schedule as a factor of the peak rate: a linear rise over ``warmup``
    steps, then decay as 1/sqrt(step): factor(step) = min((step + 1) / warmup,
    sqrt(warmup / (step + 1))), step counting from 0."""

    warmup: int

    @contract(warmup=positive_int)
    def __init__(self, warmup: int):
        object.__setattr__(self, "warmup", warmup)

    def __call__(self, step: int, total: int) -> float:
        return min((step + 1) / self.warmup, (self.warmup / (step + 1)) ** 0.5)


# the names the chapters call them by
warmup_linear_decay = WarmupLinearDecay
inverse_sqrt_warmup = InverseSqrtWarmup
