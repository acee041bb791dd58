"""Sequence to sequence with GRUs: an encoder, a plain decoder and a Bahdanau attention decoder.

Shapes: src (B, n_src) token indices with src_valid_lens (B,); decoder tokens (B, n_tgt);
logits (B, n_tgt, vocab); d = num_hiddens.

* The **encoder** reads the source and returns its outputs at every position (B, n_src, d)
  and its hidden state after the last *valid* token, for every layer (layers, B, d).
* The **plain decoder** (Sutskever et al., 2014; Cho et al., 2014) starts from that state and
  sees the source only through one fixed vector, the top layer's final state, fed at every step.
* The **attention decoder** (d2l's version of Bahdanau et al., 2014) also starts from the
  encoder's final state, but at step t it uses its own previous hidden state (top layer) as
  the query of additive attention over the encoder outputs (keys = values), and feeds the
  resulting context, with the embedding of the previous token, to the GRU.

Decoders follow the interface of ``decoding``: ``init_state(enc_outputs, src_valid_lens)``
and ``forward(tokens, state) -> (logits, state)``; the attention decoder also keeps
``attention_weights`` (B, n_tgt, n_src) of its last call.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .attention import AdditiveAttention
from .contracts import contract, instance_of, lengths, one_of, positive_int, probability, tensor
from .decoding import TOKENS, DecoderState

__all__ = ["GRUEncoder", "PlainDecoder", "AttentionDecoder", "EncoderDecoder", "make_model"]

HIDDEN = {"batch_dim": 1}  # a GRU's state is (layers, B, d): batch on axis 1
# what the three GRU modules' constructors accept
GRU_ARGS = dict(vocab_size=positive_int, embed_size=positive_int, num_hiddens=positive_int,
                num_layers=positive_int, dropout=probability)


class GRUEncoder(nn.Module):
    """Embedding, then a GRU over the valid tokens of each source sentence."""

    @contract(**GRU_ARGS)
    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0)

    @contract(src=tensor("B n_src", "int", "token indices"),
              src_valid_lens=lengths(per="B", upto="n_src", at_least=1))
    def forward(self, src, src_valid_lens):
        """src (B, n_src), src_valid_lens (B,) -> outputs (B, n_src, d), zero beyond each valid
        length; state (layers, B, d).

        The one host-device copy in the package's forwards: a packed sequence needs its
        lengths on the CPU (torch's rule, for cuDNN's packed RNN), so on a GPU this copies B
        integers once per batch. (The decoders, which run once per output step, never copy.)
        """
        lens = torch.as_tensor(src_valid_lens).cpu()  # (B,): packing needs them on the CPU
        packed = pack_padded_sequence(self.embedding(src), lens, batch_first=True,
                                      enforce_sorted=False)  # (B, n_src, e) without the padding
        outputs, state = self.rnn(packed)  # state (layers, B, d): after each last valid token
        outputs, _ = pad_packed_sequence(outputs, batch_first=True,
                                         total_length=src.shape[1])  # (B, n_src, d): o_j
        return outputs, state


@dataclasses.dataclass
class PlainState(DecoderState):
    hidden: torch.Tensor = dataclasses.field(metadata=HIDDEN)  # (layers, B, d)
    context: torch.Tensor                                       # (B, d): fixed for the sentence


class PlainDecoder(nn.Module):
    """GRU decoder whose only view of the source is the encoder's final top-layer state.
    forward(tokens (B, n), state) -> (logits (B, n, vocab), new state)."""

    @contract(**GRU_ARGS)
    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.attention_weights = None  # it has none

    def init_state(self, enc_outputs, src_valid_lens):
        _, enc_state = enc_outputs  # (layers, B, d)
        enc_state = enc_state.contiguous()  # CUDA's GRU refuses a strided view as its state
        return PlainState(hidden=enc_state, context=enc_state[-1])  # c: the top layer's state

    @contract(tokens=TOKENS, state=instance_of(PlainState))
    def forward(self, tokens, state: PlainState):
        emb = self.embedding(tokens)                                     # (B, n, e)
        context = state.context[:, None].expand(-1, emb.shape[1], -1)    # (B, n, d)
        out, hidden = self.rnn(torch.cat([emb, context], dim=-1), state.hidden)
        return self.dense(out), dataclasses.replace(state, hidden=hidden)


@dataclasses.dataclass
class AttentionState(DecoderState):
    hidden: torch.Tensor = dataclasses.field(metadata=HIDDEN)  # (layers, B, d): s_{t-1}
    enc_outputs: torch.Tensor                                   # (B, n_src, d): keys = values
    projected_keys: torch.Tensor                                # (B, n_src, d_a): W_k o_j
    valid_lens: torch.Tensor                                    # (B,)


class AttentionDecoder(nn.Module):
    """Bahdanau decoder: additive attention queried by the previous decoder state.

    attention_size: the hidden size d_a of the additive score (default: num_hiddens).
    """

    @contract(**GRU_ARGS, attention_size=positive_int)
    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0, attention_size: int | None = None):
        super().__init__()
        self.attention = AdditiveAttention(attention_size or num_hiddens, dropout,
                                           query_size=num_hiddens, key_size=num_hiddens)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0)
        self.dense = nn.Linear(num_hiddens, vocab_size)
        self.attention_weights = None

    def init_state(self, enc_outputs, src_valid_lens):
        outputs, enc_state = enc_outputs
        # the keys are the same at every output step: project them once (W_k o_j)
        return AttentionState(hidden=enc_state.contiguous(),  # CUDA's GRU needs it contiguous
                              enc_outputs=outputs, projected_keys=self.attention.W_k(outputs),
                              valid_lens=src_valid_lens)

    @contract(tokens=TOKENS, state=instance_of(AttentionState))
    def forward(self, tokens, state: AttentionState):
        """tokens (B, n) -> (logits (B, n, vocab), new state); keeps attention_weights
        (B, n, n_src)."""
        hidden, memory = state.hidden, state.enc_outputs
        outputs, weights = [], []
        for x in self.embedding(tokens).unbind(1):                       # x: (B, e)
            query = hidden[-1][:, None]                  # (B, 1, d): s_{t-1}, the top layer's
            context = self.attention(query, memory, memory, state.valid_lens,
                                     projected_keys=state.projected_keys)  # (B, 1, d): c_t
            out, hidden = self.rnn(torch.cat([x[:, None], context], dim=-1), hidden)
            outputs.append(out)                                           # (B, 1, d): s_t
            weights.append(self.attention.attention_weights)              # (B, 1, n_src)
        self.attention_weights = torch.cat(weights, 1)                    # (B, n_tgt, n_src)
        return self.dense(torch.cat(outputs, 1)), dataclasses.replace(state, hidden=hidden)


class EncoderDecoder(nn.Module):
    """An encoder and a decoder. forward(src (B, *rest), tokens (B, n), src_valid_lens) ->
    logits (B, n, vocab), with teacher forcing: ``tokens`` are the decoder's inputs (<bos> +
    target[:-1]); src is what the encoder reads, token indices (B, n_src) for a sentence."""

    @contract(encoder=instance_of(nn.Module), decoder=instance_of(nn.Module))
    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    @contract(src=tensor("B *rest", "any"), tokens=TOKENS,
              src_valid_lens=lengths(per="B", upto="src[1]"))
    def forward(self, src, tokens, src_valid_lens):
        state = self.decoder.init_state(self.encoder(src, src_valid_lens), src_valid_lens)
        logits, _ = self.decoder(tokens, state)
        return logits


@contract(kind=one_of("plain", "attention"))
def make_model(kind: str, src_vocab: int, tgt_vocab: int, embed_size: int = 32,
               num_hiddens: int = 128, num_layers: int = 1, dropout: float = 0.0,
               attention_size: int | None = None) -> EncoderDecoder:
    """kind "plain" or "attention": a GRU encoder with the matching decoder."""
    encoder = GRUEncoder(src_vocab, embed_size, num_hiddens, num_layers, dropout)
    if kind == "plain":
        return EncoderDecoder(encoder, PlainDecoder(tgt_vocab, embed_size, num_hiddens, num_layers,
                                                    dropout))
    return EncoderDecoder(encoder, AttentionDecoder(tgt_vocab, embed_size, num_hiddens, num_layers,
                                                    dropout, attention_size))
