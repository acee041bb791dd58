"""attention_core: the attention mechanisms of the book, one idea per module.

Every chapter imports from here; the tests check it against torch and d2l.
"""
from .attention import AdditiveAttention, DotProductAttention
from .data import make_regression_data, regression_target
from .masking import masked_softmax, valid_lens_to_mask
from .multihead import MultiHeadAttention
from .pooling import KERNELS, NWKernelRegression, nadaraya_watson
from .positional import PositionalEncoding, sinusoidal_table
from .utils import get_device, set_seed

__all__ = [
    "AdditiveAttention", "DotProductAttention", "KERNELS", "MultiHeadAttention",
    "NWKernelRegression", "PositionalEncoding", "get_device", "make_regression_data",
    "masked_softmax", "nadaraya_watson", "regression_target", "set_seed", "sinusoidal_table",
    "valid_lens_to_mask",
]
__version__ = "0.1.0"
