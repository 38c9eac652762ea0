#!/usr/bin/env python3
"""Plain PyTorch peer of build/kde_bench: the same KDE bandwidth cases on the
same GPU, written the way one would in PyTorch without custom kernels.

    python3 test/bench/kde_torch.py            (on the GPU machine)
    KDE_TORCH_MAX_S=10 python3 test/bench/kde_torch.py

Plug-in: fp64 centring and scaling, then chunked pair sums over all ordered
pairs (no symmetry) of K6 and K4 with fp32 terms and fp64 accumulation.
LSCV (grid 150, covariance 'full'): fp64 whitening (Cholesky), then per pass
chunks of Y_ij = |z_i - z_j|^2 (torch.cdist, exact differences) and, for every
h of the pass, exp(-Y/(4h^2)) and its square summed in fp64; 150 grid points,
then 40 golden-section steps, as in DESIGN.md. Times are wall clock with
torch.cuda.synchronize(), median of up to 3 runs after a warm-up; a case whose
c*n^2 prediction (from the largest measured size of the same method and d)
passes KDE_TORCH_MAX_S (default 30 s) is not run and its estimate is printed
with '*'.
"""
import math
import os
import statistics
import sys
import time

import torch

CAP_S = float(os.environ.get("KDE_TORCH_MAX_S", "30"))
DEV = torch.device("cuda")
PHI0 = 1 / math.sqrt(2 * math.pi)
CHUNK_ELEMS = 1 << 26  # pair values per chunk (256 MB of fp32 per temporary)


def bimodal(n, seed):
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(n, generator=g, dtype=torch.float64)
    z = torch.randn(n, generator=g, dtype=torch.float64)
    return torch.where(u < 0.3, 4 + 0.5 * z, z)


