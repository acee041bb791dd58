"""The Transformer (Vaswani et al., 2017): encoder and decoder blocks, stacks, and a decoder
that generates with a KV cache.

Names follow d2l's, so its state dicts load: ``attention``, ``addnorm1.ln``, ``ffn.dense1``,
``ffn.dense2``, ``addnorm2`` (and ``attention1``, ``attention2``, ``addnorm3`` in the decoder).

Every decoder block reads the output of the *last* encoder block (cross-attention), not only
the first decoder block. ``norm_first=False`` is the original post-norm block,
LayerNorm(X + Sublayer(X)); ``norm_first=True`` is pre-norm, X + Sublayer(LayerNorm(X)), with
a final LayerNorm after the stack.

Decoding: ``TransformerDecoder.init_state`` projects the encoder output to each block's
cross-attention keys and values once per sentence; each ``forward(tokens, state)`` appends the
new tokens' self-attention keys and values (B, h_kv, t, d_head) to the state's cache, and
encodes its positions from ``state.offset`` on. ``state.reorder`` (beam search) reorders the
cache with everything else.
"""
from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn

from .contracts import contract, instance_of, lengths, positive_int, probability, require
from .decoding import TOKENS, DecoderState
from .masking import padding_mask
from .multihead import MultiHeadAttention
from .positional import PositionalEncoding
from .seq2seq import EncoderDecoder

__all__ = ["PositionWiseFFN", "AddNorm", "TokenEmbedding", "TransformerEncoderBlock",
           "TransformerEncoder", "TransformerState", "TransformerDecoderBlock",
           "TransformerDecoder", "keep_attention_weights", "make_transformer"]



class PositionWiseFFN(nn.Module):
    """The same two-layer network at every position: FFN(X) = dense2(relu(dense1(X))) for
    X (*lead, input_size), input_size -> ffn_num_hiddens -> ffn_num_outputs (d -> ... -> d in
    a block)."""

    @contract(ffn_num_hiddens=positive_int, ffn_num_outputs=positive_int, input_size=positive_int)
    def __init__(self, ffn_num_hiddens: int, ffn_num_outputs: int, *,
                 input_size: int | None = None):
        super().__init__()
        self.dense1 = nn.Linear(input_size or ffn_num_outputs, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    @property
    def input_size(self) -> int:
        return self.dense1.in_features

    @contract(X="*lead self.input_size")
    def forward(self, X):                                # (B, n, d)
        return self.dense2(self.relu(self.dense1(X)))    # (B, n, ffn) inside, (B, n, d) out


class AddNorm(nn.Module):
    """A residual connection around a sublayer, and layer normalization.

    post-norm (Vaswani et al.): forward(X (*lead, d), Y (*lead, d)) = LayerNorm(X + dropout(Y)),
    Y = Sublayer(X).
    pre-norm: X + dropout(Sublayer(LayerNorm(X))). ``residual(X, sublayer)`` applies the
    placement the module was built with; the blocks call it around each sublayer.
    LayerNorm normalizes the d features of each position on their own, not each feature
    over the batch as BatchNorm does: a position's output depends neither on the other
    sentences of the batch nor on how much padding they carry.
    """

    @contract(dropout=probability)
    def __init__(self, norm_shape, dropout: float = 0.0, *, norm_first: bool = False):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)
        self.norm_first = norm_first

    @contract(X="*lead d", Y="*lead d")
    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)

    def residual(self, X, sublayer):
        """The residual step around ``sublayer`` in this module's norm placement. A sublayer
        that also returns something else (the decoder's grown cache) returns (output, extra),
        and so does this step: (the step's output, extra)."""
        out = sublayer(self.ln(X) if self.norm_first else X)
        out, *extra = out if isinstance(out, tuple) else (out,)
        Y = X + self.dropout(out) if self.norm_first else self(X, out)  # pre- or post-norm
        return (Y, *extra) if extra else Y


class TransformerEncoderBlock(nn.Module):
    """Self-attention, then the position-wise FFN, each inside a residual connection and
    LayerNorm. ``forward(X (B, n, d), valid_lens None | (B,) | (B, n), *, is_causal=False,
    head_mask=None) -> (B, n, d)``, d = num_hiddens; head_mask (h,) or (B, h) scales each
    head's output before W_o, as in MultiHeadAttention (0 removes the head).
    """

    @contract(num_hiddens=positive_int, ffn_num_hiddens=positive_int, num_heads=positive_int,
              dropout=probability)
    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, use_bias: bool = False, *, norm_first: bool = False,
                 num_kv_heads: int | None = None):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias, num_kv_heads,
                                            query_size=num_hiddens, key_size=num_hiddens,
                                            value_size=num_hiddens)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_first=norm_first)

    @contract(X="B n d", valid_lens=lengths(per="B n", upto="n"))
    def forward(self, X, valid_lens=None, *, is_causal: bool = False, head_mask=None):
        """is_causal: position i attends to positions <= i only (a decoder-only, GPT-style
        block: causal self-attention and the FFN, no cross-attention)."""
        Y = self.addnorm1.residual(X, lambda H: self.attention(
            H, H, H, valid_lens, is_causal=is_causal, head_mask=head_mask))        # (B, n, d)
        return self.addnorm2.residual(Y, self.ffn)                                 # (B, n, d)


