"""The translation world: the generated corpus, its vocabulary and batches, the training loop
and the metrics."""
import datetime
import functools
import random

import pytest
import torch

from attention_core.seq2seq import make_model
from attention_core.decoding import greedy_decode
from attention_core.worlds.translation import (Pair, TranslationData, Vocab, alignment_accuracy,
                                               alignment_offsets, bleu, chinese_number, date_pair,
                                               english_number, exact_match, join_items, make_corpus,
                                               make_length_test, make_splits, masked_cross_entropy,
                                               number_pair, pad_batch, random_pair, read_tsv_pairs,
                                               teacher_forced_weights, train_seq2seq, translate,
                                               wilson_interval)


def seeded(seed):
    return torch.Generator().manual_seed(seed)


def zh(n):
    return "".join(c for c, _ in chinese_number(n))


def en(n):
    return " ".join(w for w, _ in english_number(n))


@pytest.mark.parametrize("n, english, chinese", [
    (412305, "four hundred and twelve thousand , three hundred and five", "四十一万二千三百零五"),
    (100005, "one hundred thousand and five", "十万零五"),
    (100500, "one hundred thousand , five hundred", "十万零五百"),
    (110000, "one hundred and ten thousand", "十一万"),
    (1010, "one thousand and ten", "一千零一十"),
    (10010, "ten thousand and ten", "一万零一十"),
    (15, "fifteen", "十五"),
    (115, "one hundred and fifteen", "一百一十五"),
    (80001, "eighty thousand and one", "八万零一"),
    (999999, "nine hundred and ninety nine thousand , nine hundred and ninety nine", "九十九万九千九百九十九"),
])
def test_numbers_in_both_languages(n, english, chinese):
    assert en(n) == english and zh(n) == chinese


def test_number_alignment_by_hand():
    p = number_pair(412305)
    src = p.source  # four hundred and twelve thousand , three hundred and five
    words = [{src[i] for i in a} for a in p.alignment]
    assert p.target == list("四十一万二千三百零五")
    assert words == [{"four", "hundred"}, {"four", "hundred"}, {"twelve"}, {"twelve", "thousand"},
                     {"twelve"}, {"twelve"}, {"three", "hundred"}, {"three", "hundred"},
                     {"and", "five"}, {"five"}]


def test_date_alignment_and_reordering_by_hand():
    p = date_pair(datetime.date(2021, 3, 3), day_first=True)
    assert p.source == ["the", "3rd", "of", "march", ",", "2021"]
    assert p.target == ["2021", "年", "3", "月", "3", "日"]
    assert p.alignment == [{5}, {5}, {3}, {3}, {1}, {1}]
    q = join_items([number_pair(1000), date_pair(datetime.date(1999, 12, 22), day_first=False)])
    assert q.source[3:] == ["december", "22nd", ",", "1999"] and q.target[3] == "1999" and q.alignment[3] == {6}


def test_sentences_join_items_and_every_alignment_points_into_the_source():
    for seed in range(30):
        p = random_pair(random.Random(seed), 3)
        assert p.source.count(";") == 2 and p.target.count("；") == 2
        assert len(p.alignment) == len(p.target)
        assert all(a and all(0 <= i < len(p.source) for i in a) for a in p.alignment)
        for t, a in zip(p.target, p.alignment):
            if t == "；":
                assert [p.source[i] for i in a] == [";"]


def test_corpus_is_deterministic_distinct_and_split_without_overlap():
    a, b = make_corpus(300, seeded(5)), make_corpus(300, seeded(5))
    assert [p.source for p in a] == [p.source for p in b]
    assert [p.source for p in make_corpus(300, seeded(6))] != [p.source for p in a]
    assert len({" ".join(p.source) for p in a}) == 300
    train, valid, test = make_splits(200, 50, 50, seeded(1))
    keys = [{" ".join(p.source) for p in s} for s in (train, valid, test)]
    assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    lt = make_length_test(per_items=20, exclude=[p.source for p in train])
    assert [p.source.count(";") + 1 for p in lt] == [k for k in range(1, 5) for _ in range(20)]
    assert not {" ".join(p.source) for p in lt} & keys[0]


def test_corpus_bad_input():
    with pytest.raises(ValueError, match=r"n must be in \[1, 10\^6\)"):
        english_number(10**6)
    with pytest.raises(ValueError, match="n_pairs must be a positive int"):
        make_corpus(0)
    with pytest.raises(ValueError, match="alignment has 1 entries for 2 target tokens"):
        Pair(["a"], ["x", "y"], [{0}])


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


