"""The fetch world with any number of attributes (chapter 7's solutions)."""
import pytest
import torch

from attention_core.solutions_support.ch07 import (MultiFetchModel, MultiFetchTask,
                                                   make_multi_fetch_batch, slot_accuracies,
                                                   train_multi_fetch, weights_on_picked)
from attention_core.worlds.fetch import head_importance, prune_greedily


@pytest.mark.parametrize("n_attributes", [1, 2, 3])
def test_each_slot_holds_the_label_of_the_item_its_attribute_names(n_attributes):
    task = MultiFetchTask(n_items=6, n_labels=5, n_attributes=n_attributes)
    queries, items, targets, picked = make_multi_fetch_batch(64, task, torch.Generator().manual_seed(0))
    n = task.n_items
    assert queries.shape == (64, 1, task.query_size) and items.shape == (64, n, task.item_size)
    assert targets.shape == picked.shape == (64, n_attributes)
    attributes = items[:, :, :n_attributes * n].view(64, n, n_attributes, n).argmax(-1)  # (B, n, A)
    labels = items[:, :, n_attributes * n:].argmax(-1)                                     # (B, n)
    asked = queries[:, 0].view(64, n_attributes, n).argmax(-1)                             # (B, A)
    for b in range(64):
        assert len(set(picked[b].tolist())) == n_attributes                 # different items
        for a in range(n_attributes):
            assert sorted(attributes[b, :, a].tolist()) == list(range(n))  # a permutation
            (item,) = (attributes[b, :, a] == asked[b, a]).nonzero().flatten().tolist()
            assert item == picked[b, a] and targets[b, a] == labels[b, item]


def test_the_model_has_one_slot_per_attribute_and_works_with_the_pruning_tools():
    task = MultiFetchTask(n_items=5, n_labels=4, n_attributes=3)
    data = make_multi_fetch_batch(32, task, torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = MultiFetchModel(task, num_hiddens=12, num_heads=3)
    assert model(data[0], data[1]).shape == (32, 3, 4)
    assert slot_accuracies(model, data).shape == (3,)
    on = weights_on_picked(model, data)
    assert on.shape == (3, 3) and (on.sum(1) <= 1 + 1e-6).all() and (on >= 0).all()
    assert head_importance(model, data).shape == (3,)
    assert len(prune_greedily(model, data)) == 3


def test_training_lowers_the_loss():
    task = MultiFetchTask(n_items=4, n_labels=4, n_attributes=2)
    torch.manual_seed(0)
    model = MultiFetchModel(task, num_hiddens=16, num_heads=2)
    data = make_multi_fetch_batch(512, task, torch.Generator().manual_seed(2))
    before = slot_accuracies(model, data).mean()
    threads = torch.get_num_threads()
    train_multi_fetch(model, steps=150, batch=64, lr=1e-2, generator=torch.Generator().manual_seed(0))
    assert torch.get_num_threads() == threads
    assert slot_accuracies(model, data).mean() > max(before, 0.5)


def test_more_attributes_than_items_is_refused():
    with pytest.raises(ValueError, match="n_attributes"):
        MultiFetchTask(n_items=3, n_attributes=4)
