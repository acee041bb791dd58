"""side_by_side: independent trainings in worker threads, one CPU thread each."""
import threading

import pytest
import torch

from attention_core.worlds.side_by_side import side_by_side


def test_results_come_back_in_order_each_on_one_cpu_thread_in_its_own_thread():
    def training(k):
        def run(tick):
            for _ in range(k):
                tick()
            return k, torch.get_num_threads(), threading.get_ident()
        return run

    threads = torch.get_num_threads()
    results = side_by_side([training(k) for k in (3, 1, 2)], total=6, workers=2,
                           progress=False)
    assert [k for k, _, _ in results] == [3, 1, 2]
    assert all(n == 1 for _, n, _ in results)
    assert threading.get_ident() not in {ident for _, _, ident in results}
    assert torch.get_num_threads() == threads  # the caller's setting is left alone


def test_an_error_in_a_training_reaches_the_caller():
    def fails(tick):
        tick()
        raise RuntimeError("shape mismatch in step 1")

    def fine(tick):
        tick()
        return 0

    for trainings in ([fails, fine], [fine, fails]):
        with pytest.raises(RuntimeError, match="shape mismatch in step 1"):
            side_by_side(trainings, total=2, workers=2, progress=False)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="trainings must be a non-empty sequence of callables"):
        side_by_side([], total=1)
    with pytest.raises(ValueError, match="trainings must be a non-empty sequence of callables"):
        side_by_side([1], total=1)
    with pytest.raises(ValueError, match="workers must be a positive int"):
        side_by_side([lambda tick: 0], total=1, workers=0)
    with pytest.raises(ValueError, match="total must be a positive int"):
        side_by_side([lambda tick: 0], total=0)
