#!/usr/bin/env python3
"""PyTorch peer of hashjoin_bench: PyTorch has no hash table, so the peer is the
sort-based one a PyTorch user would write: "build" = torch.sort of the keys
(values permuted along), "find" = torch.searchsorted + gather + equality;
the join = sort the build side, searchsorted left/right per probe key (count),
then repeat_interleave to materialise the pairs.

    python3 test/bench/hashjoin_torch.py [--quick]

Times: CUDA events, data already on the GPU, median of 5 after a warm-up.
"""
import statistics
import sys

try:
    import torch
except ImportError:
    print("hashjoin_torch: PyTorch is not installed; nothing to compare")
    sys.exit(0)

QUICK = "--quick" in sys.argv


def timed(fn, reps=5):
    fn()  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        out = fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times), out


def unique_keys(n, gen):
    # n distinct int64 keys in random order: a random permutation of a strided range, shuffled bits
    base = torch.randperm(n, device="cuda", generator=gen).to(torch.int64)
    return base * 0x9E3779B1 + 12345  # an injective affine map keeps them distinct


def main():
    if not torch.cuda.is_available():
        print("hashjoin_torch: no CUDA device; nothing to compare")
        return
    dev = torch.cuda.get_device_name(0)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    sizes = [10**5, 10**6] if QUICK else [10**6, 10**7, 5 * 10**7, 10**8]
    print(f"hashjoin_torch{' --quick' if QUICK else ''}: sort + searchsorted peer on {dev}, torch {torch.__version__}")
    print("GPU ms = CUDA events, data on the GPU, median of 5 after a warm-up; G/s = 10^9 keys per second\n")
    print(f"| {'operation':<22} | {'n':<10} | {'GPU ms':>9} | {'G/s':>7} | notes")
    print(f"|{'-' * 24}|{'-' * 12}|{'-' * 11}|{'-' * 9}|------")
    for n in sizes:
        keys = unique_keys(n, gen)
        values = torch.arange(n, device="cuda", dtype=torch.int64)
        queries = keys[torch.randperm(n, device="cuda", generator=gen)]

        def build():
            sk, order = torch.sort(keys)
            return sk, values[order]

        ms_b, (sk, sv) = timed(build)

        def find():
            pos = torch.searchsorted(sk, queries).clamp_(max=n - 1)
            found = sk[pos] == queries
            return torch.where(found, sv[pos], torch.zeros_like(pos)), found

        ms_f, (got, found) = timed(find)
        assert bool(found.all()), "every query is a key"
        print(f"| {'build (torch.sort)':<22} | {n:<10} | {ms_b:9.2f} | {n / ms_b / 1e6:7.2f} | sorted keys + permuted values")
        print(f"| {'find (searchsorted)':<22} | {n:<10} | {ms_f:9.2f} | {n / ms_f / 1e6:7.2f} | all keys present, random order")
        del keys, values, queries, sk, sv, got, found
        torch.cuda.empty_cache()

    nb, np_ = (10**6, 10**5) if QUICK else (10**7, 10**6)
    bk = torch.randint(0, nb, (nb,), device="cuda", generator=gen)
    bv = torch.arange(nb, device="cuda", dtype=torch.int64)
    pk = torch.randint(0, 2 * nb, (np_,), device="cuda", generator=gen)
    pv = -torch.arange(np_, device="cuda", dtype=torch.int64)

    def join_count():
        sk, _ = torch.sort(bk)
        lo = torch.searchsorted(sk, pk)
        hi = torch.searchsorted(sk, pk, right=True)
        return int((hi - lo).sum())

    def join_emit():
        sk, order = torch.sort(bk)
        sv = bv[order]
        lo = torch.searchsorted(sk, pk)
        cnt = torch.searchsorted(sk, pk, right=True) - lo
        row = torch.repeat_interleave(torch.arange(np_, device="cuda"), cnt)
        start = torch.repeat_interleave(lo - (torch.cumsum(cnt, 0) - cnt), cnt)
        b = start + torch.arange(row.numel(), device="cuda")
        return pk[row], sv[b], pv[row]

    ms_c, matches = timed(join_count)
    ms_e, (k, b, p) = timed(join_emit)
    assert k.numel() == matches
    print(f"| {'join count':<22} | {f'{nb}x{np_}':<10} | {ms_c:9.2f} | {'':>7} | {matches} matches (sort + 2 searchsorted)")
    print(f"| {'join emit':<22} | {f'{nb}x{np_}':<10} | {ms_e:9.2f} | {'':>7} | pairs on the GPU (repeat_interleave)")


if __name__ == "__main__":
    main()
