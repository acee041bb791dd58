"""Chapter 6's length test: train on sequences of one length, test on longer ones.

The task is relative by construction: at every position the answer is the token ``offset``
places back (the first ``offset`` positions have no answer). Tokens are uniform at random, so
content cannot help: a model must find the key at exactly that offset. A small causal
Transformer learns it with one of five ways of giving it positions, and is then tested on
sequences two and four times as long as any it saw:

* ``none``: no positional information (the causal mask alone, "NoPE");
* ``sinusoidal``: the table of Vaswani et al. added to the tokens;
* ``learned``: a learned vector per position added to the tokens; rows beyond the training
  length are never trained and keep their initial values;
* ``rope``: queries and keys rotated (chapter 6's ``RotaryEmbedding``), at a given base;
* ``alibi``: a bias of -m * abs(i - j) on every score, one slope m per head (Press et al., 2022).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from ..contracts import contract, one_of, positive, positive_int, require
from ..decoding import TOKENS
from ..multihead import MultiHeadAttention
from ..positional import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    RotaryEmbedding,
    alibi_bias,
)
from ..transformer import AddNorm, PositionWiseFFN, TokenEmbedding
from .side_by_side import side_by_side
from .training import fit, linear_decay

POSITIONS = ("none", "sinusoidal", "learned", "rope", "alibi")
IGNORE = -100  # a target that the loss and the accuracy skip: the first ``offset`` positions


@contract(batch=positive_int, length=positive_int, vocab_size=positive_int,
          offset=positive_int,
          where=[require(lambda length, offset: offset < length,
                         "offset ({offset}) must be below length ({length}): no position "
                         "would have an answer")])
def make_lookback_batch(batch: int, length: int, vocab_size: int = 16, offset: int = 3,
                        generator: torch.Generator | None = None, device=None):
    """(tokens (B, n), targets (B, n)): uniform random tokens, and at position i >= offset the
    token at i - offset; ``IGNORE`` before that."""
    tokens = torch.randint(vocab_size, (batch, length), generator=generator)
    targets = torch.full_like(tokens, IGNORE)
    targets[:, offset:] = tokens[:, :-offset]
    return tokens.to(device), targets.to(device)


class LookbackModel(nn.Module):
    """A causal Transformer of ``num_blks`` post-norm blocks (chapter 8's ``AddNorm`` and
    ``PositionWiseFFN`` around chapter 7's ``MultiHeadAttention``) with a linear readout, and
    positions given one of the ways of ``POSITIONS``.

    forward(tokens (B, n), window=None) -> logits (B, n, vocab_size); n <= max_len for the
    added kinds ("sinusoidal", "learned"), any n otherwise. window: if given, each query sees
    only the ``window`` most recent keys, itself included (keys at offsets 0 .. window - 1).
    rope_base: RoPE's base (``positions="rope"``).
    """

    @contract(positions=one_of(*POSITIONS), vocab_size=positive_int, num_hiddens=positive_int,
              num_heads=positive_int, num_blks=positive_int, max_len=positive_int,
              rope_base=positive)
    def __init__(self, positions: str, vocab_size: int = 16, num_hiddens: int = 64,
                 num_heads: int = 4, num_blks: int = 2, max_len: int = 128,
                 rope_base: float = 10000.0):
        super().__init__()
        self.positions, self.num_heads, self.rope_base = positions, num_heads, rope_base
        self.embedding = TokenEmbedding(vocab_size, num_hiddens)
        added = {"sinusoidal": PositionalEncoding, "learned": LearnedPositionalEncoding}
        self.add_positions = (added[positions](num_hiddens, max_len=max_len)
                              if positions in added else None)
        self.rotary = (RotaryEmbedding(num_hiddens // num_heads, rope_base)
                       if positions == "rope" else None)
        self.blks = nn.ModuleList(nn.ModuleDict({
            "attention": MultiHeadAttention(num_hiddens, num_heads, query_size=num_hiddens,
                                            key_size=num_hiddens, value_size=num_hiddens),
            "addnorm1": AddNorm(num_hiddens),
            "ffn": PositionWiseFFN(2 * num_hiddens, num_hiddens, input_size=num_hiddens),
            "addnorm2": AddNorm(num_hiddens)}) for _ in range(num_blks))
        self.readout = nn.Linear(num_hiddens, vocab_size)

    def self_attention(self, attention: MultiHeadAttention, X, bias):
        """Causal self-attention, with RoPE's rotation of queries and keys or ALiBi's bias."""
        q = attention.project_queries(X)                  # (B, h, n, d_head)
        k, v = attention.project_kv(X, X)
        if self.rotary is not None:
            q, k = self.rotary(q), self.rotary(k)
        return attention.attend_heads(q, k, v, bias, is_causal=True)  # (B, n, d)

    @contract(tokens=TOKENS, window=positive_int)
    def forward(self, tokens, window: int | None = None):
        X = self.embedding(tokens)                        # (B, n, d)
        if self.add_positions is not None:
            X = self.add_positions(X)
        n = X.shape[1]
        bias = (alibi_bias(self.num_heads, n, dtype=X.dtype, device=X.device)
                if self.positions == "alibi" else None)   # (h, n, n) or None
        if window is not None:  # keys i - window < j (the causal mask hides j > i)
            i = torch.arange(n, device=X.device)
            near = i[:, None] - i[None, :] < window       # (n, n)
            bias = near if bias is None else bias.masked_fill(~near, float("-inf"))
        for blk in self.blks:
            attend = functools.partial(self.self_attention, blk["attention"], bias=bias)
            X = blk["addnorm1"].residual(X, attend)
            X = blk["addnorm2"].residual(X, blk["ffn"])
        return self.readout(X)                            # (B, n, vocab_size)


def lookback_loss(model: LookbackModel, batch) -> torch.Tensor:
    """Cross-entropy over every position that has an answer."""
    tokens, targets = batch
    return F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(), ignore_index=IGNORE)


@contract(steps=positive_int, batch=positive_int, length=positive_int, lr=positive)
def train_lookback(model: LookbackModel, *, steps: int = 400, batch: int = 64, length: int = 32,
                   offset: int = 3, lr: float = 3e-3, generator: torch.Generator | None = None,
                   device=None, progress: bool = True,
                   on_step: Callable[[], None] | None = None) -> list[float]:
    """Adam on fresh batches of sequences of ``length`` (``fit``), learning rate falling
    linearly to 0, on one CPU thread; returns the mean loss of every 50 steps and leaves the
    model in evaluation mode."""
    vocab_size = model.readout.out_features
    history, losses = [], []

    def record(step, loss):
        losses.append(loss)
        if on_step is not None:
            on_step()
        if step % 50 == 0:
            history.append(torch.stack(losses).mean().item())
            losses.clear()

    fit(model, lambda: (make_lookback_batch(batch, length, vocab_size, offset, generator, device)
                        for _ in range(steps)),
        lookback_loss, steps_per_epoch=steps, lr=lr, schedule=linear_decay, threads=1,
        progress=progress, on_step=record)
    model.eval()
    return history


@contract(steps=positive_int)
def train_lookback_all(models: Sequence[LookbackModel], *, seed: int = 0, steps: int = 400,
                       workers: int | None = None, device=None, progress: bool = True,
                       **kwargs) -> list[list[float]]:
    """Train independent models side by side (``side_by_side``), each as ``train_lookback(model,
    generator=torch.Generator().manual_seed(seed), ...)`` trains it alone; their histories."""
    models = list(models)

    def training(model):
        def train(tick):
            return train_lookback(model, steps=steps, device=device, progress=False,
                                  generator=torch.Generator().manual_seed(seed), on_step=tick,
                                  **kwargs)
        return train

    return side_by_side([training(m) for m in models], total=steps * len(models),
                        workers=workers, progress=progress)


@contract(length=positive_int, count=positive_int)
def accuracy_by_position(model: LookbackModel, length: int, count: int = 256,
                         offset: int = 3, generator: torch.Generator | None = None,
                         device=None, window: int | None = None) -> torch.Tensor:
    """(length,) the share of ``count`` fresh sequences whose answer at each position is right
    (NaN before ``offset``, where there is none); window: as the model's forward takes it."""
    tokens, targets = make_lookback_batch(count, length, model.readout.out_features, offset,
                                          generator, device)
    with torch.no_grad():
        right = (model(tokens, window=window).argmax(-1) == targets).float().mean(0)
    right[:offset] = float("nan")
    return right.cpu()


@contract(length=positive_int, count=positive_int, first_query=positive_int,
          where=[require(lambda length, first_query: first_query < length,
                         "first_query ({first_query}) must be below length ({length})")])
def weight_by_offset(model: LookbackModel, length: int, first_query: int, count: int = 64,
                     generator: torch.Generator | None = None, device=None) -> torch.Tensor:
    """Where each head looks, by offset: (num_blks, num_heads, first_query + 1), entry
    (b, h, delta) the weight that head h of block b puts on the key delta places back, averaged
    over ``count`` fresh sequences of ``length`` and over the queries at positions first_query
    .. length - 1 (each of which has keys at every offset 0 .. first_query)."""
    tokens, _ = make_lookback_batch(count, length, model.readout.out_features, 3, generator,
                                    device)
    layers = [blk["attention"] for blk in model.blks]
    kept = [layer.need_weights for layer in layers]
    for layer in layers:
        layer.need_weights = True
    try:
        with torch.no_grad():
            model(tokens)
        weights = torch.stack([layer.attention_weights.mean(0) for layer in layers])  # (L, h, n, n)
    finally:
        for layer, need in zip(layers, kept, strict=True):
            layer.need_weights = need
    queries = torch.arange(first_query, length, device=weights.device)        # (q,)
    offsets = torch.arange(first_query + 1, device=weights.device)            # (first_query + 1,)
    keys = queries[:, None] - offsets[None, :]                                 # (q, offsets)
    return weights[:, :, queries[:, None], keys].mean(2).cpu()                 # (L, h, offsets)
