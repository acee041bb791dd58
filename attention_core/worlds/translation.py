"""Translation (chapters 4 and 8): how an encoder-decoder learns the generated corpus, and how
a trained one is used.

``seq2seq_loss`` is the teacher-forced loss of one batch and ``train_seq2seq`` the training
recipe (``training.fit`` with Adam, gradient clipping and a decaying rate); ``translate`` and
``teacher_forced_weights`` read a trained model. The corpus (``corpus``), its vocabularies and
batches (``vocab``), the metrics (``metrics``) and the rate's schedules (``training``) have
modules of their own; the chapters import their names from here.
"""
from __future__ import annotations

import torch

from ..contracts import contract, positive_int, probability, require
from ..decoding import decoder_input, evaluating, greedy_decode
from .corpus import TENS, date_pair, join_items, make_length_test, make_splits, number_pair
from .metrics import alignment_accuracy, alignment_offsets, bleu, exact_match, wilson_interval
from .training import fit, inverse_sqrt_warmup, linear_decay, optimizer_step, warmup_linear_decay
from .vocab import EOS, WORDS, TranslationData, Vocab, pad_batch, read_tsv_pairs

__all__ = [
    "masked_cross_entropy", "seq2seq_loss", "train_step", "train_seq2seq", "translate",
    "teacher_forced_weights",
    # the names that the chapters, their solutions and the translator import from here
    "TENS", "date_pair", "join_items", "make_length_test", "make_splits", "number_pair",
    "alignment_accuracy", "alignment_offsets", "bleu", "exact_match", "wilson_interval",
    "inverse_sqrt_warmup", "linear_decay", "warmup_linear_decay",
    "EOS", "WORDS", "TranslationData", "Vocab", "pad_batch", "read_tsv_pairs",
]


@contract(label_smoothing=probability,
          where=[require(lambda logits, targets: logits.shape[:2] == targets.shape,
                         lambda logits, targets: f"logits {tuple(logits.shape)} and targets "
                         f"{tuple(targets.shape)} must agree in (batch, n)")])
def masked_cross_entropy(logits, targets, valid_lens, label_smoothing: float = 0.0):
    """Mean cross-entropy over the valid target tokens only (with optional label smoothing):

        loss = sum over real (b, t) of -log softmax(logits[b, t])[targets[b, t]]
               / number of real (b, t),  real: t < valid_lens[b]

    logits (batch, n, vocab), targets (batch, n), valid_lens (batch,): positions at or beyond
    a sequence's valid length (padding) contribute nothing, so padding never trains the model.
    """
    positions = torch.arange(targets.shape[1], device=targets.device)     # (n,)
    mask = positions[None] < valid_lens.to(targets.device)[:, None]       # (B, n): real tokens
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets,
                                               reduction="none",
                                               label_smoothing=label_smoothing)  # (B, n)
    return (losses * mask).sum() / mask.sum()                             # mean over real tokens


def seq2seq_loss(model, src, src_valid_lens, tgt, tgt_valid_lens, bos: int,
                 label_smoothing: float = 0.0):
    """The teacher-forced loss of one batch: the decoder reads <bos> and the target shifted
    right by one, and predicts every target token at once; the loss counts the real
    (unpadded) tokens only. src (B, n_src), tgt (B, n_tgt) ending in <eos>, valid lengths (B,).
    """
    dec_input = decoder_input(tgt, bos)                 # (B, n_tgt): <bos>, tgt[:, :-1]
    logits = model(src, dec_input, src_valid_lens)      # (B, n_tgt, vocab)
    return masked_cross_entropy(logits, tgt, tgt_valid_lens, label_smoothing)


def train_step(model, optimizer, src, src_valid_lens, tgt, tgt_valid_lens, bos: int, *,
               clip: float = 1.0, label_smoothing: float = 0.0):
    """One step of ``train_seq2seq``, taken by hand: the batch's ``seq2seq_loss``, then
    ``optimizer_step`` (gradients zeroed, backpropagated, their norm clipped to ``clip``, the
    optimizer's step). Returns the loss (detached, still on the device: reading it would make
    the host wait)."""
    loss = seq2seq_loss(model, src, src_valid_lens, tgt, tgt_valid_lens, bos, label_smoothing)
    optimizer_step(model, optimizer, loss, clip)
    return loss.detach()


