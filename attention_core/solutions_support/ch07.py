"""Chapter 7's solutions: the fetch world with any number of attributes.

Each example shows n items. Item j has ``n_attributes`` attributes (colour, shape, and more),
each a permutation of 0 .. n - 1 across the items, and a label. The query names one value of
every attribute, each taken from a *different* item: attribute a names item ``picked[:, a]``.
The answer has one slot per attribute, the label of the item it names. With two attributes
this is chapter 7's world (``worlds.fetch``); the model is the same: embeddings, one
multi-head attention layer (query -> items) and a linear readout per slot.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.nn import functional as F

from ..contracts import contract, positive_int, require
from ..multihead import MultiHeadAttention


@dataclasses.dataclass(frozen=True, init=False)
class MultiFetchTask:
    n_items: int = 8        # items per example; also the number of values of each attribute
    n_labels: int = 16
    n_attributes: int = 3   # colour, shape, ...: one slot each

    @contract(n_items=positive_int, n_labels=positive_int, n_attributes=positive_int,
              where=[require(lambda n_items, n_attributes: n_attributes <= n_items,
                             lambda n_items, n_attributes: f"n_attributes ({n_attributes}) "
                             f"names that many different items, but there are only n_items = "
                             f"{n_items}")])
    def __init__(self, n_items: int = 8, n_labels: int = 16, n_attributes: int = 3):
        object.__setattr__(self, "n_items", n_items)
        object.__setattr__(self, "n_labels", n_labels)
        object.__setattr__(self, "n_attributes", n_attributes)

    @property
    def item_size(self):   # one one-hot block per attribute, then the one-hot label
        return self.n_attributes * self.n_items + self.n_labels

    @property
    def query_size(self):  # one one-hot block per attribute
        return self.n_attributes * self.n_items


@contract(batch=positive_int)
def make_multi_fetch_batch(batch: int, task: MultiFetchTask = MultiFetchTask(),
                           generator: torch.Generator | None = None, device=None):
    """Returns (queries (B, 1, query_size), items (B, n, item_size), targets (B, A) labels,
    picked (B, A) the positions of the A different items the query names), A = n_attributes."""
    n, L, A = task.n_items, task.n_labels, task.n_attributes
    attributes = [torch.argsort(torch.rand(batch, n, generator=generator), dim=1)  # (B, n) each
                  for _ in range(A)]
    labels = torch.randint(L, (batch, n), generator=generator)                       # (B, n)
    picked = torch.argsort(torch.rand(batch, n, generator=generator), dim=1)[:, :A]  # all different
    rows = torch.arange(batch)
    items = torch.cat([F.one_hot(x, n) for x in attributes] + [F.one_hot(labels, L)], -1)
    queries = torch.cat([F.one_hot(x[rows, picked[:, a]], n) for a, x in enumerate(attributes)], -1)
    targets = labels.gather(1, picked)                                               # (B, A)
    return (queries[:, None].float().to(device), items.float().to(device), targets.to(device),
            picked.to(device))


class MultiFetchModel(nn.Module):
    """Embeddings, one multi-head attention layer (query -> items), a linear readout per slot.

    forward(queries (B, 1, query_size), items (B, n, item_size), head_mask=None,
    need_weights=False) -> logits (B, A, n_labels), as ``worlds.fetch.FetchModel`` with A slots,
    so that ``slot_accuracy``, ``head_importance`` and ``prune_greedily`` apply to it.
    """

    def __init__(self, task: MultiFetchTask = MultiFetchTask(), num_hiddens: int = 48,
                 num_heads: int = 1):
        super().__init__()
        self.task = task
        self.embed_query = nn.Linear(task.query_size, num_hiddens)
        self.embed_item = nn.Linear(task.item_size, num_hiddens)
        self.attention = MultiHeadAttention(num_hiddens, num_heads, query_size=num_hiddens,
                                            key_size=num_hiddens, value_size=num_hiddens)
        self.readout = nn.Linear(num_hiddens, task.n_attributes * task.n_labels)

    def forward(self, queries, items, head_mask=None, need_weights=False):
        q, x = self.embed_query(queries), self.embed_item(items)
        out = self.attention(q, x, x, need_weights=need_weights, head_mask=head_mask)  # (B, 1, d)
        return self.readout(out[:, 0]).view(-1, self.task.n_attributes, self.task.n_labels)


@contract(steps=positive_int, batch=positive_int)
def train_multi_fetch(model: MultiFetchModel, *, steps: int = 800, batch: int = 256,
                      lr: float = 3e-3, generator: torch.Generator | None = None, device=None):
    """Adam on fresh batches, cross-entropy on every slot, learning rate falling linearly to 0,
    on one CPU thread (as ``worlds.fetch.train_fetch``). Returns the mean loss of the last 100
    steps."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    losses = []
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            queries, items, targets, _ = make_multi_fetch_batch(batch, model.task, generator, device)
            loss = F.cross_entropy(model(queries, items).flatten(0, 1), targets.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.detach())
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return torch.stack(losses[-100:]).mean().item()


def slot_accuracies(model, data, head_mask=None) -> torch.Tensor:
    """The share of examples whose label is right, per slot: (A,)."""
    queries, items, targets, _ = data
    with torch.no_grad():
        return (model(queries, items, head_mask).argmax(-1) == targets).float().mean(0)


def weights_on_picked(model, data) -> torch.Tensor:
    """Each head's mean weight on each named item: (h, A), entry (i, a) the weight head i puts
    on the item that attribute a names, averaged over the examples."""
    queries, items, _, picked = data
    with torch.no_grad():
        model(queries, items, need_weights=True)
    w = model.attention.attention_weights[:, :, 0]                  # (B, h, n): one query
    return w.gather(2, picked[:, None].expand(-1, w.shape[1], -1)).mean(0)  # (h, A)
