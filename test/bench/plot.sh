#!/usr/bin/env bash
# test/bench/plot.sh [RESULTS_DIR] [OUT_DIR]
#
# Turns the benchmark logs in RESULTS_DIR (default test/bench/results) into PNGs in
# OUT_DIR (default docs/plots), drawn with gnuplot (pngcairo if the build has it, else
# png). test/bench/plot_parse.py finds each table by its header text in any *.txt log
# and takes the newest log holding it (the time of the last commit that touched the log,
# else its modification time); each plot names its logs at the bottom. Speed plots use
# one machine's logs (names starting PLOT_MACHINE_, default h100) and only benchmarks of
# one build at full sizes: --quick runs, comparisons of several builds and partial runs
# are left out (plot_parse.py's header says how it tells). A capability with no log is
# skipped with a message; the script still exits 0.
#
#   kde.png        KDE bandwidths: time vs sample size n, plug-in (d = 1) and LSCV (d = 16);
#                  GPU, CPU 1 thread, CPU all threads, PyTorch (kde_bench, kde_torch.py)
#   topk.png       top-k: time vs n (k = 100); GPU, + upload, read floor, torch.topk,
#                  CPU; SQL end-to-end points where logged (topk_bench, topk_sql.sh)
#   hashjoin.png   hash join: build/find time vs n, and G keys/s vs n, cuco reference
#                  (hashjoin_bench, hashjoin_torch.py)
#   moving.png     moving objects: updates/s and range queries/s vs objects
#                  (moving_bench, moving_torch.py, moving_sql.sh)
#   synopsis.png   synopsis: time vs number of boxes (synopsis_bench, synopsis_torch.py)
#   closure.png    closure: time vs vertices on random digraphs, and end to end in SQL
#                  vs WITH RECURSIVE (closure_bench, closure_torch.py, closure_sql.sh)
#   accuracy.png   synopsis accuracy: median relative error and 95% coverage by data set
#                  and selectivity band, KDE vs plain sample (RESULTS_DIR/*accuracy*.txt:
#                  build/synopsis_accuracy_bench's output, or the format below)
#
# Dashed lines with open markers are extrapolated figures (marked '*' in the logs) in kde,
# synopsis and closure; in topk, hashjoin and moving an extrapolated CPU figure is left out
# (with a message), since dashes mean something else there.
#
# Accuracy tables (RESULTS_DIR/*accuracy*.txt; the newest one in either format wins): the
# table that build/synopsis_accuracy_bench prints ('data set  band  boxes |  COUNT kde/pl
# ...'; its COUNT columns are plotted), or this one, written by hand or by another tool:
# plain text, whitespace-separated columns, one row per (data set, selectivity band):
#
#   # note: free text shown under the plot (optional; any number of such lines)
#   # other comment lines start with '#'
#   dataset        band     kde_err  plain_err  kde_cov  plain_cov
#   diamonds       1-100%   1.22     1.23       0.899    0.898
#   mixture_10^6   0.1-1%   8.10     9.40       0.950    0.948
#
#   dataset    name without spaces ('_' is drawn as a space)
#   band       the boxes' exact selectivity band, no spaces (e.g. 0.1-1%, 1-10%)
#   kde_err    median relative error (%) of the KDE synopsis' COUNT estimates
#   plain_err  the same for the plain sample estimator on the same sample
#   kde_cov    share (0..1) of boxes whose 95% interval holds the exact answer, KDE
#   plain_cov  the same for the plain sample's intervals; '-' = not measured
#
# The header line (with or without a leading '#') is required. With one band per data set the
# plot is grouped bars (error) and points (coverage) per data set; with several bands and up
# to 4 data sets, error and coverage vs band (bands ordered by their leading number), a line
# per data set; with more data sets, per data set the ratio of the two estimators' errors
# (a bar per band, in the log's order) and both estimators' coverage (a point per band).
set -u
RES=$(realpath -m "${1:-$(dirname "$0")/results}")
OUT=$(realpath -m "${2:-$(dirname "$0")/../../docs/plots}")
cd "$(dirname "$0")/../.." || exit 1
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$OUT"
DAT=$(mktemp -d)
trap 'rm -rf "$DAT"' EXIT
python3 test/bench/plot_parse.py "$RES" "$DAT" || exit 1
# shellcheck disable=SC1091
. "$DAT/meta.sh"