class TokenEmbedding(nn.Embedding):
    """Token embeddings times sqrt(d), as in d2l and Vaswani et al.: tokens (B, n) -> (B, n, d).

    They are drawn with std 1/sqrt(d), so that after the scaling they have unit size, like the
    positions added to them (as in Vaswani et al.); nn.Embedding's default std 1 would make
    them sqrt(d) times larger and drown the positions.
    """

    @contract(vocab_size=positive_int, num_hiddens=positive_int)
    def __init__(self, vocab_size: int, num_hiddens: int):
        super().__init__(vocab_size, num_hiddens)
        nn.init.normal_(self.weight, std=num_hiddens**-0.5)

    @contract(tokens=TOKENS)
    def forward(self, tokens):
        return super().forward(tokens) * math.sqrt(self.embedding_dim)


class TransformerEncoder(nn.Module):
    """Token embeddings times sqrt(d) plus sinusoidal positions, then ``num_blks`` encoder
    blocks; valid_lens hides each sentence's padding from the self-attention of every block.
    A pre-norm stack ends with a LayerNorm (a pre-norm block leaves its sum unnormalized);
    a post-norm block already ends with one.

    forward(src (B, n), valid_lens (B,) | None) -> (B, n, num_hiddens).
    """

    @contract(num_blks=positive_int)
    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False, *,
                 norm_first: bool = False, num_kv_heads: int | None = None, max_len: int = 1000):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = TokenEmbedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential(*[
            TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias,
                                    norm_first=norm_first, num_kv_heads=num_kv_heads)
            for _ in range(num_blks)])
        self.final_ln = nn.LayerNorm(num_hiddens) if norm_first else nn.Identity()

    @contract(src=TOKENS, valid_lens=lengths(per="B", upto="n"))
    def forward(self, src, valid_lens=None):
        X = self.pos_encoding(self.embedding(src))  # (B, n, d): embedding * sqrt(d) + positions
        for blk in self.blks:
            X = blk(X, valid_lens)                  # (B, n, d), padding masked in every block
        return self.final_ln(X)

    @property
    def attention_weights(self):
        """Per block: (B, h, n, n) self-attention weights of the last call, when kept."""
        return [blk.attention.attention_weights for blk in self.blks]


@dataclasses.dataclass
class TransformerState(DecoderState):
    """What the decoder carries from step to step; every tensor has the batch on axis 0."""

    valid_lens: torch.Tensor | None  # (B,) source lengths
    cross_kv: list                   # per block: (keys, values) (B, h_kv, n_src, d_head)
    self_kv: list                    # per block: None, or (keys, values) (B, h_kv, t, d_head)
    offset: int = 0                  # positions decoded so far: t


class TransformerDecoderBlock(nn.Module):
    """Causal self-attention, cross-attention to the encoder output, then the FFN, each
    inside a residual connection and LayerNorm.

    forward(X (B, n, d), cross_kv, src_valid_lens, cache None | (keys, values))
    -> (B, n, d), the cache with this call's keys and values appended. Query i of X sits at
    position t + i, t the cache's length; it sees cached keys and keys up to itself.
    """

    @contract(num_hiddens=positive_int, ffn_num_hiddens=positive_int, num_heads=positive_int,
              dropout=probability)
    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, i: int = 0, use_bias: bool = False, *,
                 norm_first: bool = False, num_kv_heads: int | None = None):
        # i: the block's place in the stack, in d2l's signature; nothing here depends on it
        super().__init__()
        sizes = dict(query_size=num_hiddens, key_size=num_hiddens, value_size=num_hiddens)
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias,
                                             num_kv_heads, **sizes)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias,
                                             num_kv_heads, **sizes)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout, norm_first=norm_first)

    @contract(X="B n d", src_valid_lens=lengths(per="B", upto="n_src"))
    def forward(self, X, cross_kv, src_valid_lens=None, cache=None):
        # causal self-attention over the cache and X, which grows the cache by X's positions
        Y, cache = self.addnorm1.residual(X, lambda H: self.self_attention(H, cache))
        # cross-attention to the last encoder block's output
        Z = self.addnorm2.residual(Y, lambda H: self.cross_attention(H, cross_kv, src_valid_lens))
        return self.addnorm3.residual(Z, self.ffn), cache                          # (B, n, d)

    def self_attention(self, X, cache):
        """Causal self-attention over the cache and X; returns (output, grown cache)."""
        att = self.attention1
        q = att.project_queries(X)                          # (B, h, n, d_head)
        k, v = att.project_kv(X, X)                         # (B, h_kv, n, d_head)
        if cache is not None:                               # prepend the t cached positions
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        n, t = X.shape[1], k.shape[2] - X.shape[1]
        if t == 0:  # no cache (training, or the first step): the usual causal mask
            return att.attend_heads(q, k, v, is_causal=n > 1), (k, v)
        # query i sits at position t + i and sees keys 0 .. t + i; one new query sees them all
        mask = None if n == 1 else torch.ones(n, t + n, dtype=torch.bool, device=X.device).tril(t)
        return att.attend_heads(q, k, v, mask), (k, v)

    def cross_attention(self, Y, cross_kv, src_valid_lens):
        """Queries from the decoder, keys and values from the last encoder block's output
        (projected once per sentence by ``init_state``); the source's padding gets no weight."""
        q = self.attention2.project_queries(Y)              # (B, h, n, d_head)
        keys, values = cross_kv                             # (B, h_kv, n_src, d_head)
        mask = padding_mask(src_valid_lens, q, keys.shape[2])  # keys past each source: off
        return self.attention2.attend_heads(q, keys, values, mask)  # (B, n, d)


