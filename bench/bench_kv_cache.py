"""Generating with and without a KV cache: time for ``steps`` new tokens, as a ratio measured
in one run (not a test: timings flake on a shared machine).

    python bench/bench_kv_cache.py [--device cuda] [--steps 256] [--hidden 256] [--layers 4]

Without the cache, step t runs the decoder over the whole prefix of t tokens again (the work
grows as t^2 over a sequence); with it, step t runs one position against t cached keys and
values. The outputs are checked equal before anything is timed.
"""
from __future__ import annotations

import argparse
import time

import torch

from attention_core.transformer import make_transformer


def generate(model, enc, src_lens, steps, bos, cached):
    """Greedy tokens (B, steps), always running ``steps`` steps (no early stop)."""
    decoder = model.decoder
    tokens = torch.full((enc.shape[0], 1), bos, dtype=torch.long, device=enc.device)
    state = decoder.init_state(enc, src_lens)
    for _ in range(steps):
        if cached:
            logits, state = decoder(tokens[:, -1:], state)
        else:  # a fresh state: the whole prefix through every layer again
            logits, _ = decoder(tokens, decoder.init_state(enc, src_lens))
        tokens = torch.cat([tokens, logits[:, -1:].argmax(-1)], dim=1)
    return tokens[:, 1:]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=256)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    model = make_transformer(100, 100, args.hidden, 4 * args.hidden, args.heads, args.layers,
                             max_len=args.steps + 1).to(device).eval()
    src = torch.randint(100, (args.batch, 32), device=device)
    src_lens = torch.full((args.batch,), 32, device=device)
    with torch.inference_mode():
        enc = model.encoder(src, src_lens)
        assert torch.equal(generate(model, enc, src_lens, 32, 1, True),
                           generate(model, enc, src_lens, 32, 1, False)), "cache changed the output"
        times = {}
        for cached in (True, False):
            best = float("inf")
            for _ in range(args.repeats):  # the fastest of a few runs: the least disturbed
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.perf_counter()
                generate(model, enc, src_lens, args.steps, 1, cached)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                best = min(best, time.perf_counter() - start)
            times[cached] = best
    print(f"device {device}, threads {torch.get_num_threads()}, torch {torch.__version__}; batch "
          f"{args.batch}, {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
          f"{args.steps} generated tokens")
    print("the first 32 tokens agree with and without the cache")
    print(f"  with cache:    {times[True]:.2f} s "
          f"({times[True] / args.steps * 1e3:.1f} ms per token)")
    print(f"  without cache: {times[False]:.2f} s "
          f"({times[False] / args.steps * 1e3:.1f} ms per token)")
    print(f"  without / with = {times[False] / times[True]:.1f}x   (target >= 3)")


if __name__ == "__main__":
    main()