if gnuplot -e 'set terminal' 2>&1 | grep -q pngcairo; then
  TERM_LINE='set terminal pngcairo size 900,560 enhanced font "DejaVu Sans,10" linewidth 1.3'
else
  TERM_LINE='set terminal png size 900,560 enhanced font "DejaVu Sans,10"'
fi

# common gnuplot prologue: engine colours, time ticks in human units, extrapolated key entry
common() {
  cat <<EOF
$TERM_LINE
set output "$OUT/$1.png"
set datafile missing NaN
set pointsize 1.15
set grid xtics ytics mxtics mytics lc rgb "#dddddd" lw 0.6, lc rgb "#f0f0f0" lw 0.4
set border 3 lc rgb "#444444"
set tics nomirror out scale 0.6
set key samplen 2.5 spacing 1.05 font ",9" opaque box lc rgb "#cccccc" reverse Left
c_gpu  = "#1a9850"; c_gpu2 = "#91cf60"
c_cpu1 = "#74add1"; c_cpuN = "#313695"
c_tg   = "#e6550d"; c_tc   = "#fdae6b"
c_pg   = "#762a83"; c_ref  = "#888888"
TIMETICS = 'set ytics ("1 µs" 0.001, "10 µs" 0.01, "0.1 ms" 0.1, "1 ms" 1, "10 ms" 10, "0.1 s" 100, "1 s" 1000, "10 s" 1e4, "100 s" 1e5, "1000 s" 1e6, "3 h" 1e7, "1 day" 1e8)'
set format x "10^{%L}"
# an extrapolated value, not the measured point that its dashed line starts from
xp(m, e) = (column(e) == column(m)) ? NaN : column(e)
EOF
}
# footnote with the sources, bottom left, no enhanced text (file names have '_')
foot() { echo "set label 99 \"$1\" at screen 0.01, screen 0.018 left font \",8\" tc rgb \"#666666\" noenhanced"; }
# gnuplot, without its warning for series that a log leaves empty (e.g. nothing extrapolated)
gp() { gnuplot 2> >(grep -v 'Skipping data file with no valid points' >&2); }
skip() { echo "plot.sh: $1.png skipped: $2" >&2; }
done_() { echo "plot.sh: $OUT/$1.png"; }
EXTRAP='NaN w lp dt 2 pt 6 lc rgb "#555555" t "extrapolated (run > 30 s)"'

# ---------------------------------------------------------------- KDE bandwidths
if [ -n "${SRC_kde:-}" ]; then
  gp <<EOF && done_ kde
$(common kde)
$(foot "logs: $SRC_kde (engines), ${SRC_kde_torch:-no PyTorch log} (PyTorch); ms end to end through the engine API")
set multiplot layout 1,2 title "KDE bandwidth selection: time vs sample size ($MACHINE)" font ",13" margins 0.09,0.98,0.14,0.88 spacing 0.08,0
set logscale xy
@TIMETICS
set xlabel "sample size n (rows)"
set ylabel "time per bandwidth (log scale)"
set xrange [600:1.6e6]
set key top left
set title "plug-in (Sheather–Jones), d = 1"
plot "$DAT/kde.dat" index 0 u 1:2 w lp pt 7 lc rgb c_gpu t "GPU", \
     "" index 0 u 1:3 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" index 0 u 1:4 w l dt 2 lc rgb c_cpu1 notitle, \
     "" index 0 u 1:(xp(3,4)) w p pt 4 lc rgb c_cpu1 notitle, \
     "" index 0 u 1:5 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads", \
     "" index 0 u 1:6 w l dt 2 lc rgb c_cpuN notitle, \
     "" index 0 u 1:(xp(5,6)) w p pt 8 lc rgb c_cpuN notitle, \
     "" index 0 u 1:7 w lp pt 13 lc rgb c_tg t "PyTorch (GPU)", \
     "" index 0 u 1:8 w l dt 2 lc rgb c_tg notitle, \
     "" index 0 u 1:(xp(7,8)) w p pt 12 lc rgb c_tg notitle, \
     $EXTRAP
