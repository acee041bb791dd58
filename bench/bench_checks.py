"""What the input checks at the public entry points cost: each checked forward against the
same computation with the checks taken out, timed in one run and printed as ratios (target:
checked / unchecked <= 1.05 for every case).

    python bench/bench_checks.py [--device cuda] [--min-run-time 2]

The checks read shapes, dtypes and Python values only (and the values of CPU valid lengths,
which is free); none reads a GPU tensor's values, so none makes the host wait for the device.
"""
from __future__ import annotations

import argparse
import logging

import torch

import attention_core as ac
from attention_core.attention import _attend
from attention_core.masking import softmax_over, with_head_dims

logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # CPU-only CUDA builds
from torch.utils import benchmark  # noqa: E402


def unchecked_mask(valid_lens, n_keys, rank):
    """valid_lens -> mask, the same operations as valid_lens_to_mask without its checks."""
    mask = torch.arange(n_keys, device=valid_lens.device) < valid_lens[:, None, None]
    return with_head_dims(mask, rank)


def cases(device):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g).to(device)

    scores = randn(4, 512, 512)
    lens = torch.randint(1, 513, (4,), generator=g).to(device)
    yield ("masked_softmax, 4 x 512 x 512",
           lambda: ac.masked_softmax(scores, lens),
           lambda: softmax_over(scores, unchecked_mask(lens, 512, 3)))

    q, k, v = randn(8, 8, 512, 64), randn(8, 8, 512, 64), randn(8, 8, 512, 64)
    lens = torch.randint(1, 513, (8,), generator=g).to(device)
    dot = ac.DotProductAttention()
    yield ("DotProductAttention, 8 x 8 heads x 512 x 64",
           lambda: dot(q, k, v, lens),
           lambda: _attend(q, k, v, unchecked_mask(lens, 512, 4), need_weights=True)[0])

    mha = ac.MultiHeadAttention(512, 8, query_size=512, key_size=512, value_size=512).to(device).eval()
    x = randn(8, 512, 512)

    def mha_unchecked():
        q, k, v = (mha.split_heads(w(x), 8) for w in (mha.W_q, mha.W_k, mha.W_v))
        out, _ = _attend(q, k, v, unchecked_mask(lens, 512, 4))
        return mha.W_o(mha.merge_heads(out))

    yield ("MultiHeadAttention (fused), 8 x 512 x 512, 8 heads",
           lambda: mha(x, x, x, lens), mha_unchecked)

    # one decoder step of chapter 4: the smallest call, where checks weigh the most
    additive = ac.AdditiveAttention(128, query_size=128, key_size=128).to(device).eval()
    query, memory = randn(128, 1, 128), randn(128, 20, 128)
    keys = additive.W_k(memory)
    lens = torch.randint(1, 21, (128,), generator=g).to(device)

    def additive_unchecked():
        from attention_core.scoring import additive_scores
        return _attend(query, memory, memory, unchecked_mask(lens, 20, 3),
                       score=lambda q, k: additive_scores(additive.W_q, additive.W_k, additive.w_v,
                                                          q, k, keys))[0]

    yield ("AdditiveAttention, one decoder step (128 x 1 x 20)",
           lambda: additive(query, memory, memory, lens, projected_keys=keys), additive_unchecked)


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
                    blocks = timer.blocked_autorange(min_run_time=args.min_run_time / args.rounds).times
                    times[k] = min(times[k], min(blocks))
            print(f"{name:<52} {times[0] * 1e6:8.1f}us {times[1] * 1e6:8.1f}us   "
                  f"{times[0] / times[1]:.3f}x")


if __name__ == "__main__":
    main()
