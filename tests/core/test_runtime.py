"""attention_core.runtime (seed and device), which the chapters' first cell calls.

The module moved from the book tooling into the core; its test waits here for tests/core.
"""
import pytest
import torch

from attention_core.runtime import get_device


def test_device_can_be_chosen_by_environment(monkeypatch):
    monkeypatch.setenv("ATTENTION_CORE_DEVICE", "cpu")
    assert get_device() == torch.device("cpu")
    monkeypatch.setenv("ATTENTION_CORE_DEVICE", "tpu")
    with pytest.raises(ValueError, match="must be 'cpu' or 'cuda'"):
        get_device()
    monkeypatch.setenv("ATTENTION_CORE_DEVICE", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="no CUDA device"):
            get_device()
    monkeypatch.delenv("ATTENTION_CORE_DEVICE")
    assert get_device().type == ("cuda" if torch.cuda.is_available() else "cpu")