set title "least-squares cross-validation (LSCV), d = 16"
set xrange [600:1.6e5]
set ylabel " "
unset label 99
set key off
plot "$DAT/kde.dat" index 3 u 1:2 w lp pt 7 lc rgb c_gpu t "GPU", \
     "" index 3 u 1:3 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" index 3 u 1:4 w l dt 2 lc rgb c_cpu1 notitle, \
     "" index 3 u 1:(xp(3,4)) w p pt 4 lc rgb c_cpu1 notitle, \
     "" index 3 u 1:5 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads", \
     "" index 3 u 1:6 w l dt 2 lc rgb c_cpuN notitle, \
     "" index 3 u 1:(xp(5,6)) w p pt 8 lc rgb c_cpuN notitle, \
     "" index 3 u 1:7 w lp pt 13 lc rgb c_tg t "PyTorch (GPU)", \
     "" index 3 u 1:8 w l dt 2 lc rgb c_tg notitle, \
     "" index 3 u 1:(xp(7,8)) w p pt 12 lc rgb c_tg notitle
unset multiplot
EOF
else skip kde "no kde_bench table in $RES"; fi

# ---------------------------------------------------------------- top-k
if [ -n "${SRC_topk:-}" ]; then
  SQLPTS=""
  if [ -n "${SRC_topk_sql:-}" ]; then
    SQLPTS=", \"$DAT/topk_sql.dat\" u (column(2)==100 ? column(1) : NaN):6 w p pt 15 ps 1.6 lc rgb c_pg t \"PostgreSQL ORDER BY … LIMIT, end to end (parallel)\", \
      \"\" u (column(2)==100 ? column(1) : NaN):4 w p pt 14 ps 2.4 lc rgb c_gpu t \"SQL topk() aggregate, end to end (parallel)\""
  fi
  gp <<EOF && done_ topk
$(common topk)
$(foot "logs: $SRC_topk${SRC_topk_sql:+, $SRC_topk_sql (SQL)}; k = 100 (k = 10 and 1000 within 1.3x); uniform float8 scores")
set title "top-k selection (k = 100): time vs input size ($MACHINE)" font ",13"
set logscale xy
@TIMETICS
set xrange [2e5:2e8]
set xlabel "input size n (id, score pairs)"
set ylabel "time (log scale)"
set key top left font ",8.5"
set bmargin 4.5
plot "$DAT/topk.dat" index 1 u 1:2 w lp pt 7 lc rgb c_gpu t "GPU, data resident", \
     "" index 1 u 1:3 w lp pt 6 dt 3 lc rgb c_gpu t "GPU + upload of ids and scores", \
     "" index 1 u 1:4 w l dt 2 lc rgb c_ref t "floor: one read of ids+scores", \
     "" index 1 u 1:5 w lp pt 13 lc rgb c_tg t "torch.topk float64 (GPU, no ties)", \
     "" index 1 u 1:6 w lp pt 12 lc rgb c_tc t "torch.topk float32 (GPU, no ties)", \
     "" index 1 u 1:7 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" index 1 u 1:8 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads" $SQLPTS
EOF
else skip topk "no topk_bench table in $RES"; fi

# ---------------------------------------------------------------- hash join
if [ -n "${SRC_hashjoin:-}" ]; then
  gp <<EOF && done_ hashjoin
$(common hashjoin)
$(foot "logs: $SRC_hashjoin${SRC_hashjoin_torch:+ (PyTorch: $SRC_hashjoin_torch)}; cuckoo table of unique int64 keys, load 0.71; GPU: kernels, data on the GPU")
set multiplot layout 1,2 title "hash join (cuckoo table): build and find vs keys ($MACHINE)" font ",13" margins 0.09,0.98,0.14,0.88 spacing 0.09,0
set logscale xy
@TIMETICS
set xlabel "keys n"
set xrange [7e5:1.4e8]
set ylabel "time (log scale)"
set title "time: build (solid), find (dashed)"
set key top left font ",8.5"
plot "$DAT/hashjoin.dat" index 0 u 1:2 w lp pt 7 lc rgb c_gpu t "GPU", \
     "" index 1 u 1:2 w lp pt 6 dt 2 lc rgb c_gpu notitle, \
     "" index 0 u 1:5 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" index 1 u 1:5 w lp pt 4 dt 2 lc rgb c_cpu1 notitle, \
     "" index 0 u 1:6 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads", \
     "" index 1 u 1:6 w lp pt 8 dt 2 lc rgb c_cpuN notitle, \
     "" index 0 u 1:7 w lp pt 13 lc rgb c_tg t "PyTorch sort / searchsorted", \
     "" index 1 u 1:7 w lp pt 12 dt 2 lc rgb c_tg notitle
