"""Decoding: turn an encoder-decoder into output sequences, greedily or by beam search.

Works for any model with ``model.encoder(src, src_valid_lens)`` and a decoder with
``init_state(enc_outputs, src_valid_lens) -> state`` and
``forward(tokens (B, n), state) -> (logits (B, n, vocab), state)``, where the state is a
``DecoderState``: a dataclass that can pick batch rows of itself, which is all beam search
needs to follow its hypotheses (and to carry a KV cache along).

Every function here runs under ``torch.inference_mode()`` and gives the model back in the
mode (training or evaluation) it was in.
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch

from .contracts import contract, instance_of, lengths, non_negative, positive_int, require, tensor

__all__ = ["DecoderState", "evaluating", "start", "greedy_decode", "beam_search",
           "sequence_log_prob", "decoder_input"]

TOKENS = tensor("B n", "int", "token indices")  # a batch of token sequences
# a batch of source sentences (B, n_src) with one length each, or, without lengths, any batch
# the encoder reads (images, for a captioner)
SOURCE = dict(src=tensor("B *rest", "any"), src_valid_lens=lengths(per="B", upto="n_src"),
              where=[require(lambda src, src_valid_lens: src_valid_lens is None or src.dim() == 2,
                             lambda src, lens: f"src must be (batch, n_src) token indices, got "
                             f"shape {tuple(src.shape)}")])


@dataclasses.dataclass
class DecoderState:
    """Base class of decoder states. Every tensor field is indexed by batch row on axis 0,
    unless the field's metadata says otherwise: ``field(metadata={"batch_dim": 1})``.
    Lists and tuples (a KV cache, one entry per layer) are followed inside."""

    def reorder(self, index: torch.Tensor) -> DecoderState:
        """The state of batch rows ``index`` (B',): for beam search, which keeps the rows of
        the hypotheses it extends, some of them more than once."""
        return dataclasses.replace(self, **{
            f.name: _take(getattr(self, f.name), index, f.metadata.get("batch_dim", 0))
            for f in dataclasses.fields(self)})


def _take(value, index, dim):
    if isinstance(value, torch.Tensor):
        return value.index_select(dim, index.to(value.device))
    if isinstance(value, (list, tuple)):
        return type(value)(_take(v, index, dim) for v in value)
    return value  # ints, None, ...: the same for every row


@contract(model=instance_of(torch.nn.Module))
@contextlib.contextmanager
def evaluating(model: torch.nn.Module):
    """Evaluation mode and no autograd inside the block; the model's mode is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield
    finally:
        model.train(was_training)


@contract(**SOURCE)
def start(model, src, src_valid_lens):
    """Encode ``src`` (B, *rest): token indices (B, n_src) with their lengths src_valid_lens
    (B,), or, with src_valid_lens None, any batch the encoder reads (every position valid); and
    return the decoder's initial state."""
    if src_valid_lens is not None:
        src_valid_lens = torch.as_tensor(src_valid_lens, device=src.device)  # (B,)
    return model.decoder.init_state(model.encoder(src, src_valid_lens), src_valid_lens)


@contract(**SOURCE, max_len=positive_int)
def greedy_decode(model, src, src_valid_lens, bos: int, eos: int, max_len: int = 60):
    """Translate a batch, src (B, *rest) as ``start`` takes it, by always taking the most likely
    next token.

    Returns (tokens (B, steps), with everything after <eos> set to <eos>; attention weights
    (B, steps, n_src), or None for a decoder that keeps no ``attention_weights``).
    """
    with evaluating(model):
        state = start(model, src, src_valid_lens)  # encode once: the initial state
        token = torch.full((src.shape[0], 1), bos, dtype=torch.long, device=src.device)  # (B, 1)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)  # (B,): ended
        tokens, weights = [], []
        for _ in range(max_len):
            logits, state = model.decoder(token, state)       # one step: (B, 1, vocab)
            token = logits[:, -1:].argmax(-1)                 # (B, 1): the most likely token
            token = token.masked_fill(done[:, None], eos)     # an ended sentence repeats <eos>
            tokens.append(token)
            if getattr(model.decoder, "attention_weights", None) is not None:
                weights.append(model.decoder.attention_weights)
            done |= token[:, 0] == eos
            if bool(done.all()):  # one host read per generated token, to know when to stop
                break
    return torch.cat(tokens, 1), (torch.cat(weights, 1) if weights else None)


@contract(src=tensor("1 n_src", "any", "(one sentence)"), beam_size=positive_int,
          max_len=positive_int, length_penalty=non_negative)
def beam_search(model, src, src_valid_lens, bos: int, eos: int, beam_size: int = 4,
                max_len: int = 60, length_penalty: float = 0.0):
    """Translate one sentence (src (1, n_src)) keeping the ``beam_size`` best partial outputs.

    Hypotheses are ranked by score(y) = log P(y) / (len(y) + 1)^length_penalty, counting the
    final <eos> in the length: one ranking, used to choose the output and to decide when to
    stop. At each step the beams' continuations are ranked; an <eos> among the ``beam_size``
    best finishes a hypothesis, and the best non-<eos> continuations become the new beams.
    The search stops when no unfinished hypothesis can still beat the best finished one:
    extending a hypothesis only lowers its log-probability, so its score can at most reach
    log P / (max_len + 1)^length_penalty. With ``beam_size=1`` this is greedy decoding.
    Returns (tokens without <eos>, log-probability of tokens + <eos>). A sentence that never
    ends within ``max_len`` returns its best unfinished hypothesis.
    """
    def score(log_prob, length):  # length counts the tokens and the final <eos>
        return log_prob / length**length_penalty

    with evaluating(model):
        state = start(model, src, torch.as_tensor(src_valid_lens).reshape(1))
        beams, finished = [([], 0.0)], []  # (tokens, log-probability)
        for _ in range(max_len):
            last = torch.tensor([[toks[-1] if toks else bos] for toks, _ in beams],
                                device=src.device)                               # (beams, 1)
            logits, state = model.decoder(last, state)
            log_probs = torch.tensor([lp for _, lp in beams], device=src.device)[:, None] \
                + torch.log_softmax(logits[:, -1].float(), -1)                  # (beams, vocab)
            top = log_probs.flatten().topk(min(2 * beam_size, log_probs.numel()))
            alive, rows = [], []
            for rank, (lp, flat) in enumerate(zip(top.values.tolist(), top.indices.tolist())):
                row, token = divmod(flat, log_probs.shape[1])
                if token == eos:
                    if rank < beam_size:  # an ending among the k best continuations
                        finished.append((beams[row][0], lp))
                elif len(alive) < beam_size:
                    alive.append((beams[row][0] + [token], lp))
                    rows.append(row)
            best_finished = max((score(lp, len(t) + 1) for t, lp in finished), default=None)
            best_possible = max((score(lp, max_len + 1) for _, lp in alive), default=None)
            if not alive or (best_finished is not None and best_finished >= best_possible):
                break
            beams = alive
            state = state.reorder(torch.tensor(rows, device=src.device))
    candidates = finished or beams
    return max(candidates, key=lambda c: score(c[1], len(c[0]) + 1))


@contract(**SOURCE, tokens=TOKENS)
def sequence_log_prob(model, src, src_valid_lens, tokens, bos: int, eos: int):
    """log P(tokens + <eos> | src) under the model, for each sentence of a batch.

    src (B, *rest) as ``start`` takes it; tokens (B, n) target indices without <bos>/<eos>, all
    of length n. Returns (B,).
    """
    ends = torch.full((tokens.shape[0], 1), eos, dtype=tokens.dtype, device=tokens.device)
    tgt = torch.cat([tokens, ends], dim=1)  # (an empty output is <eos> alone)
    with evaluating(model):
        state = start(model, src, src_valid_lens)
        logits, _ = model.decoder(decoder_input(tgt, bos), state)
        log_probs = torch.log_softmax(logits.float(), -1)
    return log_probs.gather(2, tgt[..., None]).squeeze(-1).sum(1)


@contract(tgt=TOKENS)
def decoder_input(tgt, bos: int):
    """Teacher forcing: the decoder reads <bos> followed by the target shifted right by one.

    tgt (B, n) ending in <eos> (and padding) -> (B, n): <bos>, tgt[:, :-1].
    """
    return torch.cat([torch.full_like(tgt[:, :1], bos), tgt[:, :-1]], dim=1)