def test_masked_loss_ignores_padding():
    logits = torch.randn(2, 4, 6)
    targets = torch.randint(6, (2, 4))
    lens = torch.tensor([2, 4])
    changed = logits.clone()
    changed[0, 2:] = 100.0  # anything at padded positions
    assert masked_cross_entropy(logits, targets, lens) == masked_cross_entropy(changed, targets, lens)
    full = torch.nn.functional.cross_entropy(logits[1], targets[1])
    first = torch.nn.functional.cross_entropy(logits[0, :2], targets[0, :2])
    torch.testing.assert_close(masked_cross_entropy(logits, targets, lens), (4 * full + 2 * first) / 6)
    with pytest.raises(ValueError, match="must agree"):
        masked_cross_entropy(logits, targets[:, :3], lens)


def test_metrics():
    refs = [["2021", "年"], ["十", "五"]]
    assert exact_match([["2021", "年"], ["十"]], refs) == 0.5
    long = [["2021", "年", "3", "月", "3", "日"], list("四十一万二千三百零五")]
    assert bleu(long, long) == pytest.approx(100)
    assert 0 < bleu([long[0], list("四十一万二千三百零六")], long) < 100
    weights = torch.zeros(2, 3, 4)
    weights[0, 0, 1] = weights[0, 1, 2] = weights[1, 0, 3] = 1
    assert alignment_accuracy(weights, [[{1}, {0}], [{3}]]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="2 predictions for 1 references"):
        exact_match(refs, refs[:1])


def test_batches_cover_every_pair_once_in_an_order_fixed_by_the_generator():
    pairs = make_corpus(230, seeded(0))
    data = TranslationData(pairs)
    def sources(gen):
        return [tuple(row.tolist()) for src, *_ in data.batches(pairs, 32, gen) for row in src]
    first, again = sources(seeded(3)), sources(seeded(3))
    assert first == again and len(first) == 230 and sources(seeded(4)) != first
    unshuffled = [src.shape[0] for src, *_ in data.batches(pairs, 32, shuffle=False)]
    assert sum(unshuffled) == 230


def test_training_lowers_the_loss_and_decays_the_learning_rate():
    train, _, _ = make_splits(300, 10, 10, seeded(0), max_items=1)
    data = TranslationData(train)
    torch.manual_seed(0)
    model = make_model("attention", len(data.src_vocab), len(data.tgt_vocab), num_hiddens=32,
                       embed_size=16)
    history = train_seq2seq(model, data, train, epochs=10, batch_size=32, lr=0.01,
                            generator=seeded(0), progress=False)
    assert len(history) == 10 and history[-1] < history[0] / 2
    assert model.training  # left in training mode, as a training loop should


def test_learning_rate_schedules():
    from attention_core.worlds.translation import (inverse_sqrt_warmup, linear_decay,
                                                   warmup_linear_decay)
    f = inverse_sqrt_warmup(100)
    assert f(0, 1000) == pytest.approx(0.01) and f(99, 1000) == pytest.approx(1.0)
    assert f(399, 1000) == pytest.approx(0.5)  # sqrt(100 / 400): 1/sqrt(step) after the peak
    g = warmup_linear_decay(100)
    assert g(49, 1000) == pytest.approx(0.5) and g(100, 1000) == pytest.approx(1.0)
    assert g(550, 1000) == pytest.approx(0.5) and g(999, 1000) == pytest.approx(1 / 900)
    assert linear_decay(250, 1000) == 0.75
    with pytest.raises(ValueError, match="warmup must be a positive int"):
        warmup_linear_decay(0)


@functools.lru_cache(maxsize=None)
def small_trained_model(epochs=10, kind="attention"):
    """A small model trained on one-item sentences (cached: the tests only read it)."""
    train, _, test = make_splits(300, 10, 20, seeded(0), max_items=1)
    data = TranslationData(train)
    torch.manual_seed(0)
    model = make_model(kind, len(data.src_vocab), len(data.tgt_vocab), num_hiddens=32,
                       embed_size=16)
    train_seq2seq(model, data, train, epochs=epochs, batch_size=32, lr=0.01, generator=seeded(0),
                  progress=False)
    return model, data, train, test


