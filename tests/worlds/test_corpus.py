"""The generated corpus of chapters 4 and 8: numbers and dates in both languages, their
alignments, and distinct, reproducible splits."""
import datetime
import random

import pytest
import torch

from attention_core.worlds.corpus import (
    Pair,
    chinese_number,
    date_pair,
    distinct_pairs,
    english_number,
    join_items,
    make_corpus,
    make_length_test,
    make_splits,
    number_pair,
    random_pair,
)


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
    (999999, "nine hundred and ninety nine thousand , nine hundred and ninety nine",
     "九十九万九千九百九十九"),
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
    assert q.source[3:] == ["december", "22nd", ",", "1999"]
    assert q.target[3] == "1999" and q.alignment[3] == {6}


def test_sentences_join_items_and_every_alignment_points_into_the_source():
    for seed in range(30):
        p = random_pair(random.Random(seed), 3)
        assert p.source.count(";") == 2 and p.target.count("；") == 2
        assert len(p.alignment) == len(p.target)
        assert all(a and all(0 <= i < len(p.source) for i in a) for a in p.alignment)
        for t, a in zip(p.target, p.alignment, strict=True):
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


def test_distinct_pairs_skip_the_sentences_seen_and_remember_their_own():
    made = iter([Pair(["a"], [], []), Pair(["b"], [], []), Pair(["a"], [], []),
                 Pair(["c"], [], [])])
    seen = {"b"}
    pairs = distinct_pairs(lambda: next(made), 2, seen)
    assert [p.source for p in pairs] == [["a"], ["c"]] and seen == {"a", "b", "c"}
