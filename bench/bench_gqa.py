"""One decoding step of grouped-query attention against a long cache: time and memory as
ratios to ordinary multi-head attention, measured in one run (not a test: timings flake).

    python bench/bench_gqa.py [--device cuda] [--batch 4] [--context 4096]
                              [--hidden 1024] [--heads 16]

A decoder that has cached the keys and values of ``context`` tokens generates one more: it
projects the new token, appends its key and value to the cache, and attends from one query to
context + 1 keys, then applies W_o. Appending is a concatenation, which copies the cache, as a
simple cache does; either way the step touches every cached byte. The cache is (B, num_kv_heads,
n, d_head) for keys and values alike, so its bytes fall by num_heads / num_kv_heads; the step
reads all of it, so its time falls with it once the cache, not the projections, dominates.
"""
from __future__ import annotations

import argparse

import torch
from torch.utils import benchmark

import attention_core as ac


def step_fn(mha, cache_k, cache_v, x):
    """One decoding step: the new token's query, key and value, the grown cache, attention."""
    def step():
        with torch.no_grad():
            q = mha.project_queries(x)                       # (B, h, 1, d_head)
            k, v = mha.project_kv(x, x)                      # (B, h_kv, 1, d_head)
            keys = torch.cat([cache_k, k], dim=2)            # (B, h_kv, n + 1, d_head)
            values = torch.cat([cache_v, v], dim=2)
            return mha.attend_heads(q, keys, values)         # (B, 1, num_hiddens)
    return step


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--context", type=int, default=4096)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--min-run-time", type=float, default=2.0, help="seconds per measurement")
    args = p.parse_args()
    device, h, d = torch.device(args.device), args.heads, args.hidden
    d_head = d // h
    print(f"device {device}, threads {torch.get_num_threads()}, torch {torch.__version__}; "
          f"batch {args.batch}, cached context {args.context} tokens, hidden {d}, {h} heads of "
          f"{d_head}, float32, one new token")
    results = {}
    for h_kv in (h, h // 4, 1):
        torch.manual_seed(0)
        mha = ac.MultiHeadAttention(d, h, num_kv_heads=h_kv, query_size=d, key_size=d,
                                    value_size=d).to(device).eval()
        cache_k = torch.randn(args.batch, h_kv, args.context, d_head, device=device)
        cache_v = torch.randn_like(cache_k)
        x = torch.randn(args.batch, 1, d, device=device)
        step = step_fn(mha, cache_k, cache_v, x)
        cache_bytes = 2 * cache_k.numel() * cache_k.element_size()
        timer = benchmark.Timer(stmt="step()", globals={"step": step},
                                num_threads=torch.get_num_threads())
        timer.timeit(3)  # warm-up
        results[h_kv] = (timer.blocked_autorange(min_run_time=args.min_run_time).median,
                         cache_bytes)
    base_time, base_bytes = results[h]
    print(f"{'num_kv_heads':>12} {'cache MiB':>10} {'step ms':>9} {'memory / MHA':>13} "
          f"{'time / MHA':>11}")
    for h_kv, (t, nbytes) in results.items():
        print(f"{h_kv:>12} {nbytes / 2**20:>10.1f} {t * 1e3:>9.2f} {nbytes / base_bytes:>13.3f} "
              f"{t / base_time:>11.3f}")


if __name__ == "__main__":
    main()
