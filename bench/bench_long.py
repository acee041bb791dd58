"""Attention at long lengths on the CPU: extra peak memory and time of each way to compute it,
one fresh process per measurement, printed as sizes and ratios from one run (not a test).

    python bench/bench_long.py [--quick]

Memory is the growth of the process's peak resident set (ru_maxrss) during the call, after the
inputs exist; time is the best of a few calls. Cases (1 batch, 1 head, d = 64, float32):

* chunked (tiled, online softmax) vs naive (the full score matrix) at 32k and 64k tokens;
* chunked vs torch's fused SDPA at 8k tokens, and one plain 8k x 8k matmul for scale;
* forward + backward at 8k (time, chunked vs SDPA) and at 16k (extra peak memory, chunked vs
  SDPA vs naive autograd, which keeps the n x n weights for the backward);
* the Triton kernel in Triton's interpreter on a small case (correctness only: the interpreter
  runs every program with NumPy and is no measure of speed);
* on CUDA (``--cuda``, where a GPU is present): the Triton kernel against SDPA's flash backend
  at 1k-16k tokens, forward time and peak memory.
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
    return F.scaled_dot_product_attention(q, k, v,
                                          attn_mask=torch.ones(1, 1, 1, n, dtype=torch.bool))
def dense_mask():
    return F.scaled_dot_product_attention(q, k, v,
                                          attn_mask=torch.ones(n, n, dtype=torch.bool).tril())
def backward(forward):  # forward + backward, as in training
    def run():
        for t in (q, k, v):
            t.requires_grad_()
        out = forward()
        out.backward(torch.ones_like(out))
        q.grad = k.grad = v.grad = None
    return run
fn = dict(chunked=lambda: chunked_attention(q, k, v),
          naive=naive, sdpa=lambda: F.scaled_dot_product_attention(q, k, v),
          matmul=lambda: q @ k.transpose(-2, -1),
          sliding=lambda: sliding_window_attention(q, k, v, 128), band=band,
          causal=lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
          padding=padding, dense_mask=dense_mask,
          chunked_fb=backward(lambda: chunked_attention(q, k, v)),
          sdpa_fb=backward(lambda: F.scaled_dot_product_attention(q, k, v)),
          naive_fb=backward(naive))[what]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter(); fn(); first = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
best = first
for _ in range({repeats}):
    start = time.perf_counter(); fn(); best = min(best, time.perf_counter() - start)
print(json.dumps(dict(mb=(peak - before) / 1024, s=best)))
'''


TRITON_CASE = r'''
import os
os.environ["TRITON_INTERPRET"] = "1"
import torch
from torch.nn import functional as F
from attention_core import attend
torch.manual_seed(0)
q, k, v = torch.randn(2, 4, 77, 64), torch.randn(2, 2, 77, 64), torch.randn(2, 2, 77, 64)
mask = torch.arange(77) < torch.tensor([77, 40])[:, None, None, None]
for causal in (False, True):
    ours, _ = attend(q, k, v, mask, is_causal=causal, backend="triton")
    ref, _ = attend(q, k, v, mask, is_causal=causal, backend="sdpa")
    print(f"triton (interpreter), 77 tokens, GQA 4/2 heads, padding, causal={causal}: "
          f"max |difference| from SDPA {(ours - ref).abs().max().item():.1e}")
'''

CUDA_CASE = r'''
import json, torch
from torch.nn import functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from attention_core import attend
rows = []
for n in (1024, 2048, 4096, 8192, 16384):
    q, k, v = (torch.randn(1, 16, n, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    def flash():
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    fns = dict(triton=lambda: attend(q, k, v, is_causal=True, backend="triton")[0], flash=flash)
    torch.testing.assert_close(fns["triton"](), fns["flash"](), atol=2e-3, rtol=2e-3)
    row = dict(n=n)
    for name, f in fns.items():
        f(); torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(20):
            f()
        end.record(); torch.cuda.synchronize()
        row[name] = dict(ms=start.elapsed_time(end) / 20,
                         mb=(torch.cuda.max_memory_allocated() - base) / 2**20)
    rows.append(row)
print(json.dumps(rows))
'''


def measure(what, n, repeats=2):
    out = subprocess.run([sys.executable, "-c", CASE.format(n=n, what=what, repeats=repeats)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="skip 64k and naive attention at 32k")
    p.add_argument("--cuda", action="store_true", help="also time the Triton kernel on CUDA")
    args = p.parse_args()
    rows = []

    def row(label, what, n, repeats=2):
        r = measure(what, n, repeats)
        rows.append((label, n, r))
        print(f"{label:<42} n={n:>6}  +{r['mb']:>8.0f} MB  {r['s']:>8.3f} s", flush=True)
        return r

    print("1 batch, 1 head, d = 64, float32; memory = growth of peak RSS during the call")
    chunked32 = row("chunked (default tiles)", "chunked", 32768, 0)
    if not args.quick:
        row("chunked (default tiles)", "chunked", 65536, 0)
        row("naive (full score matrix)", "naive", 32768, 0)
    print(f"  score matrix alone at 32k: {32768 ** 2 * 4 / 2 ** 30:.0f} GiB in float32; "
          f"chunked target <= 256 MB: {'met' if chunked32['mb'] <= 256 else 'MISSED'}")
    c, s, m = row("chunked", "chunked", 8192), row("torch SDPA (fused)", "sdpa", 8192), \
        row("one 8k x 8k matmul (q k^T)", "matmul", 8192)
    print(f"  chunked / SDPA = {c['s'] / s['s']:.1f}x (target <= 6); SDPA / one matmul = "
          f"{s['s'] / m['s']:.2f}x")
    cf, sf = row("chunked, forward + backward", "chunked_fb", 8192), \
        row("SDPA, forward + backward", "sdpa_fb", 8192)
    print(f"  forward + backward: chunked / SDPA = {cf['s'] / sf['s']:.1f}x (target <= 10)")
    cm = row("chunked, forward + backward", "chunked_fb", 16384, 0)
    row("SDPA, forward + backward", "sdpa_fb", 16384, 0)
    row("naive autograd, forward + backward", "naive_fb", 16384, 0)
    print(f"  chunked forward + backward at 16k: +{cm['mb']:.0f} MB (target <= 128)")
    sw, band = (row("sliding window +-128", "sliding", 16384),
                row("dense band mask +-128 (SDPA)", "band", 16384, 0))
    print(f"  sliding window: {sw['s']:.3f} s (target <= 0.3), +{sw['mb']:.0f} MB "
          f"(target <= 64); band mask {band['s'] / sw['s']:.0f}x slower")
    for label, what in (("SDPA, is_causal", "causal"),
                        ("SDPA, (B, 1, 1, n) padding mask", "padding"),
                        ("SDPA, dense (n, n) boolean mask", "dense_mask")):
        row(label, what, 16384, 1)
    out = subprocess.run([sys.executable, "-c", TRITON_CASE], capture_output=True, text=True,
                         check=True)
    print(out.stdout.strip())
    if args.cuda:
        out = subprocess.run([sys.executable, "-c", CUDA_CASE], capture_output=True, text=True,
                             check=True)
        print("CUDA, 16 heads, d = 64, float16, causal: Triton kernel vs SDPA's flash backend")
        for r in json.loads(out.stdout.strip().splitlines()[-1]):
            t, f = r["triton"], r["flash"]
            print(f"  n={r['n']:>6}  triton {t['ms']:7.3f} ms +{t['mb']:7.1f} MB   "
                  f"flash {f['ms']:7.3f} ms +{f['mb']:7.1f} MB   "
                  f"time ratio {t['ms'] / f['ms']:.2f}x")


if __name__ == "__main__":
    main()
