"""The fetch task of chapter 7: a query must fetch different items into different slots.

Each example shows n items. Item j has ``n_attributes`` attributes (chapter 7's two are a
colour and a shape), each a permutation of 0 .. n - 1 across the items, and a label. The
query names one value of every attribute, each taken from a different item: attribute a names
item ``picked[:, a]``, and slot a of the answer is that item's label.

The model is one multi-head attention layer (the query attends to the items) and a linear
readout per slot: no hidden layer after the attention. One head computes one softmax, one
weighted average of the items, and a linear readout of an average cannot say which label
came with which item: it can fetch one item, or a blend. Two heads can each fetch one item,
by a different attribute. The width of the layer is the same for every number of heads.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from ..contracts import contract, positive, positive_int, require
from ..multihead import MultiHeadAttention
from .side_by_side import side_by_side
from .training import fit, linear_decay


@dataclasses.dataclass(frozen=True, init=False)
class FetchTask:
    n_items: int = 8        # items per example; also the number of values of each attribute
    n_labels: int = 16
    n_attributes: int = 2   # colour, shape, ...: one slot each

    @contract(n_items=positive_int, n_labels=positive_int, n_attributes=positive_int,
              where=[require(lambda n_items, n_attributes: n_attributes <= n_items,
                             lambda n_items, n_attributes: f"n_attributes ({n_attributes}) "
                             f"names that many different items, but there are only n_items = "
                             f"{n_items}")])
    def __init__(self, n_items: int = 8, n_labels: int = 16, n_attributes: int = 2):
        object.__setattr__(self, "n_items", n_items)
        object.__setattr__(self, "n_labels", n_labels)
        object.__setattr__(self, "n_attributes", n_attributes)

    @property
    def item_size(self):   # one one-hot block per attribute, then the one-hot label
        return self.n_attributes * self.n_items + self.n_labels

    @property
    def query_size(self):  # one one-hot block per attribute
        return self.n_attributes * self.n_items


def _distinct_items(batch: int, n: int, count: int, generator) -> torch.Tensor:
    """(batch, count) positions, all different within a row, uniformly drawn."""
    if count == 2:  # one item, then another at a random offset from it: chapter 7's draws,
        # which its shipped models were trained on
        a = torch.randint(n, (batch,), generator=generator)
        return torch.stack([a, (a + torch.randint(1, n, (batch,), generator=generator)) % n], 1)
    return torch.argsort(torch.rand(batch, n, generator=generator), dim=1)[:, :count]


@contract(batch=positive_int)
def make_fetch_batch(batch: int, task: FetchTask = FetchTask(),
                     generator: torch.Generator | None = None, device=None):
    """Returns (queries (B, 1, query_size), items (B, n, item_size), targets (B, A) labels,
    picked (B, A) the positions of the A different items the query names), A = n_attributes."""
    n, L, A = task.n_items, task.n_labels, task.n_attributes
    attributes = [torch.argsort(torch.rand(batch, n, generator=generator), dim=1)  # (B, n) each
                  for _ in range(A)]
    labels = torch.randint(L, (batch, n), generator=generator)                       # (B, n)
    picked = _distinct_items(batch, n, A, generator)                                 # (B, A)
    rows = torch.arange(batch)
    items = torch.cat([F.one_hot(x, n) for x in attributes] + [F.one_hot(labels, L)], -1)
    queries = torch.cat([F.one_hot(x[rows, picked[:, a]], n) for a, x in enumerate(attributes)], -1)
    targets = labels.gather(1, picked)                                               # (B, A)
    return (queries[:, None].float().to(device), items.float().to(device), targets.to(device),
            picked.to(device))


class FetchModel(nn.Module):
    """Embeddings, one multi-head attention layer (query -> items), a linear readout per slot.

    forward(queries (B, 1, query_size), items (B, n, item_size), head_mask=None,
    need_weights=False) -> logits (B, A, n_labels); ``self.attention.attention_weights``
    (B, h, 1, n) when asked.
    """

    def __init__(self, task: FetchTask = FetchTask(), num_hiddens: int = 32, num_heads: int = 1,
                 num_kv_heads: int | None = None):
        super().__init__()
        self.task = task
        self.embed_query = nn.Linear(task.query_size, num_hiddens)
        self.embed_item = nn.Linear(task.item_size, num_hiddens)
        self.attention = MultiHeadAttention(num_hiddens, num_heads, query_size=num_hiddens,
                                            key_size=num_hiddens, value_size=num_hiddens,
                                            num_kv_heads=num_kv_heads)
        self.readout = nn.Linear(num_hiddens, task.n_attributes * task.n_labels)

    def forward(self, queries, items, head_mask=None, need_weights=False):
        q, x = self.embed_query(queries), self.embed_item(items)
        out = self.attention(q, x, x, need_weights=need_weights, head_mask=head_mask)  # (B, 1, d)
        return self.readout(out[:, 0]).view(-1, self.task.n_attributes, self.task.n_labels)


def slot_accuracy(model: FetchModel, data, head_mask=None) -> float:
    """Share of slots (one per attribute and example) whose label is right."""
    queries, items, targets, _ = data
    with torch.no_grad():
        return (model(queries, items, head_mask).argmax(-1) == targets).float().mean().item()


def slot_accuracies(model: FetchModel, data, head_mask=None) -> torch.Tensor:
    """The share of examples whose label is right, per slot: (A,)."""
    queries, items, targets, _ = data
    with torch.no_grad():
        return (model(queries, items, head_mask).argmax(-1) == targets).float().mean(0)


def weights_on_picked(model: FetchModel, data) -> torch.Tensor:
    """Each head's mean weight on each named item: (h, A), entry (i, a) the weight head i puts
    on the item that attribute a names, averaged over the examples."""
    queries, items, _, picked = data
    with torch.no_grad():
        model(queries, items, need_weights=True)
    w = model.attention.attention_weights[:, :, 0]                  # (B, h, n): one query
    return w.gather(2, picked[:, None].expand(-1, w.shape[1], -1)).mean(0)  # (h, A)


def fetch_loss(model: FetchModel, data) -> torch.Tensor:
    """Cross-entropy over every slot of a batch of ``make_fetch_batch``."""
    queries, items, targets, _ = data
    return F.cross_entropy(model(queries, items).flatten(0, 1), targets.flatten())


@contract(steps=positive_int, batch=positive_int, lr=positive)
def train_fetch(model: FetchModel, *, steps: int = 1500, batch: int = 256, lr: float = 3e-3,
                generator: torch.Generator | None = None, device=None, progress: bool = True,
                on_step: Callable[[], None] | None = None):
    """Adam on fresh batches (``fit``), ``fetch_loss``, learning rate decaying linearly to 0,
    on one CPU thread. Returns the mean loss of every 100 steps, and leaves the model in
    evaluation mode. The progress bar (tqdm) is display only; ``on_step``, if given, is called
    after every step (``train_fetch_all`` counts with it)."""
    history, losses = [], []

    def record(step, loss):
        losses.append(loss)
        if on_step is not None:
            on_step()
        if step % 100 == 0:
            history.append(torch.stack(losses).mean().item())
            losses.clear()

    # One thread: the operations of a model this small are too short to share between CPU
    # threads, and a second one costs more in synchronisation than it saves. Only the
    # rounding changes.
    fit(model, lambda: (make_fetch_batch(batch, model.task, generator, device)
                        for _ in range(steps)),
        fetch_loss, steps_per_epoch=steps, lr=lr, schedule=linear_decay, threads=1,
        progress=progress, on_step=record)
    model.eval()
    return history


def _fetch_models(models) -> bool:
    return bool(models) and all(isinstance(m, FetchModel) for m in models)


@contract(steps=positive_int,
          where=[require(lambda models: _fetch_models(list(models)),
                         lambda models: f"models must be a non-empty sequence of FetchModel, "
                         f"got {list(models)!r:.80}")])
def train_fetch_all(models: Sequence[FetchModel], *, seed: int = 0, steps: int = 1500,
                    workers: int | None = None, device=None, progress: bool = True,
                    **kwargs) -> list[list[float]]:
    """Train independent models side by side (``side_by_side``), each as ``train_fetch(model,
    generator=torch.Generator().manual_seed(seed), ...)`` trains it alone, bit for bit, and
    return their histories in order. One progress bar counts the steps of all of them."""
    models = list(models)

    def training(model):
        def train(tick):
            return train_fetch(model, steps=steps, generator=torch.Generator().manual_seed(seed),
                               device=device, progress=False, on_step=tick, **kwargs)
        return train

    return side_by_side([training(m) for m in models], total=steps * len(models),
                        workers=workers, progress=progress)


def head_importance(model: FetchModel, data) -> torch.Tensor:
    """Each head's importance ``|dL / d xi_h|`` at a head mask xi = 1, L the mean loss: the
    first-order change of the loss when head h is removed; (h,). Michel et al. average the
    absolute per-example slope instead, which one backward pass with a (B, h) mask also gives."""
    queries, items, targets, _ = data
    xi = torch.ones(model.attention.num_heads, device=queries.device, requires_grad=True)
    loss = F.cross_entropy(model(queries, items, head_mask=xi).flatten(0, 1), targets.flatten())
    (grad,) = torch.autograd.grad(loss, xi)
    return grad.abs()


def prune_greedily(model: FetchModel, data):
    """Remove heads one at a time, each time the one whose removal keeps accuracy highest.
    Returns [(heads removed so far, accuracy), ...] from none removed to all but one."""
    h = model.attention.num_heads
    mask = torch.ones(h, device=data[0].device)
    path = [((), slot_accuracy(model, data, mask))]
    while mask.sum() > 1:
        trials = {}
        for head in mask.nonzero().flatten().tolist():
            trial = mask.clone()
            trial[head] = 0
            trials[head] = slot_accuracy(model, data, trial)
        best = max(trials, key=trials.get)
        mask[best] = 0
        path.append((path[-1][0] + (best,), trials[best]))
    return path