set title "throughput on the GPU"
unset label 99
set logscale x
unset logscale y
set ytics auto
set format y "%g"
set yrange [0:40]
set ytics 0, 5, 30
set ylabel "G keys/s (10^9 keys per second)"
set key top right font ",8.5"
plot "$DAT/hashjoin.dat" index 0 u 1:3 w lp pt 7 lc rgb c_gpu t "build, ours", \
     "" index 1 u 1:3 w lp pt 6 dt 2 lc rgb c_gpu t "find, ours", \
     "" index 0 u 1:8 w lp pt 13 lc rgb c_tg t "build, torch.sort", \
     "" index 1 u 1:8 w lp pt 12 dt 2 lc rgb c_tg t "find, torch.searchsorted", \
     "" index 2 u 1:3 w p pt 11 ps 1.4 lc rgb c_ref t "insert, cuco static\\\\_map (load 0.5)", \
     "" index 3 u 1:3 w p pt 10 ps 1.4 lc rgb c_ref t "find, cuco static\\\\_map (load 0.5)"
unset multiplot
EOF
else skip hashjoin "no hashjoin_bench table in $RES"; fi

# ---------------------------------------------------------------- moving objects
if [ -n "${SRC_moving:-}" ]; then
  MSQL_U=""; MSQL_Q=""
  if [ -n "${SRC_moving_sql:-}" ]; then
    MSQL_U=", \"$DAT/moving_sql.dat\" u 1:2 w p pt 15 ps 1.6 lc rgb c_pg t \"through SQL arrays (GPU engine)\""
    MSQL_Q=", \"$DAT/moving_sql.dat\" u 1:3 w p pt 15 ps 1.6 lc rgb c_pg t \"through SQL arrays (GPU engine)\""
  fi
  gp <<EOF && done_ moving
$(common moving)
$(foot "logs: $SRC_moving${SRC_moving_torch:+ (PyTorch: $SRC_moving_torch)}${SRC_moving_sql:+, $SRC_moving_sql (SQL)}; uniform objects on 100 km x 100 km, 256 x 256 cells, batches of 10^6")
set multiplot layout 1,2 title "moving objects (G-LFPP grid): rates vs number of objects ($MACHINE)" font ",13" margins 0.09,0.98,0.14,0.88 spacing 0.09,0
set logscale xy
set xrange [8e5:1.25e7]
set xtics ("10^6" 1e6, "3·10^6" 3e6, "10^7" 1e7)
set format y "%g"
set ytics ("0.1 M" 0.1, "1 M" 1, "10 M" 10, "100 M" 100, "1 G" 1000, "10 G" 1e4)
set yrange [0.1:5000]
set xlabel "objects"
set ylabel "per second (log scale)"
set key bottom left font ",8.5"
set title "updates (batches of 10^6 random objects)"
plot "$DAT/moving.dat" u 1:2 w lp pt 7 lc rgb c_gpu t "GPU incl. copies of the batch", \
     "" u 1:3 w lp pt 6 dt 2 lc rgb c_gpu t "GPU device only", \
     "" u 1:4 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" u 1:5 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads", \
     "" u 1:10 w lp pt 13 lc rgb c_tg t "PyTorch (GPU)" $MSQL_U
unset label 99
set key off
set title "range counts (10^6 queries of 100 m x 100 m)"
set ylabel " "
plot "$DAT/moving.dat" u 1:6 w lp pt 7 lc rgb c_gpu t "GPU incl. copies", \
     "" u 1:7 w lp pt 6 dt 2 lc rgb c_gpu t "GPU device only", \
     "" u 1:8 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" u 1:9 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads", \
     "" u 1:11 w lp pt 13 lc rgb c_tg t "PyTorch (GPU)" $MSQL_Q
unset multiplot
EOF
else skip moving "no moving_bench table in $RES"; fi

# ---------------------------------------------------------------- synopsis
if [ -n "${SRC_synopsis:-}" ]; then
  gp <<EOF && done_ synopsis
