"""Chapter 6's length test (attention_core.worlds.lengths): the look-back batches, the model
with each way of giving positions, the window, and training."""
import pytest
import torch

from attention_core.positional import alibi_bias
from attention_core.worlds.lengths import (
    IGNORE,
    POSITIONS,
    LookbackModel,
    accuracy_by_position,
    lookback_loss,
    make_lookback_batch,
    train_lookback,
    train_lookback_all,
)


def test_targets_are_the_tokens_offset_places_back():
    tokens, targets = make_lookback_batch(5, 12, vocab_size=7, offset=3,
                                          generator=torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (5, 12) and tokens.max() < 7
    assert torch.all(targets[:, :3] == IGNORE)
    assert torch.equal(targets[:, 3:], tokens[:, :-3])


@pytest.mark.parametrize("positions", POSITIONS)
def test_every_kind_gives_logits_and_is_causal(positions):
    torch.manual_seed(0)
    model = LookbackModel(positions, vocab_size=7, num_hiddens=16, num_heads=2, num_blks=2,
                          max_len=32).eval()
    tokens = torch.randint(7, (3, 10))
    logits = model(tokens)
    assert logits.shape == (3, 10, 7)
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % 7  # a change from position 6 on reaches no earlier one
    with torch.no_grad():
        torch.testing.assert_close(model(changed)[:, :6], logits[:, :6].detach())


def test_relative_kinds_take_any_length_and_absolute_ones_stop_at_max_len():
    tokens = torch.randint(7, (2, 40))
    for positions in ("none", "rope", "alibi"):
        assert LookbackModel(positions, vocab_size=7, num_hiddens=16, num_heads=2,
                             max_len=32)(tokens).shape == (2, 40, 7)
    for positions in ("sinusoidal", "learned"):
        with pytest.raises(ValueError, match="beyond max_len=32"):
            LookbackModel(positions, vocab_size=7, num_hiddens=16, num_heads=2, max_len=32)(tokens)


def test_without_positions_the_last_output_ignores_the_order_of_the_earlier_tokens():
    """No positions: the causal mask alone; the last query sees a set of keys, not a sequence."""
    torch.manual_seed(0)
    model = LookbackModel("none", vocab_size=7, num_hiddens=16, num_heads=2, num_blks=1).eval()
    tokens = torch.randint(7, (1, 9))
    shuffled = torch.cat([tokens[:, :8][:, torch.randperm(8)], tokens[:, 8:]], 1)
    with torch.no_grad():
        torch.testing.assert_close(model(shuffled)[:, -1], model(tokens)[:, -1])


def test_a_window_of_w_hides_keys_w_or_more_places_back():
    torch.manual_seed(0)
    for positions in ("rope", "alibi"):
        model = LookbackModel(positions, vocab_size=7, num_hiddens=16, num_heads=2,
                              num_blks=1).eval()
        tokens = torch.randint(7, (2, 12))
        changed = tokens.clone()
        changed[:, 4] = (changed[:, 4] + 1) % 7      # position 4: 7 places before position 11
        with torch.no_grad():
            full, windowed = model(tokens), model(tokens, window=7)
            torch.testing.assert_close(model(changed, window=7)[:, 11], windowed[:, 11])
            assert not torch.allclose(model(changed)[:, 11], full[:, 11])   # seen without it
            torch.testing.assert_close(windowed[:, :7], full[:, :7])  # nothing hidden there
            # ALiBi's bias and the window combine: -inf outside, the bias inside
    bias = alibi_bias(2, 5).masked_fill(torch.ones(5, 5).tril(-2).bool(), float("-inf"))
    assert torch.isinf(bias[:, 4, :3]).all() and torch.isfinite(bias[:, 4, 3:]).all()


def test_bad_input():
    with pytest.raises(ValueError, match="positions must be one of"):
        LookbackModel("relative")
    with pytest.raises(ValueError, match=r"offset \(5\) must be below length \(5\)"):
        make_lookback_batch(2, 5, offset=5)
    with pytest.raises(ValueError, match="window must be a positive int"):
        LookbackModel("rope")(torch.zeros(1, 4, dtype=torch.long), window=0)
    with pytest.raises(TypeError, match="tokens must have an integer dtype"):
        LookbackModel("rope")(torch.zeros(1, 4))


def test_side_by_side_training_is_training_alone_and_rope_at_base_100_learns_the_task():
    def make():
        torch.manual_seed(0)
        return LookbackModel("rope", vocab_size=8, num_hiddens=32, num_heads=4, num_blks=1,
                             rope_base=100.0)
    alone, together = make(), make()
    history = train_lookback(alone, steps=300, batch=32, length=16, progress=False,
                             generator=torch.Generator().manual_seed(0))
    (history_together,) = train_lookback_all([together], seed=0, steps=300, batch=32, length=16,
                                             progress=False)
    assert history == history_together and len(history) == 6 and history[-1] < history[0]
    for p, q in zip(alone.parameters(), together.parameters(), strict=True):
        assert torch.equal(p, q)
    acc = accuracy_by_position(alone, 16, 200, generator=torch.Generator().manual_seed(1))
    assert torch.isnan(acc[:3]).all() and acc[3:].mean() >= 0.9
    tokens, targets = make_lookback_batch(4, 16, 8, generator=torch.Generator().manual_seed(2))
    assert lookback_loss(alone, (tokens, targets)) < 0.5


def test_weight_by_offset_averages_each_heads_weight_on_the_key_that_many_places_back():
    from attention_core.worlds.lengths import weight_by_offset
    torch.manual_seed(0)
    model = LookbackModel("rope", vocab_size=8, num_hiddens=16, num_heads=2, num_blks=2).eval()
    by_offset = weight_by_offset(model, 12, 8, count=5, generator=torch.Generator().manual_seed(4))
    assert by_offset.shape == (2, 2, 9)
    assert not model.blks[0]["attention"].need_weights            # the model is left as it was
    tokens, _ = make_lookback_batch(5, 12, 8, 3, torch.Generator().manual_seed(4))
    for blk in model.blks:
        blk["attention"].need_weights = True
    with torch.no_grad():
        model(tokens)
    w = model.blks[1]["attention"].attention_weights.mean(0)      # (h, n, n)
    expected = torch.stack([torch.stack([w[:, i, i - d] for i in range(8, 12)]).mean(0)
                            for d in range(9)], -1)               # (h, offsets)
    torch.testing.assert_close(by_offset[1], expected)
    assert torch.all(by_offset.sum(-1) <= 1 + 1e-6)
