"""Attention at long lengths on the CPU: extra peak memory and time of each way to compute it,
one fresh process per measurement, printed as sizes and ratios from one run (not a test).

    python bench/bench_long.py [--quick]

Memory is the growth of the process's peak resident set (ru_maxrss) during the call, after the
inputs exist; time is the best of a few calls. Cases (1 batch, 1 head, d = 64, float32):

* chunked (tiled, online softmax) vs naive (the full score matrix) at 32k and 64k tokens;
* chunked vs torch's fused SDPA at 8k tokens, and one plain 8k x 8k matmul for scale;
* sliding window (+-128) vs dense attention with a band mask at 16k;
* SDPA with is_causal, with a (B, 1, 1, n) padding mask, and with a dense (n, n) mask at 16k.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASE = r'''
import json, resource, time, torch
from torch.nn import functional as F
from attention_core.efficient import chunked_attention, sliding_window_attention
n, what = {n}, {what!r}
torch.manual_seed(0)
q, k, v = (torch.randn(1, 1, n, 64) for _ in range(3))
def naive():
    w = torch.softmax(q @ k.transpose(-2, -1) / 8.0, -1)
    return w @ v
def band():
    i = torch.arange(n)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=(i[:, None] - i).abs() <= 128)
def padding():
    return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(1, 1, 1, n, dtype=torch.bool))
def dense_mask():
    return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(n, n, dtype=torch.bool).tril())
fn = dict(chunked=lambda: chunked_attention(q, k, v, block_size=256),
          naive=naive, sdpa=lambda: F.scaled_dot_product_attention(q, k, v),
          matmul=lambda: q @ k.transpose(-2, -1),
          sliding=lambda: sliding_window_attention(q, k, v, 128), band=band,
          causal=lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
          padding=padding, dense_mask=dense_mask)[what]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter(); fn(); first = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
best = first
for _ in range({repeats}):
    start = time.perf_counter(); fn(); best = min(best, time.perf_counter() - start)
print(json.dumps(dict(mb=(peak - before) / 1024, s=best)))
'''


def measure(what, n, repeats=2):
    out = subprocess.run([sys.executable, "-c", CASE.format(n=n, what=what, repeats=repeats)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="skip 64k and naive attention at 32k")
    args = p.parse_args()
    rows = []

    def row(label, what, n, repeats=2):
        r = measure(what, n, repeats)
        rows.append((label, n, r))
        print(f"{label:<42} n={n:>6}  +{r['mb']:>8.0f} MB  {r['s']:>8.3f} s", flush=True)
        return r

    print("1 batch, 1 head, d = 64, float32; memory = growth of peak RSS during the call")
    chunked32 = row("chunked (tiles of 256)", "chunked", 32768, 0)
    if not args.quick:
        row("chunked (tiles of 256)", "chunked", 65536, 0)
        row("naive (full score matrix)", "naive", 32768, 0)
    print(f"  score matrix alone at 32k: {32768 ** 2 * 4 / 2 ** 30:.0f} GiB in float32; "
          f"chunked target <= 256 MB: {'met' if chunked32['mb'] <= 256 else 'MISSED'}")
    c, s, m = row("chunked", "chunked", 8192), row("torch SDPA (fused)", "sdpa", 8192), \
        row("one 8k x 8k matmul (q k^T)", "matmul", 8192)
    print(f"  chunked / SDPA = {c['s'] / s['s']:.1f}x (target <= 8); SDPA / one matmul = "
          f"{s['s'] / m['s']:.2f}x")
    sw, band = row("sliding window +-128", "sliding", 16384), row("dense band mask +-128 (SDPA)", "band", 16384, 0)
    print(f"  sliding window: {sw['s']:.3f} s (target <= 0.3), +{sw['mb']:.0f} MB (target <= 64); "
          f"band mask {band['s'] / sw['s']:.0f}x slower")
    for label, what in (("SDPA, is_causal", "causal"), ("SDPA, (B, 1, 1, n) padding mask", "padding"),
                        ("SDPA, dense (n, n) boolean mask", "dense_mask")):
        row(label, what, 16384, 1)


if __name__ == "__main__":
    main()
