#!/usr/bin/env python3
"""PyTorch peer for the moving-object benchmark (test/bench/moving_bench.cpp).

The same workload (objects on 100 km x 100 km, speeds 1-1000 m/s, batches of
1M updates of random objects with duplicates -- the last entry of an id wins --
and batches of 1M range counts of 100 m x 100 m) on a grid of 256 x 256 cells,
done the way one would in PyTorch: positions in dense tensors indexed by id, a
batch applied with a scatter (last entry per id chosen with scatter_reduce
'amax' on the entry number), then the grid rebuilt by a stable sort of the
objects by cell (+ per-cell start offsets); queries expand to (query,
candidate object) pairs over the at most 2 x 2 cells a 100 m query can touch
(the cell side is 390 m) and a scatter_add counts the hits. Counts are checked
against brute force for a sample of queries.

    python3 test/bench/moving_torch.py            (needs a CUDA device)
    python3 test/bench/moving_torch.py --quick
"""
import statistics
import sys
import time

import torch

SIDE = 100000.0
CELLS = 256


def sync():
    torch.cuda.synchronize()


def make_world(n, gen, dev):
    x = torch.rand(n, generator=gen, device=dev, dtype=torch.float64) * SIDE
    y = torch.rand(n, generator=gen, device=dev, dtype=torch.float64) * SIDE
    speed = 1 + 999 * torch.rand(n, generator=gen, device=dev, dtype=torch.float64)
    th = 2 * torch.pi * torch.rand(n, generator=gen, device=dev, dtype=torch.float64)
    return x, y, speed * torch.cos(th), speed * torch.sin(th)


def make_batch(x, y, vx, vy, size, gen):
    """size random objects (with replacement) moved by v * 1 s, reflected at the border."""
    n = x.numel()
    ids = torch.randint(0, n, (size,), generator=gen, device=x.device)
    nx = x[ids] + vx[ids]
    ny = y[ids] + vy[ids]
    nx = torch.where(nx < 0, -nx, torch.where(nx > SIDE, 2 * SIDE - nx, nx))
    ny = torch.where(ny < 0, -ny, torch.where(ny > SIDE, 2 * SIDE - ny, ny))
    return ids, nx, ny


def cell_of(x, y):
    cw = SIDE / CELLS
    cx = torch.clamp((x / cw).to(torch.int64), 0, CELLS - 1)
    cy = torch.clamp((y / cw).to(torch.int64), 0, CELLS - 1)
    return cy * CELLS + cx


class Grid:
    def __init__(self, x, y):
        self.x, self.y = x.clone(), y.clone()
        self.rebuild()

    def rebuild(self):
        cell = cell_of(self.x, self.y)
        cell_sorted, order = torch.sort(cell, stable=True)
        self.order = order
        self.sx = self.x[order]
        self.sy = self.y[order]
        counts = torch.bincount(cell_sorted, minlength=CELLS * CELLS)
        self.start = torch.cumsum(counts, 0) - counts
        self.count = counts

    def update(self, ids, xs, ys):
        m = ids.numel()
        entry = torch.arange(m, device=ids.device)
        last = torch.full((self.x.numel(),), -1, dtype=torch.int64, device=ids.device)
        last.scatter_reduce_(0, ids, entry, reduce="amax")
        keep = last[ids] == entry  # the last entry of each id
        self.x[ids[keep]] = xs[keep]
        self.y[ids[keep]] = ys[keep]
        self.rebuild()

    def range_count(self, qx0, qy0, qx1, qy1, chunk=200000):
        out = torch.empty(qx0.numel(), dtype=torch.int64, device=qx0.device)
        cw = SIDE / CELLS
        for s in range(0, qx0.numel(), chunk):
            a0, b0 = qx0[s:s + chunk].clamp(0, SIDE), qy0[s:s + chunk].clamp(0, SIDE)
            a1, b1 = qx1[s:s + chunk].clamp(0, SIDE), qy1[s:s + chunk].clamp(0, SIDE)
            q = a0.numel()
            c0 = torch.clamp((a0 / cw).to(torch.int64), 0, CELLS - 1)
            c1 = torch.clamp((a1 / cw).to(torch.int64), 0, CELLS - 1)
            r0 = torch.clamp((b0 / cw).to(torch.int64), 0, CELLS - 1)
            r1 = torch.clamp((b1 / cw).to(torch.int64), 0, CELLS - 1)
            # at most 2 x 2 candidate cells per query (queries smaller than a cell)
            dc = torch.tensor([0, 1, 0, 1], device=a0.device)
            dr = torch.tensor([0, 0, 1, 1], device=a0.device)
            cx = c0[:, None] + dc[None, :]
            cy = r0[:, None] + dr[None, :]
            valid = (cx <= c1[:, None]) & (cy <= r1[:, None])
            cell = (cy.clamp(max=CELLS - 1) * CELLS + cx.clamp(max=CELLS - 1))
            n_obj = torch.where(valid, self.count[cell], torch.zeros_like(cell)).reshape(-1)
            first = self.start[cell].reshape(-1)
            qid = torch.arange(q, device=a0.device).repeat_interleave(4)
            total = int(n_obj.sum())
            pair_q = torch.repeat_interleave(qid, n_obj, output_size=total)
            pair_base = torch.repeat_interleave(first, n_obj, output_size=total)
            seg_start = torch.cumsum(n_obj, 0) - n_obj
            offs = torch.arange(total, device=a0.device) - torch.repeat_interleave(seg_start, n_obj, output_size=total)
            idx = pair_base + offs
            px, py = self.sx[idx], self.sy[idx]
            hit = (px >= qx0[s:s + chunk][pair_q]) & (px <= qx1[s:s + chunk][pair_q]) & \
                  (py >= qy0[s:s + chunk][pair_q]) & (py <= qy1[s:s + chunk][pair_q])
            cnt = torch.zeros(q, dtype=torch.int64, device=a0.device)
            cnt.scatter_add_(0, pair_q, hit.to(torch.int64))
            out[s:s + q] = cnt
        return out


