"""Fixtures shared by the tests of the seq2seq models and of decoding: a small corpus of
one-item sentences and an attention model trained on it."""
import pytest
import torch

from attention_core.seq2seq import make_model
from attention_core.worlds.translation import TranslationData, make_splits, train_seq2seq


@pytest.fixture(scope="module")
def tiny():
    train, _, _ = make_splits(300, 10, 10, torch.Generator().manual_seed(0), max_items=1)
    return train, TranslationData(train)


@pytest.fixture(scope="module")
def trained(tiny):
    train, data = tiny
    torch.manual_seed(0)
    model = make_model("attention", len(data.src_vocab), len(data.tgt_vocab), num_hiddens=32,
                       embed_size=16)
    train_seq2seq(model, data, train, epochs=10, batch_size=32, lr=0.01,
                  generator=torch.Generator().manual_seed(0), progress=False)
    return model
