#!/usr/bin/env python3
"""Parse the benchmark logs in RESULTS_DIR into gnuplot .dat files in DAT_DIR.

Used by test/bench/plot.sh (see its header for the file formats). For each kind
of table (found by its header text, wherever it sits: a log of one benchmark or
a device.sh log of all of them) the newest log that holds it wins. Newest: the
time of the last commit that touched the log (git; run numbers are per series --
h100_runN, h100_service_runN, h200_runN -- and a checkout resets modification
times), else its modification time (a log not committed yet), then the run
number in its name. Speed plots read only the logs of one machine (file names
starting with PLOT_MACHINE + '_', default h100) and leave out logs that are not
a benchmark of one build at its full sizes: --quick runs ('quick' in the name),
comparisons of several builds (sections '=== <build dir>/<x>_bench'), partial
runs ('partial' in the name). The accuracy table may come from any machine (it
does not depend on the card). Writes DAT_DIR/<kind>.dat and DAT_DIR/meta.sh
(shell variables: SRC_<kind>=log name, MACHINE=...). A kind with no table is
absent from meta.sh; plot.sh skips its plot.

Data columns: NaN = no value. Series with extrapolated CPU figures (marked '*'
in the logs) are split into two columns, measured and extrapolated; the
extrapolated one repeats the last measured point so that a dashed line joins on.
"""
import glob
import math
import os
import re
import subprocess
import sys

NAN = float("nan")


COMMIT_TIME = {}