$(common synopsis)
$(foot "logs: $SRC_synopsis${SRC_synopsis_torch:+, $SRC_synopsis_torch (PyTorch)}; m = 10^4 sample rows, d = 4, COUNT, fp64; ms per batch of boxes")
set title "KDE synopsis estimates: time vs boxes per batch ($MACHINE)" font ",13"
set logscale xy
@TIMETICS
set xrange [0.7:1.5e5]
set xlabel "boxes (range predicates) per batch"
set ylabel "time per batch (log scale)"
set key top left
set bmargin 4.5
plot "$DAT/synopsis.dat" u 1:2 w lp pt 7 lc rgb c_gpu t "GPU", \
     "" u 1:3 w lp pt 5 lc rgb c_cpu1 t "CPU, 1 thread", \
     "" u 1:4 w l dt 2 lc rgb c_cpu1 notitle, \
     "" u 1:(xp(3,4)) w p pt 4 lc rgb c_cpu1 notitle, \
     "" u 1:5 w lp pt 9 lc rgb c_cpuN t "CPU, 16 threads", \
     "" u 1:6 w l dt 2 lc rgb c_cpuN notitle, \
     "" u 1:(xp(5,6)) w p pt 8 lc rgb c_cpuN notitle, \
     "" u 1:7 w lp pt 13 lc rgb c_tg t "PyTorch, GPU", \
     "" u 1:8 w l dt 2 lc rgb c_tg notitle, \
     "" u 1:(xp(7,8)) w p pt 12 lc rgb c_tg notitle, \
     "" u 1:9 w lp pt 11 lc rgb c_tc t "PyTorch, CPU (16 threads)", \
     "" u 1:10 w l dt 2 lc rgb c_tc notitle, \
     "" u 1:(xp(9,10)) w p pt 10 lc rgb c_tc notitle, \
     $EXTRAP
EOF
else skip synopsis "no synopsis_bench table in $RES"; fi

# ---------------------------------------------------------------- closure
if [ -n "${SRC_closure:-}" ]; then
  if [ -n "${SRC_closure_sql:-}" ]; then
    LAYOUT="1,2"; MARG="0.09,0.98,0.22,0.88"
    SQLPANEL=$(cat <<EOF
set title "end to end in SQL: reachability\\\\_count vs WITH RECURSIVE"
unset logscale x
set xtics auto
set xrange [-0.6:$(( $(grep -vc '^#' "$DAT/closure_sql.dat") ))-0.4]
set xlabel " "
set ylabel " "
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border lc rgb "#333333"
set boxwidth 0.9
set xtics scale 0 font ",8.5" norotate
set key top left font ",8.5"
set yrange [0.5:1e5]
fmt_ms(v) = v < 1000 ? sprintf("%.3g ms", v) : sprintf("%.3g s", v/1000.0)
plot "$DAT/closure_sql.dat" u 5:xtic(sprintf("%s\n%s", strcol(1), strcol(2))) lc rgb c_pg t "PostgreSQL WITH RECURSIVE", \
     "" u 6 lc rgb c_cpuN t "CPU engine (16 threads)", \
     "" u 7 lc rgb c_gpu t "GPU engine", \
     "" u (column(0)-0.25):5:(fmt_ms(column(5))) w labels offset 0,0.55 font ",7" notitle, \
     "" u (column(0)):6:(fmt_ms(column(6))) w labels offset 0,0.55 font ",7" notitle, \
     "" u (column(0)+0.25):7:(fmt_ms(column(7))) w labels offset 0,0.55 font ",7" notitle
EOF
)
  else LAYOUT="1,1"; MARG="0.09,0.98,0.14,0.88"; SQLPANEL=""; fi
  gp <<EOF && done_ closure
$(common closure)
$(foot "logs: $SRC_closure${SRC_closure_torch:+ (PyTorch: $SRC_closure_torch)}${SRC_closure_sql:+, $SRC_closure_sql (SQL, median of 3)}")
set multiplot layout $LAYOUT title "transitive closure: time vs graph size ($MACHINE)" font ",13" margins $MARG spacing 0.1,0
set logscale xy
@TIMETICS
set format x "%g"
set xtics (1000, 2000, 4000, 8192, 16384, 32768) rotate by 30 right
set xrange [850:40000]
set xlabel "vertices (random digraphs, mean out-degree 2)"
set ylabel "time (log scale)"
set title "engines, graph in memory"
set yrange [0.1:1e6]
set key top left font ",8"
plot "$DAT/closure.dat" u 1:8 w lp pt 7 lc rgb c_gpu t "blocked, GPU", \
     "" u 1:12 w lp pt 9 lc rgb c_cpuN t "blocked, CPU 16 threads", \
     "" u 1:10 w lp pt 5 lc rgb c_cpu1 t "blocked, CPU 1 thread", \
     "" u 1:11 w l dt 2 lc rgb c_cpu1 notitle, \
     "" u 1:(xp(10,11)) w p pt 4 lc rgb c_cpu1 notitle, \
     "" u 1:14 w lp pt 13 lc rgb c_tg t "PyTorch fp16 squaring (GPU)", \
     "" u 1:6 w lp pt 3 lc rgb "#b2abd2" t "WARSHALL-adapt (GPU STAR)", \
     "" u 1:2 w lp pt 1 lc rgb c_ref t "sequential Warshall (CPU)", \
     "" u 1:3 w l dt 2 lc rgb c_ref notitle, \
     "" u 1:(xp(2,3)) w p pt 1 lc rgb c_ref notitle, \
     $EXTRAP
