"""Deterministic inputs for the practice cases, all drawn from one seeded CPU generator."""
from __future__ import annotations

import torch

DEVICE = object()
"""Put in a case's keyword arguments where the function takes ``device=``: ``check`` puts its
device there."""


def randn(gen: torch.Generator, *shape, dtype=torch.float32, scale: float = 1.0):
    return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(dtype)


def not_contiguous(x: torch.Tensor) -> torch.Tensor:
    """The same values with the last two axes stored transposed, as a reader's tensor often is
    after a transpose."""
    return x.transpose(-1, -2).contiguous().transpose(-1, -2)


def seeded(module: torch.nn.Module, gen: torch.Generator, scale: float = 0.5,
           dtype=torch.float32) -> torch.nn.Module:
    """module with every parameter redrawn from gen (no global seed touched), in eval mode."""
    module = module.to(dtype)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(randn(gen, *p.shape, dtype=dtype, scale=scale))
    return module.eval()
