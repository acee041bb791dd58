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

from ._checks import check_positive_int, check_probability, check_rank, check_tensor
from .decoding import DecoderState
from .masking import padding_mask
from .multihead import MultiHeadAttention
from .positional import PositionalEncoding
from .seq2seq import EncoderDecoder


class PositionWiseFFN(nn.Module):
    """The same two-layer network at every position: FFN(X) = dense2(relu(dense1(X))),
    d -> ffn_num_hiddens -> d (input_size -> ... -> ffn_num_outputs in general)."""

    def __init__(self, ffn_num_hiddens: int, ffn_num_outputs: int, *, input_size: int | None = None):
        super().__init__()
        check_positive_int(ffn_num_hiddens=ffn_num_hiddens, ffn_num_outputs=ffn_num_outputs)
        self.dense1 = nn.Linear(input_size or ffn_num_outputs, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):                                # (B, n, d)
        return self.dense2(self.relu(self.dense1(X)))    # (B, n, ffn) inside, (B, n, d) out


class AddNorm(nn.Module):
    """A residual connection around a sublayer, and layer normalization.

    post-norm (Vaswani et al.): forward(X, Y) = LayerNorm(X + dropout(Y)), Y = Sublayer(X).
    pre-norm: X + dropout(Sublayer(LayerNorm(X))); the blocks write it with this module's
    ``ln`` and ``dropout``, and ``residual(X, sublayer)`` applies either placement.
    LayerNorm normalizes the d features of each position on their own, not each feature
    over the batch as BatchNorm does: a position's output depends neither on the other
    sentences of the batch nor on how much padding they carry.
    """

    def __init__(self, norm_shape, dropout: float = 0.0, *, norm_first: bool = False):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)
        self.norm_first = norm_first

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)

    def residual(self, X, sublayer):
        """The residual step around ``sublayer`` in this module's norm placement."""
        if self.norm_first:
            return X + self.dropout(sublayer(self.ln(X)))
        return self(X, sublayer(X))


class TransformerEncoderBlock(nn.Module):
    """Self-attention, then the position-wise FFN, each inside a residual connection and
    LayerNorm. ``forward(X (B, n, num_hiddens), valid_lens None | (B,), *, is_causal=False)
    -> (B, n, num_hiddens)``.
    """

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, use_bias: bool = False, *, norm_first: bool = False,
                 num_kv_heads: int | None = None):
        super().__init__()  # each sublayer checks its own sizes and dropout at its door
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias, num_kv_heads,
                                            query_size=num_hiddens, key_size=num_hiddens,
                                            value_size=num_hiddens)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.norm_first = norm_first

    def forward(self, X, valid_lens=None, *, is_causal: bool = False):
        """is_causal: position i attends to positions <= i only (a decoder-only, GPT-style
        block: causal self-attention and the FFN, no cross-attention)."""
        if not self.norm_first:  # post-norm, as in Vaswani et al.: LN(X + Sublayer(X))
            Y = self.addnorm1(X, self.attention(X, X, X, valid_lens, is_causal=is_causal))
            return self.addnorm2(Y, self.ffn(Y))                      # (B, n, d)
        # pre-norm: X + Sublayer(LN(X)); the stack adds a final LayerNorm
        H = self.addnorm1.ln(X)
        Y = X + self.addnorm1.dropout(self.attention(H, H, H, valid_lens, is_causal=is_causal))
        return Y + self.addnorm2.dropout(self.ffn(self.addnorm2.ln(Y)))


def _check_tokens(tokens):
    check_tensor("tokens", tokens, floating=False)
    check_rank("tokens", tokens, 2, "(batch, n) token indices")


def _embedding(vocab_size, num_hiddens):
    """Embeddings drawn with std 1/sqrt(d), so that after the sqrt(d) scaling they have unit
    size, like the positions added to them (as in Vaswani et al.). nn.Embedding's default
    std 1 would make them sqrt(d) times larger and drown the positions."""
    embedding = nn.Embedding(vocab_size, num_hiddens)
    nn.init.normal_(embedding.weight, std=num_hiddens**-0.5)
    return embedding


def _embed(module, tokens, offset=0):
    """Token embeddings scaled by sqrt(d) (as in d2l and Vaswani et al.), plus positions."""
    return module.pos_encoding(module.embedding(tokens) * math.sqrt(module.num_hiddens), offset)


