"""Vocabularies, padded batches and sentence pairs read from a file."""
import pytest
import torch

from attention_core.worlds.corpus import make_corpus
from attention_core.worlds.vocab import TranslationData, Vocab, pad_batch, read_tsv_pairs


def seeded(seed):
    return torch.Generator().manual_seed(seed)


def test_vocab_and_padding():
    vocab = Vocab([["b", "a", "a"], ["c"]])
    assert vocab.itos[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"] and vocab.itos[4] == "a"
    assert vocab["zzz"] == vocab.stoi["<unk>"]
    tokens, lens = pad_batch([vocab.encode(["a"]), vocab.encode(["b", "c"])], vocab, add_bos=True)
    assert lens.tolist() == [3, 4] and tokens[0, 3] == vocab.pad
    assert vocab.decode(tokens[1].tolist()) == ["b", "c"]


def test_tsv_loader(tmp_path):
    path = tmp_path / "fra.txt"
    path.write_text("Go.\tVa !\tCC-BY 2.0 (France) Attribution\n"
                    "I'm OK.\tÇa va.\tCC-BY\n\n"
                    "Hello, world!\tBonjour\u202fle monde !\tx\n", encoding="utf-8")
    pairs = read_tsv_pairs(path)
    assert pairs == [(["go", "."], ["va", "!"]), (["i'm", "ok", "."], ["ça", "va", "."]),
                     (["hello", ",", "world", "!"], ["bonjour", "le", "monde", "!"])]
    data = TranslationData(pairs)
    src, src_lens, tgt, tgt_lens = data.tensors(pairs)
    assert src.shape == (3, 5) and src_lens.tolist() == [3, 4, 5]
    assert read_tsv_pairs(path, max_pairs=1) == pairs[:1]
    (tmp_path / "bad.txt").write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.txt:1: expected 'source<TAB>target'"):
        read_tsv_pairs(tmp_path / "bad.txt")


def test_batches_cover_every_pair_once_in_an_order_fixed_by_the_generator():
    pairs = make_corpus(230, seeded(0))
    data = TranslationData(pairs)
    def sources(gen):
        return [tuple(row.tolist()) for src, *_ in data.batches(pairs, 32, gen) for row in src]
    first, again = sources(seeded(3)), sources(seeded(3))
    assert first == again and len(first) == 230 and sources(seeded(4)) != first
    unshuffled = [src.shape[0] for src, *_ in data.batches(pairs, 32, shuffle=False)]
    assert sum(unshuffled) == 230
