"""The operation list of chapter 3's solutions."""
import torch

import attention_core as ac
from attention_core.solutions_support.ch03 import dispatched_ops


def test_lists_the_computing_operations_in_order_and_leaves_views_out():
    x = torch.randn(2, 3)
    names = dispatched_ops(lambda t: (t.T @ t).relu().sum(), x)
    assert names == ["mm", "relu", "sum"]  # the transpose is a view


def test_the_count_does_not_depend_on_the_size_on_the_meta_device():
    def ops(n):
        x = torch.empty(1, n, 8, device="meta")
        return dispatched_ops(lambda: ac.attend(x, x, x, need_weights=True))
    assert ops(4) == ops(4096) and "bmm" in ops(4) and "_softmax" in ops(4)


def test_the_reshape_after_a_batched_product_is_not_counted():
    a, b = torch.randn(2, 3, 4), torch.randn(4, 5)
    # matmul folds the batch into a 2-D mm, then unfolds it
    with_reshape = dispatched_ops(lambda: a @ b)
    assert with_reshape == ["mm"]