def points(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    x += 3.0 * (torch.rand(n, 1, generator=g, dtype=torch.float64) < 0.3)
    for k in range(1, d):
        x[:, k] += 0.5 * x[:, k - 1]
    return x


# ---- plug-in -------------------------------------------------------------------

def psi_sum(z, r, g):
    """sum_i sum_j K_r((z_i - z_j)/g) over all ordered pairs; z fp32 on the GPU."""
    n = z.numel()
    u = z / g
    rows = max(1, CHUNK_ELEMS // n)
    total = torch.zeros((), dtype=torch.float64, device=DEV)
    for i0 in range(0, n, rows):
        t2 = (u[i0:i0 + rows, None] - u[None, :]).square_()
        e = torch.exp(-0.5 * t2)
        if r == 6:
            p = ((t2 - 15) * t2 + 45) * t2 - 15
        else:
            p = (t2 - 6) * t2 + 3
        total += (p * e).sum(dtype=torch.float64)
    return total.item() * PHI0


def plugin(x):
    n = x.numel()
    sd = x.std()
    z = ((x - x.mean()) / sd).float()
    psi8 = 105 / (32 * math.sqrt(math.pi))
    g1 = (-2 * (-15 * PHI0) / (psi8 * n)) ** (1 / 9)
    psi6 = psi_sum(z, 6, g1) / (n * n * g1 ** 7)
    g2 = (-2 * (3 * PHI0) / (psi6 * n)) ** (1 / 7)
    psi4 = psi_sum(z, 4, g2) / (n * n * g2 ** 5)
    return sd.item() * ((1 / (2 * math.sqrt(math.pi))) / (psi4 * n)) ** 0.2


# ---- LSCV ----------------------------------------------------------------------

def lscv_sums(z, hs):
    """For each h: sum_{i<j} exp(-Y/(4h^2)) and exp(-Y/(2h^2)); one pass over Y."""
    n = z.shape[0]
    rows = max(1, CHUNK_ELEMS // n)
    s4 = torch.zeros(len(hs), dtype=torch.float64, device=DEV)
    s2 = torch.zeros(len(hs), dtype=torch.float64, device=DEV)
    for i0 in range(0, n, rows):
        Y = torch.cdist(z[i0:i0 + rows], z, compute_mode="donot_use_mm_for_euclid_dist").square_()
        for k, h in enumerate(hs):
            e = torch.exp(Y * (-1 / (4 * h * h)))
            s4[k] += e.sum(dtype=torch.float64)
            s2[k] += e.square().sum(dtype=torch.float64)
    # all ordered pairs: i = j adds exactly 1; i < j is half of the rest
    return ((s4 - n) / 2).tolist(), ((s2 - n) / 2).tolist()


def lscv(x, grid=150):
    n, d = x.shape
    xc = x - x.mean(0)
    S = xc.T @ xc / (n - 1)
    L = torch.linalg.cholesky(S)
    z = torch.linalg.solve_triangular(L, xc.T, upper=False).T.float().contiguous()
    log_sqrt_det = torch.log(torch.diagonal(L)).sum().item()
    c1 = (2 * math.pi) ** (d / 2) * math.exp(log_sqrt_det)
    c2 = (4 * math.pi) ** (d / 2) * math.exp(log_sqrt_det)

    def objective(h, a, b):
        return h ** -d * ((2 / n ** 2) * a / c2 - (4 / (n * (n - 1))) * b / c1 + 1 / (n * c2))

    def g(h):
        a, b = lscv_sums(z, [h])
        return objective(h, a[0], b[0])

    h0 = (4 / (d + 2)) ** (1 / (d + 4)) * n ** (-1 / (d + 4))
    hs = [h0 / 4 + (4 * h0 - h0 / 4) * k / (grid - 1) for k in range(grid)]
    a, b = lscv_sums(z, hs)
    gs = [objective(h, a[k], b[k]) for k, h in enumerate(hs)]
    k = min(range(grid), key=lambda i: gs[i])
    lo, hi = hs[max(k - 1, 0)], hs[min(k + 1, grid - 1)]
    best_h, best_g = hs[k], gs[k]
    r = (math.sqrt(5) - 1) / 2
    x1, x2 = hi - r * (hi - lo), lo + r * (hi - lo)
    a, b = lscv_sums(z, [x1, x2])
    f1, f2 = objective(x1, a[0], b[0]), objective(x2, a[1], b[1])
    for _ in range(40):
        for hh, gg in ((x1, f1), (x2, f2)):
            if gg < best_g:
                best_h, best_g = hh, gg
        if f1 < f2:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - r * (hi - lo)
            f1 = g(x1)
        else:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + r * (hi - lo)
            f2 = g(x2)
    return best_h, best_g


# ---- driver --------------------------------------------------------------------

def timed(fn, arg):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn(arg)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1000, out


def main():
    if not torch.cuda.is_available():
        print("kde_torch: no CUDA device")
        return 1
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}; "
          f"cases predicted over {CAP_S:.0f} s are extrapolated c*n^2 ('*')")
    print(f"{'method':<8} {'n':>8} {'d':>3} {'PyTorch ms':>12}   result")
    cases = [("plugin", n, 1) for n in (1000, 10000, 30720, 100000, 1000000)]
    cases += [("lscv", n, d) for d in (1, 4, 16) for n in (1000, 10240, 100000)]
    last = {}  # (method, d) -> (n, ms)
    for method, n, d in cases:
        prev = last.get((method, d))
        if prev and prev[1] * (n / prev[0]) ** 2 > CAP_S * 1000:
            est = prev[1] * (n / prev[0]) ** 2
            print(f"{method:<8} {n:>8} {d:>3} {est:>11.4g}*   (not run)", flush=True)
            continue
        if method == "plugin":
            data, fn = bimodal(n, 3 + n).to(DEV), plugin
        else:
            data, fn = points(n, d, 7 + n + d).to(DEV), lscv
        ms, out = timed(fn, data)  # warm-up (and the time of a long case)
        times = [ms]
        if ms < 1000:
            times = [timed(fn, data)[0] for _ in range(3)]
        ms = statistics.median(times)
        last[(method, d)] = (n, ms)
        res = f"h={out:.10g}" if method == "plugin" else f"h={out[0]:.8g} objective={out[1]:.10g}"
        print(f"{method:<8} {n:>8} {d:>3} {ms:>12.1f}   {res}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
