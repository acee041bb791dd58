"""attention_core: the attention mechanisms of the book, one idea per module.

Three layers:

* mechanisms (this package, torch only): contracts (what each entry accepts), masking,
  pooling, scoring, attention (the core ``attend`` and the layers over it), variants (local,
  hard), positional, multihead, transformer, efficient (long lengths), seq2seq, decoding,
  vision (patches as tokens), captioning (words attending over an image), runtime (seed and
  device);
* ``attention_core.worlds``: the toy worlds the chapters train and measure on;
* ``attention_core.book``: figures, sliders, displayed source and timing for the chapters
  (``pip install -e .[book]``).

``import attention_core`` imports torch and nothing else heavy.

Shapes, one legend for every docstring, comment and contract (``attention_core.contracts``):

    B       batch
    n_q     queries (the positions that ask)         n_k   keys = values (the positions read)
    n       positions of a sequence that attends to itself (n_q = n_k = n)
    d       size of queries and keys (d_q, d_k where they may differ); d_v of values
    h       heads; d_head = num_hiddens / h; h_kv key/value heads (grouped-query attention)
    *h      any number of axes, none included: (B, *h, n_q, d) is (B, n_q, d) or (B, h, n_q, d)
    d_a     hidden size of the additive score w_v^T tanh(W_q q + W_k k)

Arguments keep one name and one order: ``num_hiddens, num_heads, dropout``; input sizes are
``query_size``, ``key_size``, ``value_size`` (or ``input_size`` for a layer with one input);
lengths are ``valid_lens``; randomness is passed as ``generator=`` (a torch.Generator).
Masks are boolean, True where a query may attend to a key (torch SDPA's polarity).
"""
from . import triton_attention  # noqa: F401  registers attend's "triton" backend, imports no triton
from .attention import (
    BACKENDS,
    AdditiveAttention,
    DotProductAttention,
    ScoredAttention,
    SelfAttention,
    attend,
)
from .efficient import chunked_attention, linear_attention, online_softmax, sliding_window_attention
from .masking import causal_mask, masked_softmax, valid_lens_to_mask
from .multihead import MultiHeadAttention
from .pooling import KERNELS, NWKernelRegression, nadaraya_watson
from .positional import (
    LearnedPositionalEncoding,
    PositionalEncoding,
    RotaryEmbedding,
    sinusoidal_table,
)
from .runtime import get_device, set_seed

__all__ = [
    "AdditiveAttention", "BACKENDS", "chunked_attention", "linear_attention", "online_softmax",
    "sliding_window_attention", "DotProductAttention", "KERNELS", "LearnedPositionalEncoding",
    "MultiHeadAttention", "NWKernelRegression", "PositionalEncoding", "RotaryEmbedding",
    "ScoredAttention", "SelfAttention", "attend", "causal_mask", "get_device", "masked_softmax",
    "nadaraya_watson", "set_seed", "sinusoidal_table", "valid_lens_to_mask",
]
__version__ = "0.2.0"