def timed(fn, reps):
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def main():
    quick = "--quick" in sys.argv
    if not torch.cuda.is_available():
        print("moving_torch: no CUDA device; nothing measured")
        return
    dev = torch.device("cuda")
    sizes = [100000, 300000] if quick else [1000000, 3000000, 10000000]
    batch = 100000 if quick else 1000000
    nq = 100000 if quick else 1000000
    gen = torch.Generator(device=dev)
    gen.manual_seed(42)
    print(f"PyTorch {torch.__version__} peer on {torch.cuda.get_device_name()}: dense tensors by id + sort-based "
          f"grid rebuild ({CELLS} x {CELLS} cells); batches of {batch} updates, {nq} range counts of 100 m x 100 m; "
          "rates in millions per second (median of 4 batches / 3 query runs after a warm-up)\n")
    print("| objects | updates/s | queries/s | counts checked |")
    print("|---|---|---|---|")
    for n in sizes:
        x, y, vx, vy = make_world(n, gen, dev)
        g = Grid(x, y)
        batches = [make_batch(x, y, vx, vy, min(batch, n), gen) for _ in range(5)]
        it = iter(batches)
        g.update(*next(it))  # warm-up
        upd = timed(lambda: g.update(*next(it)), 4)
        qx0 = torch.rand(nq, generator=gen, device=dev, dtype=torch.float64) * (SIDE - 100)
        qy0 = torch.rand(nq, generator=gen, device=dev, dtype=torch.float64) * (SIDE - 100)
        qx1, qy1 = qx0 + 100, qy0 + 100
        g.range_count(qx0, qy0, qx1, qy1)  # warm-up
        qry = timed(lambda: g.range_count(qx0, qy0, qx1, qy1), 3)
        counts = g.range_count(qx0, qy0, qx1, qy1)
        k = 16  # brute force over every object for the first k queries
        brute = ((g.x[None, :] >= qx0[:k, None]) & (g.x[None, :] <= qx1[:k, None]) &
                 (g.y[None, :] >= qy0[:k, None]) & (g.y[None, :] <= qy1[:k, None])).sum(1)
        ok = bool(torch.equal(brute, counts[:k]))
        print(f"| {n // 1000000 if n >= 1000000 else n // 1000}{'M' if n >= 1000000 else 'k'} | "
              f"{min(batch, n) / upd / 1000:.1f} | {nq / qry / 1000:.1f} | {'ok' if ok else 'MISMATCH'} ({k}) |",
              flush=True)
        del g, batches


if __name__ == "__main__":
    main()
