"""The twins task of chapter 5: its data, its model and a short training run."""
import pytest
import torch

from attention_core.worlds.twins import TwinsModel, fit_twins, make_twins_batch, twin_weight


def test_every_symbol_twice_and_the_target_is_the_pair_mean():
    X, target, same = make_twins_batch(16, n=8, generator=torch.Generator().manual_seed(0))
    assert X.shape == (16, 8, 5) and target.shape == (16, 8) and same.shape == (16, 8, 8)
    assert (X[..., :4].sum(1) == 2).all()             # each of the 4 symbols at two positions
    assert (same.sum(-1) == 2).all()                   # a position and its twin
    values = X[..., 4]
    twin = (same & ~torch.eye(8, dtype=torch.bool)).float().argmax(-1)
    torch.testing.assert_close(target, (values + values.gather(1, twin)) / 2)


def test_odd_length_is_refused():
    with pytest.raises(ValueError, match="even"):
        make_twins_batch(2, n=7)


@pytest.mark.slow
def test_one_layer_learns_to_attend_to_the_twin():
    torch.manual_seed(0)
    model = TwinsModel()
    X, target, same = make_twins_batch(500, generator=torch.Generator().manual_seed(1))
    before = twin_weight(model, X, same)
    fit_twins(model, steps=300, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        mse = ((model(X) - target) ** 2).mean().item()
    assert before < 0.5 < 0.9 < twin_weight(model, X, same) and mse < 0.01
