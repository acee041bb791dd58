import math

import pytest
import torch
from torch import nn

from attention_core.complexity import (dependency_matrix, fit_slope, limited_recurrence,
                                       path_lengths, stacked)
from attention_core.selfattention import SelfAttention

N, D = 12, 3


def test_self_attention_is_attention_over_its_own_projections():
    torch.manual_seed(0)
    sa = SelfAttention(6, d_in=4)
    X = torch.randn(2, 5, 4)
    Y = sa(X, torch.tensor([5, 3]))
    Q, K, V = sa.W_q(X), sa.W_k(X), sa.W_v(X)
    w = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(6), -1)
    torch.testing.assert_close(Y[0], w[0] @ V[0])
    assert Y.shape == (2, 5, 6) and torch.all(sa.attention_weights[1, :, 3:] == 0)


def test_self_attention_is_permutation_equivariant():
    sa = SelfAttention(8, d_in=8)
    X, perm = torch.randn(2, 9, 8), torch.randperm(9)
    torch.testing.assert_close(sa(X[:, perm]), sa(X)[:, perm])


def test_self_attention_bad_input():
    with pytest.raises(ValueError, match=r"X must be \(batch, n, d_in\)"):
        SelfAttention(4, d_in=4)(torch.randn(5, 4))
    with pytest.raises(ValueError, match="d_in is 4"):
        SelfAttention(4, d_in=4)(torch.randn(1, 5, 3))
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        SelfAttention(0)


def conv(k):
    return lambda depth: stacked([nn.Conv1d(D, D, k, padding=k // 2).double() for _ in range(depth)])


@pytest.mark.parametrize("k, expected", [(3, N - 1), (5, math.ceil((N - 1) / 2)), (7, math.ceil((N - 1) / 3))])
def test_convolution_path_length_is_n_over_half_kernel(k, expected):
    torch.manual_seed(0)
    P = path_lengths(conv(k), N, D, max_depth=N)
    assert P.max().item() == expected
    assert P[0, 0] == 1 and P[N - 1, 0] == expected
    # one layer reaches exactly the neighbours within k // 2
    assert torch.equal(P == 1, (torch.arange(N)[:, None] - torch.arange(N)).abs() <= k // 2)


def test_self_attention_path_length_is_one():
    torch.manual_seed(0)
    P = path_lengths(lambda depth: stacked([SelfAttention(D, d_in=D).double() for _ in range(depth)]),
                     N, D, max_depth=3)
    assert torch.all(P == 1)


def test_recurrent_path_length_is_the_number_of_steps():
    torch.manual_seed(0)
    P = path_lengths(lambda m: limited_recurrence(nn.GRUCell(D, D).double(), m), N, D, max_depth=N)
    i, j = torch.meshgrid(torch.arange(N), torch.arange(N), indexing="ij")
    torch.testing.assert_close(P[j <= i], (i - j + 1)[j <= i].float())
    assert torch.all(torch.isinf(P[j > i]))  # no dependence on the future


def test_dependency_matrix_of_identity_and_fit_slope():
    assert torch.equal(dependency_matrix(lambda x: x * 2, 4, 2), torch.eye(4, dtype=torch.bool))
    assert fit_slope([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)
