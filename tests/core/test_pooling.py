import math

import pytest
import torch

from attention_core import KERNELS, NWKernelRegression, nadaraya_watson
from attention_core.worlds.regression import make_regression_data


@pytest.fixture
def data():
    return make_regression_data(n_train=40, n_test=60, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_weights_are_a_distribution(data, kernel):
    x_train, y_train, x_test, _ = data
    pred, w = nadaraya_watson(x_train, y_train, x_test, kernel=kernel, bandwidth=1.0)
    assert pred.shape == (60,) and w.shape == (60, 40)
    assert torch.all(w >= 0)
    torch.testing.assert_close(w.sum(1), torch.ones(60))
    torch.testing.assert_close(pred, w @ y_train)


def test_gaussian_matches_the_formula(data):
    x_train, y_train, x_test, _ = data
    h = 0.7
    k = torch.exp(-((x_test[:, None] - x_train[None]) / h) ** 2 / 2)
    expected = (k / k.sum(1, keepdim=True)) @ y_train
    torch.testing.assert_close(nadaraya_watson(x_train, y_train, x_test, bandwidth=h)[0], expected)


def test_epanechnikov_and_boxcar_match_hand_computation():
    x_train = torch.tensor([0.0, 1.0, 3.0])
    y_train = torch.tensor([1.0, 2.0, 4.0])
    x_query = torch.tensor([0.5])
    # boxcar h=1: keys 0 and 1 are within distance 1 -> mean of 1 and 2
    assert nadaraya_watson(x_train, y_train, x_query, "boxcar", 1.0)[0].item() == pytest.approx(1.5)
    # Epanechnikov h=2: distances 0.5, 0.5, 2.5 -> K = 0.9375, 0.9375, 0 (beyond h)
    assert nadaraya_watson(x_train, y_train, x_query, "epanechnikov", 2.0)[0].item() \
        == pytest.approx(1.5)
    # Epanechnikov h=3: K = 1 - (d/3)^2 = 35/36, 35/36, 11/36 -> (35 + 70 + 44) / 81
    assert nadaraya_watson(x_train, y_train, x_query, "epanechnikov", 3.0)[0].item() \
        == pytest.approx(149 / 81)


def test_constant_kernel_is_average_pooling(data):
    x_train, y_train, x_test, _ = data
    pred, _ = nadaraya_watson(x_train, y_train, x_test, kernel="constant")
    torch.testing.assert_close(pred, y_train.mean().expand(60))


def test_tiny_bandwidth_picks_the_nearest_key_without_nan():
    x_train = torch.tensor([0.0, 1.0, 2.0])
    y_train = torch.tensor([5.0, 6.0, 7.0])
    pred, w = nadaraya_watson(x_train, y_train, torch.tensor([0.9]), bandwidth=1e-4)
    assert torch.isfinite(w).all() and pred.item() == pytest.approx(6.0)


def test_query_out_of_reach_of_a_compact_kernel_gets_zero():
    pred, w = nadaraya_watson(torch.tensor([0.0]), torch.tensor([3.0]), torch.tensor([5.0]),
                              kernel="boxcar", bandwidth=1.0)
    assert pred.item() == 0 and torch.all(w == 0)


def test_runs_on_device_and_dtype(device):
    x = torch.linspace(0, 1, 10, device=device, dtype=torch.float64)
    pred, w = nadaraya_watson(x, x**2, x, bandwidth=0.3)
    assert pred.device.type == device.type and pred.dtype == torch.float64


def test_learned_bandwidth_leave_one_out_and_training(data):
    x_train, y_train, x_test, y_test = data
    model = NWKernelRegression(bandwidth=3.0)
    model(x_train, x_train, y_train, exclude_self=True)
    assert torch.all(model.attention_weights.diagonal() == 0)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    for _ in range(150):
        opt.zero_grad()
        loss = ((model(x_train, x_train, y_train, exclude_self=True) - y_train) ** 2).mean()
        loss.backward()
        opt.step()
    assert model.bandwidth.item() < 1.0  # it learned to narrow the kernel from 3.0
    with torch.no_grad():
        test_mse = ((model(x_test, x_train, y_train) - y_test) ** 2).mean()
        avg_mse = ((y_train.mean() - y_test) ** 2).mean()
    assert test_mse < 0.25 * avg_mse


def test_data_is_deterministic_and_sorted():
    def seeded(seed):
        return make_regression_data(generator=torch.Generator().manual_seed(seed))
    a, b = seeded(3), seeded(3)
    for x, y in zip(a, b):
        assert torch.equal(x, y)
    assert torch.all(a[0][1:] >= a[0][:-1])
    assert not torch.equal(seeded(4)[0], a[0])
    assert torch.equal(make_regression_data()[0], seeded(0)[0])  # the default world is seed 0


@pytest.mark.parametrize("kwargs, err, words", [
    (dict(kernel="triangle"), ValueError, "kernel must be one of"),
    (dict(bandwidth=0.0), ValueError, "bandwidth must be positive"),
    (dict(bandwidth=-1.0), ValueError, "bandwidth must be positive"),
    (dict(x_train=torch.zeros(3, 1)), ValueError, "x_train must be (n_train), got shape (3, 1)"),
    (dict(y_train=torch.zeros(4)), ValueError, "but n_train of x_train is 3"),
    (dict(bandwidth=torch.ones(2)), ValueError, "bandwidth must be a scalar tensor"),
    (dict(x_query=torch.zeros(2, device="meta")), ValueError, "share one device"),
    (dict(x_query=torch.tensor([1, 2])), TypeError, "x_query must have a floating dtype"),
])
def test_bad_input(kwargs, err, words):
    args = dict(x_train=torch.zeros(3), y_train=torch.zeros(3), x_query=torch.zeros(2))
    args.update(kwargs)
    with pytest.raises(err) as info:
        nadaraya_watson(**args)
    assert words in str(info.value)


def test_nw_module_bad_input():
    with pytest.raises(ValueError, match="bandwidth must be positive"):
        NWKernelRegression(bandwidth=0)
    with pytest.raises(ValueError, match="exclude_self"):
        NWKernelRegression()(torch.zeros(2), torch.zeros(3), torch.zeros(3), exclude_self=True)
    assert math.isclose(NWKernelRegression(2.0).bandwidth.item(), 2.0, rel_tol=1e-6)


@pytest.mark.parametrize("kwargs, words", [
    (dict(n_train=0), "n_train must be a positive int"),
    (dict(n_test=2.5), "n_test must be a positive int"),
    (dict(x_max=0.0), "x_max must be positive"),
    (dict(noise=-1.0), "noise must be non-negative"),
])
def test_data_bad_input(kwargs, words):
    with pytest.raises(ValueError, match=words):
        make_regression_data(**kwargs)
