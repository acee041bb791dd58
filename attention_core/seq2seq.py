"""Sequence to sequence with GRUs: an encoder, a plain decoder and a Bahdanau attention decoder.

Shapes: src (batch, n_src) token indices with src_valid_lens (batch,); decoder input
(batch, n_tgt); logits (batch, n_tgt, vocab).

* The **encoder** reads the source and returns its outputs at every position (batch, n_src, h)
  and its hidden state after the last *valid* token, for every layer (layers, batch, h).
* The **plain decoder** (Sutskever et al., 2014; Cho et al., 2014) starts from that state and
  sees the source only through one fixed vector, the top layer's final state, fed at every step.
* The **attention decoder** (Bahdanau et al., 2014) also starts from the encoder's final state,
  but at step t it uses its own previous hidden state (top layer) as the query of additive
  attention over the encoder outputs (keys = values), and feeds the resulting context, with
  the embedding of the previous token, to the GRU.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .attention import AdditiveAttention


class GRUEncoder(nn.Module):
    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0)

    def forward(self, src, src_valid_lens):
        """-> outputs (batch, n_src, h), zero beyond each valid length; state (layers, batch, h)."""
        if src.dim() != 2:
            raise ValueError(f"src must be (batch, n_src) token indices, got shape {tuple(src.shape)}")
        lens = torch.as_tensor(src_valid_lens).cpu()
        if lens.shape != (src.shape[0],) or bool((lens < 1).any()) or bool((lens > src.shape[1]).any()):
            raise ValueError(f"src_valid_lens must be ({src.shape[0]},) with values in "
                             f"[1, {src.shape[1]}], got {lens.tolist()}")
        packed = pack_padded_sequence(self.embedding(src), lens, batch_first=True,
                                      enforce_sorted=False)
        outputs, state = self.rnn(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=src.shape[1])
        return outputs, state


class PlainDecoder(nn.Module):
    """GRU decoder whose only view of the source is the encoder's final top-layer state."""

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_state, src_valid_lens):
        return {"context": enc_state[-1], "hidden": enc_state}

    def forward(self, tgt_in, state):
        """-> (logits (batch, n_tgt, vocab), new state, None: no attention weights)."""
        emb = self.embedding(tgt_in)                                     # (batch, n, e)
        context = state["context"][:, None].expand(-1, emb.shape[1], -1)  # (batch, n, h)
        out, hidden = self.rnn(torch.cat([emb, context], dim=-1), state["hidden"])
        return self.dense(out), {"context": state["context"], "hidden": hidden}, None


class AttentionDecoder(nn.Module):
    """Bahdanau decoder: additive attention queried by the previous decoder state.

    attention_size: the hidden size h of the additive score (default: num_hiddens).
    """

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0, attention_size: int | None = None):
        super().__init__()
        self.attention = AdditiveAttention(attention_size or num_hiddens, dropout,
                                           query_size=num_hiddens, key_size=num_hiddens)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_state, src_valid_lens):
        # the keys are the same at every output step: project them once (W_k h_j)
        return {"enc_outputs": enc_outputs, "keys": self.attention.W_k(enc_outputs),
                "hidden": enc_state, "valid_lens": src_valid_lens}

    def forward(self, tgt_in, state):
        """-> (logits (batch, n_tgt, vocab), new state, weights (batch, n_tgt, n_src))."""
        enc_outputs, hidden, lens = state["enc_outputs"], state["hidden"], state["valid_lens"]
        outputs, weights = [], []
        for x in self.embedding(tgt_in).unbind(1):                       # x: (batch, e)
            query = hidden[-1][:, None]                                   # (batch, 1, h): s_{t-1}
            context = self.attention(query, enc_outputs, enc_outputs, lens,
                                     projected_keys=state["keys"])        # (batch, 1, h)
            out, hidden = self.rnn(torch.cat([x[:, None], context], dim=-1), hidden)
            outputs.append(out)
            weights.append(self.attention.attention_weights)
        new_state = dict(state, hidden=hidden)
        return self.dense(torch.cat(outputs, 1)), new_state, torch.cat(weights, 1)


class EncoderDecoder(nn.Module):
    def __init__(self, encoder: nn.Module, decoder: nn.Module):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def start(self, src, src_valid_lens):
        enc_outputs, enc_state = self.encoder(src, src_valid_lens)
        return self.decoder.init_state(enc_outputs, enc_state, src_valid_lens.to(src.device))

    def forward(self, src, src_valid_lens, tgt_in):
        """Teacher forcing: logits for every position of tgt_in, and attention weights or None."""
        logits, _, weights = self.decoder(tgt_in, self.start(src, src_valid_lens))
        return logits, weights


