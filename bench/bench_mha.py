"""Speed of attention_core.MultiHeadAttention against torch.nn.MultiheadAttention and d2l's,
measured in one run on this machine and printed as ratios (not a test: timings flake on a
shared machine). The three are timed in turn, round after round, and each keeps its best
round, so a change of load shifts all three rather than the ratio.

    python bench/bench_mha.py [--device cuda] [--batch 8] [--tokens 512] [--hidden 512] [--heads 8]

Self-attention (queries = keys = values), float32, the same weights in all three.
"""
from __future__ import annotations

import argparse
import warnings

import torch
from torch.utils import benchmark

import attention_core as ac

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from d2l import torch as d2l


def build(hidden, heads, device):
    ours = ac.MultiHeadAttention(hidden, heads, query_size=hidden, key_size=hidden,
                                 value_size=hidden).to(device)
    ref = torch.nn.MultiheadAttention(hidden, heads, bias=False, batch_first=True).to(device)
    theirs = d2l.MultiHeadAttention(hidden, heads, dropout=0.0, bias=False).to(device)
    x = torch.randn(1, 2, hidden, device=device)
    theirs(x, x, x, None)  # materialise d2l's lazy layers
    with torch.no_grad():  # one set of weights for all three
        W_q, W_k, W_v = ref.in_proj_weight.chunk(3)
        for mine, d2ls, w in ((ours.W_q, theirs.W_q, W_q), (ours.W_k, theirs.W_k, W_k),
                              (ours.W_v, theirs.W_v, W_v),
                              (ours.W_o, theirs.W_o, ref.out_proj.weight)):
            mine.weight.copy_(w)
            d2ls.weight.copy_(w)
    return {"attention_core": lambda x: ours(x, x, x),
            "torch": lambda x: ref(x, x, x, need_weights=False)[0],
            "d2l": lambda x: theirs(x, x, x, None)}, (ours, ref, theirs)


def timer(fn, x, backward):
    if backward:
        x = x.clone().requires_grad_(True)
        stmt = "fn(x).sum().backward()"
        globs = {"fn": fn, "x": x}
    else:
        stmt = "with torch.no_grad(): fn(x)"
        globs = {"fn": fn, "x": x, "torch": torch}
    t = benchmark.Timer(stmt=stmt, globals=globs, num_threads=torch.get_num_threads())
    t.timeit(2)  # warm-up
    return t


def interleaved(timers: dict, rounds: int, min_run_time: float) -> dict:
    """Each implementation's best median over ``rounds`` rounds, timed in turn within a round,
    so that a change of load on a shared machine hits all of them rather than one."""
    best = {name: float("inf") for name in timers}
    for _ in range(rounds):
        for name, t in timers.items():
            best[name] = min(best[name], t.blocked_autorange(min_run_time=min_run_time).median)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--tokens", type=int, default=512)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--rounds", type=int, default=5, help="rounds of interleaved measurements")
    p.add_argument("--min-run-time", type=float, default=0.6, help="seconds per measurement")
    args = p.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    fns, modules = build(args.hidden, args.heads, device)
    x = torch.randn(args.batch, args.tokens, args.hidden, device=device)
    with torch.no_grad():
        out = {name: fn(x) for name, fn in fns.items()}
    for name in ("torch", "d2l"):
        torch.testing.assert_close(out["attention_core"], out[name], atol=1e-4, rtol=1e-4)

    print(f"device {device}, threads {torch.get_num_threads()}, torch {torch.__version__}; "
          f"batch {args.batch}, {args.tokens} tokens, hidden {args.hidden}, {args.heads} heads, "
          f"float32")
    print("outputs agree (1e-4) across all three")
    for phase, backward in (("forward (no grad)", False), ("forward + backward", True)):
        for m in modules:
            m.train(backward)  # eval for inference: torch's fast path needs it
        timers = {name: timer(fn, x, backward) for name, fn in fns.items()}
        times = interleaved(timers, args.rounds, args.min_run_time)
        ours = times["attention_core"]
        print(f"\n{phase}:")
        for name, t in times.items():
            print(f"  {name:>15}: {t * 1e3:8.1f} ms")
        print(f"  attention_core / torch = {ours / times['torch']:.2f}x   (target <= 1.10)")
        print(f"  d2l / attention_core   = {times['d2l'] / ours:.2f}x   "
              f"(target >= 1.70 for no-grad)")


if __name__ == "__main__":
    main()
