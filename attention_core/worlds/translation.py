"""The translation world of chapters 4 and 8: a generated English -> Chinese corpus that
knows its own alignments, with its vocabulary, batches, training loop and metrics.

Each example is a list of one to four items separated by ";" (Chinese "；"). An item is

* a date: "the 3rd of march , 2021" or "march 3rd , 2021" -> "2021 年 3 月 3 日": the year
  moves to the front and the day to the back;
* a number below one million, in words: "four hundred and twelve thousand , three hundred
  and five" -> "四 十 一 万 二 千 三 百 零 五": English groups digits by thousands, Chinese by
  ten-thousands, so digits are regrouped, and Chinese writes 零 for skipped zeros.

For every target token the generator records which source positions it comes from (the
true alignment), so we can check where attention looks. Nothing is downloaded: the same
generator gives the same corpus on every machine.
"""
from __future__ import annotations

import datetime
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from ..contracts import contract, positive_int
from ..decoding import decoder_input, evaluating, greedy_decode

ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
ZH_DIGITS = "零一二三四五六七八九"
ZH_UNITS = {1: "十", 2: "百", 3: "千"}


@dataclass
class Pair:
    """One sentence pair. alignment[t] is the set of source positions target token t comes from."""

    source: list
    target: list
    alignment: list

    def __post_init__(self):
        if len(self.alignment) != len(self.target):
            raise ValueError(f"alignment has {len(self.alignment)} entries for "
                             f"{len(self.target)} target tokens")


def ordinal(day: int) -> str:
    if 11 <= day % 100 <= 13:
        return f"{day}th"
    return f"{day}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th') }"


