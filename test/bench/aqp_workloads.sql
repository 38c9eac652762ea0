-- Server-side pieces of test/bench/aqp_workloads.sh (needs approx_gpu and
-- test/workloads/workloads.sql): timings, group matching and errors of one
-- workload query against its approximate twin, its _ci twin and a
-- TABLESAMPLE SYSTEM (1) twin.

-- Median milliseconds of reps runs (EXECUTE discards the rows: the server's
-- time, without the transfer to a client).
CREATE OR REPLACE FUNCTION bench_ms(query text, reps int) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; ms float8[] := '{}';
BEGIN
    FOR i IN 1..reps LOOP
        t0 := clock_timestamp();
        EXECUTE query;
        ms := ms || extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
    END LOOP;
    RETURN (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(ms) x);
END $$;

-- The output column types of a query (a temporary view's; nothing is planned).
CREATE OR REPLACE FUNCTION bench_types(query text) RETURNS regtype[]
LANGUAGE plpgsql AS $$
DECLARE t regtype[];
BEGIN
    EXECUTE 'CREATE TEMP VIEW bench_v AS ' || query;
    SELECT array_agg(atttypid::regtype ORDER BY attnum) INTO t
      FROM pg_attribute WHERE attrelid = 'pg_temp.bench_v'::regclass AND attnum > 0;
    DROP VIEW pg_temp.bench_v;
    RETURN t;
END $$;

-- The plain-PostgreSQL baseline: the big table read through TABLESAMPLE
-- SYSTEM (1) (whole pages, REPEATABLE), sums and counts scaled by 100 (the
-- scaling inside the aggregate, so sum / sum stays a ratio); avg as is.
CREATE OR REPLACE FUNCTION bench_times100(numeric) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 100';
CREATE OR REPLACE FUNCTION bench_count100(int8) RETURNS int8 LANGUAGE sql IMMUTABLE AS 'SELECT $1 * 100';
DROP AGGREGATE IF EXISTS bench_ts_sum(numeric);
CREATE AGGREGATE bench_ts_sum(numeric) (sfunc = numeric_add, stype = numeric, finalfunc = bench_times100);
DROP AGGREGATE IF EXISTS bench_ts_count(*);
CREATE AGGREGATE bench_ts_count(*) (sfunc = int8inc, stype = int8, initcond = '0', finalfunc = bench_count100);
CREATE OR REPLACE FUNCTION bench_tablesample(query text, big_table text, seed int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
SELECT regexp_replace(regexp_replace(regexp_replace(query,
         '\m' || big_table || '\M', big_table || ' TABLESAMPLE SYSTEM (1) REPEATABLE (' || seed || ')'),
         '\msum\(', 'bench_ts_sum(', 'gi'), '\mcount\(\*\)', 'bench_ts_count(*)', 'gi') $$;

-- Errors of an answer against the exact one. Groups match on the key
-- columns (those not in aggpos); per exact group, its error is the largest
-- relative error over the aggregate columns (|a - e| / |e|; e = 0: 0 when
-- a = 0, else 1); a group the answer lacks, or gives NULL for, has error 1.
-- ci (the _ci twin's rows, or NULL): pairs (group, aggregate) whose interval
-- holds the exact value (give or take 1e-9 of it: approx_* sum in float8,
-- sum(numeric) exactly, so an exact answer's zero-width interval may miss by
-- a rounding); a missing group covers nothing.
CREATE OR REPLACE FUNCTION bench_compare(exact json[], answer json[], ci json[], aggpos int[],
                                         OUT groups int, OUT returned int, OUT med_err float8, OUT max_err float8,
                                         OUT within10 int, OUT missing int, OUT covered int, OUT ci_pairs int)
LANGUAGE sql STABLE AS $$
WITH cols AS (
    SELECT w, r.i, c.n, c.v
      FROM (VALUES ('e', exact), ('a', answer), ('c', ci)) s(w, rows),
           unnest(s.rows) WITH ORDINALITY r(x, i), json_each_text(r.x) WITH ORDINALITY c(k, v, n)),
keyed AS (
    SELECT w, i, coalesce(json_agg(v ORDER BY n) FILTER (WHERE n <> ALL (aggpos)), '[]')::text AS key
      FROM cols GROUP BY w, i),
vals AS (
    SELECT k.w, k.key, c.n, c.v FROM keyed k JOIN cols c USING (w, i) WHERE c.n = ANY (aggpos)),
pairs AS (
    SELECT e.key, e.n, e.v::numeric AS ev,
           (SELECT a.v::numeric FROM vals a WHERE a.w = 'a' AND a.key = e.key AND a.n = e.n LIMIT 1) AS av,
           (SELECT a.v::json FROM vals a WHERE a.w = 'c' AND a.key = e.key AND a.n = e.n LIMIT 1) AS cv,
           EXISTS (SELECT FROM keyed a WHERE a.w = 'a' AND a.key = e.key) AS found
      FROM vals e WHERE e.w = 'e'),
errs AS (
    SELECT key, bool_and(found) AS found,
           max(CASE WHEN ev IS NULL AND av IS NULL THEN 0 WHEN ev IS NULL OR av IS NULL THEN 1
                    WHEN ev = 0 THEN CASE WHEN av = 0 THEN 0 ELSE 1 END
                    ELSE least(1e300, abs(av - ev) / abs(ev)) END)::float8 AS err
      FROM pairs GROUP BY key)
SELECT cardinality(exact), cardinality(answer),
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY err) FROM errs),
       (SELECT max(err) FROM errs),
       (SELECT count(*) FILTER (WHERE err <= 0.1) FROM errs)::int,
       (SELECT count(*) FILTER (WHERE NOT found) FROM errs)::int,
       CASE WHEN ci IS NOT NULL THEN (SELECT count(*) FILTER (WHERE (cv->>'lower')::numeric - slack <= ev
                                                            AND ev <= (cv->>'upper')::numeric + slack)
                                        FROM pairs, LATERAL (SELECT 1e-9 * abs(ev) AS slack) s)::int END,
       CASE WHEN ci IS NOT NULL THEN (SELECT count(*) FROM pairs)::int END $$;

-- One query: exact, approximate, _ci and (ts) TABLESAMPLE twins; reps timed
-- runs each. aggpos: the columns whose type the approximate twin changes
-- (approx_* return float8). An error of a twin is reported, not raised.
CREATE OR REPLACE FUNCTION bench_query(query text, big_table text, reps int, ts boolean,
        OUT answered_from text, OUT reason text, OUT exact_ms float8, OUT approx_ms float8,
        OUT star_join text, OUT cpu_plan_ms float8, OUT groups int, OUT returned int, OUT med_err float8, OUT max_err float8, OUT missing int,
        OUT covered int, OUT ci_pairs int, OUT within10_guarded int, OUT guarded_from text,
        OUT ts_ms float8, OUT ts_returned int, OUT ts_med_err float8, OUT ts_max_err float8, OUT ts_missing int,
        OUT error text)
LANGUAGE plpgsql AS $$
DECLARE
    approx text := workload_approx(query);
    exact json[]; answer json[]; ci json[]; aggpos int[]; te regtype[]; ta regtype[]; c record; mode text;
BEGIN
    exact := workload_rows(query);
    exact_ms := bench_ms(query, reps);
    te := bench_types(query); ta := bench_types(approx);
    SELECT array_agg(n) INTO aggpos FROM generate_subscripts(te, 1) n WHERE te[n] <> ta[n];
    BEGIN
        answer := workload_rows(approx);
        answered_from := approx_gpu.last_run()->>'answered_from';
        reason := approx_gpu.last_run()->>'reason';
        star_join := CASE approx_gpu.last_run()->>'star_join_device' WHEN '1' THEN 'gpu' WHEN '0' THEN 'cpu'
                     WHEN '-1' THEN 'declined' END;
        approx_ms := bench_ms(approx, reps);
        -- the same answer from PostgreSQL's executor over the sample (no star join)
        IF star_join IS NOT NULL THEN
            mode := current_setting('approx_gpu.star_join');
            PERFORM set_config('approx_gpu.star_join', 'off', true);
            cpu_plan_ms := bench_ms(approx, reps);
            PERFORM set_config('approx_gpu.star_join', mode, true);
        END IF;
    EXCEPTION WHEN others THEN error := 'approx: ' || SQLERRM; answer := '{}';
    END;
    BEGIN
        ci := workload_rows(workload_approx(query, true));
    EXCEPTION WHEN others THEN ci := NULL;  -- an aggregate inside an expression (TPC-H Q14)
    END;
    c := bench_compare(exact, answer, ci, aggpos);
    groups := c.groups; returned := c.returned; med_err := c.med_err; max_err := c.max_err;
    missing := c.missing; covered := c.covered; ci_pairs := c.ci_pairs;
    -- the guard at 10%: a group outside it makes the query fall back (exact)
    BEGIN
        PERFORM set_config('approx_gpu.max_relative_error', '0.1', true);
        answer := workload_rows(approx);
        guarded_from := approx_gpu.last_run()->>'answered_from';
        within10_guarded := (bench_compare(exact, answer, NULL, aggpos)).within10;
        PERFORM set_config('approx_gpu.max_relative_error', '0', true);
    EXCEPTION WHEN others THEN error := coalesce(error || '; ', '') || 'guarded: ' || SQLERRM;
    END;
    IF ts THEN
        BEGIN
            answer := workload_rows(bench_tablesample(query, big_table, 42));
            ts_ms := bench_ms(bench_tablesample(query, big_table, 42), reps);
            c := bench_compare(exact, answer, NULL, aggpos);
            ts_returned := c.returned; ts_med_err := c.med_err; ts_max_err := c.max_err; ts_missing := c.missing;
        EXCEPTION WHEN others THEN error := coalesce(error || '; ', '') || 'tablesample: ' || SQLERRM;
        END;
    END IF;
END $$;

-- Server-side latency of one query's approximate twin in one session (issue
-- 39's acceptance: planning + execution, after a warm-up, runs times): its
-- median and p95, what answered it and where the star join ran; and the
-- exact query's median of exact_runs.
-- exact_pass: where the sample cannot answer, one run under approx_gpu.exact_pass
-- = force first (it loads the table's columns: load_ms), the timed runs under on.
DROP FUNCTION IF EXISTS bench_latency(text, int, int);
CREATE OR REPLACE FUNCTION bench_latency(query text, runs int, exact_runs int, exact_pass boolean DEFAULT false,
        OUT answered_from text, OUT star_join text, OUT service text, OUT kept text,
        OUT approx_med float8, OUT approx_p95 float8, OUT approx_max float8, OUT exact_ms float8, OUT load_ms float8)
LANGUAGE plpgsql AS $$
DECLARE approx text := workload_approx(query); t0 timestamptz; ms float8[] := '{}'; lr jsonb;
BEGIN
    EXECUTE approx;  -- the warm-up: reads what the session (or the GPU service) then keeps
    IF exact_pass AND approx_gpu.last_run()->>'answered_from' = 'rows' THEN
        PERFORM set_config('approx_gpu.exact_pass', 'force', false);
        t0 := clock_timestamp();
        EXECUTE approx;
        load_ms := extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
        PERFORM set_config('approx_gpu.exact_pass', 'on', false);
    END IF;
    FOR i IN 1..runs LOOP
        t0 := clock_timestamp();
        EXECUTE approx;
        ms := ms || extract(epoch FROM clock_timestamp() - t0)::float8 * 1000;
    END LOOP;
    lr := approx_gpu.last_run();
    answered_from := coalesce(lr->>'answered_from', '-') || coalesce(' (' || (lr->>'reason') || ')', '');
    star_join := CASE lr->>'star_join_device' WHEN '1' THEN 'gpu' WHEN '0' THEN 'cpu' WHEN '-1' THEN 'declined' END;
    service := CASE lr->>'star_join_service' WHEN '0' THEN 'backend' WHEN '1' THEN 'sent' WHEN '2' THEN 'resident' END;
    kept := (lr->>'star_join_kept') || '/' || ((lr->>'star_join_kept')::int + (lr->>'star_join_read')::int);
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x), percentile_cont(0.95) WITHIN GROUP (ORDER BY x), max(x)
      INTO approx_med, approx_p95, approx_max FROM unnest(ms) x;
    exact_ms := bench_ms(query, exact_runs);
END $$;
