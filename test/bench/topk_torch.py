#!/usr/bin/env python3
"""PyTorch peer of the top-k benchmark: torch.topk on CUDA over 10^6 .. 10^8
uniform scores (float64 and float32), k in {10, 100, 1000}. Device time with
CUDA events, median of 10 runs after 3 warm-up runs, data resident on the GPU.
torch.topk breaks ties arbitrarily (the engine breaks them by id).

  python3 test/bench/topk_torch.py                 table
  python3 test/bench/topk_torch.py --csv           n,k,ms_float64,ms_float32 lines (read by build/topk_bench)
  python3 test/bench/topk_torch.py --sizes 1000000 10000000
"""
import argparse
import sys


def median_ms(fn, runs=10, warmup=3):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="*", default=[10**6, 10**7, 10**8])
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("torch is not installed", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("torch has no CUDA device", file=sys.stderr)
        return 1
    ks = [10, 100, 1000]
    if not args.csv:
        print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}: torch.topk, largest=True, sorted=True")
        print(f"{'n':>11} {'k':>5} | {'float64 ms':>10} {'float32 ms':>10}")
    for n in args.sizes:
        g = torch.Generator(device="cuda")
        g.manual_seed(1234 + n)
        x64 = torch.rand(n, dtype=torch.float64, device="cuda", generator=g)
        x32 = x64.to(torch.float32)
        for k in ks:
            t64 = median_ms(lambda: torch.topk(x64, k, largest=True, sorted=True))
            t32 = median_ms(lambda: torch.topk(x32, k, largest=True, sorted=True))
            if args.csv:
                print(f"{n},{k},{t64:.4f},{t32:.4f}")
            else:
                print(f"{n:>11} {k:>5} | {t64:>10.3f} {t32:>10.3f}")
            sys.stdout.flush()
        del x64, x32
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
