"""Twins: a sequence task that one trained self-attention layer solves (chapter 5).

Every sequence holds n/2 symbols, each at two random positions, and a random value at every
position. The target at position i is the mean of the values at the two positions that hold
its symbol, its own and its twin's. A position must find its twin wherever it is: a match of
contents, which is what the scores of self-attention can learn.
"""
from __future__ import annotations

import torch
from torch import nn

from ..attention import SelfAttention
from ..contracts import contract, positive, positive_int, require
from .training import fit


@contract(batch=positive_int, n=positive_int,
          where=[require(lambda n: n % 2 == 0,
                         lambda n: f"n must be even (each symbol appears twice), got n={n}")])
def make_twins_batch(batch: int, n: int = 8, generator: torch.Generator | None = None, device=None):
    """(X, target, same): X (batch, n, n/2 + 1) is a one-hot symbol and a value per position,
    target (batch, n) the mean value of each position's pair, same (batch, n, n) True where
    two positions hold the same symbol. Drawn on the CPU, so every device gets the same data."""
    symbols = torch.stack([torch.randperm(n, generator=generator) // 2
                           for _ in range(batch)])                       # (batch, n)
    values = torch.randn(batch, n, generator=generator)                  # (batch, n)
    X = torch.cat([nn.functional.one_hot(symbols, n // 2).float(),
                   values[..., None]], dim=-1)                           # (batch, n, n/2 + 1)
    same = symbols[:, :, None] == symbols[:, None, :]                    # (batch, n, n)
    target = same.float() @ values[..., None] / 2                        # (batch, n, 1)
    return X.to(device), target.squeeze(-1).to(device), same.to(device)


class TwinsModel(nn.Module):
    """One self-attention layer and a linear read-out: X (batch, n, n/2 + 1) -> (batch, n)."""

    def __init__(self, n: int = 8, num_hiddens: int = 8):
        super().__init__()
        self.attention = SelfAttention(num_hiddens, input_size=n // 2 + 1)
        self.readout = nn.Linear(num_hiddens, 1)

    def forward(self, X):
        Y = self.attention(X)                # (batch, n, num_hiddens): each position's read
        return self.readout(Y).squeeze(-1)   # (batch, n): one number per position


@contract(steps=positive_int, batch=positive_int, lr=positive)
def fit_twins(model: TwinsModel, *, steps: int = 300, batch: int = 64, lr: float = 0.02,
              n: int = 8, generator: torch.Generator | None = None):
    """Adam on the mean squared error, a fresh batch every step (``fit``); returns the last
    batch's loss."""
    device = next(model.parameters()).device
    last = []  # the losses, kept on the device

    def loss(model, data):
        X, target, _ = data
        return ((model(X) - target) ** 2).mean()

    fit(model, lambda: (make_twins_batch(batch, n, generator=generator, device=device)
                        for _ in range(steps)),
        loss, steps_per_epoch=steps, lr=lr, progress=False,
        on_step=lambda step, value: last.append(value))
    return last[-1].item()


def twin_weight(model: TwinsModel, X, same) -> float:
    """The share of each query's attention weight that falls on its own symbol's two positions."""
    with torch.no_grad():
        model(X)
    return (model.attention.attention_weights * same).sum(-1).mean().item()
