"""Chapter 4's solutions: decoder variants, times of day, and the alignment measures."""
import pytest
import torch

from attention_core.seq2seq import make_model
from attention_core.solutions_support.ch04 import (
    BiGRUEncoder,
    VariantDecoder,
    length_buckets,
    make_time_corpus,
    make_variant,
    random_time,
    time_pair,
    time_token_kind,
    where_misses_land,
    where_time_tokens_look,
)
from attention_core.worlds.corpus import Pair, join_items, number_pair, python_rng
from attention_core.worlds.translation import teacher_forced_weights
from attention_core.worlds.vocab import TranslationData


def batch(generator_seed=0):
    g = torch.Generator().manual_seed(generator_seed)
    src = torch.randint(4, 30, (3, 7), generator=g)
    lens = torch.tensor([7, 3, 5])
    tokens = torch.randint(0, 20, (3, 5), generator=g)
    return src, lens, tokens


def test_the_default_variant_is_the_chapters_attention_decoder():
    src, lens, tokens = batch()
    torch.manual_seed(0)
    chapter = make_model("attention", 30, 20, embed_size=8, num_hiddens=16)
    torch.manual_seed(0)
    variant = make_variant(30, 20, embed_size=8, num_hiddens=16)
    assert chapter.state_dict().keys() == variant.state_dict().keys()
    torch.testing.assert_close(variant(src, tokens, lens), chapter(src, tokens, lens),
                               rtol=0, atol=0)
    torch.testing.assert_close(variant.decoder.attention_weights, chapter.decoder.attention_weights)


@pytest.mark.parametrize("variant", [dict(bidirectional=True), dict(score="dot"),
                                     dict(deep_output=True),
                                     dict(bidirectional=True, deep_output=True)])
def test_every_variant_gives_logits_and_weights_that_sum_to_one_over_the_valid_keys(variant):
    src, lens, tokens = batch()
    model = make_variant(30, 20, embed_size=8, num_hiddens=16, **variant)
    assert model(src, tokens, lens).shape == (3, 5, 20)
    weights = model.decoder.attention_weights                    # (B, n_tgt, n_src)
    assert weights.shape == (3, 5, 7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 5))
    beyond = torch.arange(7)[None, None] >= lens[:, None, None]  # padding: no weight
    assert (weights[beyond.expand_as(weights)] == 0).all()


def test_the_bidirectional_encoder_joins_both_directions_and_starts_from_the_forward_one():
    src, lens, _ = batch()
    encoder = BiGRUEncoder(30, 8, 16)
    outputs, state = encoder(src, lens)
    assert outputs.shape == (3, 7, 32) and state.shape == (1, 3, 16)
    for b, n in enumerate(lens.tolist()):
        torch.testing.assert_close(outputs[b, n - 1, :16], state[0, b])  # forward: ends at n - 1
        assert (outputs[b, n:] == 0).all()                               # nothing past the end
    # the backward half at position j has read tokens j .. n - 1 only: change a later token
    changed = src.clone()
    changed[0, 6] = (src[0, 6] + 1 - 4) % 26 + 4
    again, _ = encoder(changed, lens)
    torch.testing.assert_close(again[0, :, :16][:6], outputs[0, :, :16][:6])  # forward: unaffected
    assert not torch.allclose(again[0, 0, 16:], outputs[0, 0, 16:])           # backward: affected


def test_the_decoder_sizes_follow_the_keys_and_the_output_layer():
    decoder = VariantDecoder(20, 8, 16, key_size=32, deep_output=True)
    assert decoder.rnn.input_size == 8 + 32 and decoder.dense.in_features == 16 + 32
    assert decoder.attention.W_k.in_features == 32
    dot = VariantDecoder(20, 8, 16, score="dot")
    assert sum(p.numel() for p in dot.attention.parameters()) == 0
    with pytest.raises(ValueError, match="one size"):
        VariantDecoder(20, 8, 16, score="dot", key_size=32)
    with pytest.raises(ValueError, match="score"):
        VariantDecoder(20, 8, 16, score="cosine")


@pytest.mark.parametrize("hour, minute, source, target", [
    (15, 30, "half past three in the afternoon", "下午 3 点 30 分"),
    (15, 45, "a quarter to four in the afternoon", "下午 3 点 45 分"),
    (15, 0, "three o'clock in the afternoon", "下午 3 点"),
    (9, 5, "five past nine in the morning", "上午 9 点 5 分"),
    (21, 35, "twenty five to ten in the evening", "晚上 9 点 35 分"),
    (13, 55, "five to two in the afternoon", "下午 1 点 55 分"),
])
def test_times_of_day_read_as_english_and_chinese_do(hour, minute, source, target):
    pair = time_pair(hour, minute)
    assert " ".join(pair.source) == source and " ".join(pair.target) == target