def test_epoch_callback_is_called_after_every_epoch_and_changes_nothing():
    train, _, _ = make_splits(200, 10, 10, seeded(0), max_items=1)
    data = TranslationData(train)
    references = [p.target for p in train[:10]]

    def run(callback):
        torch.manual_seed(0)
        model = make_model("attention", len(data.src_vocab), len(data.tgt_vocab), num_hiddens=16,
                           embed_size=8)
        history = train_seq2seq(model, data, train, epochs=2, batch_size=50, lr=0.01,
                                generator=seeded(0), progress=False, on_epoch_end=callback)
        return model, history

    calls = []

    def validate(epoch, model):  # what a validation check does: decode in evaluation mode
        model.eval()
        calls.append((epoch, exact_match(translate(model, data, train[:10]), references)))

    checked, history_checked = run(validate)
    plain, history = run(None)
    assert [epoch for epoch, _ in calls] == [1, 2] and all(0 <= em <= 1 for _, em in calls)
    assert checked.training  # training resumed in training mode after each check
    assert history_checked == history  # the checks change neither the batches nor the model
    for a, b in zip(checked.parameters(), plain.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_translate_equals_greedy_decoding_in_batches():
    model, data, _, test = small_trained_model()
    out = translate(model, data, test, batch_size=7)
    assert len(out) == len(test) and out == translate(model, data, test)
    src, src_lens, _, _ = data.tensors(test)
    tokens, _ = greedy_decode(model, src, src_lens, data.tgt_vocab.bos, data.tgt_vocab.eos)
    assert out == [data.tgt_vocab.decode(row) for row in tokens.tolist()]
    assert not any("<bos>" in o or "<eos>" in o for o in out)
    assert translate(model, data, [(["march", "3rd", ",", "2021"], [])], max_len=2)[0] == \
        translate(model, data, [(["march", "3rd", ",", "2021"], [])])[0][:2]
    assert model.training  # decoding gives the model back in the mode it was in
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        translate(model, data, test, batch_size=0)


def test_teacher_forced_weights_are_rows_of_the_padded_batch():
    model, data, _, test = small_trained_model(epochs=1)
    w = teacher_forced_weights(model, data, test, batch_size=6)
    n_tgt = max(len(p.target) for p in test) + 1
    n_src = max(len(p.source) for p in test) + 1
    assert w.shape == (len(test), n_tgt, n_src) and w.device.type == "cpu"
    for b, p in enumerate(test):  # each real row sums to one over the sentence's own source
        rows = w[b, : len(p.target) + 1]
        torch.testing.assert_close(rows[:, : len(p.source) + 1].sum(-1), torch.ones(len(p.target) + 1))
        assert rows[:, len(p.source) + 1:].abs().sum() == 0 and w[b, len(p.target) + 1:].abs().sum() == 0
    one = teacher_forced_weights(model, data, test[:1])
    torch.testing.assert_close(one[0], w[0, : one.shape[1], : one.shape[2]])
    plain, *_ = small_trained_model(epochs=1, kind="plain")
    with pytest.raises(TypeError, match="PlainDecoder computed no attention weights"):
        teacher_forced_weights(plain, data, test)


def test_alignment_offsets_by_hand():
    weights = torch.zeros(2, 3, 6)
    weights[0, 0, 2] = weights[0, 1, 4] = weights[0, 2, 0] = weights[1, 0, 3] = 1
    truth = [[{2}, {1, 3}, {5}], [{2, 4}]]
    # a hit; one right of 3; five left of 5; halfway between 2 and 4: the tie counts as -1
    assert alignment_offsets(weights, truth) == [0, 1, -5, -1]
    share_of_zeros = alignment_offsets(weights, truth).count(0) / 4
    assert alignment_accuracy(weights, truth) == share_of_zeros
    with pytest.raises(ValueError, match=r"weights must be \(batch=1, n_tgt, n_src\)"):
        alignment_offsets(weights, truth[:1])


def test_wilson_interval():
    low, high = wilson_interval(43, 47)  # the textbook formula, by hand
    p, z, n = 43 / 47, 1.96, 47
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * (p * (1 - p) / n + z**2 / (4 * n**2)) ** 0.5
    assert (low, high) == pytest.approx((centre - half, centre + half))
    assert low < p < high and 0.78 < low < 0.81 and 0.96 < high < 0.98
    assert wilson_interval(47, 47)[1] == 1.0 and wilson_interval(47, 47)[0] < 1  # never a point
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(0, 10)[1] > 0
    a, b = wilson_interval(430, 470), wilson_interval(43, 47)
    assert a[1] - a[0] < (b[1] - b[0]) / 3  # ten times the sentences: about a third the width
    with pytest.raises(ValueError, match="0 <= successes <= n"):
        wilson_interval(5, 4)
