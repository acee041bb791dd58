"""Reproducibility and device choice, the first cell of every chapter."""
from __future__ import annotations

import random

import torch


def set_seed(seed: int = 0) -> None:
    """Seed Python's and torch's generators (CPU and every GPU)."""
    random.seed(seed)
    torch.manual_seed(seed)


def get_device() -> torch.device:
    """CUDA when a GPU is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
