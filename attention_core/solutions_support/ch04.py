"""Chapter 4's solutions: variants of the Bahdanau decoder, times of day, and the measures
the chapter computes inline (length buckets, where the misses of the attention land).

* ``BiGRUEncoder``: a bidirectional GRU whose states at every position join the forward and
  the backward direction, (B, n_src, 2d); the decoder still starts from the forward
  direction's final state, as in the chapter, so that only the keys and values change.
* ``VariantDecoder``: chapter 4's ``AttentionDecoder`` with three switches: the score
  (``"additive"`` or ``"dot"``, the scaled dot product), the size of the keys and values
  (``2d`` after a bidirectional encoder) and a deep output (the output layer reads
  $[\\mathbf{s}_t; \\mathbf{c}_t]$). With the defaults it computes what ``AttentionDecoder``
  computes, from the same parameters.
* ``time_pair``: "half past three in the afternoon" -> "下午 3 点 30 分", with its alignment.
"""
from __future__ import annotations

import dataclasses
import random
from collections import Counter

import torch
from torch import nn

from ..attention import AdditiveAttention, DotProductAttention
from ..contracts import contract, one_of, positive_int, require
from ..seq2seq import AttentionDecoder, AttentionState, EncoderDecoder, GRUEncoder
from ..worlds.corpus import ONES, TEENS, Pair, distinct_pairs, join_items, python_rng, random_item
from ..worlds.metrics import alignment_offsets, wilson_interval


# ---- models ----------------------------------------------------------------------------
class BiGRUEncoder(GRUEncoder):
    """Embedding, then a bidirectional GRU over the valid tokens: outputs (B, n_src, 2d),
    [forward; backward] at every position; state (layers, B, d): the forward direction's."""

    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, num_layers: int = 1,
                 dropout: float = 0.0):
        super().__init__(vocab_size, embed_size, num_hiddens, num_layers, dropout)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, batch_first=True,
                          dropout=dropout if num_layers > 1 else 0.0, bidirectional=True)

    def forward(self, src, src_valid_lens):
        outputs, state = super().forward(src, src_valid_lens)  # the chapter's, with this GRU
        # outputs (B, n_src, 2d): [forward; backward]; state (2 * layers, B, d), direction fastest
        return outputs, state[0::2]  # the decoder starts where the forward GRU ended


class VariantDecoder(AttentionDecoder):
    """AttentionDecoder with a choice of score, of key/value size and of output layer.

    score: "additive" (the chapter's) or "dot" (softmax(s_{t-1} · o_j / sqrt(d)), no
    parameters; needs key_size == num_hiddens). key_size: the size of the encoder states
    (keys = values), 2d after a bidirectional encoder. deep_output: the output layer reads
    [s_t; c_t] instead of s_t alone.
    """

    @contract(score=one_of("additive", "dot"),
              where=[require(lambda score, num_hiddens, key_size: score != "dot"
                             or (key_size or num_hiddens) == num_hiddens,
                             lambda score, num_hiddens, key_size: f"a dot product needs queries "
                             f"and keys of one size, got num_hiddens={num_hiddens} and "
                             f"key_size={key_size}")])
    def __init__(self, vocab_size: int, embed_size: int, num_hiddens: int, *,
                 score: str = "additive", key_size: int | None = None,
                 deep_output: bool = False):
        nn.Module.__init__(self)  # AttentionDecoder's layers, in its order, resized
        key_size = key_size or num_hiddens
        self.score, self.deep_output = score, deep_output
        self.attention = (DotProductAttention() if score == "dot"            # no parameters
                          else AdditiveAttention(num_hiddens, query_size=num_hiddens,
                                                 key_size=key_size))
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + key_size, num_hiddens, batch_first=True)  # [e(y); c_t]
        self.dense = nn.Linear(num_hiddens + (key_size if deep_output else 0), vocab_size)
        self.attention_weights = None

    def init_state(self, enc_outputs, src_valid_lens):
        outputs, enc_state = enc_outputs
        keys = outputs if self.score == "dot" else self.attention.W_k(outputs)  # nothing to project
        return AttentionState(hidden=enc_state.contiguous(), enc_outputs=outputs,
                              projected_keys=keys, valid_lens=src_valid_lens)

    def forward(self, tokens, state: AttentionState):
        hidden, memory = state.hidden, state.enc_outputs
        outputs, weights = [], []
        for x in self.embedding(tokens).unbind(1):                        # x: (B, e)
            query = hidden[-1][:, None]                                    # (B, 1, d): s_{t-1}
            if self.score == "dot":
                context = self.attention(query, memory, memory, state.valid_lens)
            else:
                context = self.attention(query, memory, memory, state.valid_lens,
                                         projected_keys=state.projected_keys)  # (B, 1, d_k): c_t
            out, hidden = self.rnn(torch.cat([x[:, None], context], dim=-1), hidden)
            outputs.append(torch.cat([out, context], -1) if self.deep_output else out)
            weights.append(self.attention.attention_weights)               # (B, 1, n_src)
        self.attention_weights = torch.cat(weights, 1)                     # (B, n_tgt, n_src)
        return self.dense(torch.cat(outputs, 1)), dataclasses.replace(state, hidden=hidden)


