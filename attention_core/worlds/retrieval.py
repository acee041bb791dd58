"""The retrieval task of chapter 3: find the stored item whose key matches a noisy query,
with soft attention (a weighted average) or hard attention (one sampled item, REINFORCE), or
with hard attention's objective computed exactly (its expectation over the items)."""
from __future__ import annotations

import torch

from ..contracts import contract, one_of, positive, positive_int
from ..variants import reinforce_loss, sample_hard_attention
from .training import fit


@contract(batch=positive_int, n_items=positive_int, dim=positive_int)
def make_retrieval_batch(batch: int, n_items: int = 8, dim: int = 8, noise: float = 0.3,
                         generator: torch.Generator | None = None, device=None):
    """A lookup task: each example stores n_items (key, value) pairs, unit-length random keys
    (dim,) and scalar values; the query is one of the keys plus Gaussian noise of standard
    deviation ``noise`` per coordinate, and the target is that key's value.

    Returns queries (B, 1, dim), keys (B, n_items, dim), values (B, n_items, 1),
    targets (B, 1, 1) and the true index (B,).
    """
    keys = torch.randn(batch, n_items, dim, generator=generator)
    keys = keys / keys.norm(dim=-1, keepdim=True)
    values = torch.randn(batch, n_items, 1, generator=generator)
    index = torch.randint(n_items, (batch,), generator=generator)
    rows = torch.arange(batch)
    queries = (keys[rows, index] + noise * torch.randn(batch, dim, generator=generator))[:, None]
    targets = values[rows, index][:, None]
    return tuple(t.to(device) for t in (queries, keys, values, targets, index))


MODES = ("soft", "hard", "expected")


@contract(mode=one_of(*MODES))
def retrieval_loss(model, batch, mode: str, baseline: float = 0.0, generator=None):
    """Loss of one retrieval batch with soft or hard attention; ``model`` is a ScoredAttention.

    soft: the output is the weighted average of the values; the loss is its squared error and
    gradients flow through the weights. hard: one item is sampled per query; its squared
    error has no gradient, and the returned surrogate's gradient is the REINFORCE estimate.
    expected: hard attention's objective without the sampling, the expected squared error
    sum_i alpha_i (v_i - y)^2 over the items, whose gradient is exact.
    Returns (surrogate loss to differentiate, mean squared error (a float)).
    """
    queries, keys, values, targets, _ = batch
    if mode == "soft":
        errors = ((model(queries, keys, values) - targets) ** 2).flatten()
        return errors.mean(), errors.mean().item()
    scores = model.score(queries, keys)
    if mode == "expected":
        alpha = torch.softmax(scores, dim=-1)                                   # (B, 1, n)
        errors = (alpha * (values.transpose(1, 2) - targets) ** 2).sum(-1).flatten()
        return errors.mean(), errors.mean().item()
    out, _, log_prob = sample_hard_attention(scores, values, generator=generator)
    errors = ((out - targets) ** 2).flatten()
    return reinforce_loss(errors, log_prob.flatten(), baseline), errors.mean().item()


def retrieval_accuracy(model, data) -> float:
    """Share of queries whose highest attention score falls on the matching key."""
    queries, keys, _, _, index = data
    with torch.no_grad():
        scores = model.score(queries, keys)
    return (scores.argmax(-1).flatten() == index).float().mean().item()


@contract(mode=one_of(*MODES), steps=positive_int, batch=positive_int, lr=positive,
          log_every=positive_int)
def fit_retrieval(model, mode: str, held_out, *, steps: int = 300, batch: int = 64,
                  lr: float = 0.05, generator: torch.Generator | None = None,
                  log_every: int = 50, use_baseline: bool = True, **task):
    """Train ``model`` on fresh retrieval batches drawn from ``generator``, with soft or hard
    attention or hard attention's exact expected loss (``fit``, Adam), and measure its accuracy
    on the ``held_out`` batch.

    Hard attention uses a running mean of the loss as its REINFORCE baseline when
    ``use_baseline``. Returns [(step, training mean squared error, held-out accuracy), ...],
    the first entry at step 0, before any update.
    """
    history = [(0, float("nan"), retrieval_accuracy(model, held_out))]
    state = {"baseline": 0.0, "mse": None}  # the running baseline, the last batch's error

    def loss(model, data):
        surrogate, state["mse"] = retrieval_loss(model, data, mode, state["baseline"],
                                                 generator=generator)
        return surrogate

    def after(step, _):
        if use_baseline:
            state["baseline"] = 0.9 * state["baseline"] + 0.1 * state["mse"]
        if step % log_every == 0 or step == steps:
            history.append((step, state["mse"], retrieval_accuracy(model, held_out)))

    fit(model, lambda: (make_retrieval_batch(batch, generator=generator, **task)
                        for _ in range(steps)),
        loss, steps_per_epoch=steps, lr=lr, progress=False, on_step=after)
    return history


@contract(mode=one_of("soft", "hard"), n_draws=positive_int)
def gradient_draws(model, data, mode: str, n_draws: int, baseline: float = 0.0,
                   generator: torch.Generator | None = None):
    """The gradient of the score's parameters, estimated ``n_draws`` times on the same batch.

    Soft attention's gradient is exact, so every draw is the same; hard attention's REINFORCE
    estimate changes with the sampled items. Returns (n_draws, n_parameters).
    """
    draws = []
    for _ in range(n_draws):
        model.zero_grad()
        surrogate, _ = retrieval_loss(model, data, mode, baseline, generator=generator)
        surrogate.backward()
        draws.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    return torch.stack(draws)
