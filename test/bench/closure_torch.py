#!/usr/bin/env python3
"""PyTorch peer for the closure benchmark: transitive closure by repeated
boolean squaring with fp16 matrix products on the GPU (R <- R | R.R until R
stops growing; about log2(longest shortest path) products of n^3).

Same graphs as build/closure_bench (splitmix64, 2n edges, seed 42 + n), so the
pair counts can be compared line by line. Time: CUDA events around the
squaring loop (the adjacency already on the GPU), median of 3 after a warm-up.

  python3 test/bench/closure_torch.py [--quick]
"""
import sys

import torch

MASK = (1 << 64) - 1


def splitmix64(state):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def graph(n, seed):
    rng = splitmix64(seed)
    src, dst = [], []
    for _ in range(2 * n):
        src.append(next(rng) % n)
        dst.append(next(rng) % n)
    return src, dst


def closure(a):
    """a: n x n fp16 0/1 on the GPU -> (closure as fp16 0/1, products used)."""
    r = a
    count = int(r.sum(dtype=torch.float64).item())
    products = 0
    while True:
        p = r @ r
        products += 1
        r = ((p > 0) | (r > 0)).to(torch.float16)
        c = int(r.sum(dtype=torch.float64).item())
        if c == count:
            return r, products
        count = c


def main():
    quick = "--quick" in sys.argv
    if not torch.cuda.is_available():
        print("closure_torch: no CUDA device; nothing to measure")
        return
    sizes = [500, 1000] if quick else [1000, 2000, 3000, 4000, 5000, 8192, 16384, 32768]
    dev = torch.device("cuda")
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(0)}: closure by repeated squaring, fp16 GEMMs")
    print(f"{'n':>7} {'pairs':>11} {'products':>9} {'ms (median of 3)':>17}")
    for n in sizes:
        src, dst = graph(n, 42 + n)
        a = torch.zeros((n, n), dtype=torch.float16, device=dev)
        a[torch.tensor(src, device=dev), torch.tensor(dst, device=dev)] = 1
        r, products = closure(a)  # warm-up (and the answer)
        pairs = int(r.sum(dtype=torch.float64).item())
        times = []
        for _ in range(3):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            closure(a)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        times.sort()
        print(f"{n:>7} {pairs:>11} {products:>9} {times[1]:>17.2f}", flush=True)
        del a, r
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
