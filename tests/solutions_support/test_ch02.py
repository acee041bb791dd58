"""Nadaraya–Watson pooling with vector queries and keys (chapter 2's solutions)."""
import pytest
import torch

import attention_core as ac
from attention_core.pooling import kernel_scores
from attention_core.solutions_support.ch02 import kernel_scores_nd, nadaraya_watson_nd


@pytest.mark.parametrize("kernel", list(ac.KERNELS))
def test_in_one_dimension_it_is_the_chapters_pooling(kernel):
    gen = torch.Generator().manual_seed(0)
    x_train = torch.rand(30, generator=gen, dtype=torch.float64) * 5
    y_train = torch.randn(30, generator=gen, dtype=torch.float64)
    x_query = torch.linspace(0, 5, 40, dtype=torch.float64)
    torch.testing.assert_close(kernel_scores_nd(x_query[:, None], x_train[:, None], kernel, 0.7),
                               kernel_scores(x_query, x_train, kernel, 0.7))
    pred, weights = nadaraya_watson_nd(x_train[:, None], y_train, x_query[:, None], kernel, 0.7)
    pred_1d, weights_1d = ac.nadaraya_watson(x_train, y_train, x_query, kernel, 0.7)
    torch.testing.assert_close(pred, pred_1d)
    torch.testing.assert_close(weights, weights_1d)


def test_the_gaussian_in_two_dimensions_is_the_product_of_one_per_coordinate():
    gen = torch.Generator().manual_seed(1)
    x_train = torch.rand(25, 2, generator=gen, dtype=torch.float64)
    x_query = torch.rand(7, 2, generator=gen, dtype=torch.float64)
    scores = kernel_scores_nd(x_query, x_train, "gaussian", 0.3)
    per_coordinate = sum(kernel_scores(x_query[:, c], x_train[:, c], "gaussian", 0.3)
                         for c in range(2))
    torch.testing.assert_close(scores, per_coordinate)  # log of a product = sum of logs
    distance2 = ((x_query[:, None] - x_train[None]) ** 2).sum(-1)
    torch.testing.assert_close(scores, -distance2 / (2 * 0.3**2))


def test_weights_sum_to_one_vector_values_and_unreached_queries():
    gen = torch.Generator().manual_seed(2)
    x_train = torch.rand(20, 2, generator=gen)
    y_vec = torch.randn(20, 3, generator=gen)
    x_query = torch.cat([torch.rand(5, 2, generator=gen), torch.full((1, 2), 10.0)])
    pred, weights = nadaraya_watson_nd(x_train, y_vec, x_query, "gaussian", 0.5)
    assert pred.shape == (6, 3) and weights.shape == (6, 20)
    torch.testing.assert_close(weights.sum(1), torch.ones(6))
    pred, weights = nadaraya_watson_nd(x_train, y_vec, x_query, "boxcar", 0.5)
    assert (weights[-1] == 0).all() and (pred[-1] == 0).all()  # no key within the window
    torch.testing.assert_close(weights[:-1].sum(1), torch.ones(5))


def test_bad_input_is_named():
    x = torch.rand(4, 2)
    with pytest.raises(ValueError, match="x_query"):
        nadaraya_watson_nd(x, torch.rand(4), torch.rand(3, 3))
    with pytest.raises(ValueError, match="x_train"):
        nadaraya_watson_nd(torch.rand(4), torch.rand(4), x)
    with pytest.raises(ValueError, match="bandwidth"):
        nadaraya_watson_nd(x, torch.rand(4), x, bandwidth=0.0)