def test_the_alignment_of_a_time_names_the_words_that_decide_each_token():
    pair = time_pair(15, 45)  # a quarter to four in the afternoon
    words = [[pair.source[i] for i in sorted(a)] for a in pair.alignment]
    assert words == [["afternoon"], ["to", "four"], ["to", "four"], ["a", "quarter", "to"],
                     ["a", "quarter", "to"]]
    hour = time_pair(15, 0)  # three o'clock in the afternoon: 点 from "three" and "o'clock"
    assert [hour.source[i] for i in sorted(hour.alignment[2])] == ["three", "o'clock"]


def test_times_outside_a_part_of_the_day_or_off_the_five_minutes_are_refused():
    for hour, minute in ((12, 0), (3, 0), (23, 0), (15, 7), (11, 45), (22, 40)):
        with pytest.raises(ValueError):
            time_pair(hour, minute)


def test_every_random_time_is_valid_and_the_corpus_is_distinct_and_reproducible():
    rng = python_rng(torch.Generator().manual_seed(0))
    for _ in range(300):
        pair = random_time(rng)
        assert all(a and max(a) < len(pair.source) for a in pair.alignment)
    corpus = make_time_corpus(200, torch.Generator().manual_seed(1), max_items=2, share_times=0.5)
    assert len({" ".join(p.source) for p in corpus}) == 200
    again = make_time_corpus(200, torch.Generator().manual_seed(1), max_items=2, share_times=0.5)
    assert [p.source for p in again] == [p.source for p in corpus]
    assert any(time_token_kind(p, 0) == "period" for p in corpus)
    assert any(p.target[0] not in ("上午", "下午", "晚上") for p in corpus)  # dates and numbers too


def test_the_kinds_of_time_tokens():
    pair = join_items([time_pair(15, 45), number_pair(12), time_pair(9, 0)])
    kinds = [time_token_kind(pair, t) for t in range(len(pair.target))]
    assert kinds == ["period", "hour (to)", "点", "minutes (to)", "分", None, None, None, None,
                     "period", "hour (past)", "点"]


def one_hot_on_truth(pairs, shift=0):
    """Weights whose largest entry is ``shift`` positions right of the first true source."""
    n_tgt, n_src = max(len(p.target) for p in pairs), max(len(p.source) for p in pairs) + 1
    weights = torch.zeros(len(pairs), n_tgt, n_src)
    for b, p in enumerate(pairs):
        for t, sources in enumerate(p.alignment):
            weights[b, t, min(min(sources) + shift, n_src - 1)] = 1
    return weights


def test_the_measures_count_hits_and_misses_to_the_right():
    pairs = [number_pair(412305), number_pair(17)]
    perfect = where_misses_land(one_hot_on_truth(pairs), pairs)
    assert perfect["word_hit"] == perfect["unit_hit"] == 1 and perfect["word_misses"] == 0
    right = where_misses_land(one_hot_on_truth(pairs, shift=1), pairs)
    assert right["word_misses"] >= 1 and right["word_misses"] == right["word_misses_right"] + sum(
        n for o, n in right["word_offsets"].items() if o != 1)


def test_where_time_tokens_look_counts_hits_and_later_looks():
    pairs = [time_pair(15, 45), time_pair(9, 5)]
    looks = where_time_tokens_look(one_hot_on_truth(pairs), pairs)
    assert all(hits == tokens and later == 0 for tokens, hits, later, _ in looks.values())
    period = one_hot_on_truth(pairs)
    for b, p in enumerate(pairs):  # the period read one step after its noun: later, not a hit
        period[b, 0] = 0
        period[b, 0, max(p.alignment[0]) + 1] = 1
    tokens, hits, later, words = where_time_tokens_look(period, pairs)["period"]
    assert (tokens, hits, later) == (2, 0, 2) and words["<eos>"] == 2


def test_length_buckets_count_right_sentences_per_bucket():
    pairs = [Pair(["a"] * n, ["x"], [{0}]) for n in (3, 4, 12)]
    rows = length_buckets([["x"], ["y"], ["x"]], pairs, buckets=((1, 5), (6, 20)))
    assert [(r[2], r[3]) for r in rows] == [(2, 1), (1, 1)]
    assert rows[0][4] == 0.5 and 0 < rows[0][5][0] < 0.5 < rows[0][5][1] < 1


def test_teacher_forced_weights_work_with_every_variant():
    pairs = make_time_corpus(20, torch.Generator().manual_seed(0), max_items=2)
    data = TranslationData(pairs)
    model = make_variant(len(data.src_vocab), len(data.tgt_vocab), 8, 16, bidirectional=True,
                         deep_output=True)
    weights = teacher_forced_weights(model, data, pairs)
    assert weights.shape[0] == 20
    assert len(where_time_tokens_look(weights, pairs)) >= 1