def make_variant(src_vocab: int, tgt_vocab: int, embed_size: int = 32, num_hiddens: int = 128,
                 *, bidirectional: bool = False, score: str = "additive",
                 deep_output: bool = False) -> EncoderDecoder:
    """A GRU encoder (bidirectional or not) with a ``VariantDecoder``."""
    encoder = (BiGRUEncoder if bidirectional else GRUEncoder)(src_vocab, embed_size, num_hiddens)
    key_size = 2 * num_hiddens if bidirectional else num_hiddens
    return EncoderDecoder(encoder, VariantDecoder(tgt_vocab, embed_size, num_hiddens, score=score,
                                                  key_size=key_size, deep_output=deep_output))


# ---- measures ---------------------------------------------------------------------------
UNITS = set("十百千万年月日零")  # chapter 4's unit characters: they translate no word of their own


def length_buckets(predictions, pairs, buckets=((1, 9), (10, 19), (20, 29), (30, 47))):
    """Exact match per bucket of source length: [(low, high, sentences, right, rate, (lo, hi))]
    with the 95% Wilson interval of each rate."""
    rows = []
    for low, high in buckets:
        idx = [i for i, p in enumerate(pairs) if low <= len(p.source) <= high]
        right = sum(predictions[i] == pairs[i].target for i in idx)
        rows.append((low, high, len(idx), right, right / len(idx),
                     wilson_interval(right, len(idx))))
    return rows


def where_misses_land(weights, pairs, units=UNITS) -> dict:
    """The chapter's alignment measures for teacher-forced ``weights`` (B, n_tgt, n_src).

    Returns the hit rate of the word tokens (digits, numbers, separators) and of the units,
    the number of word misses and how many of them lie one position to the right, the word
    misses counted by offset (clipped to -3 .. +3), and the number of unit misses and how many
    land on the source of the next target token (after the last target token: the source's
    <eos>).
    """
    offsets = alignment_offsets(weights, [p.alignment for p in pairs])
    best = weights.argmax(-1)
    is_unit, on_next = [], []
    for b, p in enumerate(pairs):
        for t, token in enumerate(p.target):
            is_unit.append(token in units)
            following = p.alignment[t + 1] if t + 1 < len(p.target) else {len(p.source)}
            on_next.append(int(best[b, t]) in following)
    words = [o for o, u in zip(offsets, is_unit, strict=True) if not u]
    unit_offsets = [(o, n) for o, n, u in zip(offsets, on_next, is_unit, strict=True) if u]
    return {"word_hit": words.count(0) / len(words),
            "unit_hit": sum(o == 0 for o, _ in unit_offsets) / len(unit_offsets),
            "word_misses": sum(o != 0 for o in words),
            "word_misses_right": words.count(1),
            "word_offsets": Counter(max(-3, min(3, o)) for o in words if o),
            "unit_misses": sum(o != 0 for o, _ in unit_offsets),
            "unit_misses_next": sum(n for o, n in unit_offsets if o != 0)}


# ---- times of day ------------------------------------------------------------------------
PERIODS = {  # Chinese, English, the hours (24-hour clock) the period covers
    "morning": ("上午", ["in", "the", "morning"], range(6, 12)),
    "afternoon": ("下午", ["in", "the", "afternoon"], range(13, 18)),
    "evening": ("晚上", ["in", "the", "evening"], range(18, 23)),
}
MINUTE_WORDS = {5: ["five"], 10: ["ten"], 15: ["a", "quarter"], 20: ["twenty"],
                25: ["twenty", "five"], 30: ["half"]}


def hour_word(hour: int) -> str:
    """The English word of a 12-hour clock hour 1..12."""
    return (ONES + TEENS)[hour]


def _period(hour: int) -> str | None:
    """The part of the day that holds ``hour``, or None."""
    return next((name for name, (_, _, hours) in PERIODS.items() if hour in hours), None)


@contract(where=[
    require(lambda hour, minute: _period(hour) is not None and minute % 5 == 0
            and 0 <= minute < 60,
            lambda hour, minute: f"need an hour in {[list(h) for *_, h in PERIODS.values()]} "
            f"and a minute that is a multiple of 5, got {hour}:{minute:02d}"),
    require(lambda hour, minute: minute <= 30 or hour + 1 in PERIODS[_period(hour)][2],
            lambda hour, minute: f"{hour}:{minute:02d} would be said to {hour + 1}:00, outside "
            f"the {_period(hour)}")])
