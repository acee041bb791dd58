"""The fetch task of chapter 7 (and its solutions, with any number of attributes): the batches,
the model, its training alone and side by side, and the measures of its heads."""
import pytest
import torch

from attention_core.worlds.fetch import (
    FetchModel,
    FetchTask,
    head_importance,
    make_fetch_batch,
    prune_greedily,
    slot_accuracies,
    slot_accuracy,
    train_fetch,
    train_fetch_all,
    weights_on_picked,
)


def test_two_attribute_batches_are_chapter_7s_draws():
    """Two attributes draw one item, then another at a random offset from it: the draws the
    shipped models were trained on."""
    g = torch.Generator().manual_seed(0)
    colours = torch.argsort(torch.rand(16, 5, generator=g), dim=1)
    shapes = torch.argsort(torch.rand(16, 5, generator=g), dim=1)
    labels = torch.randint(7, (16, 5), generator=g)
    a = torch.randint(5, (16,), generator=g)
    b = (a + torch.randint(1, 5, (16,), generator=g)) % 5
    queries, items, targets, picked = make_fetch_batch(16, FetchTask(n_items=5, n_labels=7),
                                                       torch.Generator().manual_seed(0))
    assert torch.equal(picked, torch.stack([a, b], 1))
    assert torch.equal(items[..., :5].argmax(-1), colours)
    assert torch.equal(items[..., 5:10].argmax(-1), shapes)
    assert torch.equal(targets, labels.gather(1, picked))


def test_fetch_batch_names_two_different_items_and_their_labels():
    task = FetchTask(n_items=5, n_labels=7)
    queries, items, targets, picked = make_fetch_batch(64, task, torch.Generator().manual_seed(0))
    assert queries.shape == (64, 1, 10) and items.shape == (64, 5, 17) and targets.shape == (64, 2)
    assert torch.all(picked[:, 0] != picked[:, 1])
    rows = torch.arange(64)
    colour = items[..., :5].argmax(-1)
    shape = items[..., 5:10].argmax(-1)
    # the query's colour is item a's, its shape item b's; colours and shapes are all different
    assert torch.equal(queries[:, 0, :5].argmax(-1), colour[rows, picked[:, 0]])
    assert torch.equal(queries[:, 0, 5:].argmax(-1), shape[rows, picked[:, 1]])
    assert torch.all(colour.sort(-1).values == torch.arange(5))
    assert torch.equal(targets, items[..., 10:].argmax(-1).gather(1, picked))


def test_fetch_bad_input():
    with pytest.raises(ValueError, match="batch must be a positive int"):
        make_fetch_batch(0)
    with pytest.raises(ValueError, match=r"num_kv_heads \(3\) must divide num_heads \(4\)"):
        FetchModel(num_heads=4, num_kv_heads=3)


@pytest.mark.slow
def test_fetch_side_by_side_equals_one_after_another():
    """Two worker threads, three models: the same histories and weights, bit for bit."""
    def models():
        out = []
        for h in (1, 2, 4):
            torch.manual_seed(0)
            out.append(FetchModel(num_heads=h))
        return out

    alone, together = models(), models()
    histories = [train_fetch(m, steps=200, generator=torch.Generator().manual_seed(3),
                             progress=False) for m in alone]
    assert train_fetch_all(together, seed=3, workers=2, steps=200, progress=False) == histories
    for a, b in zip(alone, together, strict=True):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
            assert torch.equal(x, y), name
    assert histories[0] != histories[1]  # the models did differ


def test_fetch_side_by_side_bad_input_and_errors():
    with pytest.raises(ValueError, match="models must be a non-empty sequence of FetchModel"):
        train_fetch_all([])
    with pytest.raises(ValueError, match="workers must be a positive int"):
        train_fetch_all([FetchModel()], workers=0)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        train_fetch_all([FetchModel()], steps=0)
    wrong = FetchModel(FetchTask(n_items=5))  # its items are wider than the batches it gets
    wrong.task = FetchTask()
    with pytest.raises(RuntimeError):  # a worker's error reaches the caller
        train_fetch_all([FetchModel(), wrong], steps=5, workers=2, progress=False)


@pytest.mark.slow
def test_two_heads_learn_the_fetch_and_one_head_cannot():
    """A short run: two heads solve the task, one head stays near one slot right."""
    test = make_fetch_batch(1000, generator=torch.Generator().manual_seed(1))
    accuracy = {}
    for h in (1, 2):
        torch.manual_seed(0)
        model = FetchModel(num_heads=h)
        train_fetch(model, steps=600, generator=torch.Generator().manual_seed(2))
        accuracy[h] = slot_accuracy(model, test)
    assert accuracy[2] > 0.95 and accuracy[1] < 0.65, accuracy
    path = prune_greedily(model, test)
    assert [len(removed) for removed, _ in path] == [0, 1]
    assert path[0][1] == pytest.approx(accuracy[2]) and path[1][1] < 0.75  # one head is not enough
    importance = head_importance(model, test)
    assert importance.shape == (2,) and torch.all(importance > 0)


@pytest.mark.parametrize("n_attributes", [1, 2, 3])
def test_each_slot_holds_the_label_of_the_item_its_attribute_names(n_attributes):
    task = FetchTask(n_items=6, n_labels=5, n_attributes=n_attributes)
    queries, items, targets, picked = make_fetch_batch(64, task, torch.Generator().manual_seed(0))
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
    task = FetchTask(n_items=5, n_labels=4, n_attributes=3)
    data = make_fetch_batch(32, task, torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    model = FetchModel(task, num_hiddens=12, num_heads=3)
    assert model(data[0], data[1]).shape == (32, 3, 4)
    assert slot_accuracies(model, data).shape == (3,)
    on = weights_on_picked(model, data)
    assert on.shape == (3, 3) and (on.sum(1) <= 1 + 1e-6).all() and (on >= 0).all()
    assert head_importance(model, data).shape == (3,)
    assert len(prune_greedily(model, data)) == 3


def test_training_with_two_attributes_of_few_items_lowers_the_loss():
    task = FetchTask(n_items=4, n_labels=4, n_attributes=2)
    torch.manual_seed(0)
    model = FetchModel(task, num_hiddens=16, num_heads=2)
    data = make_fetch_batch(512, task, torch.Generator().manual_seed(2))
    before = slot_accuracies(model, data).mean()
    threads = torch.get_num_threads()
    train_fetch(model, steps=150, batch=64, lr=1e-2, generator=torch.Generator().manual_seed(0),
                progress=False)
    assert torch.get_num_threads() == threads
    assert slot_accuracies(model, data).mean() > max(before, 0.5)


def test_more_attributes_than_items_is_refused():
    with pytest.raises(ValueError, match="n_attributes"):
        FetchTask(n_items=3, n_attributes=4)
