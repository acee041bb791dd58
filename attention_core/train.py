"""Training loops the chapters share. Deterministic given the seed and the data."""
from __future__ import annotations

import torch

from .pooling import NWKernelRegression


def fit_nw_bandwidth(model: NWKernelRegression, x_train: torch.Tensor, y_train: torch.Tensor,
                     *, steps: int = 200, lr: float = 0.05, log_every: int = 50):
    """Learn the bandwidth by minimising the leave-one-out squared error with Adam.

    Each training point is predicted from all the *other* points (``exclude_self=True``):
    predicting a point from itself would reward a bandwidth of zero, which just copies y_i.
    Returns the history [(step, loss, bandwidth), ...] every ``log_every`` steps and at the end.
    """
    if steps < 1 or log_every < 1:
        raise ValueError(f"steps and log_every must be positive, got {steps} and {log_every}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = ((model(x_train, x_train, y_train, exclude_self=True) - y_train) ** 2).mean()
        loss.backward()
        optimizer.step()
        if step % log_every == 0 or step == steps:
            history.append((step, loss.item(), model.bandwidth.item()))
    return history


def retrieval_loss(model, batch, mode: str, baseline: float = 0.0, generator=None):
    """Loss of one retrieval batch (data.make_retrieval_batch) with soft or hard attention.

    soft: the output is the weighted average of the values; the loss is its squared error and
    gradients flow through the weights. hard: one item is sampled per query; its squared
    error has no gradient, and the returned surrogate's gradient is the REINFORCE estimate.
    Returns (surrogate loss to differentiate, mean squared error, accuracy of the argmax).
    """
    from .hard import reinforce_loss, sample_hard_attention

    queries, keys, values, targets, index = batch
    if mode == "soft":
        out = model(queries, keys, values)
        errors = ((out - targets) ** 2).flatten()
        surrogate = errors.mean()
    elif mode == "hard":
        scores = model.score(queries, keys)
        out, _, log_prob = sample_hard_attention(scores, values, generator=generator)
        errors = ((out - targets) ** 2).flatten()
        surrogate = reinforce_loss(errors, log_prob.flatten(), baseline)
        model.attention_weights = torch.softmax(scores.detach(), -1)
    else:
        raise ValueError(f"mode must be 'soft' or 'hard', got {mode!r}")
    accuracy = (model.attention_weights.argmax(-1).flatten() == index).float().mean()
    return surrogate, errors.mean().item(), accuracy.item()


def retrieval_accuracy(model, data) -> float:
    """Share of queries whose highest attention weight falls on the matching key."""
    queries, keys, values, _, index = data
    with torch.no_grad():
        weights = torch.softmax(model.score(queries, keys), -1)
    return (weights.argmax(-1).flatten() == index).float().mean().item()


def fit_retrieval(model, mode: str, *, steps: int = 300, batch: int = 64, lr: float = 0.05,
                  seed: int = 0, log_every: int = 50, use_baseline: bool = True,
                  n_eval: int = 2000, **task):
    """Train ``model`` (a ScoredAttention) on fresh retrieval batches with soft or hard attention.

    Hard attention uses a running mean of the loss as its REINFORCE baseline when
    ``use_baseline``. Returns [(step, training mean squared error, accuracy on n_eval held-out
    lookups), ...], the first entry at step 0, before any update.
    """
    from .data import make_retrieval_batch

    gen = torch.Generator().manual_seed(seed)
    held_out = make_retrieval_batch(n_eval, generator=torch.Generator().manual_seed(seed + 1), **task)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    baseline, history = 0.0, [(0, float("nan"), retrieval_accuracy(model, held_out))]
    for step in range(1, steps + 1):
        data = make_retrieval_batch(batch, generator=gen, **task)
        optimizer.zero_grad()
        surrogate, mse, _ = retrieval_loss(model, data, mode, baseline, generator=gen)
        surrogate.backward()
        optimizer.step()
        if use_baseline:
            baseline = 0.9 * baseline + 0.1 * mse
        if step % log_every == 0 or step == steps:
            history.append((step, mse, retrieval_accuracy(model, held_out)))
    return history


def gradient_draws(model, data, mode: str, n_draws: int, baseline: float = 0.0, seed: int = 0):
    """The gradient of the score's parameters, estimated ``n_draws`` times on the same batch.

    Soft attention's gradient is exact, so every draw is the same; hard attention's REINFORCE
    estimate changes with the sampled items. Returns (n_draws, n_parameters).
    """
    gen = torch.Generator().manual_seed(seed)
    draws = []
    for _ in range(n_draws):
        model.zero_grad()
        surrogate, _, _ = retrieval_loss(model, data, mode, baseline, generator=gen)
        surrogate.backward()
        draws.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    return torch.stack(draws)


def masked_cross_entropy(logits, targets, valid_lens):
    """Mean cross-entropy over the valid target tokens only.

    logits (batch, n, vocab), targets (batch, n), valid_lens (batch,): positions at or beyond
    a sequence's valid length (padding) contribute nothing, so padding never trains the model.
    """
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} must "
                         f"agree in (batch, n)")
    mask = torch.arange(targets.shape[1], device=targets.device)[None] < valid_lens.to(targets.device)[:, None]
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return (losses * mask).sum() / mask.sum()


def train_seq2seq(model, data, pairs, *, epochs: int = 4, batch_size: int = 128,
                  lr: float = 0.005, clip: float = 1.0, seed: int = 0, device=None,
                  progress: bool = True):
    """Teacher-forced training with Adam, masked loss and gradient clipping.

    data: a text.TranslationData; pairs: the training pairs. Batches and their order are fixed
    by ``seed``, so the same call gives the same model. The progress bar (tqdm) is display
    only. Returns the mean loss of each epoch.
    """
    from tqdm.auto import tqdm

    from .seq2seq import decoder_input

    device = device or next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    bos = data.tgt_vocab.bos
    n_batches = -(-len(pairs) // batch_size)
    history = []
    with tqdm(total=epochs * n_batches, disable=not progress, desc="training") as bar:
        for epoch in range(epochs):
            model.train()
            total, count = 0.0, 0
            for src, src_lens, tgt, tgt_lens in data.batches(pairs, batch_size, seed=seed + epoch):
                src, tgt = src.to(device), tgt.to(device)
                logits, _ = model(src, src_lens, decoder_input(tgt, bos))
                loss = masked_cross_entropy(logits, tgt, tgt_lens)
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                optimizer.step()
                total, count = total + loss.item(), count + 1
                bar.update(1)
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.3f}", refresh=False)
            history.append(total / count)
    return history
