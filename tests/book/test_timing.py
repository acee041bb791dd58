"""book.timing: interleaved rounds, each function's best, blocks sized to min_run_time."""
import time

from attention_core.book.timing import best_times


def spin(seconds):
    """Busy for ``seconds`` of this thread's CPU time: best_times measures CPU time on one
    thread, which a sleep does not use."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_best_times_interleaves_rounds_and_keeps_each_functions_best():
    order = []
    best = best_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                      rounds=3, min_run_time=0.001)
    assert set(best) == {"a", "b"} and all(0 < t < float("inf") for t in best.values())
    # each round times a, then b: the calls alternate in blocks, three blocks of each
    blocks = [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]
    assert blocks == ["a", "b"] * 4  # one warm-up call each, then three rounds


def test_best_times_calls_a_long_function_once_per_round():
    # a call longer than min_run_time is timed alone: one warm-up call, then one per round
    # (blocked_autorange would call it twice a round, once only to size its block)
    calls = []
    best = best_times({"slow": lambda: (calls.append(1), spin(0.02))}, rounds=3,
                      min_run_time=0.01)
    assert len(calls) == 4 and 0.02 <= best["slow"] < 1.0


def test_best_times_rounds_of_a_quick_function_stay_near_min_run_time():
    # blocks of about min_run_time / 10 (here one call: a spin lasts at least 1 ms) until 20 ms
    # are filled, at most 20 calls a round (blocked_autorange grew its blocks to 100 calls, then
    # timed another 100)
    calls = []
    best = best_times({"quick": lambda: (calls.append(1), spin(0.001))}, rounds=2,
                      min_run_time=0.02)
    assert len(calls) <= 1 + 2 * 30 and best["quick"] >= 0.001
