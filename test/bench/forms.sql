-- Shared by the end-to-end scripts test/bench/{hashjoin,topk,closure,moving}_sql.sh (psql \i,
-- once per session; not a script of its own): times the forms of one operator (PostgreSQL's own
-- query, the inner-query / aggregate forms, the relation forms) and prints this table:
--
--   form | median ms | ms read | ms transfer | ms compute | M rows/s read | read workers | read |
--   device | vs PostgreSQL | answer
--
-- "vs PostgreSQL" is the median ms of the row's PostgreSQL reference query divided by the row's
-- median ms (> 1: faster than PostgreSQL). ms read / transfer / compute, rows/s, workers, read path
-- and device come from approx_gpu.last_run() after each run (medians over the runs); a PostgreSQL
-- row, or an engine row whose last_run() names no read workers (an aggregate fed by the executor),
-- shows the workers its plan asks for (EXPLAIN, "Workers Planned"); device "postgres": PostgreSQL's.
--
-- Settings, from psql variables of the caller (set before \i):
--   pg_workers    max_parallel_workers_per_gather for PostgreSQL's queries and the inner-query forms
--   workers_note  where pg_workers came from (for the header line)
--   read_workers  approx_gpu.read_workers for the relation forms (-1 = auto); when >= 0 also their
--                 max_parallel_workers_per_gather, else they get pg_workers too
SELECT approx_gpu.device_info() IS NOT NULL AS forms_loaded \gset
SET bench.pg_workers = :pg_workers;
SET bench.read_workers = :read_workers;
SET bench.workers_note = :'workers_note';
SET max_parallel_workers_per_gather = :pg_workers;

CREATE TEMP TABLE IF NOT EXISTS form_runs(
  ord int, form text, ref int, run int, ms float8, ms_read float8, ms_transfer float8, ms_compute float8,
  rows_per_s float8, read_workers int, read_path text, device text, answer text);

-- Runs q (one value, or none when q is not a SELECT) `runs` times after an optional warm-up and
-- records each run as row `ord` of the table. kind: 'pg' (PostgreSQL's query, pg_workers),
-- 'query' (an engine over an inner query or an aggregate, pg_workers), 'relation' (an engine
-- over a relation: read_workers). dev: approx_gpu.device for the run (NULL: as set). before /
-- after: statements run untimed around every run (a fresh index, DROP of what q made).
-- cutoff_ms: no more runs once one took longer. Returns the answer of the last run.
CREATE FUNCTION pg_temp.form_time(ord int, form text, ref int, kind text, q text, runs int,
                                  dev text DEFAULT NULL, warm boolean DEFAULT true,
                                  before text DEFAULT NULL, after text DEFAULT NULL,
                                  cutoff_ms float8 DEFAULT NULL) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz; ms float8; ans text; lr jsonb; planned int;
  old_dev text := current_setting('approx_gpu.device');
  old_par text := current_setting('max_parallel_workers_per_gather');
  old_rw text := current_setting('approx_gpu.read_workers');
  pgw int := current_setting('bench.pg_workers')::int;
  rw int := current_setting('bench.read_workers')::int;
  selects boolean := q ~* '^\s*(select|with|values|table)\s';
BEGIN
  IF dev IS NOT NULL THEN PERFORM set_config('approx_gpu.device', dev, false); END IF;
  IF kind = 'relation' THEN
    PERFORM set_config('approx_gpu.read_workers', rw::text, false);
    PERFORM set_config('max_parallel_workers_per_gather', (CASE WHEN rw >= 0 THEN rw ELSE pgw END)::text, false);
  ELSE
    PERFORM set_config('max_parallel_workers_per_gather', pgw::text, false);
  END IF;
  IF kind IN ('pg', 'query') AND selects THEN  -- PostgreSQL's workers (of a parallel aggregate too)
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO lr;
    SELECT max(v::text::int) INTO planned FROM jsonb_path_query(lr, 'strict $.**."Workers Planned"') v;
    planned := coalesce(planned, 0);
  END IF;
  FOR i IN (CASE WHEN warm THEN 0 ELSE 1 END)..runs LOOP
    IF before IS NOT NULL THEN EXECUTE before; END IF;
    t0 := clock_timestamp();
    IF selects THEN EXECUTE q INTO ans; ELSE EXECUTE q; END IF;
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
    lr := CASE WHEN kind <> 'pg' THEN approx_gpu.last_run() END;
    IF after IS NOT NULL THEN EXECUTE after; END IF;
    IF i > 0 THEN
      INSERT INTO form_runs VALUES (
        ord, form, ref, i, ms, (lr->>'ms_read')::float8, (lr->>'ms_transfer')::float8, (lr->>'ms_compute')::float8,
        coalesce((lr->>'rows_read_per_s')::float8,
                 CASE WHEN (lr->>'ms_read')::float8 > 0
                      THEN ((lr->>'rows')::float8 + coalesce((lr->>'rows_skipped')::float8, 0)) / ((lr->>'ms_read')::float8 / 1000) END),
        coalesce((lr->>'read_workers')::int, planned),
        CASE WHEN kind = 'pg' THEN NULL ELSE lr->>'read' END,
        CASE WHEN kind = 'pg' THEN 'postgres'
             ELSE (lr->>'device') || coalesce(' ' || (lr->>'cpu_threads') || ' thr', '') END,
        ans);
    END IF;
    EXIT WHEN i >= 1 AND cutoff_ms IS NOT NULL AND ms > cutoff_ms;
  END LOOP;
  PERFORM set_config('approx_gpu.device', old_dev, false);
  PERFORM set_config('max_parallel_workers_per_gather', old_par, false);
  PERFORM set_config('approx_gpu.read_workers', old_rw, false);
  RETURN ans;
END $$;

-- A row measured elsewhere (e.g. a multi-statement load), in the same units.
CREATE FUNCTION pg_temp.form_add(ord int, form text, ref int, ms float8, device text, answer text DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO form_runs(ord, form, ref, run, ms, device, answer) VALUES (ord, form, ref, 1, ms, device, answer)
$$;

-- The table (medians over the runs of each row).
CREATE VIEW pg_temp.form_table AS
WITH m AS (
  SELECT ord, min(form) AS form, min(ref) AS ref, count(*) AS runs,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY ms_read) AS ms_read,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY ms_transfer) AS ms_transfer,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY ms_compute) AS ms_compute,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY rows_per_s) AS rows_per_s,
         min(read_workers) AS w_min, max(read_workers) AS w_max, max(read_path) AS read_path,
         max(device) AS device, min(answer) AS a_min, max(answer) AS a_max
  FROM form_runs GROUP BY ord)
