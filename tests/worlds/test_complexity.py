import math

import pytest
import torch
from torch import nn

from attention_core import SelfAttention
from attention_core.worlds.complexity import (
    count_ops,
    dependency_matrix,
    fit_slope,
    limited_recurrence,
    path_lengths,
    stacked,
)

N, D = 12, 3


def conv(k):
    return lambda depth: stacked([nn.Conv1d(D, D, k, padding=k // 2).double()
                                  for _ in range(depth)])


@pytest.mark.parametrize("k, expected", [(3, N - 1), (5, math.ceil((N - 1) / 2)),
                                         (7, math.ceil((N - 1) / 3))])
def test_convolution_path_length_is_n_over_half_kernel(k, expected):
    torch.manual_seed(0)
    P = path_lengths(conv(k), N, D, max_depth=N)
    assert P.max().item() == expected
    assert P[0, 0] == 1 and P[N - 1, 0] == expected
    # one layer reaches exactly the neighbours within k // 2
    assert torch.equal(P == 1, (torch.arange(N)[:, None] - torch.arange(N)).abs() <= k // 2)


def test_self_attention_path_length_is_one():
    torch.manual_seed(0)
    P = path_lengths(lambda depth: stacked([SelfAttention(D, input_size=D).double()
                                            for _ in range(depth)]),
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


def test_counts_of_a_matrix_product_and_a_chain():
    a, b = torch.empty(3, 4, device="meta"), torch.empty(4, 5, device="meta")
    c = count_ops(lambda: a @ b)
    assert (c.flops, c.largest, c.steps) == (2 * 3 * 4 * 5, 15, 1)
    chain = count_ops(lambda: ((a @ b).relu() * 2).t().sum())  # t() is a view: no step
    assert chain.steps == 4 and chain.flops == 120


@pytest.mark.parametrize("n", [16, 64, 256])
def test_counts_of_the_three_layers(n):
    """FLOPs, largest tensor and sequential steps of conv, GRU and self-attention, exactly."""
    d = 8
    x = torch.empty(1, n, d, device="meta")
    conv_layer = nn.Conv1d(d, d, 3, padding=1).to("meta")
    conv = count_ops(lambda: conv_layer(x.transpose(1, 2)))
    sa_layer = SelfAttention(d, input_size=d).to("meta")
    sa = count_ops(lambda: sa_layer(x))
    gru_layer = nn.GRU(d, d, batch_first=True).to("meta")
    gru = count_ops(lambda: gru_layer(x))
    assert conv.flops == 2 * 3 * d * d * n                  # O(k n d^2)
    assert sa.flops == 3 * 2 * n * d * d + 2 * 2 * n * n * d  # projections + O(n^2 d)
    assert gru.flops == n * 2 * 2 * (3 * d) * d               # two (3d x d) products per step
    assert sa.largest == n * n                                # the score matrix
    assert conv.largest == n * d                              # nothing bigger than the sequence
    assert gru.largest == n * d                               # a view of W_ih creates nothing


def test_sequential_steps_grow_only_for_the_recurrent_layer():
    d = 8
    steps = {}
    for n in (16, 32, 64):
        x = torch.empty(1, n, d, device="meta")
        conv = nn.Conv1d(d, d, 3, padding=1).to("meta")
        layers = {"conv": lambda x, c=conv: c(x.transpose(1, 2)),
                  "sa": SelfAttention(d, input_size=d).to("meta"),
                  "gru": nn.GRU(d, d, batch_first=True).to("meta")}
        steps[n] = {name: count_ops(layer, x).steps for name, layer in layers.items()}
    assert steps[16]["conv"] == steps[64]["conv"] and steps[16]["sa"] == steps[64]["sa"]
    per_step = (steps[32]["gru"] - steps[16]["gru"]) // 16
    assert per_step > 0
    assert steps[64]["gru"] - steps[16]["gru"] == per_step * 48  # exactly linear in n


def test_saved_bytes_counts_what_autograd_keeps_beyond_the_inputs():
    from attention_core.worlds.complexity import saved_bytes
    q, k = (torch.empty(1, 300, 16, device="meta", requires_grad=True) for _ in range(2))
    assert saved_bytes(lambda a, b: a * b, q, k) == 0                  # saves only the inputs
    assert saved_bytes(lambda a, b: (a.transpose(-2, -1) * 2).sum(), q, k) == 0  # and views
    assert saved_bytes(lambda a, b: torch.exp(a * 3), q, k) == 300 * 16 * 4  # exp keeps its output

    def attention(a, b):
        return torch.softmax(a @ b.transpose(-2, -1), -1) @ b

    # softmax keeps its (300, 300) output once, though two operations save it
    assert saved_bytes(attention, q, k) == 300 * 300 * 4