unset label 99
$SQLPANEL
unset multiplot
EOF
else skip closure "no closure_bench table in $RES"; fi

# ---------------------------------------------------------------- accuracy
# one band per data set: grouped bars; several: error and coverage vs band, a line per data set
if [ -n "${SRC_accuracy:-}" ] && [ "${ACC_MODE:-}" = lines ]; then
  XT=$(awk '{ gsub(/%/, "%%"); printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), $0, NR - 1 }' "$DAT/acc_bands.txt")
  NB=$(wc -l <"$DAT/acc_bands.txt")
  PE=""; PC=""; i=0
  COLS=("#1b9e77" "#d95f02" "#7570b3" "#e7298a" "#66a61e" "#e6ab02" "#a6761d" "#666666")
  while IFS= read -r name; do
    c=${COLS[$((i % 8))]}
    PE+="${PE:+, }\"$DAT/accuracy_lines.dat\" index $i u 1:2 w lp pt 7 lc rgb \"$c\" t \"$name, KDE\", \"\" index $i u 1:3 w lp dt 2 pt 6 lc rgb \"$c\" t \"$name, plain\""
    PC+="${PC:+, }\"$DAT/accuracy_lines.dat\" index $i u 1:4 w lp pt 7 lc rgb \"$c\" t \"$name, KDE\", \"\" index $i u 1:5 w lp dt 2 pt 6 lc rgb \"$c\" t \"$name, plain\""
    i=$((i + 1))
  done <"$DAT/acc_sets.txt"
  gp <<EOF && done_ accuracy
$(common accuracy)
$(foot "source: $SRC_accuracy${ACC_NOTE:+ — $ACC_NOTE}")
set multiplot layout 1,2 title "KDE synopsis (solid) vs plain sample (dashed): COUNT accuracy by selectivity" font ",13" margins 0.08,0.98,0.16,0.88 spacing 0.09,0
unset format x
set xtics ($XT) nomirror
set xrange [-0.3:$NB-0.7]
set xlabel "selectivity band of the boxes (exact)"
set title "median relative error (lower is better)"
set ylabel "median relative error (%, log scale)"
set logscale y
set format y "%g"
set key top right font ",8"
plot $PE
unset label 99
unset logscale y
set title "coverage of the 95% intervals"
set ylabel "share of boxes whose interval holds the exact answer"
set yrange [${ACC_COVMIN:-0.8}:1.0]
set ytics 0.05
set key bottom right font ",8"
plot $PC, 0.95 w l dt 3 lc rgb "#333333" t "nominal 0.95", 0.90 w l dt 3 lw 1.5 lc rgb "#aa3333" t "target 0.90"
unset multiplot
EOF
elif [ -n "${SRC_accuracy:-}" ] && [ "${ACC_MODE:-}" = sets ]; then
  NS=$(grep -vc '^#' "$DAT/accuracy_sets.dat")
  NB=$(wc -l <"$DAT/acc_log_bands.txt")
  PR=""; PC=""; i=0
  BCOL=("#fdae61" "#d7191c" "#2c7bb6" "#1a9641" "#7570b3" "#e7298a" "#a6761d" "#666666")
  while IFS= read -r band; do
    c=${BCOL[$((i % 8))]}
    lab=${band/>=/≥ }
    x="(column(0)+($i-($NB-1)/2.0)*0.8/$NB)"
    PR+="${PR:+, }\"$DAT/accuracy_sets.dat\" u $((2 + 3 * i))$([ $i = 0 ] && echo ':xtic(1)') lc rgb \"$c\" t \"$lab\""
    PC+="${PC:+, }\"$DAT/accuracy_sets.dat\" u $x:$((3 + 3 * i)) w p pt 7 ps 1.3 lc rgb \"$c\" t \"$lab\", \"\" u $x:$((4 + 3 * i)) w p pt 6 ps 1.3 lc rgb \"$c\" notitle"
    i=$((i + 1))
  done <"$DAT/acc_log_bands.txt"
  gp <<EOF && done_ accuracy