@contract(epochs=positive_int, batch_size=positive_int)
def train_seq2seq(model, data, pairs, *, epochs: int = 4, batch_size: int = 128,
                  lr: float = 0.005, clip: float = 1.0, decay: bool = True, schedule=None,
                  label_smoothing: float = 0.0,
                  generator: torch.Generator | None = None, device=None, progress: bool = True,
                  on_epoch_end=None):
    """Teacher-forced training (``seq2seq_loss``) with Adam, gradient clipping and a decaying
    rate, through ``fit``.

    data: a TranslationData; pairs: the training pairs. With ``decay`` the learning rate falls
    linearly from ``lr`` to 0 over the run: the last steps are small, so the final model
    depends less on the rounding of any one machine than at a constant rate; ``schedule``
    (step, total steps) -> factor replaces it (e.g. ``warmup_linear_decay(400)``).
    label_smoothing: the cross-entropy's target puts this much mass uniformly on the vocabulary
    (the loss returned includes it). Batches and their order come from ``generator``, so the
    same call gives the same model on one machine. The progress bar (tqdm) is display only.
    Returns the mean loss of each epoch.

    on_epoch_end: an optional function ``(epoch, model)`` called after every epoch (epoch
    counts from 1), for example to score the model on a validation split; it may switch the
    model to evaluation mode, and training resumes in training mode. It draws nothing from
    ``generator``, so it leaves the batches, and with them the trained model, unchanged.
    """
    device = device or next(model.parameters()).device
    bos = data.tgt_vocab.bos

    def loss(model, batch):
        src, src_lens, tgt, tgt_lens = batch
        return seq2seq_loss(model, src.to(device), src_lens.to(device), tgt.to(device), tgt_lens,
                            bos, label_smoothing)

    return fit(model, lambda: data.batches(pairs, batch_size, generator), loss,
               steps_per_epoch=-(-len(pairs) // batch_size), epochs=epochs, lr=lr,
               schedule=schedule or (linear_decay if decay else None), clip=clip,
               progress=progress, on_epoch=on_epoch_end)


# ---- using a trained model -----------------------------------------------------------
@contract(batch_size=positive_int, max_len=positive_int)
def translate(model, data, pairs, *, batch_size: int = 250, max_len: int = 60, device=None):
    """Greedy translations of ``pairs`` (``corpus.Pair`` or (source, target); the targets are
    not used) as lists of target tokens, without <bos>/<eos>.

    model: an encoder-decoder of ``seq2seq`` or ``transformer``; data: the TranslationData
    whose vocabularies it was trained with. Sentences go through ``greedy_decode`` in batches
    of ``batch_size``, at most ``max_len`` tokens each, on ``device`` (default: the model's).
    A source token missing from the vocabulary is read as <unk>.
    """
    device = device or next(model.parameters()).device
    vocab, predictions = data.tgt_vocab, []
    for start in range(0, len(pairs), batch_size):
        src, src_lens, _, _ = data.tensors(pairs[start:start + batch_size])
        tokens, _ = greedy_decode(model, src.to(device), src_lens.to(device), vocab.bos,
                                  vocab.eos, max_len=max_len)
        predictions += [vocab.decode(row) for row in tokens.tolist()]
    return predictions


@contract(batch_size=positive_int,
          where=[require(lambda model: hasattr(model.decoder, "attention_weights"),
                         lambda model: f"{type(model.decoder).__name__} keeps no "
                         f"attention_weights", error=TypeError)])
def teacher_forced_weights(model, data, pairs, *, batch_size: int = 250, device=None):
    """The attention decoder's weights while it reads the reference translations (teacher
    forcing), so that row t belongs to target token t: (B, n_tgt, n_src) on the CPU.

    n_tgt counts the target tokens and the final <eos>, n_src the source tokens and their
    <eos>; rows and columns past a sentence's own lengths are zero. model: an EncoderDecoder
    whose decoder keeps ``attention_weights`` (B, n_tgt, n_src) of its last call.
    """
    device = device or next(model.parameters()).device
    chunks = []
    with evaluating(model):
        for start in range(0, len(pairs), batch_size):
            src, src_lens, tgt, tgt_lens = data.tensors(pairs[start:start + batch_size])
            model(src.to(device), decoder_input(tgt, data.tgt_vocab.bos).to(device),
                  src_lens.to(device))
            if model.decoder.attention_weights is None:  # what the model computed, not an input
                raise TypeError(f"{type(model.decoder).__name__} computed no attention weights")
            weights = model.decoder.attention_weights.float().cpu()
            real = torch.arange(weights.shape[1])[None, :] < tgt_lens[:, None]  # (B, n_tgt)
            chunks.append(weights * real[..., None])  # rows read from padding: zero
    n_tgt, n_src = max(c.shape[1] for c in chunks), max(c.shape[2] for c in chunks)
    return torch.cat([torch.nn.functional.pad(c, (0, n_src - c.shape[2], 0, n_tgt - c.shape[1]))
                      for c in chunks])