def time_pair(hour: int, minute: int) -> Pair:
    """A time of day, ``hour`` on the 24-hour clock, ``minute`` a multiple of 5:

        15:30 -> "half past three in the afternoon" -> "下午 3 点 30 分"
        15:45 -> "a quarter to four in the afternoon" -> "下午 3 点 45 分"
        15:00 -> "three o'clock in the afternoon" -> "下午 3 点"

    English names the minutes first, counting past the hour up to half past and *to* the next
    hour after it; Chinese names the period first, then the hour and the minutes past it. The
    period must contain the hour, and for a time "to" the next hour that hour too. Alignment:
    the period from its noun; the hour and 点 from the hour's word ("four" and "to" for a
    time to the hour: 3 is four minus one; 点 also from "o'clock"); the minutes and 分 from
    the minute words and "past" or "to" (45 is sixty minus a quarter).
    """
    period = _period(hour)            # the part of the day that holds the time
    chinese, phrase, _ = PERIODS[period]
    to = minute > 30                  # "a quarter to four": the minutes count down to the hour
    clock = (hour + to - 1) % 12 + 1  # the hour the English names, on the 12-hour clock
    if minute == 0:
        source = [hour_word(clock), "o'clock"]
    else:
        minutes = MINUTE_WORDS[60 - minute if to else minute]
        source = minutes + ["to" if to else "past", hour_word(clock)]
    source += phrase                  # "in the afternoon"
    at = {w: i for i, w in enumerate(source)}
    noun, named = at[phrase[-1]], at[hour_word(clock)]
    hour_from = {named, at["to"]} if to else {named}
    minute_from = set(range(len(source) - 4)) if minute else set()  # minute words, past / to
    target = [chinese, str((hour - 1) % 12 + 1), "点"]
    alignment = [{noun}, hour_from, hour_from | ({at["o'clock"]} if not minute else set())]
    if minute:
        target += [str(minute), "分"]
        alignment += [minute_from, minute_from]
    return Pair(source, target, alignment)


def random_time(rng: random.Random) -> Pair:
    """A random time of day (a random period, hour and multiple of five minutes)."""
    while True:
        _, _, hours = PERIODS[rng.choice(sorted(PERIODS))]
        hour, minute = rng.choice(list(hours)), 5 * rng.randrange(12)
        if minute <= 30 or hour + 1 in hours:
            return time_pair(hour, minute)


@contract(n_pairs=positive_int, max_items=positive_int)
def make_time_corpus(n_pairs: int, generator: torch.Generator | None = None,
                     max_items: int = 2, share_times: float = 0.5, exclude=()):
    """``n_pairs`` distinct sentences of 1..max_items items; each item is a time of day with
    probability ``share_times``, else a date or a number as in chapter 4."""
    rng = python_rng(generator)

    def sentence():
        return join_items([random_time(rng) if rng.random() < share_times else random_item(rng)
                           for _ in range(rng.randint(1, max_items))])

    return distinct_pairs(sentence, n_pairs, {" ".join(s) for s in exclude})


def time_token_kind(pair: Pair, t: int) -> str | None:
    """What target token t of a sentence is, if it belongs to a time of day: "period",
    "hour (past)", "hour (to)", "点", "minutes (past)", "minutes (to)", "分"; else None."""
    token = pair.target[t]
    if token in ("上午", "下午", "晚上"):
        return "period"
    periods = [s for s in range(t + 1) if pair.target[s] in ("上午", "下午", "晚上")]
    start = max(periods, default=None)
    if start is None or t - start > 4 or "；" in pair.target[start:t + 1]:
        return None
    to = any(pair.source[j] == "to" for j in pair.alignment[start + 1])
    kind = {1: "hour", 2: "点", 3: "minutes", 4: "分"}[t - start]
    return f"{kind} ({'to' if to else 'past'})" if kind in ("hour", "minutes") else kind


def where_time_tokens_look(weights, pairs) -> dict:
    """For teacher-forced ``weights`` (B, n_tgt, n_src) of sentences with times of day: for
    each kind of time token (``time_token_kind``), (tokens, hits, later, Counter of the source
    words holding the largest weight, "<eos>" for the source's end). ``later`` counts the
    misses whose largest weight lies after every true source position of the token but no
    further than the token after its time phrase (the ";" or the source's end)."""
    best = weights.argmax(-1)
    report = {}
    for b, p in enumerate(pairs):
        for t in range(len(p.target)):
            kind = time_token_kind(p, t)
            if kind is None:
                continue
            start = max(s for s in range(t + 1) if p.target[s] in ("上午", "下午", "晚上"))
            end = max(p.alignment[start]) + 1          # after the period's noun: ";" or <eos>
            j = int(best[b, t])
            tokens, hits, later, words = report.setdefault(kind, (0, 0, 0, Counter()))
            words[p.source[j] if j < len(p.source) else "<eos>"] += 1
            hit = j in p.alignment[t]
            report[kind] = (tokens + 1, hits + hit,
                            later + (not hit and max(p.alignment[t]) < j <= end), words)
    return report
