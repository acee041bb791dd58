"""The regression task of chapter 2: the bandwidth learned on the leave-one-out error."""
import pytest

import attention_core as ac
from attention_core.worlds.regression import fit_nw_bandwidth, make_regression_data


def test_fit_nw_bandwidth_history_and_bad_input():
    x, y, _, _ = make_regression_data(n_train=30)
    history = fit_nw_bandwidth(ac.NWKernelRegression(2.0), x, y, steps=40, log_every=20)
    assert [h[0] for h in history] == [20, 40]
    assert history[-1][1] < history[0][1] and history[-1][2] < 2.0
    with pytest.raises(ValueError, match="steps must be a positive int"):
        fit_nw_bandwidth(ac.NWKernelRegression(), x, y, steps=0)
