"""Tokens to tensors for the translation models: vocabularies, padded batches, and sentence
pairs read from a tab-separated file."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import torch

from ..contracts import contract, positive_int

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
WORDS = re.compile(r"\w+(?:'\w+)?|[^\w\s]")  # words (with an apostrophe) and punctuation marks


class Vocab:
    """Token <-> index. Index 0 is <pad>, then <bos>, <eos>, <unk>, then tokens by frequency
    (ties alphabetically, so the same corpus always gives the same indices)."""

    def __init__(self, sentences, min_freq: int = 1):
        counts = Counter(tok for sentence in sentences for tok in sentence)
        kept = sorted((t for t, c in counts.items() if c >= min_freq),
                      key=lambda t: (-counts[t], t))
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


def source_and_target(pair) -> tuple:
    """The two token lists of a ``corpus.Pair`` or of a (source, target) tuple."""
    return (pair.source, pair.target) if hasattr(pair, "source") else (pair[0], pair[1])


class TranslationData:
    """Source/target vocabularies and batches for lists of pairs (``corpus.Pair`` or
    (source, target) tuples).

    A batch is (src (batch, n_src), src_valid_lens, tgt (batch, n_tgt), tgt_valid_lens);
    targets end with <eos>, and the decoder's input is <bos> followed by the target.
    """

    def __init__(self, train_pairs, min_freq: int = 1):
        sources, targets = zip(*(source_and_target(p) for p in train_pairs), strict=True)
        self.src_vocab = Vocab(sources, min_freq)
        self.tgt_vocab = Vocab(targets, min_freq)

    def tensors(self, pairs):
        sources, targets = zip(*(source_and_target(p) for p in pairs), strict=True)
        src, src_lens = pad_batch([self.src_vocab.encode(s) for s in sources], self.src_vocab)
        tgt, tgt_lens = pad_batch([self.tgt_vocab.encode(t) for t in targets], self.tgt_vocab)
        return src, src_lens, tgt, tgt_lens

    @contract(batch_size=positive_int)
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
            part = sorted(order[start:start + window],
                          key=lambda i: len(source_and_target(pairs[i])[0]))
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
            if len(parts) < 2:  # the file's content, not an argument: reported where it is
                raise ValueError(f"{path}:{number}: expected 'source<TAB>target', got "
                                 f"{line[:60]!r}")
            src, tgt = parts[0], parts[1]
            if lowercase:
                src, tgt = src.lower(), tgt.lower()
            pairs.append((WORDS.findall(src), WORDS.findall(tgt)))
            if max_pairs is not None and len(pairs) >= max_pairs:
                break
    return pairs