def make_model(kind: str, src_vocab: int, tgt_vocab: int, embed_size: int = 32,
               num_hiddens: int = 128, num_layers: int = 1, dropout: float = 0.0,
               attention_size: int | None = None) -> EncoderDecoder:
    """kind "plain" or "attention": a GRU encoder with the matching decoder."""
    if kind not in ("plain", "attention"):
        raise ValueError(f"kind must be 'plain' or 'attention', got {kind!r}")
    encoder = GRUEncoder(src_vocab, embed_size, num_hiddens, num_layers, dropout)
    if kind == "plain":
        return EncoderDecoder(encoder, PlainDecoder(tgt_vocab, embed_size, num_hiddens, num_layers, dropout))
    return EncoderDecoder(encoder, AttentionDecoder(tgt_vocab, embed_size, num_hiddens, num_layers,
                                                    dropout, attention_size))


def _select(state, index):
    """Pick batch rows ``index`` of every tensor in a decoder state (for beam search)."""
    out = {}
    for key, value in state.items():
        out[key] = value[:, index] if key == "hidden" else value[index]
    return out


@torch.no_grad()
def greedy_decode(model: EncoderDecoder, src, src_valid_lens, bos: int, eos: int,
                  max_len: int = 60):
    """Translate a batch by always taking the most likely next token.

    Returns (tokens (batch, steps) with everything after <eos> set to <eos>,
    attention weights (batch, steps, n_src), or None for a decoder without attention).
    """
    model.eval()
    state = model.start(src, src_valid_lens)
    token = torch.full((src.shape[0], 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    tokens, weights = [], []
    for _ in range(max_len):
        logits, state, w = model.decoder(token, state)
        token = logits.argmax(-1)                      # (batch, 1)
        token = torch.where(done[:, None], eos, token)
        tokens.append(token)
        if w is not None:
            weights.append(w)
        done |= token[:, 0] == eos
        if bool(done.all()):
            break
    return torch.cat(tokens, 1), (torch.cat(weights, 1) if weights else None)


@torch.no_grad()
def beam_search(model: EncoderDecoder, src, src_valid_len, bos: int, eos: int,
                beam_size: int = 4, max_len: int = 60, length_penalty: float = 0.7):
    """Translate one sentence (src (1, n_src)) keeping the ``beam_size`` best partial outputs.

    Finished hypotheses are ranked by log-probability / (length + 1)^length_penalty, so that
    longer outputs are not punished merely for having more factors below one.
    Returns (tokens without <eos>, log-probability of tokens + <eos>).
    """
    if src.dim() != 2 or src.shape[0] != 1:
        raise ValueError(f"beam_search translates one sentence: src must be (1, n_src), "
                         f"got shape {tuple(src.shape)}")
    if beam_size < 1:
        raise ValueError(f"beam_size must be positive, got {beam_size}")
    model.eval()
    state = model.start(src, torch.as_tensor(src_valid_len, device=src.device).reshape(1))
    beams, finished = [([], 0.0)], []          # (tokens, log-probability)
    for _ in range(max_len):
        last = torch.tensor([[toks[-1] if toks else bos] for toks, _ in beams], device=src.device)
        logits, state, _ = model.decoder(last, state)
        scores = torch.tensor([s for _, s in beams], device=src.device)[:, None] \
            + torch.log_softmax(logits[:, -1], -1)                          # (beams, vocab)
        top = scores.flatten().topk(min(2 * beam_size, scores.numel()))
        alive, rows = [], []
        for rank, (score, flat) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
            row, tok = divmod(flat, scores.shape[1])
            if tok == eos:
                # only an ending that is among the k best continuations finishes a hypothesis;
                # improbable endings would otherwise fill the list and stop the search early
                if rank < beam_size:
                    finished.append((beams[row][0], score))
            else:
                alive.append((beams[row][0] + [tok], score))
                rows.append(row)
            if len(alive) == beam_size:
                break
        if not alive:
            break
        # stop once a finished translation beats every unfinished one: extending a hypothesis
        # only lowers its log-probability
        def normalized(c):
            return c[1] / (len(c[0]) + 1) ** length_penalty
        if finished and max(map(normalized, finished)) >= max(map(normalized, alive)):
            break
        beams = alive
        state = _select(state, torch.tensor(rows, device=src.device))
    candidates = finished or beams
    return max(candidates, key=lambda c: c[1] / (len(c[0]) + 1) ** length_penalty)


@torch.no_grad()
def sequence_log_prob(model: EncoderDecoder, src, src_valid_lens, tokens, bos: int, eos: int):
    """log P(tokens + <eos> | src) under the model, for each sentence of a batch.

    tokens: (batch, n) target indices without <bos>/<eos>, all of length n. Returns (batch,).
    """
    model.eval()
    tgt = torch.cat([tokens, torch.full_like(tokens[:, :1], eos)], dim=1)
    logits, _ = model(src, src_valid_lens, decoder_input(tgt, bos))
    return torch.log_softmax(logits, -1).gather(2, tgt[..., None]).squeeze(-1).sum(1)


def decoder_input(tgt, bos: int):
    """Teacher forcing: the decoder reads <bos> followed by the target shifted right by one.

    tgt (batch, n) ending in <eos> (and padding) -> (batch, n): <bos>, tgt[:, :-1].
    """
    return torch.cat([torch.full_like(tgt[:, :1], bos), tgt[:, :-1]], dim=1)
