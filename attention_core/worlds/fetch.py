"""The fetch world of chapter 7: a query must fetch two different items into two slots.

Each example shows n items. Item j has a colour, a shape (both all different within an
example) and a label. The query names a colour c and a shape s, taken from two different
items a and b; the answer is two labels: slot 1 the label of the item with colour c (item a),
slot 2 the label of the item with shape s (item b).

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

from ..contracts import contract, positive_int
from ..multihead import MultiHeadAttention
from .side_by_side import side_by_side


@dataclasses.dataclass(frozen=True)
class FetchTask:
    n_items: int = 8       # items per example; also the number of colours and of shapes
    n_labels: int = 16

    @property
    def item_size(self):   # one-hot colour, one-hot shape, one-hot label
        return 2 * self.n_items + self.n_labels

    @property
    def query_size(self):  # one-hot colour, one-hot shape
        return 2 * self.n_items


@contract(batch=positive_int)
def make_fetch_batch(batch: int, task: FetchTask = FetchTask(),
                     generator: torch.Generator | None = None, device=None):
    """Returns (queries (B, 1, query_size), items (B, n, item_size), targets (B, 2) labels,
    picked (B, 2) the positions of the two items the query names)."""
    n, L = task.n_items, task.n_labels
    colours = torch.argsort(torch.rand(batch, n, generator=generator), dim=1)  # all different
    shapes = torch.argsort(torch.rand(batch, n, generator=generator), dim=1)
    labels = torch.randint(L, (batch, n), generator=generator)
    a = torch.randint(n, (batch,), generator=generator)
    b = (a + torch.randint(1, n, (batch,), generator=generator)) % n  # another item
    rows = torch.arange(batch)
    items = torch.cat([F.one_hot(colours, n), F.one_hot(shapes, n), F.one_hot(labels, L)], -1)
    queries = torch.cat([F.one_hot(colours[rows, a], n), F.one_hot(shapes[rows, b], n)], -1)
    targets = torch.stack([labels[rows, a], labels[rows, b]], 1)
    return (queries[:, None].float().to(device), items.float().to(device), targets.to(device),
            torch.stack([a, b], 1).to(device))


class FetchModel(nn.Module):
    """Embeddings, one multi-head attention layer (query -> items), a linear readout per slot.

    forward(queries (B, 1, query_size), items (B, n, item_size), head_mask=None)
    -> logits (B, 2, n_labels); ``self.attention.attention_weights`` (B, h, 1, n) when asked.
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
        self.readout = nn.Linear(num_hiddens, 2 * task.n_labels)

    def forward(self, queries, items, head_mask=None, need_weights=False):
        q, x = self.embed_query(queries), self.embed_item(items)
        out = self.attention(q, x, x, need_weights=need_weights, head_mask=head_mask)  # (B, 1, d)
        return self.readout(out[:, 0]).view(-1, 2, self.task.n_labels)


def slot_accuracy(model: FetchModel, data, head_mask=None) -> float:
    """Share of slots (two per example) whose label is right."""
    queries, items, targets, _ = data
    with torch.no_grad():
        return (model(queries, items, head_mask).argmax(-1) == targets).float().mean().item()


@contract(steps=positive_int, batch=positive_int)
def train_fetch(model: FetchModel, *, steps: int = 1500, batch: int = 256, lr: float = 3e-3,
                generator: torch.Generator | None = None, device=None, progress: bool = True,
                on_step: Callable[[], None] | None = None):
    """Adam on fresh batches, cross-entropy on both slots, learning rate decaying linearly to 0.
    Returns the mean loss of every 100 steps. The progress bar (tqdm) is display only;
    ``on_step``, if given, is called after every step (``train_fetch_all`` counts with it)."""
    from tqdm.auto import tqdm  # book tooling: imported only when training runs

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    losses, history = [], []
    model.train()
    # The operations of a model this small are too short to split between CPU threads: a second
    # thread costs more in synchronisation than it saves (measured on 2 cores beside another
    # job: 12.6 s against 6.9 s for 1500 steps, and up to 82 s). Only the rounding changes.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for step in tqdm(range(1, steps + 1), disable=not progress, desc="training",
                         mininterval=0.5):
            queries, items, targets, _ = make_fetch_batch(batch, model.task, generator, device)
            loss = F.cross_entropy(model(queries, items).flatten(0, 1), targets.flatten())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.detach())
            if on_step is not None:
                on_step()
            if step % 100 == 0:
                history.append(torch.stack(losses).mean().item())
                losses = []
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return history


@contract(steps=positive_int)
def train_fetch_all(models: Sequence[FetchModel], *, seed: int = 0, steps: int = 1500,
                    workers: int | None = None, device=None, progress: bool = True,
                    **kwargs) -> list[list[float]]:
    """Train independent models side by side (``side_by_side``), each as ``train_fetch(model,
    generator=torch.Generator().manual_seed(seed), ...)`` trains it alone, bit for bit, and
    return their histories in order. One progress bar counts the steps of all of them."""
    models = list(models)
    if not models or not all(isinstance(m, FetchModel) for m in models):
        raise ValueError(f"models must be a non-empty sequence of FetchModel, got {models!r:.80}")

    def training(model):
        def train(tick):
            return train_fetch(model, steps=steps, generator=torch.Generator().manual_seed(seed),
                               device=device, progress=False, on_step=tick, **kwargs)
        return train

    return side_by_side([training(m) for m in models], total=steps * len(models),
                        workers=workers, progress=progress)


def head_importance(model: FetchModel, data) -> torch.Tensor:
    """Michel et al.'s importance of each head: ``|dL / d xi_h|`` for a head mask xi = 1,
    the first-order change of the loss when head h is removed. Returns (h,)."""
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
