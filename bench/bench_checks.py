"""What the contracts at the public entry points cost: each checked call against the same
computation without its contract (``f.__wrapped__``), timed in one run and printed as ratios
(target: checked / unchecked <= 1.05 for every case), and the contract's own cost per call in
microseconds, on inputs so small that the computation costs next to nothing.

    python bench/bench_checks.py [--device cuda] [--min-run-time 2]

The contracts read shapes, dtypes and Python values only (and the values of CPU valid lengths,
which is free); none reads a GPU tensor's values, so none makes the host wait for the device.
"""
from __future__ import annotations

import argparse
import logging

import torch

import attention_core as ac

logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # CPU-only CUDA builds
from torch.utils import benchmark  # noqa: E402


def cases(device):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device)

    scores = randn(4, 512, 512)
    lens = torch.randint(1, 513, (4,), generator=g).to(device)
    yield ("masked_softmax, 4 x 512 x 512",
           lambda: ac.masked_softmax(scores, lens),
           lambda: ac.masked_softmax.__wrapped__(scores, lens))

    q, k, v = randn(8, 8, 512, 64), randn(8, 8, 512, 64), randn(8, 8, 512, 64)
    lens = torch.randint(1, 513, (8,), generator=g).to(device)
    dot = ac.DotProductAttention()
    yield ("DotProductAttention, 8 x 8 heads x 512 x 64",
           lambda: dot(q, k, v, lens),
           lambda: type(dot).forward.__wrapped__(dot, q, k, v, lens))

    mha = ac.MultiHeadAttention(512, 8, query_size=512, key_size=512,
                                value_size=512).to(device).eval()
    x = randn(8, 512, 512)

    yield ("MultiHeadAttention (fused), 8 x 512 x 512, 8 heads",
           lambda: mha(x, x, x, lens), lambda: type(mha).forward.__wrapped__(mha, x, x, x, lens))

    # one decoder step of chapter 4: the smallest call, where checks weigh the most
    additive = ac.AdditiveAttention(128, query_size=128, key_size=128).to(device).eval()
    query, memory = randn(128, 1, 128), randn(128, 20, 128)
    keys = additive.W_k(memory)
    lens = torch.randint(1, 21, (128,), generator=g).to(device)

    yield ("AdditiveAttention, one decoder step (128 x 1 x 20)",
           lambda: additive(query, memory, memory, lens, projected_keys=keys),
           lambda: type(additive).forward.__wrapped__(additive, query, memory, memory, lens,
                                                      projected_keys=keys))


def tiny_cases():
    """The same entries on inputs of a few numbers: what remains is the contract's own cost."""
    q, lens = torch.randn(1, 1, 4), torch.tensor([1])
    dot = ac.DotProductAttention()
    mha = ac.MultiHeadAttention(4, 2, query_size=4, key_size=4, value_size=4).eval()
    yield "attend", lambda: ac.attend(q, q, q), lambda: ac.attend.__wrapped__(q, q, q)
    yield ("DotProductAttention", lambda: dot(q, q, q),
           lambda: type(dot).forward.__wrapped__(dot, q, q, q))
    yield ("DotProductAttention with valid_lens", lambda: dot(q, q, q, lens),
           lambda: type(dot).forward.__wrapped__(dot, q, q, q, lens))
    yield ("MultiHeadAttention", lambda: mha(q, q, q),
           lambda: type(mha).forward.__wrapped__(mha, q, q, q))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--min-run-time", type=float, default=3.0, help="seconds per function and case")
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds")
    args = p.parse_args()
    device = torch.device(args.device)
    print(f"device {device}, threads {torch.get_num_threads()}, torch {torch.__version__}")
    print(f"{'case':<52} {'checked':>10} {'unchecked':>10}   ratio (target <= 1.05)")
    with torch.no_grad():
        for name, checked, unchecked in cases(device):
            torch.testing.assert_close(checked(), unchecked())  # the same computation
            # The cost of the checks is fixed; the machine's noise is not (on a shared VM the
            # median of a memory-bound kernel wanders by 2x between runs). So: interleaved
            # rounds after a warm-up, and the fastest block of each function.
            times = [float("inf"), float("inf")]
            for _ in range(args.rounds):
                for k, fn in enumerate((checked, unchecked)):
                    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn},
                                            num_threads=torch.get_num_threads())
                    timer.timeit(3)
                    blocks = timer.blocked_autorange(
                        min_run_time=args.min_run_time / args.rounds).times
                    times[k] = min(times[k], min(blocks))
            print(f"{name:<52} {times[0] * 1e6:8.1f}us {times[1] * 1e6:8.1f}us   "
                  f"{times[0] / times[1]:.3f}x")
        print(f"\n{'the contract alone, on (1, 1, 4) inputs':<52} {'cost per call':>21}")
        for name, checked, unchecked in tiny_cases():
            times = [float("inf"), float("inf")]
            for _ in range(args.rounds):
                for k, fn in enumerate((checked, unchecked)):
                    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=1)
                    times[k] = min(times[k], timer.timeit(2000).mean)
            print(f"{name:<52} {(times[0] - times[1]) * 1e6:18.1f}us")


if __name__ == "__main__":
    main()