SELECT m.form, round(m.ms::numeric, 1) AS "median ms", round(m.ms_read::numeric, 1) AS "ms read",
       round(m.ms_transfer::numeric, 1) AS "ms transfer", round(m.ms_compute::numeric, 1) AS "ms compute",
       round((m.rows_per_s / 1e6)::numeric, 2) AS "M rows/s read",
       CASE WHEN m.w_min = m.w_max THEN m.w_min::text ELSE m.w_min || '-' || m.w_max END AS "read workers",
       m.read_path AS "read", m.device,
       round((r.ms / nullif(m.ms, 0))::numeric, 2) AS "vs PostgreSQL",
       CASE WHEN m.a_min IS DISTINCT FROM m.a_max THEN 'VARIES'
            WHEN length(m.a_min) <= 24 THEN m.a_min
            ELSE 'md5 ' || left(md5(m.a_min), 10) END AS answer
FROM m LEFT JOIN m r ON r.ord = m.ref
ORDER BY m.ord;

-- The header line of the table: what was measured and under which settings.
CREATE FUNCTION pg_temp.form_header(what text) RETURNS text LANGUAGE sql AS $$
  SELECT format('%s; server clock, median of the runs; device_info: gpu_available = %s, cpu_threads = %s; '
                'PostgreSQL''s queries and inner-query forms: max_parallel_workers_per_gather = %s (%s); '
                'relation forms: %s; max_parallel_workers = %s',
                what, approx_gpu.device_info()->>'gpu_available', approx_gpu.device_info()->>'cpu_threads',
                current_setting('bench.pg_workers'), current_setting('bench.workers_note'),
                CASE WHEN current_setting('bench.read_workers')::int >= 0
                     THEN format('approx_gpu.read_workers = %1$s, max_parallel_workers_per_gather = %1$s',
                                 current_setting('bench.read_workers'))
                     ELSE format('approx_gpu.read_workers = -1 (auto: one worker per 32 MB from 64 MB, '
                                 'capped by max_parallel_workers_per_gather = %s)', current_setting('bench.pg_workers')) END,
                current_setting('max_parallel_workers'))
$$;