$(common accuracy)
$(foot "source: $SRC_accuracy${ACC_NOTE:+ — $ACC_NOTE}; COUNT estimates")
set multiplot layout 1,2 title "synopsis accuracy: default synopsis (smoothing auto) vs plain sample of the same rows, COUNT" font ",13" margins 0.08,0.98,0.2,0.86 spacing 0.08,0
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border lc rgb "#333333"
set boxwidth 0.9
unset format x
set xtics scale 0 font ",9" nomirror rotate by 25 right
set grid noxtics nomxtics ytics
set xrange [-0.6:$NS-0.4]
set title "median relative error, synopsis ÷ plain sample"
set ylabel "error ratio (below 1: the synopsis is better)"
set yrange [0.6:1.2]
set ytics 0.1
set key top left font ",8" maxrows 1 title "boxes' selectivity" samplen 1.5
plot $PR, 1 w l dt 2 lc rgb "#333333" notitle
unset label 99
set style data points
set title "95% interval coverage (filled: synopsis, open: plain sample)"
set ylabel "share of boxes whose interval holds the answer"
set yrange [${ACC_COVMIN:-0.8}:1.0]
set ytics 0.05
set key bottom right font ",8" maxrows 3 title "" samplen 1.5
plot "$DAT/accuracy_sets.dat" u 0:(NaN):xtic(1) notitle, $PC, \\
     0.95 w l dt 2 lc rgb "#333333" t "nominal 0.95", 0.90 w l dt 3 lw 1.5 lc rgb "#aa3333" t "target 0.90"
unset multiplot
EOF
elif [ -n "${SRC_accuracy:-}" ]; then
  NACC=$(grep -vc '^#' "$DAT/accuracy.dat")
  gp <<EOF && done_ accuracy
$(common accuracy)
$(foot "source: $SRC_accuracy${ACC_NOTE:+ — $ACC_NOTE}")
set multiplot layout 1,2 title "KDE synopsis vs plain sample: COUNT accuracy by data set and selectivity" font ",13" margins 0.08,0.98,0.2,0.88 spacing 0.09,0
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border lc rgb "#333333"
set boxwidth 0.9
unset format x
set xtics scale 0 font ",9" nomirror
set grid noxtics nomxtics ytics
set xrange [-0.6:$NACC-0.4]
set key top left
set title "median relative error (lower is better)"
set ylabel "median relative error (%)"
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
lab(i) = sprintf("%s\n%s", strcol(1), strcol(2))
set xlabel "data set, selectivity band of its boxes" offset 0,-0.9
plot "$DAT/accuracy.dat" u 3:xtic(lab(0)) lc rgb c_gpu t "KDE synopsis", \
     "" u 4 lc rgb c_ref t "plain sample (same rows)", \
     "" u (column(0)-1.0/6):3:(sprintf("%.2f", column(3))) w labels offset 0,0.6 font ",8" notitle, \
     "" u (column(0)+1.0/6):4:(sprintf("%.2f", column(4))) w labels offset 0,0.6 font ",8" notitle
unset label 99
set offsets 0, 0, 0, 0
set title "coverage of the 95% intervals (share of boxes)"
set ylabel "share of boxes whose interval holds the exact answer"
set yrange [${ACC_COVMIN:-0.8}:1.0]
set ytics 0.05
set key top left
plot "$DAT/accuracy.dat" u 0:(NaN):xtic(lab(0)) notitle, \
     "" u (column(0)-0.12):5 w p pt 7 ps 1.8 lc rgb c_gpu t "KDE synopsis", \
     "" u (column(0)+0.12):6 w p pt 5 ps 1.6 lc rgb c_ref t "plain sample", \
     0.95 w l dt 2 lc rgb "#333333" t "nominal 0.95", \
     0.90 w l dt 3 lw 1.5 lc rgb "#aa3333" t "target 0.90"
unset multiplot
EOF
else skip accuracy "no $RES/*accuracy*.txt in plot.sh's format (see its header)"; fi
exit 0
