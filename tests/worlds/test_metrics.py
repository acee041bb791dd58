"""Exact match, BLEU, where attention looks against the true alignment, and Wilson's interval."""
import pytest
import torch

from attention_core.worlds.metrics import (
    alignment_accuracy,
    alignment_offsets,
    bleu,
    exact_match,
    wilson_interval,
)


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
