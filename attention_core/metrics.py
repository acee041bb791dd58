"""Translation quality: exact match, BLEU (sacrebleu), and where attention looks."""
from __future__ import annotations

import torch


def exact_match(predictions, references) -> float:
    """Share of predicted token lists equal to their reference."""
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    if not references:
        raise ValueError("exact_match needs at least one reference")
    return sum(p == r for p, r in zip(predictions, references)) / len(references)


def bleu(predictions, references, tokenize: str = "zh") -> float:
    """Corpus BLEU (0-100) with sacrebleu; tokens are joined without spaces for Chinese and
    sacrebleu's "zh" tokenizer splits Chinese characters and keeps numbers whole."""
    import sacrebleu

    joiner = "" if tokenize == "zh" else " "
    hyps = [joiner.join(p) for p in predictions]
    refs = [[joiner.join(r) for r in references]]
    return sacrebleu.corpus_bleu(hyps, refs, tokenize=tokenize).score


def alignment_accuracy(weights, alignments, tgt_valid_lens=None) -> float:
    """Share of target tokens whose largest attention weight is on a source token they come from.

    weights: (batch, n_tgt, n_src) attention weights from teacher-forced decoding of the
    references; alignments: for each sentence, a list with one set of true source positions per
    target token (corpus.Pair.alignment). Target positions past the alignment (the final <eos>)
    are not counted.
    """
    if weights.dim() != 3 or weights.shape[0] != len(alignments):
        raise ValueError(f"weights must be (batch={len(alignments)}, n_tgt, n_src), got shape "
                         f"{tuple(weights.shape)}")
    best = weights.argmax(-1).tolist()
    hits = total = 0
    for row, truth in zip(best, alignments):
        for position, sources in zip(row, truth):
            hits += position in sources
            total += 1
    return hits / total
