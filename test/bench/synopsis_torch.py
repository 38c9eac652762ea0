#!/usr/bin/env python3
"""PyTorch peer of build/synopsis_bench: batched box COUNT estimates of a
KDE synopsis (m = 10^4 sample rows, d = 4, two smoothed and two discrete
columns), fp64, written the obvious way: P = ndtr((hi - x)/h) - ndtr((lo - x)/h)
(indicator for discrete columns), product over columns, mean over rows; boxes
in chunks so that q x m x d stays in memory. Median of several runs after a
warm-up, data already on the device (the engine's timing includes its
uploads, so this favours the peer slightly).

    python3 test/bench/synopsis_torch.py [--quick]
"""
import sys
import time

import torch

quick = "--quick" in sys.argv
m, d = 10000, 4
sizes = [1, 10, 100, 1000] if quick else [1, 10, 100, 1000, 10000, 100000]
gen = torch.Generator().manual_seed(12345)
x0 = torch.randn(m, generator=gen, dtype=torch.float64)
sample = torch.stack([
    x0,
    3 * torch.randn(m, generator=gen, dtype=torch.float64) + 0.5 * x0,
    torch.round((10 * torch.randn(m, generator=gen, dtype=torch.float64) + 50) / 5) * 5,
    torch.randint(0, 6, (m,), generator=gen).to(torch.float64),
], dim=1)
h = 1.06 * sample.std(dim=0) * m ** -0.2
discrete = torch.tensor([False, False, True, True])


def boxes(q):
    lo_all, hi_all = [], []
    mn, mx = sample.min(dim=0).values, sample.max(dim=0).values
    a = mn + (mx - mn) * torch.rand(q, d, generator=gen, dtype=torch.float64)
    w = (mx - mn) * (0.1 + 0.5 * torch.rand(q, d, generator=gen, dtype=torch.float64))
    return a - w / 2, a + w / 2


def count(s, hh, disc, lo, hi, chunk):
    out = []
    for b in range(0, lo.shape[0], chunk):
        l = lo[b:b + chunk, None, :]            # c x 1 x d
        u = hi[b:b + chunk, None, :]
        x = s[None, :, :]                       # 1 x m x d
        smooth = torch.special.ndtr((u - x) / hh) - torch.special.ndtr((l - x) / hh)
        exact = ((x >= l) & (x <= u)).to(torch.float64)
        p = torch.where(disc, exact, smooth)    # c x m x d
        out.append(p.prod(dim=2).mean(dim=1))
    return torch.cat(out) * 1e7


def timed(dev, q, reps):
    lo, hi = boxes(q)
    s, hh, disc, lo, hi = (t.to(dev) for t in (sample, h, discrete, lo, hi))
    chunk = max(1, int(2e8 // (m * d * 8)))     # about 1.6 GB of temporaries per chunk
    times = []
    for r in range(reps + 1):
        if dev == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        count(s, hh, disc, lo, hi, chunk)
        if dev == "cuda":
            torch.cuda.synchronize()
        if r:
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


gpu = torch.cuda.is_available()
print(f"PyTorch {torch.__version__} peer: batched box COUNT, m = {m}, d = {d}, fp64; ms per batch"
      + ("" if gpu else " (no CUDA device)"))
print(f"{'boxes':>8} {'torch GPU':>12} {'torch CPU':>12}")
cpu_prev = None
for q in sizes:
    g = f"{timed('cuda', q, 9 if q <= 1000 else 3):.3f}" if gpu else "-"
    if cpu_prev is not None and cpu_prev[1] * q / cpu_prev[0] > 30000:
        c = f"{cpu_prev[1] * q / cpu_prev[0]:.3f}*"
    else:
        t = timed("cpu", q, 3 if q <= 1000 else 1)
        cpu_prev = (q, t)
        c = f"{t:.3f}"
    print(f"{q:>8} {g:>12} {c:>12}")
print(f"CPU = {torch.get_num_threads()} threads; * = extrapolated linearly (a run would exceed 30 s)")
