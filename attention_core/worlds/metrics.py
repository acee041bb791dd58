"""How good a translation is and where its attention looked: exact match, BLEU, alignment
accuracy and offsets, and Wilson's interval for a measured rate."""
from __future__ import annotations

from ..contracts import contract, require, tensor


@contract(where=[require(lambda predictions, references: len(predictions) == len(references),
                         lambda predictions, references: f"{len(predictions)} predictions for "
                         f"{len(references)} references"),
                 require(lambda references: len(references) > 0,
                         "exact_match needs at least one reference")])
def exact_match(predictions, references) -> float:
    """Share of predicted token lists equal to their reference."""
    return sum(p == r for p, r in zip(predictions, references, strict=True)) / len(references)


def bleu(predictions, references, tokenize: str = "zh") -> float:
    """Corpus BLEU (0-100) with sacrebleu; tokens are joined without spaces for Chinese and
    sacrebleu's "zh" tokenizer splits Chinese characters and keeps numbers whole."""
    import sacrebleu  # the book's extra: imported only when BLEU is computed

    joiner = "" if tokenize == "zh" else " "
    hyps = [joiner.join(p) for p in predictions]
    refs = [[joiner.join(r) for r in references]]
    return sacrebleu.corpus_bleu(hyps, refs, tokenize=tokenize).score


# weights (B, n_tgt, n_src), one alignment per sentence
one_alignment_per_sentence = require(
    lambda weights, alignments: weights.shape[0] == len(alignments),
    lambda weights, alignments: f"weights must be (batch={len(alignments)}, n_tgt, n_src), "
    f"got shape {tuple(weights.shape)}")


@contract(weights=tensor("B n_tgt n_src", "any"), where=[one_alignment_per_sentence])
def alignment_accuracy(weights, alignments, tgt_valid_lens=None) -> float:
    """Share of target tokens whose largest attention weight is on a source token they come from.

    weights: (batch, n_tgt, n_src) attention weights from teacher-forced decoding of the
    references; alignments: for each sentence, a list with one set of true source positions per
    target token (``corpus.Pair.alignment``). Target positions past the alignment (the final
    <eos>) are not counted.
    """
    best = weights.argmax(-1).tolist()
    hits = total = 0
    for row, truth in zip(best, alignments, strict=True):
        for position, sources in zip(row, truth, strict=False):  # rows past the truth: <eos>
            hits += position in sources
            total += 1
    return hits / total


@contract(weights=tensor("B n_tgt n_src", "any"), where=[one_alignment_per_sentence])
def alignment_offsets(weights, alignments) -> list:
    """For each target token, how far its largest attention weight lies from the nearest
    source token it truly comes from: argmax_j weights[b, t, j] - (nearest true position).

    0 is a hit, +1 one source token to the right (later) of the truth, -1 one to the left.
    Where two true positions are equally near, the one to the right is taken (the offset is
    then negative), so a count of positive offsets is never inflated by the tie. Arguments
    as in ``alignment_accuracy``, whose value is the share of zeros here. Returns one int per
    counted target token, sentence by sentence.
    """
    offsets = []
    for row, truth in zip(weights.argmax(-1).tolist(), alignments, strict=True):
        for position, sources in zip(row, truth, strict=False):  # rows past the truth: <eos>
            offsets.append(min((position - s for s in sources), key=lambda o: (abs(o), o)))
    return offsets


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@contract(where=[require(lambda successes, n: _is_int(n) and n > 0 and _is_int(successes)
                         and 0 <= successes <= n,
                         lambda successes, n: f"need integers 0 <= successes <= n and n > 0, "
                         f"got successes={successes!r}, n={n!r}")])
def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple:
    """Wilson's score interval for a rate measured as ``successes`` out of ``n`` independent
    trials (z = 1.96: about 95% coverage).

    Unlike the normal approximation p ± z·sqrt(p(1-p)/n), it stays inside [0, 1] and does not
    shrink to a point when p is 0 or 1, which matters for small buckets with rates near 100%.
    Returns (low, high).
    """
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return max(0.0, centre - half), min(1.0, centre + half)