class TransformerEncoder(nn.Module):
    """Token embeddings times sqrt(d) plus sinusoidal positions, then ``num_blks`` encoder
    blocks; valid_lens hides each sentence's padding from the self-attention of every block.
    A pre-norm stack ends with a LayerNorm (a pre-norm block leaves its sum unnormalized);
    a post-norm block already ends with one.

    forward(src (B, n), valid_lens (B,) | None) -> (B, n, num_hiddens).
    """

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False, *,
                 norm_first: bool = False, num_kv_heads: int | None = None, max_len: int = 1000):
        super().__init__()
        check_positive_int(vocab_size=vocab_size, num_blks=num_blks)
        self.num_hiddens = num_hiddens
        self.embedding = _embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential(*[
            TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias,
                                    norm_first=norm_first, num_kv_heads=num_kv_heads)
            for _ in range(num_blks)])
        self.final_ln = nn.LayerNorm(num_hiddens) if norm_first else nn.Identity()

    def forward(self, src, valid_lens=None):
        _check_tokens(src)
        X = _embed(self, src)                   # (B, n, d): embedding * sqrt(d) + positions
        for blk in self.blks:
            X = blk(X, valid_lens)              # (B, n, d), padding masked in every block
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

    def __init__(self, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 dropout: float = 0.0, i: int = 0, use_bias: bool = False, *,
                 norm_first: bool = False, num_kv_heads: int | None = None):
        super().__init__()  # each sublayer checks its own sizes and dropout at its door
        self.i = i
        sizes = dict(query_size=num_hiddens, key_size=num_hiddens, value_size=num_hiddens)
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias,
                                             num_kv_heads, **sizes)
        self.addnorm1 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias,
                                             num_kv_heads, **sizes)
        self.addnorm2 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.ffn = PositionWiseFFN(ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout, norm_first=norm_first)
        self.norm_first = norm_first

    def forward(self, X, cross_kv, src_valid_lens=None, cache=None):
        if not self.norm_first:  # post-norm: LN(X + Sublayer(X)), three times
            A, cache = self.self_attention(X, cache)              # causal, (B, n, d)
            Y = self.addnorm1(X, A)
            Z = self.addnorm2(Y, self.cross_attention(Y, cross_kv, src_valid_lens))
            return self.addnorm3(Z, self.ffn(Z)), cache
        # pre-norm: X + Sublayer(LN(X)), three times
        A, cache = self.self_attention(self.addnorm1.ln(X), cache)
        Y = X + self.addnorm1.dropout(A)
        C = self.cross_attention(self.addnorm2.ln(Y), cross_kv, src_valid_lens)
        Z = Y + self.addnorm2.dropout(C)
        return Z + self.addnorm3.dropout(self.ffn(self.addnorm3.ln(Z))), cache

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
        mask = padding_mask(src_valid_lens, q, keys)        # keys past each source's length: off
        return self.attention2.attend_heads(q, keys, values, mask)  # (B, n, d)


def _check_step(tokens, state, num_blks):
    """The decoder's door: a TransformerState whose cache agrees with its offset, and tokens."""
    if not isinstance(state, TransformerState):
        raise TypeError(f"state must be a TransformerState (from init_state), got "
                        f"{type(state).__name__}")
    cached = [kv[0].shape[2] for kv in state.self_kv if kv is not None]
    if cached != ([state.offset] * num_blks if state.offset else []):
        raise ValueError(f"the cache holds {cached} positions per block but the state says "
                         f"{state.offset} were decoded: a state was reused or edited")
    _check_tokens(tokens)


def _check_enc_outputs(enc_outputs):
    check_tensor("enc_outputs", enc_outputs)
    check_rank("enc_outputs", enc_outputs, 3, "(batch, n_src, num_hiddens)")


class TransformerDecoder(nn.Module):
    """Embedding, positions, ``num_blks`` decoder blocks and a linear map to the vocabulary.

    init_state(enc_outputs (B, n_src, d), src_valid_lens (B,)) -> TransformerState;
    forward(tokens (B, n), state) -> (logits (B, n, vocab_size), state with n more positions).
    Teacher forcing passes the whole shifted target at once; generation passes one token per
    call, and the cache makes each call cost one position, not the whole prefix.
    """

    def __init__(self, vocab_size: int, num_hiddens: int, ffn_num_hiddens: int, num_heads: int,
                 num_blks: int, dropout: float = 0.0, use_bias: bool = False, *,
                 norm_first: bool = False, num_kv_heads: int | None = None, max_len: int = 1000):
        super().__init__()
        check_positive_int(vocab_size=vocab_size, num_blks=num_blks)
        self.num_hiddens, self.num_blks = num_hiddens, num_blks
        self.embedding = _embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout, max_len)
        self.blks = nn.Sequential(*[
            TransformerDecoderBlock(num_hiddens, ffn_num_hiddens, num_heads, dropout, i, use_bias,
                                    norm_first=norm_first, num_kv_heads=num_kv_heads)
            for i in range(num_blks)])
        self.final_ln = nn.LayerNorm(num_hiddens) if norm_first else nn.Identity()
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.attention_weights = None  # per-block weights: see cross_attention_weights

    def init_state(self, enc_outputs, src_valid_lens=None) -> TransformerState:
        _check_enc_outputs(enc_outputs)
        # the encoder output is the same at every step: project it once per sentence
        cross_kv = [blk.attention2.project_kv(enc_outputs, enc_outputs) for blk in self.blks]
        return TransformerState(valid_lens=src_valid_lens, cross_kv=cross_kv,
                                self_kv=[None] * self.num_blks)

    def forward(self, tokens, state: TransformerState):
        _check_step(tokens, state, self.num_blks)
        X = _embed(self, tokens, state.offset)      # (B, n, d), positions offset, offset + 1, ...
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


def keep_attention_weights(model: nn.Module, keep: bool = True) -> None:
    """Make every MultiHeadAttention in ``model`` keep its weights (the step-by-step path)."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.need_weights = keep


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
