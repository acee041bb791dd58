"""fit, the one training loop, and the schedules of its rate."""
import functools

import pytest
import torch
from torch import nn

from attention_core.worlds.side_by_side import side_by_side
from attention_core.worlds.training import (
    InverseSqrtWarmup,
    WarmupLinearDecay,
    fit,
    inverse_sqrt_warmup,
    linear_decay,
    optimizer_step,
    warmup_linear_decay,
)


def data(seed=0, n=40):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g)
    return x, x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.1 * torch.randn(n, 1, generator=g)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))


def squared_error(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def batches_of(x, y, generator, size=8):
    """A function that draws each epoch's order from ``generator`` when the epoch starts."""
    return lambda: ((x[rows], y[rows]) for rows in
                    torch.randperm(len(x), generator=generator).split(size))


def test_fit_takes_the_steps_a_loop_written_out_takes_bit_for_bit():
    x, y = data()
    by_hand = model()
    optimizer = torch.optim.Adam(by_hand.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: linear_decay(s, 15))
    g, history = torch.Generator().manual_seed(1), []
    for _ in range(3):
        losses = []
        for rows in torch.randperm(40, generator=g).split(8):
            loss = squared_error(by_hand, (x[rows], y[rows]))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(by_hand.parameters(), 0.5)
            optimizer.step()
            scheduler.step()
            losses.append(loss.detach())
        history.append(torch.stack(losses).mean().item())
    fitted = model()
    assert fit(fitted, batches_of(x, y, torch.Generator().manual_seed(1)), squared_error,
               steps_per_epoch=5, epochs=3, lr=0.01, schedule=linear_decay, clip=0.5,
               progress=False) == history
    for a, b in zip(by_hand.parameters(), fitted.parameters(), strict=True):
        assert torch.equal(a, b)


def test_the_callbacks_see_every_step_and_every_epoch_and_training_resumes():
    x, y = data()
    steps, epochs = [], []

    def on_epoch(epoch, net):
        net.eval()  # as a validation would
        epochs.append((epoch, net))

    net = model()
    history = fit(net, batches_of(x, y, torch.Generator().manual_seed(0)),
                  lambda m, b: (squared_error(m, b) * 2, squared_error(m, b).detach()),
                  steps_per_epoch=5, epochs=2, lr=0.01, progress=False,
                  on_step=lambda step, record: steps.append((step, record)), on_epoch=on_epoch)
    assert [s for s, _ in steps] == list(range(1, 11))
    assert [e for e, _ in epochs] == [1, 2] and all(m is net for _, m in epochs)
    assert net.training  # training resumed after each epoch's callback
    # the record, not the loss minimised, is what the history averages
    assert history[0] == torch.stack([r for _, r in steps[:5]]).mean().item()


def test_the_optimizer_can_be_another_with_its_own_arguments():
    x, y = data()
    by_hand = model()
    optimizer = torch.optim.AdamW(by_hand.parameters(), lr=0.02, weight_decay=0.1)
    for rows in torch.arange(40).split(10):
        optimizer_step(by_hand, optimizer, squared_error(by_hand, (x[rows], y[rows])))
    fitted = model()
    fit(fitted, lambda: ((x[rows], y[rows]) for rows in torch.arange(40).split(10)),
        squared_error, steps_per_epoch=4, lr=0.02, progress=False,
        optimizer=functools.partial(torch.optim.AdamW, weight_decay=0.1))
    for a, b in zip(by_hand.parameters(), fitted.parameters(), strict=True):
        assert torch.equal(a, b)


def test_threads_are_set_while_training_and_given_back():
    x, y = data()
    caller = torch.get_num_threads()
    seen = []
    fit(model(), lambda: [(x, y)] * 3, squared_error, steps_per_epoch=3, lr=0.01,
        threads=1, progress=False, on_step=lambda step, _: seen.append(torch.get_num_threads()))
    assert seen == [1, 1, 1] and torch.get_num_threads() == caller


def test_trainings_side_by_side_compute_what_each_computes_alone():
    def training(seed):
        x, y, net = *data(seed), model()  # built here: the global generator is not shared

        def run(tick):
            history = fit(net, batches_of(x, y, torch.Generator().manual_seed(seed)),
                          squared_error, steps_per_epoch=5, epochs=2, lr=0.01, progress=False,
                          on_step=lambda step, _: tick())
            return history, [p.detach().clone() for p in net.parameters()]
        return run

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = [training(seed)(lambda: None) for seed in (0, 1)]
    finally:
        torch.set_num_threads(threads)
    together = side_by_side([training(seed) for seed in (0, 1)], total=20, workers=2,
                            progress=False)
    for (h1, p1), (h2, p2) in zip(alone, together, strict=True):
        assert h1 == h2 and all(torch.equal(a, b) for a, b in zip(p1, p2, strict=True))


def test_bad_arguments_are_named():
    x, y = data()
    with pytest.raises(ValueError, match="steps_per_epoch must be a positive int"):
        fit(model(), lambda: [(x, y)], squared_error, steps_per_epoch=0, lr=0.01)
    with pytest.raises(ValueError, match="lr must be positive"):
        fit(model(), lambda: [(x, y)], squared_error, steps_per_epoch=1, lr=0.0)
    with pytest.raises(ValueError, match="threads must be a positive int"):
        fit(model(), lambda: [(x, y)], squared_error, steps_per_epoch=1, lr=0.1, threads=0)


def test_learning_rate_schedules():
    f = inverse_sqrt_warmup(100)
    assert f(0, 1000) == pytest.approx(0.01) and f(99, 1000) == pytest.approx(1.0)
    assert f(399, 1000) == pytest.approx(0.5)  # sqrt(100 / 400): 1/sqrt(step) after the peak
    g = warmup_linear_decay(100)
    assert g(49, 1000) == pytest.approx(0.5) and g(100, 1000) == pytest.approx(1.0)
    assert g(550, 1000) == pytest.approx(0.5) and g(999, 1000) == pytest.approx(1 / 900)
    assert linear_decay(250, 1000) == 0.75
    with pytest.raises(ValueError, match="warmup must be a positive int"):
        warmup_linear_decay(0)


def test_a_schedule_with_a_warmup_compares_and_prints_by_value():
    assert warmup_linear_decay(150) == WarmupLinearDecay(150) != WarmupLinearDecay(151)
    assert inverse_sqrt_warmup(150) == InverseSqrtWarmup(150) != WarmupLinearDecay(150)
    assert repr(WarmupLinearDecay(150)) == "WarmupLinearDecay(warmup=150)"
