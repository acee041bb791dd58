"""Training a translation model on the generated corpus, and using it."""
import functools

import pytest
import torch

from attention_core.decoding import greedy_decode
from attention_core.seq2seq import make_model
from attention_core.worlds.corpus import make_splits
from attention_core.worlds.metrics import exact_match
from attention_core.worlds.translation import (
    masked_cross_entropy,
    teacher_forced_weights,
    train_seq2seq,
    translate,
)
from attention_core.worlds.vocab import TranslationData


def seeded(seed):
    return torch.Generator().manual_seed(seed)


def test_masked_loss_ignores_padding():
    logits = torch.randn(2, 4, 6)
    targets = torch.randint(6, (2, 4))
    lens = torch.tensor([2, 4])
    changed = logits.clone()
    changed[0, 2:] = 100.0  # anything at padded positions
    loss = masked_cross_entropy(logits, targets, lens)
    assert loss == masked_cross_entropy(changed, targets, lens)
    full = torch.nn.functional.cross_entropy(logits[1], targets[1])
    first = torch.nn.functional.cross_entropy(logits[0, :2], targets[0, :2])
    torch.testing.assert_close(loss, (4 * full + 2 * first) / 6)
    with pytest.raises(ValueError, match="must agree"):
        masked_cross_entropy(logits, targets[:, :3], lens)


@pytest.mark.slow
def test_training_lowers_the_loss_and_decays_the_learning_rate():
    train, _, _ = make_splits(300, 10, 10, seeded(0), max_items=1)
    data = TranslationData(train)
    torch.manual_seed(0)
    model = make_model("attention", len(data.src_vocab), len(data.tgt_vocab), num_hiddens=32,
                       embed_size=16)
    history = train_seq2seq(model, data, train, epochs=10, batch_size=32, lr=0.01,
                            generator=seeded(0), progress=False)
    assert len(history) == 10 and history[-1] < history[0] / 2
    assert model.training  # left in training mode, as a training loop should


@functools.cache
def small_trained_model(epochs=10, kind="attention"):
    """A small model trained on one-item sentences (cached: the tests only read it)."""
    train, _, test = make_splits(300, 10, 20, seeded(0), max_items=1)
    data = TranslationData(train)
    torch.manual_seed(0)
    model = make_model(kind, len(data.src_vocab), len(data.tgt_vocab), num_hiddens=32,
                       embed_size=16)
    train_seq2seq(model, data, train, epochs=epochs, batch_size=32, lr=0.01, generator=seeded(0),
                  progress=False)
    return model, data, train, test


def test_epoch_callback_is_called_after_every_epoch_and_changes_nothing():
    train, _, _ = make_splits(200, 10, 10, seeded(0), max_items=1)
    data = TranslationData(train)
    references = [p.target for p in train[:10]]

    def run(callback):
        torch.manual_seed(0)
        model = make_model("attention", len(data.src_vocab), len(data.tgt_vocab), num_hiddens=16,
                           embed_size=8)
        history = train_seq2seq(model, data, train, epochs=2, batch_size=50, lr=0.01,
                                generator=seeded(0), progress=False, on_epoch_end=callback)
        return model, history

    calls = []

    def validate(epoch, model):  # what a validation check does: decode in evaluation mode
        model.eval()
        calls.append((epoch, exact_match(translate(model, data, train[:10]), references)))

    checked, history_checked = run(validate)
    plain, history = run(None)
    assert [epoch for epoch, _ in calls] == [1, 2] and all(0 <= em <= 1 for _, em in calls)
    assert checked.training  # training resumed in training mode after each check
    assert history_checked == history  # the checks change neither the batches nor the model
    for a, b in zip(checked.parameters(), plain.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.slow
def test_translate_equals_greedy_decoding_in_batches():
    model, data, _, test = small_trained_model()
    out = translate(model, data, test, batch_size=7)
    assert len(out) == len(test) and out == translate(model, data, test)
    src, src_lens, _, _ = data.tensors(test)
    tokens, _ = greedy_decode(model, src, src_lens, data.tgt_vocab.bos, data.tgt_vocab.eos)
    assert out == [data.tgt_vocab.decode(row) for row in tokens.tolist()]
    assert not any("<bos>" in o or "<eos>" in o for o in out)
    assert translate(model, data, [(["march", "3rd", ",", "2021"], [])], max_len=2)[0] == \
        translate(model, data, [(["march", "3rd", ",", "2021"], [])])[0][:2]
    assert model.training  # decoding gives the model back in the mode it was in
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        translate(model, data, test, batch_size=0)


def test_teacher_forced_weights_are_rows_of_the_padded_batch():
    model, data, _, test = small_trained_model(epochs=1)
    w = teacher_forced_weights(model, data, test, batch_size=6)
    n_tgt = max(len(p.target) for p in test) + 1
    n_src = max(len(p.source) for p in test) + 1
    assert w.shape == (len(test), n_tgt, n_src) and w.device.type == "cpu"
    for b, p in enumerate(test):  # each real row sums to one over the sentence's own source
        rows = w[b, : len(p.target) + 1]
        torch.testing.assert_close(rows[:, : len(p.source) + 1].sum(-1),
                                   torch.ones(len(p.target) + 1))
        assert rows[:, len(p.source) + 1:].abs().sum() == 0
        assert w[b, len(p.target) + 1:].abs().sum() == 0
    one = teacher_forced_weights(model, data, test[:1])
    torch.testing.assert_close(one[0], w[0, : one.shape[1], : one.shape[2]])
    plain, *_ = small_trained_model(epochs=1, kind="plain")
    with pytest.raises(TypeError, match="PlainDecoder computed no attention weights"):
        teacher_forced_weights(plain, data, test)
