import pytest
import torch

from attention_core.triton_attention import use_interpreter

# The "triton" backend runs on CPU tensors only in Triton's interpreter, which Triton fixes when
# triton is first imported: import it so now, before any test can import it for the GPU
# (torch.compile may), so that every backend runs on the tests' tensors. tests/test_triton.py
# compiles the kernel for a GPU, where there is one, in a process of its own.
use_interpreter()

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    """Every device-aware test runs on the CPU, and on CUDA where a GPU is present."""
    return torch.device(request.param)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