# ---- numbers ---------------------------------------------------------------------------
def english_number(n: int):
    """Words for 1 <= n < 10^6, each with the decimal positions (powers of ten) it expresses.

    Returns [(word, {positions}), ...]: "twelve" in "twelve thousand" expresses positions 4
    and 3; "hundred" expresses the position of the digit before it; "thousand", "and" and ","
    express none.
    """
    if not 1 <= n < 10**6:
        raise ValueError(f"n must be in [1, 10^6), got {n}")

    def below_hundred(x, shift):
        if x < 10:
            return [(ONES[x], {shift})]
        if x < 20:
            return [(TEENS[x - 10], {shift + 1, shift})]
        words = [(TENS[x // 10], {shift + 1})]
        return words + ([(ONES[x % 10], {shift})] if x % 10 else [])

    def below_thousand(x, shift):
        words = []
        if x >= 100:
            words += [(ONES[x // 100], {shift + 2}), ("hundred", {shift + 2})]
            if x % 100:
                words.append(("and", set()))
        if x % 100:
            words += below_hundred(x % 100, shift)
        return words

    thousands, rest = divmod(n, 1000)
    words = []
    if thousands:
        words += below_thousand(thousands, 3) + [("thousand", set())]
        if rest >= 100:
            words.append((",", set()))
        elif rest:
            words.append(("and", set()))
    if rest:
        words += below_thousand(rest, 0)
    return words


def chinese_number(n: int):
    """Characters for 1 <= n < 10^6, each tagged with what it expresses.

    Returns [(char, tag), ...] with tag ("digit", p) for a digit or its unit (十 百 千) at
    decimal position p, ("wan", None) for 万, ("zero", p) for a 零 standing before the digit
    at position p.
    """
    if not 1 <= n < 10**6:
        raise ValueError(f"n must be in [1, 10^6), got {n}")
    chars = []

    def group(g, shift, leading):
        """A group of up to four digits; leading: no higher group was written before it."""
        digits = [(g // 10**k) % 10 for k in range(3, -1, -1)]  # thousands .. units
        started, pending_zero = False, False
        for k, d in zip(range(3, -1, -1), digits):
            p = k + shift
            if d == 0:
                pending_zero = started
                continue
            if pending_zero:
                chars.append(("零", ("zero", p)))
                pending_zero = False
            # 10-19 at the very start are written 十X, not 一十X
            if not (k == 1 and d == 1 and leading and not started):
                chars.append((ZH_DIGITS[d], ("digit", p)))
            if k:
                chars.append((ZH_UNITS[k], ("digit", p)))
            started = True

    wan, low = divmod(n, 10**4)
    if wan:
        group(wan, 4, leading=True)
        chars.append(("万", ("wan", None)))
        if low:
            if low < 1000:  # a gap right after 万 is written 零
                first = max(k for k in range(4) if (low // 10**k) % 10)
                chars.append(("零", ("zero", first)))
            group(low, 0, leading=False)
    else:
        group(low, 0, leading=True)
    return chars


def number_pair(n: int) -> Pair:
    """The pair for one number, e.g. 412305: its words, its characters, their alignment."""
    english = english_number(n)
    source = [w for w, _ in english]
    carriers = {}  # decimal position -> source positions whose word expresses it
    for i, (_, positions) in enumerate(english):
        for p in positions:
            carriers.setdefault(p, set()).add(i)
    thousand = {i for i, (w, _) in enumerate(english) if w == "thousand"}
    ands = [i for i, (w, _) in enumerate(english) if w in ("and", ",")]
    target, alignment = [], []
    for char, (kind, p) in chinese_number(n):
        target.append(char)
        if kind == "digit":
            alignment.append(set(carriers[p]))
        elif kind == "wan":
            alignment.append(set(thousand) | carriers.get(4, set()))
        else:  # 零: the next digit's words, and an "and" or "," just before them
            nxt = carriers[p]
            before = {a for a in ands if a + 1 in nxt}
            alignment.append(set(nxt) | before)
    return Pair(source, target, alignment)


# ---- dates -----------------------------------------------------------------------------
def date_pair(date: datetime.date, day_first: bool) -> Pair:
    """"the 3rd of march , 2021" (day first) or "march 3rd , 2021" -> "2021 年 3 月 3 日"."""
    day, month, year = ordinal(date.day), MONTHS[date.month - 1], str(date.year)
    if day_first:
        source = ["the", day, "of", month, ",", year]
    else:
        source = [month, day, ",", year]
    pos = {w: i for i, w in enumerate(source) if w in (day, month, year)}
    target = [year, "年", str(date.month), "月", str(date.day), "日"]
    alignment = [{pos[year]}, {pos[year]}, {pos[month]}, {pos[month]}, {pos[day]}, {pos[day]}]
    return Pair(source, target, alignment)


# ---- sentences -------------------------------------------------------------------------
FIRST_DAY, LAST_DAY = datetime.date(1990, 1, 1), datetime.date(2029, 12, 31)


def random_item(rng: random.Random) -> Pair:
    if rng.random() < 0.6:
        digits = rng.randint(1, 6)  # as many short numbers as long ones
        return number_pair(rng.randint(10 ** (digits - 1), 10**digits - 1))
    span = (LAST_DAY - FIRST_DAY).days
    date = FIRST_DAY + datetime.timedelta(days=rng.randint(0, span))
    return date_pair(date, day_first=rng.random() < 0.5)


def join_items(items) -> Pair:
    """One sentence from items (each Pair numbered from 0), joined by ";" / "；"."""
    source, target, alignment = [], [], []
    for k, item in enumerate(items):
        if k:
            alignment.append({len(source)})
            source.append(";")
            target.append("；")
        shift = len(source)
        source += item.source
        target += item.target
        alignment += [{i + shift for i in a} for a in item.alignment]
    return Pair(source, target, alignment)


def random_pair(rng: random.Random, n_items: int) -> Pair:
    """A sentence of ``n_items`` random items."""
    return join_items([random_item(rng) for _ in range(n_items)])


def python_rng(generator: torch.Generator | None) -> random.Random:
    """A Python ``random.Random`` seeded from ``generator`` (default: one seeded with 0).

    Sentences are built with Python's generator (choices among words and dates); seeding it
    from a torch.Generator keeps one way of passing randomness through the whole package.
    """
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    return random.Random(int(torch.randint(2**62, (), generator=gen)))


@contract(n_pairs=positive_int, max_items=positive_int)
def make_corpus(n_pairs: int, generator: torch.Generator | None = None, max_items: int = 4,
                exclude=()):
    """``n_pairs`` distinct pairs with 1..max_items items each (uniformly), none of whose
    source sentences is in ``exclude``."""
    rng = python_rng(generator)
    seen, pairs = {" ".join(s) for s in exclude}, []
    while len(pairs) < n_pairs:
        pair = random_pair(rng, rng.randint(1, max_items))
        key = " ".join(pair.source)
        if key not in seen:
            seen.add(key)
            pairs.append(pair)
    return pairs


def make_splits(n_train: int = 20000, n_valid: int = 1000, n_test: int = 1000,
                generator: torch.Generator | None = None, max_items: int = 4):
    """Fixed, disjoint train / validation / test splits: (train, valid, test) lists of Pair."""
    pairs = make_corpus(n_train + n_valid + n_test, generator=generator, max_items=max_items)
    return (pairs[:n_train], pairs[n_train:n_train + n_valid], pairs[n_train + n_valid:])


@contract(per_items=positive_int, max_items=positive_int)
def make_length_test(per_items: int = 200, generator: torch.Generator | None = None,
                     max_items: int = 4, exclude=()):
    """A test set with exactly ``per_items`` sentences of each number of items 1..max_items,
    none of them in ``exclude``: the lengths are controlled, so every length bucket is full."""
    rng = python_rng(generator)
    seen = {" ".join(s) for s in exclude}
    pairs = []
    for n_items in range(1, max_items + 1):
        made = 0
        while made < per_items:
            pair = random_pair(rng, n_items)
            key = " ".join(pair.source)
            if key not in seen:
                seen.add(key)
                pairs.append(pair)
                made += 1
    return pairs


# ---- tokens to tensors ---------------------------------------------------------------
PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
WORDS = re.compile(r"\w+(?:'\w+)?|[^\w\s]")  # words (with an apostrophe) and punctuation marks


class Vocab:
    """Token <-> index. Index 0 is <pad>, then <bos>, <eos>, <unk>, then tokens by frequency
    (ties alphabetically, so the same corpus always gives the same indices)."""

    def __init__(self, sentences, min_freq: int = 1):
        counts = Counter(tok for sentence in sentences for tok in sentence)
        kept = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        self.itos = [PAD, BOS, EOS, UNK] + [t for t in kept if t not in (PAD, BOS, EOS, UNK)]
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def __getitem__(self, token: str) -> int:
        return self.stoi.get(token, self.stoi[UNK])

    @property
    def pad(self):
        return self.stoi[PAD]

    @property
    def bos(self):
        return self.stoi[BOS]

    @property
    def eos(self):
        return self.stoi[EOS]

    def encode(self, tokens) -> list:
        return [self[t] for t in tokens]

    def decode(self, indices) -> list:
        """Indices -> tokens, stopping at the first <eos> and skipping <bos>/<pad>."""
        out = []
        for i in indices:
            token = self.itos[int(i)]
            if token == EOS:
                break
            if token not in (BOS, PAD):
                out.append(token)
        return out


def pad_batch(sequences, vocab: Vocab, add_bos: bool = False):
    """Index sequences -> (tokens (batch, max_len) padded with <pad>, valid_lens (batch,)).

    Each sequence gets <eos> appended (and <bos> prepended if asked); valid_lens count them.
    """
    seqs = [([vocab.bos] if add_bos else []) + list(s) + [vocab.eos] for s in sequences]
    lens = torch.tensor([len(s) for s in seqs])
    tokens = torch.full((len(seqs), int(lens.max())), vocab.pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        tokens[i, : len(s)] = torch.tensor(s)
    return tokens, lens


class TranslationData:
    """Source/target vocabularies and batches for lists of pairs (corpus.Pair or (src, tgt)).

    A batch is (src (batch, n_src), src_valid_lens, tgt (batch, n_tgt), tgt_valid_lens);
    targets end with <eos>, and the decoder's input is <bos> followed by the target.
    """

    def __init__(self, train_pairs, min_freq: int = 1):
        sources, targets = zip(*(self._split(p) for p in train_pairs))
        self.src_vocab = Vocab(sources, min_freq)
        self.tgt_vocab = Vocab(targets, min_freq)

    @staticmethod
    def _split(pair):
        return (pair.source, pair.target) if hasattr(pair, "source") else (pair[0], pair[1])

    def tensors(self, pairs):
        sources, targets = zip(*(self._split(p) for p in pairs))
        src, src_lens = pad_batch([self.src_vocab.encode(s) for s in sources], self.src_vocab)
        tgt, tgt_lens = pad_batch([self.tgt_vocab.encode(t) for t in targets], self.tgt_vocab)
        return src, src_lens, tgt, tgt_lens

    def batches(self, pairs, batch_size: int, generator: torch.Generator | None = None,
                shuffle: bool = True):
        """Batches of similar source length (less padding), in an order drawn from ``generator``.

        Sorting by length inside windows of 50 batches, then shuffling the batches, keeps both
        padding low and the order random but reproducible.
        """
        order = (torch.randperm(len(pairs), generator=generator).tolist() if shuffle
                 else list(range(len(pairs))))
        window = batch_size * 50
        chunks = []
        for start in range(0, len(order), window):
            part = sorted(order[start:start + window], key=lambda i: len(self._split(pairs[i])[0]))
            chunks += [part[i:i + batch_size] for i in range(0, len(part), batch_size)]
        if shuffle:
            chunks = [chunks[i] for i in torch.randperm(len(chunks), generator=generator).tolist()]
        for chunk in chunks:
            yield self.tensors([pairs[i] for i in chunk])


def read_tsv_pairs(path, max_pairs: int | None = None, lowercase: bool = True):
    """Sentence pairs from a tab-separated file: source <TAB> target [<TAB> anything else].

    This is the format of the Tatoeba/Anki files that d2l uses (for example fra-eng's
    fra.txt). Punctuation is split from words; a line without a tab is an error that names
    the line. Returns [(source tokens, target tokens), ...].
    """
    path = Path(path)
    pairs = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.replace("\u202f", " ").replace("\xa0", " ").rstrip("\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            if len(parts) < 2:
                raise ValueError(f"{path}:{number}: expected 'source<TAB>target', got {line[:60]!r}")
            src, tgt = parts[0], parts[1]
            if lowercase:
                src, tgt = src.lower(), tgt.lower()
            pairs.append((WORDS.findall(src), WORDS.findall(tgt)))
            if max_pairs is not None and len(pairs) >= max_pairs:
                break
    return pairs


# ---- training ------------------------------------------------------------------------
def _check_logits_targets(logits, targets):
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} and targets {tuple(targets.shape)} must "
                         f"agree in (batch, n)")


def masked_cross_entropy(logits, targets, valid_lens, label_smoothing: float = 0.0):
    """Mean cross-entropy over the valid target tokens only (with optional label smoothing):

        loss = sum over real (b, t) of -log softmax(logits[b, t])[targets[b, t]]
               / number of real (b, t),  real: t < valid_lens[b]

    logits (batch, n, vocab), targets (batch, n), valid_lens (batch,): positions at or beyond
    a sequence's valid length (padding) contribute nothing, so padding never trains the model.
    """
    _check_logits_targets(logits, targets)
    positions = torch.arange(targets.shape[1], device=targets.device)     # (n,)
    mask = positions[None] < valid_lens.to(targets.device)[:, None]       # (B, n): real tokens
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets,
                                               reduction="none",
                                               label_smoothing=label_smoothing)  # (B, n)
    return (losses * mask).sum() / mask.sum()                             # mean over real tokens


@contract(warmup=positive_int)
def inverse_sqrt_warmup(warmup: int):
    """Vaswani et al.'s schedule as a factor of the peak rate: a linear rise over ``warmup``
    steps, then decay as 1/sqrt(step): factor(step) = min(step / warmup, sqrt(warmup / step))."""
    return lambda step, total: min((step + 1) / warmup, (warmup / (step + 1)) ** 0.5)


@contract(warmup=positive_int)
def warmup_linear_decay(warmup: int):
    """A linear rise over ``warmup`` steps to the peak rate, then a linear fall to 0 at the
    last step: factor(step) = min(step / warmup, (total - step) / (total - warmup))."""
    return lambda step, total: min((step + 1) / warmup, (total - step) / max(total - warmup, 1))


def linear_decay(step: int, total: int) -> float:
    """The learning rate falls linearly from its peak to 0 over the run."""
    return 1 - step / total


def train_step(model, optimizer, src, src_valid_lens, tgt, tgt_valid_lens, bos: int, *,
               clip: float = 1.0, label_smoothing: float = 0.0):
    """One teacher-forced step: the decoder reads <bos> and the target shifted right by one,
    and predicts every target token at once; the loss over the real (unpadded) tokens is
    backpropagated, the gradient's norm clipped to ``clip``, and ``optimizer`` takes a step.

    src (B, n_src), tgt (B, n_tgt) ending in <eos>, valid lengths (B,). Returns the loss
    (detached, still on the device: reading it would make the host wait).
    """
    dec_input = decoder_input(tgt, bos)                 # (B, n_tgt): <bos>, tgt[:, :-1]
    logits = model(src, dec_input, src_valid_lens)      # (B, n_tgt, vocab)
    loss = masked_cross_entropy(logits, tgt, tgt_valid_lens, label_smoothing)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)  # rescale if ||grad|| > clip
    optimizer.step()
    return loss.detach()


@contract(epochs=positive_int, batch_size=positive_int)
def train_seq2seq(model, data, pairs, *, epochs: int = 4, batch_size: int = 128,
                  lr: float = 0.005, clip: float = 1.0, decay: bool = True, schedule=None,
                  label_smoothing: float = 0.0,
                  generator: torch.Generator | None = None, device=None, progress: bool = True,
                  on_epoch_end=None):
    """Teacher-forced training with Adam, masked loss and gradient clipping.

    data: a TranslationData; pairs: the training pairs. With ``decay`` the learning rate falls
    linearly from ``lr`` to 0 over the run: the last steps are small, so the final model
    depends less on the rounding of any one machine than at a constant rate; ``schedule``
    (step, total steps) -> factor replaces it (e.g. ``inverse_sqrt_warmup(400)``).
    label_smoothing: the cross-entropy's target puts this much mass uniformly on the vocabulary
    (the loss returned includes it). Batches and
    their order come from ``generator``, so the same call gives the same model on one
    machine. The progress bar (tqdm) is display only. Returns the mean loss of each epoch.

    on_epoch_end: an optional function ``(epoch, model)`` called after every epoch (epoch
    counts from 1), for example to score the model on a validation split; it may switch the
    model to evaluation mode, and training resumes in training mode. It draws nothing from
    ``generator``, so it leaves the batches, and with them the trained model, unchanged.
    """
    from tqdm.auto import tqdm  # book tooling: imported only when training runs

    device = device or next(model.parameters()).device
    n_batches = -(-len(pairs) // batch_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    total = epochs * n_batches
    factor = schedule or (linear_decay if decay else (lambda step, total: 1.0))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: factor(step, total))
    bos = data.tgt_vocab.bos
    history = []
    model.train()
    with tqdm(total=epochs * n_batches, disable=not progress, desc="training") as bar:
        for epoch in range(epochs):
            losses = []
            for src, src_lens, tgt, tgt_lens in data.batches(pairs, batch_size, generator):
                loss = train_step(model, optimizer, src.to(device), src_lens.to(device),
                                  tgt.to(device), tgt_lens, bos, clip=clip,
                                  label_smoothing=label_smoothing)
                scheduler.step()
                losses.append(loss)
                bar.update(1)
            history.append(torch.stack(losses).mean().item())  # one host read per epoch
            bar.set_postfix(epoch=epoch + 1, loss=f"{history[-1]:.3f}", refresh=False)
            if on_epoch_end is not None:
                on_epoch_end(epoch + 1, model)
                model.train()
    return history


# ---- using a trained model -----------------------------------------------------------
@contract(batch_size=positive_int, max_len=positive_int)
def translate(model, data, pairs, *, batch_size: int = 250, max_len: int = 60, device=None):
    """Greedy translations of ``pairs`` (corpus.Pair or (source, target); the targets are not
    used) as lists of target tokens, without <bos>/<eos>.

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


@contract(batch_size=positive_int)
def teacher_forced_weights(model, data, pairs, *, batch_size: int = 250, device=None):
    """The attention decoder's weights while it reads the reference translations (teacher
    forcing), so that row t belongs to target token t: (B, n_tgt, n_src) on the CPU.

    n_tgt counts the target tokens and the final <eos>, n_src the source tokens and their
    <eos>; rows and columns past a sentence's own lengths are zero. model: an EncoderDecoder
    whose decoder keeps ``attention_weights`` (B, n_tgt, n_src) of its last call.
    """
    if not hasattr(model.decoder, "attention_weights"):
        raise TypeError(f"{type(model.decoder).__name__} keeps no attention_weights")
    device = device or next(model.parameters()).device
    chunks = []
    with evaluating(model):
        for start in range(0, len(pairs), batch_size):
            src, src_lens, tgt, tgt_lens = data.tensors(pairs[start:start + batch_size])
            model(src.to(device), decoder_input(tgt, data.tgt_vocab.bos).to(device),
                  src_lens.to(device))
            if model.decoder.attention_weights is None:
                raise TypeError(f"{type(model.decoder).__name__} computed no attention weights")
            weights = model.decoder.attention_weights.float().cpu()
            real = torch.arange(weights.shape[1])[None, :] < tgt_lens[:, None]  # (B, n_tgt)
            chunks.append(weights * real[..., None])  # rows read from padding: zero
    n_tgt, n_src = max(c.shape[1] for c in chunks), max(c.shape[2] for c in chunks)
    return torch.cat([torch.nn.functional.pad(c, (0, n_src - c.shape[2], 0, n_tgt - c.shape[1]))
                      for c in chunks])


# ---- metrics -------------------------------------------------------------------------
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
    import sacrebleu  # imported only when BLEU is computed

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


def alignment_offsets(weights, alignments) -> list:
    """For each target token, how far its largest attention weight lies from the nearest
    source token it truly comes from: argmax_j weights[b, t, j] - (nearest true position).

    0 is a hit, +1 one source token to the right (later) of the truth, -1 one to the left.
    Where two true positions are equally near, the one to the right is taken (the offset is
    then negative), so a count of positive offsets is never inflated by the tie. Arguments
    as in ``alignment_accuracy``, whose value is the share of zeros here. Returns one int per
    counted target token, sentence by sentence.
    """
    if weights.dim() != 3 or weights.shape[0] != len(alignments):
        raise ValueError(f"weights must be (batch={len(alignments)}, n_tgt, n_src), got shape "
                         f"{tuple(weights.shape)}")
    offsets = []
    for row, truth in zip(weights.argmax(-1).tolist(), alignments):
        for position, sources in zip(row, truth):
            offsets.append(min((position - s for s in sources), key=lambda o: (abs(o), o)))
    return offsets


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple:
    """Wilson's score interval for a rate measured as ``successes`` out of ``n`` independent
    trials (z = 1.96: about 95% coverage).

    Unlike the normal approximation p ± z·sqrt(p(1-p)/n), it stays inside [0, 1] and does not
    shrink to a point when p is 0 or 1, which matters for small buckets with rates near 100%.
    Returns (low, high).
    """
    if not (isinstance(n, int) and n > 0 and isinstance(successes, int) and 0 <= successes <= n):
        raise ValueError(f"need integers 0 <= successes <= n and n > 0, got successes={successes!r}, "
                         f"n={n!r}")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5
    return max(0.0, centre - half), min(1.0, centre + half)