def _cache_agrees(self, state) -> bool:
    cached = [kv[0].shape[2] for kv in state.self_kv if kv is not None]
    return cached == ([state.offset] * self.num_blks if state.offset else [])


def _cache_disagrees(self, state) -> str:
    cached = [kv[0].shape[2] for kv in state.self_kv if kv is not None]
    return (f"the cache holds {cached} positions per block but the state says {state.offset} "
            f"were decoded: a state was reused or edited")


class TransformerDecoder(nn.Module):
    """Embedding, positions, ``num_blks`` decoder blocks and a linear map to the vocabulary.

    init_state(enc_outputs (B, n_src, d), src_valid_lens (B,)) -> TransformerState;
    forward(tokens (B, n), state) -> (logits (B, n, vocab_size), state with n more positions).
    Teacher forcing passes the whole shifted target at once; generation passes one token per
    call, and the cache makes each call cost one position, not the whole prefix.
    """

    @contract(num_blks=positive_int)
    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False, *,
                 norm_first: bool = False, num_kv_heads: int | None = None, max_len: int = 1000):
        super().__init__()
        self.num_hiddens, self.num_blks = num_hiddens, num_blks
        self.embedding = TokenEmbedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential(*[
            TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i, use_bias,
                                    norm_first=norm_first, num_kv_heads=num_kv_heads)
            for i in range(num_blks)])
        self.final_ln = nn.LayerNorm(num_hiddens) if norm_first else nn.Identity()
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.attention_weights = None  # per-block weights: see cross_attention_weights

    @contract(enc_outputs="B n_src d", src_valid_lens=lengths(per="B", upto="n_src"))
    def init_state(self, enc_outputs, src_valid_lens=None) -> TransformerState:
        # the encoder output is the same at every step: project it once per sentence
        cross_kv = [blk.attention2.project_kv(enc_outputs, enc_outputs) for blk in self.blks]
        return TransformerState(valid_lens=src_valid_lens, cross_kv=cross_kv,
                                self_kv=[None] * self.num_blks)

    @contract(tokens=TOKENS, state=instance_of(TransformerState, "a TransformerState (from "
                                                                  "init_state)"),
              where=[require(_cache_agrees, _cache_disagrees)])
    def forward(self, tokens, state: TransformerState):
        X = self.pos_encoding(self.embedding(tokens), state.offset)  # from position t = offset
        self_kv = []
        for blk, cross_kv, cache in zip(self.blks, state.cross_kv, state.self_kv):
            X, kv = blk(X, cross_kv, state.valid_lens, cache)
            self_kv.append(kv)
        logits = self.dense(self.final_ln(X))       # (B, n, vocab_size)
        return logits, dataclasses.replace(state, self_kv=self_kv,
                                           offset=state.offset + tokens.shape[1])

    @property
    def cross_attention_weights(self):
        """Per block: (B, h, n, n_src) cross-attention weights of the last call, when kept."""
        return [blk.attention2.attention_weights for blk in self.blks]

    @property
    def self_attention_weights(self):
        return [blk.attention1.attention_weights for blk in self.blks]


@contract(model=instance_of(nn.Module))
def keep_attention_weights(model: nn.Module, keep: bool = True) -> None:
    """Make every MultiHeadAttention in ``model`` keep its weights (the step-by-step path)."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.need_weights = keep


@contract(src_vocab=positive_int, tgt_vocab=positive_int, num_hiddens=positive_int,
          ffn_num_hiddens=positive_int, num_heads=positive_int, num_blks=positive_int)
def make_transformer(src_vocab: int, tgt_vocab: int, num_hiddens: int = 64,
                     ffn_num_hiddens: int = 128, num_heads: int = 4, num_blks: int = 2,
                     dropout: float = 0.0, use_bias: bool = False, *, norm_first: bool = False,
                     num_kv_heads: int | None = None, max_len: int = 1000) -> EncoderDecoder:
    """An encoder-decoder Transformer that the decoding module can translate with."""
    kw = dict(norm_first=norm_first, num_kv_heads=num_kv_heads, max_len=max_len)
    return EncoderDecoder(
        TransformerEncoder(src_vocab, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout,
                           use_bias, **kw),
        TransformerDecoder(tgt_vocab, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout,
                           use_bias, **kw))
