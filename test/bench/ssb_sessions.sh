#!/usr/bin/env bash
# SSB through the GPU service from many sessions at once (issue 39's
# acceptance): SESSIONS (32) pgbench clients for DURATION seconds (30), each running
# the approximate twins of the SSB queries (test/workloads/ssb, rewritten by
# workload_approx) picked at random with equal weight; QUERIES lists them
# (default the 11 a 10^7-row SF 10 sample answers; Q3.4 and Q4.3 run exact,
# seconds each, and would measure PostgreSQL's exact plan instead). Needs the
# SSB tables in SCHEMA (ssb) with a synopsis (test/bench/ssb_latency.sh leaves
# one) and approx_gpu in shared_preload_libraries. Prints throughput, the
# overall p50 / p99 latency, and per session its queries and p99, with the
# acceptance check: every session completes at least half the median
# session's queries, and its p99 is at most 3x the overall p99.
set -euo pipefail
cd "$(dirname "$0")/../.."
SESSIONS=${SESSIONS:-32}; DURATION=${DURATION:-30}; SCHEMA=${SCHEMA:-ssb}
QUERIES=${QUERIES:-q1_1 q1_2 q1_3 q2_1 q2_2 q2_3 q3_1 q3_2 q3_3 q4_1 q4_2}
PGBENCH=${PGBENCH:-pgbench}
. test/bench/sql_lib.sh
bench_extension -c 'SET client_min_messages = warning' -f test/workloads/workloads.sql 2>/dev/null
W=$(mktemp -d); chmod 755 "$W"
files=()
for q in $QUERIES; do
  sql=$(sed 's/;[[:space:]]*$//' "test/workloads/ssb/$q.sql")
  psql -XAt -v q="$sql" <<< "SELECT workload_approx(:'q')" | tr '\n' ' ' > "$W/$q.sql"
  echo ";" >> "$W/$q.sql"
  files+=(-f "$W/$q.sql@1")
done
# one warm-up pass per session happens inside the run; the log has every query
PGOPTIONS="${PGOPTIONS:-} -c search_path=$SCHEMA,public" $PGBENCH -n -c "$SESSIONS" -j "$SESSIONS" -T "$DURATION" \
  "${files[@]}" --log --log-prefix="$W/log" >"$W/pgbench.out" 2>&1 || { tail -20 "$W/pgbench.out"; exit 1; }
grep -E "^(number of transactions actually processed|tps)" "$W/pgbench.out"
# log lines: client_id transaction_no time_us script_no time_epoch time_us_frac
cat "$W"/log.* | python3 -c '
import sys, statistics
lat = {}
for line in sys.stdin:
    f = line.split()
    lat.setdefault(int(f[0]), []).append(int(f[2]) / 1000.0)
allv = sorted(v for l in lat.values() for v in l)
def pct(v, p): return v[min(len(v) - 1, int(p * len(v)))]
p99 = pct(allv, 0.99)
counts = {c: len(l) for c, l in lat.items()}
med = statistics.median(counts.values())
print("queries %d, sessions %d, overall p50 %.1f ms, p99 %.1f ms" % (len(allv), len(lat), pct(allv, 0.5), p99))
worst = max(lat, key=lambda c: pct(sorted(lat[c]), 0.99))
fewest = min(counts, key=counts.get)
print("per session: queries min %d (session %d), median %.0f, max %d; worst session p99 %.1f ms (session %d)" %
      (counts[fewest], fewest, med, max(counts.values()), pct(sorted(lat[worst]), 0.99), worst))
ok_share = all(n >= med / 2 for n in counts.values())
ok_p99 = all(pct(sorted(l), 0.99) <= 3 * p99 for l in lat.values())
print("every session >= half the median session queries: %s; every session p99 <= 3x overall p99: %s" %
      ("yes" if ok_share else "NO", "yes" if ok_p99 else "NO"))
'
rm -rf "$W"
