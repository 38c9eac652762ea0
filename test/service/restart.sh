#!/usr/bin/env bash
# The GPU service terminated while calls wait in its queue (test/run's second
# pass; needs approx_gpu preloaded and the extension in database $1):
#   - a waiting call under device = gpu gets a clean ERROR,
#   - one under device = auto runs on the CPU (NOTICE) and answers right,
#   - the postmaster starts a new service within seconds, which serves again.
#   - a call cancelled while it runs in the service (statement_timeout) ends
#     with the cancel; the service drops its answer and frees the slot.
# Prints "ok service ..." / "not ok service ..." lines.
set -uo pipefail
PSQL=${PSQL:-psql}
db=${1:-approx_tap}
work=${2:-$(mktemp -d)}
call="SET approx_gpu.service_test_delay = '10s'; SET approx_gpu.gpu_min_rows = 0;
SELECT approx_gpu.topk(g, g::float8, 3) FROM generate_series(1, 1000) g;"
$PSQL -qX -d "$db" -c "SET approx_gpu.device = 'gpu'" -c "$call" >"$work/waiting_gpu.out" 2>&1 &
a=$!
$PSQL -qX -d "$db" -c "SET approx_gpu.device = 'auto'" -c "$call" >"$work/waiting_auto.out" 2>&1 &
b=$!
# Both calls queued (the service holds them for 10 s), then terminate it.
for _ in $(seq 100); do
  q=$($PSQL -qXAt -d "$db" -c "SELECT (approx_gpu.gpu_service_info()->'queue'->>'queued')::int")
  [ "${q:-0}" -ge 2 ] && break; sleep 0.1
