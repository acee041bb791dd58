import math

import pytest
import torch

from attention_core import PositionalEncoding, sinusoidal_table


def test_table_matches_the_formula():
    P = sinusoidal_table(50, 8, dtype=torch.float64)
    for i in (0, 7, 49):
        for j in range(4):
            angle = i / 10000 ** (2 * j / 8)
            assert P[i, 2 * j].item() == pytest.approx(math.sin(angle))
            assert P[i, 2 * j + 1].item() == pytest.approx(math.cos(angle))


def test_odd_size_has_one_more_sine_column():
    P = sinusoidal_table(10, 5)
    assert P.shape == (10, 5)
    torch.testing.assert_close(P[:, 4], torch.sin(torch.arange(10.0) / 10000 ** (4 / 5)))


def test_module_adds_table_and_follows_device_and_dtype(device):
    pe = PositionalEncoding(6, max_len=20).to(device)
    assert pe.P.shape == (1, 20, 6) and pe.P.device.type == device.type
    X = torch.zeros(2, 7, 6, device=device, dtype=torch.bfloat16)
    out = pe(X)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out[1], pe.P[0, :7].to(torch.bfloat16))


def test_bad_input():
    pe = PositionalEncoding(6, max_len=5)
    with pytest.raises(ValueError, match=r"X must be \(batch, n, num_hiddens\), got shape \(7, 6\)"):
        pe(torch.zeros(7, 6))
    with pytest.raises(ValueError, match="num_hiddens is 6"):
        pe(torch.zeros(1, 3, 4))
    with pytest.raises(ValueError, match="more than max_len=5"):
        pe(torch.zeros(1, 6, 6))
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        PositionalEncoding(0)


def test_table_bad_input():
    with pytest.raises(ValueError, match="max_len must be a positive int"):
        sinusoidal_table(0, 4)
    with pytest.raises(ValueError, match="num_hiddens must be a positive int"):
        sinusoidal_table(5, 2.5)
    with pytest.raises(TypeError, match="floating dtype"):
        sinusoidal_table(5, 4, dtype=torch.long)
