"""Reproducibility and device choice, the first cell of every chapter."""
from __future__ import annotations

import os
import random

import torch

from .contracts import contract, non_negative_int

__all__ = ["set_seed", "get_device"]

DEVICE_VARIABLE = "ATTENTION_CORE_DEVICE"


@contract(seed=non_negative_int)
def set_seed(seed: int = 0) -> None:
    """Seed Python's and torch's generators (CPU and every GPU)."""
    random.seed(seed)
    torch.manual_seed(seed)


def get_device() -> torch.device:
    """The device the chapters run on: $ATTENTION_CORE_DEVICE ("cpu" or "cuda") if set,
    else CUDA when a GPU is present, else the CPU."""
    asked = os.environ.get(DEVICE_VARIABLE, "").strip().lower()
    if asked:
        if asked not in ("cpu", "cuda"):
            raise ValueError(f"{DEVICE_VARIABLE} must be 'cpu' or 'cuda', got {asked!r}")
        if asked == "cuda" and not torch.cuda.is_available():
            raise RuntimeError(f"{DEVICE_VARIABLE}=cuda, but torch sees no CUDA device")
        return torch.device(asked)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
