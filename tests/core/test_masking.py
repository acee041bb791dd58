import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core import causal_mask, masked_softmax, valid_lens_to_mask


def test_rows_sum_to_one_over_valid_keys_and_zero_beyond(device):
    scores = torch.randn(2, 3, 5, device=device)
    w = masked_softmax(scores, torch.tensor([2, 5], device=device))
    assert torch.all(w[0, :, 2:] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, device=device))
    # the valid part is an ordinary softmax of the valid scores
    torch.testing.assert_close(w[0, :, :2], torch.softmax(scores[0, :, :2], -1))


def test_per_query_lengths():
    scores = torch.zeros(1, 3, 4)
    w = masked_softmax(scores, torch.tensor([[1, 2, 4]]))
    expected = torch.tensor([[[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0.25, 0.25, 0.25, 0.25]]])
    torch.testing.assert_close(w, expected)


def test_zero_length_gives_zero_weights_not_uniform_or_nan():
    w = masked_softmax(torch.randn(2, 2, 3), torch.tensor([0, 3]))
    assert torch.all(w[0] == 0)
    assert not torch.isnan(w).any()


def test_zero_length_has_finite_gradient():
    scores = torch.randn(2, 2, 3, requires_grad=True)
    masked_softmax(scores, torch.tensor([0, 2])).sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_heads_dimension_broadcasts():
    scores = torch.randn(2, 4, 3, 5)  # (batch, heads, n_q, n_k)
    w = masked_softmax(scores, torch.tensor([1, 3]))
    assert torch.all(w[0, ..., 1:] == 0) and torch.all(w[1, ..., 3:] == 0)


def test_neg_inf_scores_are_treated_as_masked():
    scores = torch.tensor([[[0.0, float("-inf"), 0.0]], [[float("-inf")] * 3]])
    w = masked_softmax(scores)
    torch.testing.assert_close(w, torch.tensor([[[0.5, 0, 0.5]], [[0.0, 0, 0]]]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_low_and_high_precision(dtype):
    scores = torch.randn(2, 3, 4).to(dtype)
    w = masked_softmax(scores, torch.tensor([2, 0]))
    assert w.dtype == dtype and torch.isfinite(w).all()
    assert torch.all(w[0, :, 2:] == 0) and torch.all(w[1] == 0)


@settings(max_examples=60, deadline=None)
@given(batch=st.integers(1, 4), n_q=st.integers(1, 5), n_k=st.integers(1, 6),
       scale=st.sampled_from([1e-3, 1.0, 1e2, 1e4]), data=st.data())
def test_property_weights_are_a_distribution_over_valid_keys(batch, n_q, n_k, scale, data):
    lens = data.draw(st.lists(st.integers(0, n_k), min_size=batch, max_size=batch))
    scores = torch.randn(batch, n_q, n_k) * scale
    w = masked_softmax(scores, torch.tensor(lens))
    assert torch.isfinite(w).all()
    assert torch.all(w >= 0)
    for b, n in enumerate(lens):
        assert torch.all(w[b, :, n:] == 0)
        expected = 1.0 if n > 0 else 0.0
        torch.testing.assert_close(w[b].sum(-1), torch.full((n_q,), expected))


def test_mask_helper_shapes_and_values():
    mask = valid_lens_to_mask(torch.tensor([1, 2]), 4, 3)  # 2 sequences, 4 queries, 3 keys
    assert mask.shape == (2, 1, 3) and mask.tolist() == [[[True, False, False]],
                                                         [[True, True, False]]]
    assert valid_lens_to_mask(torch.ones(2, 4, dtype=torch.long), 4, 3).shape == (2, 4, 3)
    assert valid_lens_to_mask([3, 0], 1, 3).tolist() == [[[True] * 3], [[False] * 3]]  # a list


def test_explicit_mask_combines_with_valid_lens():
    scores = torch.zeros(1, 2, 4)
    mask = torch.tensor([[True, False, True, True]])  # broadcast over queries
    w = masked_softmax(scores, torch.tensor([3]), mask=mask)
    torch.testing.assert_close(w, torch.tensor([[[0.5, 0, 0.5, 0], [0.5, 0, 0.5, 0]]]))
    # any shape
    assert masked_softmax(torch.zeros(5), mask=torch.zeros(5, dtype=torch.bool)).sum() == 0


def test_causal_mask_is_lower_triangular():
    assert causal_mask(3, 3).tolist() == [[True, False, False], [True, True, False],
                                          [True, True, True]]
    assert causal_mask(2, 4).sum().item() == 3  # top-left aligned, as in torch


def test_nan_propagates_as_in_torch():
    """No value scan inside: a NaN score gives NaN weights in its row, as torch.softmax does."""
    w = masked_softmax(torch.tensor([[[float("nan"), 0.0]], [[1.0, 0.0]]]))
    assert torch.isnan(w[0]).all() and torch.isfinite(w[1]).all()


@pytest.mark.parametrize("scores, lens, err, words", [
    (torch.randn(2, 3), torch.tensor([1, 2]), ValueError,
     "scores must be (batch, n_queries, n_keys)"),
    (torch.ones(2, 3, 4, dtype=torch.long), None, TypeError, "floating dtype"),
    ([[1.0]], None, TypeError, "scores must be a torch.Tensor"),
    (torch.randn(2, 3, 4), torch.tensor([1, 2, 3]), ValueError, "must be (2,) or (2, 3)"),
    (torch.randn(2, 3, 4), torch.ones(2, 2), ValueError, "must be (2,) or (2, 3)"),
    (torch.randn(2, 3, 4), torch.tensor([1, 5]), ValueError, "[0, 4]"),
    (torch.randn(2, 3, 4), torch.tensor([-1, 2]), ValueError, "[0, 4]"),
    (torch.randn(2, 3, 4), torch.tensor([1.5, 2.0]), ValueError, "whole numbers"),
    (torch.randn(2, 3, 4), torch.ones(2, 3, 1), ValueError, "valid_lens of shape (2, 3, 1)"),
    (torch.randn(2, 3, 4), [1, 7], ValueError, "[0, 4]"),
    (torch.randn(2, 3, 4), torch.tensor([True, False]), TypeError, "valid_lens must hold lengths"),
])
def test_bad_input_is_named(scores, lens, err, words):
    with pytest.raises(err, match=None) as info:
        masked_softmax(scores, lens)
    assert words in str(info.value)


def test_bad_mask_is_named():
    with pytest.raises(TypeError, match="mask must be boolean"):
        masked_softmax(torch.zeros(1, 2, 3), mask=torch.ones(1, 2, 3))