def commit_times(res):
    """{absolute path: time of the last commit touching it} for the logs in res (empty outside git)."""
    try:
        out = subprocess.run(["git", "-C", res, "log", "--format=@%ct", "--name-only", "--relative", "--", "."],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    times, t = {}, None
    for l in out.splitlines():
        if l.startswith("@"):
            t = int(l[1:])
        elif l.strip():
            times.setdefault(os.path.realpath(os.path.join(res, l.strip())), t)
    return times


def run_key(path):
    m = re.search(r"run(\d+)", os.path.basename(path))
    when = COMMIT_TIME.get(os.path.realpath(path))
    return (when if when is not None else os.path.getmtime(path), int(m.group(1)) if m else -1, path)


def full_benchmark_log(path):
    """A benchmark of one build at its full sizes (see the module's doc)."""
    name = os.path.basename(path)
    if "quick" in name or "partial" in name:
        return False
    return not re.search(r"^=== \S*/\w+_bench", open(path, errors="replace").read(), re.M)


def num(tok):
    """'1M' -> 1e6, '12061*' -> (12061, True); '-' or '' -> NaN."""
    tok = tok.strip()
    star = tok.endswith("*")
    tok = tok.rstrip("*").strip().rstrip("x")
    mult = 1.0
    if tok[-1:] in ("k", "M", "G") and re.match(r"^[\d.]+[kMG]$", tok):
        mult = {"k": 1e3, "M": 1e6, "G": 1e9}[tok[-1]]
        tok = tok[:-1]
    try:
        return float(tok) * mult, star
    except ValueError:
        return NAN, star


def split_series(vals):
    """[(v, star)] -> (measured[], extrapolated[]) for a line that turns dashed."""
    meas = [v if not s else NAN for v, s in vals]
    ext = [v if s else NAN for v, s in vals]
    for i in range(1, len(vals)):
        if vals[i][1] and not vals[i - 1][1] and not math.isnan(vals[i - 1][0]):
            ext[i - 1] = vals[i - 1][0]
    return meas, ext


def measured(t, what):
    """A value from a plot without an extrapolated style: extrapolated ones are left out."""
    v, star = t
    if star:
        print("plot_parse: %s: extrapolated value %g left out" % (what, v), file=sys.stderr)
        return NAN
    return v


def fmt(v):
    if isinstance(v, str):
        return v
    return "NaN" if v is None or (isinstance(v, float) and math.isnan(v)) else "%.6g" % v


def write_dat(path, header, rows, blocks=None):
    with open(path, "w") as f:
        f.write("# " + " ".join(header) + "\n")
        if blocks is None:
            blocks = [rows]
        for b, blk in enumerate(blocks):
            if b:
                f.write("\n\n")
            for r in blk:
                f.write(" ".join(fmt(v) for v in r) + "\n")


def lines_after(lines, pat, stop=None):
    """Lines after the last line matching pat, up to a '-- ' section marker or stop."""
    idx = [i for i, l in enumerate(lines) if re.search(pat, l)]
    if not idx:
        return None
    out = []
    for l in lines[idx[-1] + 1:]:
        if l.startswith("-- ") or (stop and re.search(stop, l)):
            break
        out.append(l)
    return out


# ---- one parser per kind: lines of a log -> rows (or None when absent) ----

def p_kde(lines):
    body = lines_after(lines, r"^method\s+n\s+d\s+GPU\s+CPU 1 thr")
    rows = []
    for l in body or []:
        t = l.split()
        if len(t) >= 6 and t[0] in ("plugin", "lscv"):
            rows.append((t[0], int(t[1]), int(t[2]), num(t[3]), num(t[4]), num(t[5])))
    return rows or None


def p_kde_torch(lines):
    body = lines_after(lines, r"^method\s+n\s+d\s+PyTorch ms")
    rows = []
    for l in body or []:
        t = l.split()
        if len(t) >= 4 and t[0] in ("plugin", "lscv"):
            rows.append((t[0], int(t[1]), int(t[2]), num(t[3])))
    return rows or None


def p_topk(lines):
    body = lines_after(lines, r"^\s*n\s+k\s*\|\s*GPU ms")
    rows = []
    for l in body or []:
        parts = [p.split() for p in l.split("|")]
        if len(parts) >= 4 and len(parts[0]) == 2 and parts[0][0].isdigit():
            n, k = int(parts[0][0]), int(parts[0][1])
            g = [num(x)[0] for x in parts[1]]      # GPU, upload, floor
            t = [num(x)[0] for x in parts[2]]      # torch64, torch32
            c = [num(x) for x in parts[3]]         # CPU 1, CPU all
            rows.append((n, k, g, t, c))
    return rows or None


# The forms table (test/bench/forms.sql) that the *_sql.sh scripts print after their summary:
# a summary parser stops at its header.
FORMS_TABLE = r"^\s*form\s*\|\s*median ms\s*\|"


def p_topk_sql(lines):
    body = lines_after(lines, r"SELECT topk\(id, score, k\) vs ORDER BY.* over (\d+) rows", FORMS_TABLE)
    if body is None:
        return None
    hdr = [l for l in lines if re.search(r"SELECT topk\(id, score, k\) vs ORDER BY.* over (\d+) rows", l)][-1]
    n = int(re.search(r"over (\d+) rows", hdr).group(1))
    rows = []
    for l in body:
        p = [x.strip() for x in l.split("|")]
        if len(p) >= 5 and p[0].isdigit():
            rows.append((n, int(p[0]), num(p[1])[0], num(p[2])[0], num(p[3])[0], num(p[4])[0]))
        elif rows and not l.strip():
            break
    return rows or None


def p_hashjoin(lines):
    body = lines_after(lines, r"^\|\s*operation\s*\|\s*n\s*\|\s*GPU ms\s*\|\s*GPU G/s")
    rows = []
    for l in body or []:
        p = [x.strip() for x in l.strip().strip("|").split("|")]
        if len(p) >= 7 and p[0] in ("build", "find"):
            rows.append((p[0], num(p[1])[0], num(p[2])[0], num(p[3])[0], num(p[4])[0],
                         num(p[5]), num(p[6])))
        elif len(p) >= 4 and p[0] in ("insert (ref)", "find (ref)", "build (ref)") and "cuco" in p[-1]:
            rows.append((p[0].split()[0] + "_cuco", num(p[1])[0], num(p[2])[0], num(p[3])[0]))
    return rows or None


def p_hashjoin_torch(lines):
    body = lines_after(lines, r"^\|\s*operation\s*\|\s*n\s*\|\s*GPU ms\s*\|\s*G/s\s*\|")
    rows = []
    for l in body or []:
        p = [x.strip() for x in l.strip().strip("|").split("|")]
        if len(p) >= 4 and (p[0].startswith("build") or p[0].startswith("find")):
            rows.append((p[0].split()[0], num(p[1])[0], num(p[2])[0], num(p[3])[0]))
    return rows or None


def p_moving(lines):
    body = lines_after(lines, r"^\|\s*objects\s*\|\s*data\s*\|\s*cross-cell")
    rows = []
    for l in body or []:
        p = [x.strip() for x in l.strip().strip("|").split("|")]
        if len(p) >= 15 and p[1] == "uniform":
            # objects, upd GPU, GPU dev, CPU1, CPU16, qry GPU, GPU dev, CPU1, CPU16
            rows.append([num(p[0])[0]] + [measured(num(p[i]), "moving objects column %d" % i)
                                           for i in (5, 6, 7, 8, 10, 11, 12, 13)])
        elif rows and not l.strip():
            break
    return rows or None


def p_moving_torch(lines):
    body = lines_after(lines, r"^\|\s*objects\s*\|\s*updates/s\s*\|\s*queries/s")
    rows = []
    for l in body or []:
        p = [x.strip() for x in l.strip().strip("|").split("|")]
        if len(p) >= 3 and p[0][:1].isdigit():
            rows.append((num(p[0])[0], num(p[1])[0], num(p[2])[0]))
    return rows or None


def p_moving_sql(lines):
    body = lines_after(lines, r"^\s*system\s*\|\s*measured on\s*\|\s*objects", FORMS_TABLE)
    rows = []
    for l in body or []:
        p = [x.strip() for x in l.split("|")]
        if len(p) >= 6 and p[2].isdigit():
            rows.append((p[0], num(p[2])[0], num(p[4])[0], num(p[5])[0]))
    return rows or None


def p_synopsis(lines):
    body = lines_after(lines, r"^\s*boxes\s+GPU\s+\(transfer\)\s+CPU 1 thread\s+CPU all")
    rows = []
    for l in body or []:
        t = l.split()
        if len(t) >= 5 and t[0].isdigit():
            rows.append((int(t[0]), num(t[1])[0], num(t[3]), num(t[4])))
    return rows or None


def p_synopsis_torch(lines):
    body = lines_after(lines, r"^\s*boxes\s+torch GPU\s+torch CPU")
    rows = []
    for l in body or []:
        t = l.split()
        if len(t) >= 3 and t[0].isdigit():
            rows.append((int(t[0]), num(t[1]), num(t[2])))
    return rows or None


def closure_cells(cell):
    """'119.7 ms    3.28 s   14.3 ms' -> [(ms, star), ...]; '-' -> NaN."""
    out = []
    for m in re.finditer(r"([\d.]+(?:e[+-]?\d+)?)\s*(ms|s)(\*?)|(?<!\S)-(?!\S)", cell):
        if m.group(1) is None:
            out.append((NAN, False))
        else:
            v = float(m.group(1)) * (1000.0 if m.group(2) == "s" else 1.0)
            out.append((v, m.group(3) == "*"))
    return out


def p_closure(lines):
    body = lines_after(lines, r"^\s*n\s+pairs\s*\|\s*seq Warshall")
    rows = []
    for l in body or []:
        p = l.split("|")
        h = p[0].split()
        if len(p) >= 3 and len(h) == 2 and h[0].isdigit():
            a, b = closure_cells(p[1]), closure_cells(p[2])
            if len(a) == 3 and len(b) == 3:
                rows.append((int(h[0]), a, b))
    return rows or None


def p_closure_torch(lines):
    body = lines_after(lines, r"closure by repeated squaring")
    rows = []
    for l in body or []:
        t = l.split()
        if len(t) == 4 and t[0].isdigit():
            rows.append((int(t[0]), num(t[3])[0]))
    return rows or None


def p_closure_sql(lines):
    body = lines_after(lines, r"^\s*graph\s*\|\s*vertices\s*\|.*with_recursive_ms", FORMS_TABLE)
    rows = []
    for l in body or []:
        p = [x.strip() for x in l.split("|")]
        if len(p) >= 7 and p[1].isdigit():
            rows.append((p[0], int(p[1]), int(p[2]), num(p[4])[0], num(p[5])[0], num(p[6])[0]))
    return rows or None


def p_accuracy(lines):
    """The accuracy table format of plot.sh: a header line naming the columns
    dataset band kde_err plain_err kde_cov plain_cov, then rows."""
    hdr = None
    rows = []
    for l in lines:
        s = l.strip()
        if not s:
            continue
        if s.startswith("#"):
            t = s.lstrip("#").split()
            if t[:6] == ["dataset", "band", "kde_err", "plain_err", "kde_cov", "plain_cov"]:
                hdr = t
            continue
        t = s.split()
        if t[:6] == ["dataset", "band", "kde_err", "plain_err", "kde_cov", "plain_cov"]:
            hdr = t
            continue
        if hdr and len(t) >= 6:
            vals = [num(x)[0] for x in t[2:6]]
            if not math.isnan(vals[0]) or not math.isnan(vals[1]):
                rows.append((t[0], t[1], vals))
    return rows or None


def p_accuracy_engine(lines):
    """The table build/synopsis_accuracy_bench prints (test/bench/synopsis_accuracy_bench.cpp):
    'data set  band  boxes |  COUNT kde/pl  SUM kde/pl  AVG kde/pl |  cov COUNT kde/pl ...'
    -> the COUNT columns, in plot.sh's accuracy rows."""
    hdr = r"^data set\s+band\s+boxes\s*\|\s*COUNT kde/pl"
    if not any(re.search(hdr, l) for l in lines):
        return None
    rows = []
    for l in lines_after(lines, hdr):
        p = l.split("|")
        t = p[0].split()
        if l.startswith("#") or len(p) < 3 or len(t) < 2:
            continue
        err = re.findall(r"([\d.]+)\s*/\s*([\d.]+)", p[1])
        cov = re.findall(r"([\d.]+)\s*/\s*([\d.]+)", p[2])
        if err and cov:
            rows.append((t[0], t[1], [float(err[0][0]), float(err[0][1]), float(cov[0][0]), float(cov[0][1])]))
    return rows or None


def accuracy_note(lines):
    """'synopsis_accuracy_bench, m = 10000, 200 boxes per band, sampling seeds 1..3; commit 704a328'"""
    m = next((l.split(";")[0].strip() for l in lines if l.startswith("m = ")), "")
    c = next((re.search(r"commit (\w+)", l).group(1) for l in lines
              if l.startswith("#") and re.search(r"commit (\w+)", l)), "")
    return "synopsis_accuracy_bench" + (", " + m if m else "") + ("; commit " + c if c else "")


KINDS = [
    ("kde", p_kde), ("kde_torch", p_kde_torch),
    ("topk", p_topk), ("topk_sql", p_topk_sql),
    ("hashjoin", p_hashjoin), ("hashjoin_torch", p_hashjoin_torch),
    ("moving", p_moving), ("moving_torch", p_moving_torch), ("moving_sql", p_moving_sql),
    ("synopsis", p_synopsis), ("synopsis_torch", p_synopsis_torch),
    ("closure", p_closure), ("closure_torch", p_closure_torch), ("closure_sql", p_closure_sql),
]


def machine(files):
    gpu = cores = None
    for f in sorted(files, key=run_key, reverse=True):
        txt = open(f, errors="replace").read()
        if gpu is None:
            m = re.search(r"NVIDIA ([A-Z]\d+\w*)", txt)
            gpu = m.group(1) if m else None
        if cores is None:
            m = (re.search(r"CPU:? (\d+) threads", txt) or re.search(r"CPU threads = (\d+)", txt)
                 or re.search(r"CPU all = (\d+) threads", txt) or re.search(r"CPU 1 thread and (\d+) threads", txt))
            cores = m.group(1) if m else None
    parts = [p for p in (gpu, cores and cores + " cores") if p]
    return " + ".join(parts) if parts else "unknown machine"


def main():
    res, dat = sys.argv[1], sys.argv[2]
    files = [f for f in glob.glob(os.path.join(res, "*.txt")) if os.path.isfile(f)]
    COMMIT_TIME.update(commit_times(res))
    prefix = os.environ.get("PLOT_MACHINE", "h100") + "_"
    bench = [f for f in files if "accuracy" not in os.path.basename(f)
             and os.path.basename(f).startswith(prefix) and full_benchmark_log(f)]
    found = {}
    acc_note = ""
    for kind, parse in KINDS:
        for f in sorted(bench, key=run_key, reverse=True):
            rows = parse(open(f, errors="replace").read().splitlines())
            if rows:
                found[kind] = (os.path.basename(f), rows)
                break
    acc = [f for f in files if "accuracy" in os.path.basename(f) and "partial" not in os.path.basename(f)]
    for f in sorted(acc, key=run_key, reverse=True):
        lines = open(f, errors="replace").read().splitlines()
        rows = p_accuracy(lines)
        if rows:
            found["accuracy"] = (os.path.basename(f), rows)
            notes = [l.split(":", 1)[1].strip() for l in lines if re.match(r"^#\s*note:", l)]
            acc_note = "; ".join(notes)
            break
        rows = p_accuracy_engine(lines)
        if rows:
            found["accuracy"] = (os.path.basename(f), rows)
            acc_note = accuracy_note(lines)
            break
        print("plot_parse: %s has no accuracy table that plot.sh reads, skipped" % f, file=sys.stderr)

    g = lambda k: found.get(k, (None, None))[1]

    if g("kde"):
        # blocks: 0 plug-in d=1; 1 lscv d=1; 2 lscv d=4; 3 lscv d=16
        tq = {(m, n, d): v for m, n, d, (v, _) in (g("kde_torch") or [])}
        tstar = {(m, n, d): s for m, n, d, (_, s) in (g("kde_torch") or [])}
        blocks = []
        for meth, d in (("plugin", 1), ("lscv", 1), ("lscv", 4), ("lscv", 16)):
            sel = [r for r in g("kde") if r[0] == meth and r[2] == d]
            gm, ge = split_series([r[3] for r in sel])
            c1m, c1e = split_series([r[4] for r in sel])
            cam, cae = split_series([r[5] for r in sel])
            tv = [(tq.get((meth, r[1], d), NAN), tstar.get((meth, r[1], d), False)) for r in sel]
            tm, te = split_series(tv)
            blocks.append([(r[1], gm[i], c1m[i], c1e[i], cam[i], cae[i], tm[i], te[i])
                           for i, r in enumerate(sel)])
        write_dat(os.path.join(dat, "kde.dat"),
                  ["n", "gpu", "cpu1", "cpu1_extrap", "cpuall", "cpuall_extrap", "torch", "torch_extrap",
                   "(blocks: plugin d=1, lscv d=1, lscv d=4, lscv d=16)"], None, blocks)

    if g("topk"):
        # one block per k; columns: n gpu gpu+upload floor torch64 torch32 cpu1 cpuall
        blocks = []
        for k in sorted({r[1] for r in g("topk")}):
            blk = []
            for n, kk, gg, t, c in g("topk"):
                if kk == k:
                    blk.append((n, gg[0], gg[0] + gg[1], gg[2], t[0], t[1], measured(c[0], "topk CPU 1 thread"),
                                measured(c[1], "topk CPU all threads")))
            blocks.append(blk)
        write_dat(os.path.join(dat, "topk.dat"),
                  ["n", "gpu", "gpu_upload", "floor", "torch64", "torch32", "cpu1", "cpuall",
                   "(one block per k: %s)" % " ".join(str(k) for k in sorted({r[1] for r in g("topk")}))],
                  None, blocks)
        with open(os.path.join(dat, "topk_k.txt"), "w") as f:
            f.write(" ".join(str(k) for k in sorted({r[1] for r in g("topk")})) + "\n")
    if g("topk_sql"):
        write_dat(os.path.join(dat, "topk_sql.dat"),
                  ["n", "k", "topk_serial", "topk_parallel", "orderby_serial", "orderby_parallel"], g("topk_sql"))

    if g("hashjoin"):
        tb = {(op, n): (ms, gs) for op, n, ms, gs in (g("hashjoin_torch") or [])}
        blocks = []
        for op in ("build", "find"):
            blk = []
            for r in g("hashjoin"):
                if r[0] == op:
                    t = tb.get((op, r[1]), (NAN, NAN))
                    blk.append((r[1], r[2], r[3], r[2] + r[4], measured(r[5], "hashjoin CPU 1 thread"),
                                measured(r[6], "hashjoin CPU all threads"), t[0], t[1]))
            blocks.append(blk)
        refs = [r for r in g("hashjoin") if r[0].endswith("_cuco")]
        blocks.append([(r[1], r[2], r[3], NAN, NAN, NAN, NAN, NAN) for r in refs if r[0] == "insert_cuco"])
        blocks.append([(r[1], r[2], r[3], NAN, NAN, NAN, NAN, NAN) for r in refs if r[0] == "find_cuco"])
        write_dat(os.path.join(dat, "hashjoin.dat"),
                  ["n", "gpu_ms", "gpu_Gkeys_s", "gpu_with_copies_ms", "cpu1_ms", "cpuall_ms", "torch_ms",
                   "torch_Gkeys_s", "(blocks: build, find, cuco insert ref, cuco find ref)"], None, blocks)

    if g("moving"):
        tm = {n: (u, q) for n, u, q in (g("moving_torch") or [])}
        rows = [r + [tm.get(r[0], (NAN, NAN))[0], tm.get(r[0], (NAN, NAN))[1]] for r in g("moving")]
        write_dat(os.path.join(dat, "moving.dat"),
                  ["objects", "upd_gpu", "upd_gpu_dev", "upd_cpu1", "upd_cpuall", "qry_gpu", "qry_gpu_dev",
                   "qry_cpu1", "qry_cpuall", "upd_torch", "qry_torch", "(M/s, uniform data)"], rows)
    if g("moving_sql"):
        write_dat(os.path.join(dat, "moving_sql.dat"), ["objects", "updates_M_s", "queries_M_s"],
                  [(n, u, q) for _, n, u, q in g("moving_sql")])

    if g("synopsis"):
        tt = {b: (gg, c) for b, gg, c in (g("synopsis_torch") or [])}
        sel = g("synopsis")
        c1m, c1e = split_series([r[2] for r in sel])
        cam, cae = split_series([r[3] for r in sel])
        tgm, tge = split_series([tt.get(r[0], ((NAN, False), None))[0] for r in sel])
        tcm, tce = split_series([tt.get(r[0], (None, (NAN, False)))[1] for r in sel])
        write_dat(os.path.join(dat, "synopsis.dat"),
                  ["boxes", "gpu", "cpu1", "cpu1_extrap", "cpuall", "cpuall_extrap", "torch_gpu", "torch_gpu_extrap",
                   "torch_cpu", "torch_cpu_extrap"],
                  [(r[0], r[1], c1m[i], c1e[i], cam[i], cae[i], tgm[i], tge[i], tcm[i], tce[i])
                   for i, r in enumerate(sel)])

    if g("closure"):
        sel = g("closure")
        tc = dict(g("closure_torch") or [])
        cols = []
        for j in range(3):
            cols += list(split_series([r[1][j] for r in sel]))
        for j in range(3):
            cols += list(split_series([r[2][j] for r in sel]))
        write_dat(os.path.join(dat, "closure.dat"),
                  ["n", "seq", "seq_x", "warshallC", "warshallC_x", "adapt", "adapt_x", "gpu", "gpu_x",
                   "cpu1", "cpu1_x", "cpuall", "cpuall_x", "torch"],
                  [[r[0]] + [c[i] for c in cols] + [tc.get(r[0], NAN)] for i, r in enumerate(sel)])
    if g("closure_sql"):
        write_dat(os.path.join(dat, "closure_sql.dat"),
                  ["graph", "size", "vertices", "edges", "with_recursive_ms", "cpu_ms", "gpu_ms"],
                  [('"%s"' % gname, '"{:,} vertices\\n{:,} edges"'.format(v, e), v, e, w, c, gg)
                   for gname, v, e, w, c, gg in g("closure_sql")])

    acc_mode = ""
    if g("accuracy"):
        sets = []
        for d, b, v in g("accuracy"):
            if d not in sets:
                sets.append(d)
        # one band per data set: bars; several bands and more than 4 data sets: "sets" (a line per
        # data set and estimator would be unreadable); else lines
        acc_mode = ("bars" if len(sets) == len(g("accuracy")) else "sets" if len(sets) > 4 else "lines")
        # sets: a row per data set; per band (in the log's order) KDE / plain error, KDE and plain coverage
        log_bands = []
        for _, b, _ in g("accuracy"):
            if b not in log_bands:
                log_bands.append(b)
        cell = {(d, b): v for d, b, v in g("accuracy")}
        write_dat(os.path.join(dat, "accuracy_sets.dat"),
                  ["dataset"] + ["ratio_%d kde_cov_%d plain_cov_%d" % (i, i, i) for i in range(len(log_bands))],
                  [['"%s"' % d.replace("_", " ")] +
                   [x for b in log_bands for x in
                    ((cell[(d, b)][0] / cell[(d, b)][1] if (d, b) in cell and cell[(d, b)][1] > 0 else NAN),
                     cell.get((d, b), [NAN] * 4)[2], cell.get((d, b), [NAN] * 4)[3])]
                   for d in sets])
        with open(os.path.join(dat, "acc_log_bands.txt"), "w") as f:
            f.write("".join(b + "\n" for b in log_bands))
        # lines: x = selectivity band (ordered by its lower bound), one block per data set
        lead = lambda b: float(re.match(r"[<>=]*([\d.]*)", b).group(1) or 0)
        bands = sorted({b for _, b, _ in g("accuracy")}, key=lambda b: (lead(b), b))
        write_dat(os.path.join(dat, "accuracy_lines.dat"),
                  ["band_index", "kde_err", "plain_err", "kde_cov", "plain_cov", "(one block per data set)"], None,
                  [[(bands.index(b), v[0], v[1], v[2], v[3]) for d, b, v in g("accuracy") if d == s]
                   for s in sets])
        with open(os.path.join(dat, "acc_sets.txt"), "w") as f:
            f.write("".join(x.replace("_", " ") + "\n" for x in sets))
        with open(os.path.join(dat, "acc_bands.txt"), "w") as f:
            f.write("".join(b + "\n" for b in bands))
        write_dat(os.path.join(dat, "accuracy.dat"),
                  ["dataset", "band", "kde_err", "plain_err", "kde_cov", "plain_cov"],
                  [('"%s"' % d.replace("_", " "), '"%s"' % b, v[0], v[1], v[2], v[3]) for d, b, v in g("accuracy")])

    with open(os.path.join(dat, "meta.sh"), "w") as f:
        used = [os.path.join(res, src) for src, _ in found.values()]
        f.write("MACHINE=%s\n" % shquote(os.environ.get("MACHINE") or machine(used)))
        f.write("ACC_NOTE=%s\n" % shquote(acc_note))
        f.write("ACC_MODE=%s\n" % acc_mode)
        covs = [x for _, _, v in (g("accuracy") or []) for x in v[2:4] if not math.isnan(x)]
        f.write("ACC_COVMIN=%g\n" % min([0.8] + [math.floor(min(covs) * 20) / 20.0] if covs else [0.8]))
        for k, (src, _) in sorted(found.items()):
            f.write("SRC_%s=%s\n" % (k, shquote(src)))


def shquote(s):
    return "'" + s.replace("'", "'\\''") + "'"


if __name__ == "__main__":
    main()