done
old=$($PSQL -qXAt -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service'")
t0=$(date +%s%N)
$PSQL -qXAt -d "$db" -c "SELECT pg_terminate_backend($old)" >/dev/null
wait $a $b
if grep -q "ERROR:  topk: the GPU service exited while the call was queued" "$work/waiting_gpu.out"; then
  echo "ok service: a queued call under device = gpu gets a clean error when the service exits"
else
  echo "not ok service: queued call under device = gpu:"; sed 's/^/    /' "$work/waiting_gpu.out"
fi
if grep -q "ran on the CPU instead" "$work/waiting_auto.out" && grep -q '{"(1000,1000)","(999,999)","(998,998)"}' "$work/waiting_auto.out"; then
  echo "ok service: a queued call under device = auto runs on the CPU when the service exits"
else
  echo "not ok service: queued call under device = auto:"; sed 's/^/    /' "$work/waiting_auto.out"
fi
back=""
for _ in $(seq 200); do
  new=$($PSQL -qXAt -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service'")
  running=$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.gpu_service_info()->>'running'")
  if [ -n "$new" ] && [ "$new" != "$old" ] && [ "$running" = true ]; then back=$(( ($(date +%s%N) - t0) / 1000000 )); break; fi
  sleep 0.1
done
if [ -n "$back" ]; then
  echo "ok service: a new service runs $back ms after the old one was terminated"
else
  echo "not ok service: no new service within 20 s"
fi
out=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.gpu_min_rows = 0" -c "SELECT approx_gpu.topk(g, g::float8, 1) FROM generate_series(1, 10) g" \
      -c "SELECT approx_gpu.last_run()->>'service_ms_round_trip' IS NOT NULL" 2>&1)
if [ "$(echo "$out" | tr '\n' ' ')" = '{"(10,10)"} t ' ]; then
  echo "ok service: the new service serves calls"
else
  echo "not ok service: after the restart: $out"
fi

# Cancelled while running: LSCV over 6 * 10^5 points in 2-D (pair sums over a
# grid of bandwidths: 2 * 10^5 points took under 3 s on the H100, so this is
# about 20 s there and far longer on CPUs), cancelled by statement_timeout 4 s
# (the array takes about 0.3 s).
before=$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.gpu_service_info()->'requests'->>'abandoned'")
out=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.gpu_min_rows = 0" -c "SET statement_timeout = '4s'" \
      -c "SELECT approx_gpu.kde_lscv(array(SELECT ARRAY[sin(i), cos(i * 0.7)]::float8[] FROM generate_series(1, 600000) i))" 2>&1)
freed=""
for _ in $(seq 300); do
  used=$($PSQL -qXAt -d "$db" -c "SELECT (approx_gpu.gpu_service_info()->'queue'->>'in_use')::int")
  [ "$used" = 0 ] && { freed=yes; break; }; sleep 0.1
done
after=$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.gpu_service_info()->'requests'->>'abandoned'")
if echo "$out" | grep -q "canceling statement due to statement timeout" && [ -n "$freed" ] && [ "$after" -gt "$before" ]; then
  echo "ok service: a call cancelled while running ends with the cancel; the service dropped it and freed its slot"
else
  echo "not ok service: cancel while running: '$out', slot freed: ${freed:-no}, abandoned $before -> $after"
fi

# The service terminated while a call RUNS in it (issue 26 item 17): under
# device = auto the call is not "cancelled by the user" (57014 from the
# service's own stop); it runs on the CPU in its session instead. LSCV is
# quadratic: 1,500 points run a few seconds on the CPU engines (the CI
# service), long enough to be terminated mid-run, and the rerun in the
# session finishes; on the GPU 6 * 10^5 points run about 20 s, and the CPU
# rerun is then ended by statement_timeout (a different message from the
# service's stop, which is what is checked there).
engine=$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.gpu_service_info()->>'engine'")
[ "$engine" = gpu ] && n_lscv=600000 || n_lscv=1500
lscv_n="SELECT (approx_gpu.kde_lscv(array(SELECT ARRAY[sin(i), cos(i * 0.7)]::float8[] FROM generate_series(1, $n_lscv) i))).h::numeric(20,12)"
$PSQL -qXAt -d "$db" -c "SET approx_gpu.gpu_min_rows = 0" -c "SET approx_gpu.device = 'auto'" -c "SET statement_timeout = '120s'" \
      -c "$lscv_n" >"$work/running_auto.out" 2>&1 &
a=$!
running=""
for _ in $(seq 600); do
  r=$($PSQL -qXAt -d "$db" -c "SELECT (approx_gpu.gpu_service_info()->'queue'->>'running')::int")
  [ "${r:-0}" -ge 1 ] && { running=yes; break; }; sleep 0.05
done
old=$($PSQL -qXAt -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service'")
$PSQL -qXAt -d "$db" -c "SELECT pg_terminate_backend($old)" >/dev/null
wait $a
if [ "$engine" = gpu ]; then
  ok=$(grep -q "due to user request" "$work/running_auto.out" || echo yes)
else
  ref=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.use_service = off" -c "SET approx_gpu.device = 'cpu'" -c "$lscv_n" 2>&1)
  ok=$(grep -q "ran on the CPU instead" "$work/running_auto.out" && [ "$(tail -1 "$work/running_auto.out")" = "$ref" ] && echo yes)
fi
if [ -n "$running" ] && [ -n "$ok" ]; then
  echo "ok service: a call running in the service when it is terminated runs on the CPU under device = auto (no 57014 'user request')"
else
  echo "not ok service: running call, service terminated (running: ${running:-no}):"; sed 's/^/    /' "$work/running_auto.out"
fi
for _ in $(seq 200); do
  [ "$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.gpu_service_info()->>'running'")" = true ] && break; sleep 0.1
done

# approx_gpu.service_request_limit (superuser-only): a call that runs longer
# in the service is stopped between its engine's chunks, and runs on the CPU
# in its session under auto (the answer is the same); under gpu it fails with
# 53200 naming the setting. (400 points: well under a second on a CPU, far
# more than 1 ms.)
lscv="SELECT (approx_gpu.kde_lscv(array(SELECT ARRAY[sin(i), cos(i * 0.7)]::float8[] FROM generate_series(1, 400) i))).h::numeric(20,12)"
ref=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.use_service = off" -c "SET approx_gpu.device = 'cpu'" -c "$lscv" 2>&1)
out=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.gpu_min_rows = 0" -c "SET approx_gpu.device = 'auto'" -c "SET approx_gpu.service_request_limit = '1ms'" -c "$lscv" 2>&1)
if echo "$out" | grep -q "service_request_limit" && echo "$out" | grep -q "ran on the CPU instead" && [ "$(echo "$out" | tail -1)" = "$ref" ]; then
  echo "ok service: a call past approx_gpu.service_request_limit runs on the CPU under device = auto, same answer"
else
  echo "not ok service: request limit under auto: '$out' (in-process CPU: '$ref')"
fi
out=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.gpu_min_rows = 0" -c "SET approx_gpu.device = 'gpu'" -c "SET approx_gpu.service_request_limit = '1ms'" \
      -c "\\set VERBOSITY verbose" -c "$lscv" 2>&1)
if echo "$out" | grep -q "ERROR:  53200: .*service_request_limit"; then
  echo "ok service: a call past approx_gpu.service_request_limit under device = gpu fails with 53200 naming the setting"
else
  echo "not ok service: request limit under gpu: '$out'"
fi

# A real device fault (GPU engines only): a kernel that traps poisons the
# service's CUDA context. The call that faulted gets the GPU error, the
# service restarts itself (a fresh context) and serves again; the backends
# are never restarted (no crash of a process with shared memory).
if [ "$engine" = gpu ]; then
  old=$($PSQL -qXAt -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service'")
  watcher_pid=$($PSQL -qXAt -d "$db" -c "SELECT pg_backend_pid()")
  out=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.service_test_fault = 'trap'" -c "SET approx_gpu.device = 'gpu'" \
        -c "SET approx_gpu.gpu_min_rows = 0" -c "SELECT approx_gpu.topk(g, g::float8, 3) FROM generate_series(1, 1000) g" 2>&1)
  back=""
  for _ in $(seq 200); do
    new=$($PSQL -qXAt -d "$db" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'approx_gpu gpu service'")
    running=$($PSQL -qXAt -d "$db" -c "SELECT approx_gpu.gpu_service_info()->>'running'")
    if [ -n "$new" ] && [ "$new" != "$old" ] && [ "$running" = true ]; then back=yes; break; fi
    sleep 0.1
  done
  served=$($PSQL -qXAt -d "$db" -c "SET approx_gpu.device = 'gpu'" -c "SET approx_gpu.gpu_min_rows = 0" \
           -c "SELECT approx_gpu.topk(g, g::float8, 1) FROM generate_series(1, 10) g" 2>&1)
  if echo "$out" | grep -q "injected by approx_gpu.service_test_fault" && [ -n "$back" ] && [ "$served" = '{"(10,10)"}' ]; then
    echo "ok service: a device fault (trap) fails its call only; the service restarts with a fresh context and serves again"
  else
    echo "not ok service: device fault: '$out', new service: ${back:-no}, then: '$served'"
  fi
else
  echo "ok service: a device fault (trap) # skip: the service runs the CPU engines"
fi
