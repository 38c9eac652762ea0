-- Approximate aggregates in plain SQL: properties of the planner's
-- answers from table synopses, on three real-shaped data sets: diamonds and
-- movielens (Debian's R packages, test/bench/synopsis_data.sh) and a
-- generated flights table with NULLs, dates, a text and a bool column
-- (test/bench/flights_data.sql, 200,000 rows).
--   (a) SELECT approx_count(*), approx_sum(x), approx_avg(x) FROM t WHERE <box>
--       through the planner = approx_count / approx_sum / approx_avg(s, lo, hi)
--       on the same stored synopsis (approx_gpu_internal.synopsis_values.synopsis), 1e-9 relative
--   (b) 200 random boxes of selectivity >= 1% (edges at quantiles of a seeded
--       pilot sample): median relative error of the synopsis' answer within 0.3
--       percentage points of the plain sample's (the same reservoir built with
--       smoothing 'never'), 95% interval coverage of the _ci forms >= 0.85;
--       like test/pgtap/synopsis.sql, averaged over three sampling seeds
--   (c) a stratified synopsis answers GROUP BY with every group of the table;
--       groups under the floor (100 rows) are exact
--   (d) smoothing 'never' is the plain sample estimator exactly: N/m times the
--       sample rows in the box (and the sum of their values), from the stored sample
--   (e) without a synopsis every approx_* aggregate equals its exact twin
--       (count(*), sum, avg) on int2/int4/int8/float4/float8/numeric, serial
--       and in a parallel plan (Gather, Partial Aggregate)
--   (f) CPU = GPU on GROUP BY answers of the same stored synopsis, 1e-9 relative
--   (g) last_run() says answered_from 'synopsis' or 'rows' (with a reason)
-- The tables live in schema aqp_t (committed: the synopsis' freshness reads
-- the table's statistics counters) and are dropped at the end.
-- Helpers (tap.*) come from test/pgtap_setup.sql.
\ir preamble.psql
SET jit = off;
SET max_parallel_workers_per_gather = 0;  -- the same row order, so the same sample for both synopses of a seed
-- This file checks the box path (its engines, CPU = GPU): many groups stay on it
-- (the sample path has its own suite, test/sql/aqp_sample.sql).
SET approx_gpu.box_path_max_groups = 1000000;
SELECT plan(36);
\ir ../bench/flights_data.sql

CREATE FUNCTION pg_temp.pct(x float8) RETURNS text LANGUAGE sql AS $$ SELECT round(x::numeric, 2)::text || '%' $$;
DROP SCHEMA IF EXISTS aqp_t CASCADE;
CREATE SCHEMA aqp_t;
CREATE TABLE aqp_t.dia (carat float8, depth float8, "table" float8, price float8);
\copy aqp_t.dia FROM PROGRAM 'test/bench/synopsis_data.sh diamonds' WITH (FORMAT csv)
CREATE TABLE aqp_t.ml (year float8, rating float8, ts float8, userid float8);
\copy aqp_t.ml FROM PROGRAM 'test/bench/synopsis_data.sh movielens' WITH (FORMAT csv)
SELECT pg_temp.flights_table('aqp_t.flights', 200000, 0.42, false);
ANALYZE aqp_t.dia;
ANALYZE aqp_t.ml;
SELECT (SELECT count(*) FROM aqp_t.dia) >= 50000 AS have_dia, (SELECT count(*) FROM aqp_t.ml) >= 50000 AS have_ml \gset

\ir ../bench/aqp_accuracy.sql

-- The five checks of one data set: (a) twice, (d), (b) twice.
CREATE FUNCTION pg_temp.aqp_checks(set_name text, label text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  SELECT * INTO r FROM pg_temp.aqp_summary(set_name);
  RETURN NEXT ok(r.answers > 0 AND r.from_synopsis = r.answers,
                 format('%s: the planner answered all %s box queries from the synopsis (%s did)', label, r.answers, r.from_synopsis));
  RETURN NEXT ok(r.n_compared > 0 AND r.same = r.n_compared,
                 format('%s: SQL approx_count(*), approx_sum, approx_avg = approx_count / sum / avg(s, lo, hi) on the stored synopsis within 1e-9 (%s of %s boxes)',
                        label, r.same, r.n_compared));
  RETURN NEXT ok(r.plain_boxes > 0 AND r.plain_same = r.plain_boxes,
                 format('%s: smoothing ''never'' is the plain sample estimator N/m * (sample rows in the box), its SUM and AVG (%s of %s boxes)',
                        label, r.plain_same, r.plain_boxes));
  RETURN NEXT ok(r.boxes >= 200 AND r.kde_count <= r.plain_count + 0.3 AND r.kde_sum <= r.plain_sum + 0.3 AND r.kde_avg <= r.plain_avg + 0.3,
                 format('%s, %s boxes x 3 samples, through SQL: median error COUNT %s (plain %s), SUM %s (plain %s), AVG %s (plain %s)',
                        label, r.boxes, pg_temp.pct(r.kde_count), pg_temp.pct(r.plain_count), pg_temp.pct(r.kde_sum), pg_temp.pct(r.plain_sum),
                        pg_temp.pct(r.kde_avg), pg_temp.pct(r.plain_avg)));
  RETURN NEXT ok(least(r.cover_count, r.cover_sum, r.cover_avg) >= 0.85,
                 format('%s: approx_count_ci / sum_ci / avg_ci 95%% intervals cover COUNT %s, SUM %s, AVG %s of the boxes (plain sample''s COUNT %s)',
                        label, round(r.cover_count::numeric, 3), round(r.cover_sum::numeric, 3), round(r.cover_avg::numeric, 3),
                        round(r.plain_cover_count::numeric, 3)));
END $$;

-- ---- (a) (b) (d) on the three data sets -----------------------------------------------------
\if :have_dia
SELECT pg_temp.aqp_boxes('dia', 'aqp_t.dia', ARRAY['carat', 'depth', 'table', 'price'], ARRAY['num', 'num', 'num', 'num'],
                         200, 0.01, 1, 0.6, 0.11, 'price') AS n_boxes \gset
SELECT pg_temp.aqp_run('dia', 'aqp_t.dia', ARRAY['carat', 'depth', 'table', 'price'], 'price', ARRAY[1, 2, 3]);
SELECT pg_temp.aqp_checks('dia', 'diamonds');
\else
SELECT skip('R data sets not installed (r-cran-ggplot2): diamonds not checked', 5);
\endif

\if :have_ml
SELECT pg_temp.aqp_boxes('ml', 'aqp_t.ml', ARRAY['year', 'rating', 'ts', 'userid'], ARRAY['num', 'num', 'num', 'num'],
                         200, 0.01, 1, 0.6, 0.12, 'rating') AS n_boxes \gset
SELECT pg_temp.aqp_run('ml', 'aqp_t.ml', ARRAY['year', 'rating', 'ts', 'userid'], 'rating', ARRAY[1, 2, 3]);
SELECT pg_temp.aqp_checks('ml', 'movielens');
\else
SELECT skip('R data sets not installed (r-cran-dslabs): movielens not checked', 5);
\endif

-- flights: boxes on distance, day and dep_delay (NULL in ~10% of the rows: a comparison
-- excludes them); carrier and cancelled are in the synopsis but unconstrained (their NULLs
-- count, as in count(*)). (a) compares only boxes that leave dep_delay unconstrained:
-- approx_count(s, lo, hi) lets a NULL pass a bounded column (NullPolicy Any) where the
-- planner's comparison excludes it (NotNull), as SQL does.
SELECT pg_temp.aqp_boxes('flights', 'aqp_t.flights', ARRAY['distance', 'day', 'dep_delay', 'carrier', 'cancelled'],
                         ARRAY['num', 'date', 'num', 'skip', 'skip'], 200, 0.01, 1, 0.6, 0.13, 'distance') AS n_boxes \gset
SELECT pg_temp.aqp_run('flights', 'aqp_t.flights', ARRAY['distance', 'day', 'dep_delay', 'carrier', 'cancelled'], 'distance', ARRAY[1, 2, 3]);
UPDATE res SET compared = false  -- not comparable (see above): left out of (a)
  WHERE set_name = 'flights' AND kind = 'kde' AND id IN (SELECT id FROM boxes_all WHERE set_name = 'flights' AND lo[3] IS NOT NULL);
SELECT ok(count(*) >= 40, format('flights: %s boxes leave dep_delay unconstrained (compared in (a))', count(*)))
FROM boxes_all WHERE set_name = 'flights' AND lo[3] IS NULL;
SELECT pg_temp.aqp_checks('flights', 'flights');

-- ---- (g) last_run(): where the answer came from -------------------------------------------
SELECT approx_count(*) FROM aqp_t.flights WHERE distance BETWEEN 500 AND 1500 AND day >= date '2024-03-01' \gset
SELECT ok(last_run()->>'answered_from' = 'synopsis' AND last_run()::text LIKE '%tap_flights%',
          'last_run() after an answered query: answered_from synopsis, naming tap_flights: ' || last_run()::text);
SELECT is((SELECT approx_count(*) FROM aqp_t.flights WHERE origin < 10), (SELECT count(*)::float8 FROM aqp_t.flights WHERE origin < 10),
          'a column outside the synopsis (origin): the exact count');
SELECT ok(last_run()->>'answered_from' = 'rows' AND last_run()->>'reason' ILIKE '%origin%',
          'last_run(): answered_from rows, the reason names the column: ' || coalesce(last_run()->>'reason', 'no reason'));
SELECT is((SELECT approx_count(*) FROM aqp_t.flights WHERE distance < 300 OR dep_delay > 60),
          (SELECT count(*)::float8 FROM aqp_t.flights WHERE distance < 300 OR dep_delay > 60), 'OR in WHERE: the exact count');
SELECT ok(last_run()->>'answered_from' = 'rows' AND last_run()->>'reason' ~* '\mOR\M',
          'last_run(): answered_from rows, reason OR: ' || coalesce(last_run()->>'reason', 'no reason'));

-- ---- (c) GROUP BY: unstratified (the groups its sample holds), then stratified (every group)
CREATE TEMP TABLE exact_groups AS
  SELECT carrier, count(*)::float8 AS n, count(*) FILTER (WHERE cancelled = false)::float8 AS n_flying FROM aqp_t.flights GROUP BY carrier;
CREATE TEMP TABLE g_uniform AS SELECT carrier, approx_count(*) AS c FROM aqp_t.flights GROUP BY carrier;
SELECT ok(last_run()->>'answered_from' = 'synopsis'
          AND NOT EXISTS (SELECT carrier FROM g_uniform EXCEPT SELECT carrier FROM exact_groups)
          AND (SELECT count(*) FROM g_uniform) >= (SELECT count(*) FROM exact_groups WHERE n >= 1000),
          format('unstratified synopsis, GROUP BY carrier: %s of the %s groups (those its sample holds, every group of >= 1000 rows), no other',
                 (SELECT count(*) FROM g_uniform), (SELECT count(*) FROM exact_groups)));
SELECT set_config('approx_gpu.random_seed', '7', false) IS NOT NULL AS seeded \gset
SELECT create_synopsis('tap_flights_strat', 'aqp_t.flights'::regclass, ARRAY['distance', 'day', 'dep_delay', 'carrier', 'cancelled']::name[],
                       10000, 'cdf', 'auto', ARRAY['carrier']::name[]) IS NOT NULL AS built \gset
CREATE TEMP TABLE g_strat AS SELECT carrier, approx_count(*) AS c FROM aqp_t.flights GROUP BY carrier;
SELECT ok(last_run()->>'answered_from' = 'synopsis' AND last_run()::text LIKE '%tap_flights_strat%'
          AND (SELECT count(*) FROM g_strat) = (SELECT count(*) FROM exact_groups)
          AND NOT EXISTS (SELECT carrier FROM exact_groups EXCEPT SELECT carrier FROM g_strat),
          format('stratified synopsis, GROUP BY carrier: every group of the table (%s of %s, the NULL group and the rare YV, ZW, PT too)',
                 (SELECT count(*) FROM g_strat), (SELECT count(*) FROM exact_groups)));
SELECT ok(bool_and(pg_temp.close(g.c, e.n)), 'stratified, no WHERE: each group''s count is its row count (the stratum weights)')
FROM exact_groups e JOIN g_strat g ON g.carrier IS NOT DISTINCT FROM e.carrier;
CREATE TEMP TABLE g_strat_w AS SELECT carrier, approx_count(*) AS c FROM aqp_t.flights WHERE cancelled = false GROUP BY carrier;
SELECT ok(last_run()->>'answered_from' = 'synopsis' AND count(*) = 2 AND bool_and(pg_temp.close(g.c, e.n_flying)),
          format('stratified, WHERE cancelled = false: the groups under the floor of 100 rows are exact (%s)',
                 string_agg(format('%s: %s = %s', e.carrier, g.c, e.n_flying), ', ')))
FROM exact_groups e JOIN g_strat_w g ON g.carrier IS NOT DISTINCT FROM e.carrier WHERE e.n < 100;

-- ---- (f) CPU = GPU on GROUP BY answers of the same stored synopsis --------------------------
CREATE FUNCTION pg_temp.groups_cpu_gpu(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE old text := current_setting('approx_gpu.device'); good boolean; src_gpu text; src_cpu text;
BEGIN
  PERFORM set_config('approx_gpu.device', 'gpu', false);
  EXECUTE 'CREATE TEMP TABLE tap_gpu_groups AS ' || query;
  src_gpu := last_run()->>'answered_from';
  PERFORM set_config('approx_gpu.device', 'cpu', false);
  EXECUTE 'CREATE TEMP TABLE tap_cpu_groups AS ' || query;
  src_cpu := last_run()->>'answered_from';
  PERFORM set_config('approx_gpu.device', old, false);
  SELECT count(*) = (SELECT count(*) FROM tap_cpu_groups) AND (SELECT count(*) FROM tap_gpu_groups) = count(*)
         AND bool_and(pg_temp.close(g.c, c.c) AND pg_temp.close(g.s, c.s) AND pg_temp.close(g.a, c.a))
    INTO good FROM tap_cpu_groups c JOIN tap_gpu_groups g ON g.k IS NOT DISTINCT FROM c.k;
  DROP TABLE tap_gpu_groups, tap_cpu_groups;
  RETURN good AND src_gpu = 'synopsis' AND src_cpu = 'synopsis';
END $$;
SELECT tap.gpu_ok($$SELECT pg_temp.groups_cpu_gpu('SELECT carrier AS k, approx_count(*) AS c, approx_sum(distance) AS s, approx_avg(distance) AS a
  FROM aqp_t.flights WHERE dep_delay > 15 AND distance BETWEEN 300 AND 2500 GROUP BY carrier')$$,
                  'stratified GROUP BY carrier with WHERE: GPU = CPU within 1e-9 relative (count, sum, avg)');
SELECT tap.gpu_ok($$SELECT pg_temp.groups_cpu_gpu('SELECT cancelled AS k, approx_count(*) AS c, approx_sum(dep_delay) AS s, approx_avg(dep_delay) AS a
  FROM aqp_t.flights WHERE day BETWEEN date ''2024-06-01'' AND date ''2024-08-31'' AND dep_delay >= 0 GROUP BY cancelled')$$,
                  'GROUP BY a bool column with a date range: GPU = CPU within 1e-9 relative (count, sum, avg)');

-- ---- (e) no synopsis: every approx_* aggregate is its exact twin ---------------------------------
SELECT setseed(0.77);
CREATE TABLE aqp_t.types AS
  SELECT g % 7 AS g,
         CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 2000 - 1000)::int2 END AS i2,
         CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 2e6 - 1e6)::int4 END AS i4,
         CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 2e12 - 1e12)::int8 END AS i8,
         CASE WHEN random() < 0.05 THEN NULL ELSE (random() * 100 - 50)::float4 END AS f4,
         CASE WHEN random() < 0.05 THEN NULL ELSE exp(3 * random()) * (random() - 0.3) END AS f8,
         CASE WHEN random() < 0.05 THEN NULL ELSE round((random() * 1e4)::numeric, 3) END AS nm
  FROM generate_series(1, 200000) g;
ANALYZE aqp_t.types;
CREATE FUNCTION pg_temp.twins(col text, where_ text DEFAULT 'true') RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  -- sum(float4) adds in float4: its exact twin here is the float8 sum
  EXECUTE format('SELECT approx_gpu.approx_count(*) AS ac, count(*)::float8 AS ec,
                         approx_gpu.approx_sum(%1$I) AS as_, sum(%1$I%3$s)::float8 AS es,
                         approx_gpu.approx_avg(%1$I) AS aa, avg(%1$I)::float8 AS ea,
                         approx_gpu.approx_count_ci(*) AS cc, approx_gpu.approx_sum_ci(%1$I) AS sc, approx_gpu.approx_avg_ci(%1$I) AS ac_
                  FROM aqp_t.types WHERE %2$s', col, where_, CASE WHEN col = 'f4' THEN '::float8' ELSE '' END) INTO r;
  RETURN r.ac = r.ec AND pg_temp.close(r.as_, r.es, 1e-12) AND pg_temp.close(r.aa, r.ea, 1e-12)
     AND (r.cc).estimate = r.ec AND (r.cc).lower = r.ec AND (r.cc).upper = r.ec
     AND pg_temp.close((r.sc).estimate, r.es, 1e-12) AND (r.sc).lower IS NOT DISTINCT FROM (r.sc).estimate AND (r.sc).upper IS NOT DISTINCT FROM (r.sc).estimate
     AND pg_temp.close((r.ac_).estimate, r.ea, 1e-12) AND (r.ac_).lower IS NOT DISTINCT FROM (r.ac_).estimate AND (r.ac_).upper IS NOT DISTINCT FROM (r.ac_).estimate
     AND approx_gpu.last_run()->>'answered_from' = 'rows';
END $$;
CREATE FUNCTION pg_temp.twins_grouped() RETURNS boolean LANGUAGE sql AS $$
  SELECT bool_and(ac = ec AND pg_temp.close(as4, es4, 1e-12) AND pg_temp.close(aa8, ea8, 1e-12) AND pg_temp.close(asn, esn, 1e-12))
  FROM (SELECT g, approx_count(*) AS ac, count(*)::float8 AS ec, approx_sum(i4) AS as4, sum(i4)::float8 AS es4,
               approx_avg(f8) AS aa8, avg(f8) AS ea8, approx_sum(nm) AS asn, sum(nm)::float8 AS esn
        FROM aqp_t.types WHERE i2 > -500 GROUP BY g) q $$;
SELECT ok(bool_and(pg_temp.twins(col)), 'no synopsis, serial: approx_count(*), approx_sum, approx_avg and the _ci forms (lower = upper = estimate) equal count(*), sum, avg on ' || string_agg(col, ', '))
FROM unnest(ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'nm']) col;
SELECT ok(bool_and(pg_temp.twins(col, 'i4 > 0 AND f8 IS NOT NULL')), 'no synopsis, serial, with WHERE: every approx_* equals its exact twin on ' || string_agg(col, ', '))
FROM unnest(ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'nm']) col;
SELECT ok(bool_and(pg_temp.twins(col, 'i4 > 2e6')), 'no synopsis, no row: approx_count(*) = 0, approx_sum and approx_avg NULL, like count, sum, avg')
FROM unnest(ARRAY['i2', 'i8', 'nm']) col;
SELECT ok(pg_temp.twins_grouped(), 'no synopsis, GROUP BY g: approx_count, approx_sum (int4, numeric), approx_avg (float8) per group equal the exact ones');
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT ok(tap.plan_text('SELECT approx_gpu.approx_count(*), approx_gpu.approx_sum(i8), approx_gpu.approx_avg(nm) FROM aqp_t.types')
          ~ 'Finalize Aggregate.*Gather.*Workers Planned: [12].*Partial Aggregate',
          'EXPLAIN: the approx_* aggregates run as Partial Aggregate under Gather with workers planned');
SELECT ok(bool_and(pg_temp.twins(col)), 'no synopsis, parallel plan: every approx_* equals its exact twin on ' || string_agg(col, ', '))
FROM unnest(ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'nm']) col;
SELECT ok(pg_temp.twins_grouped() AND tap.plan_text('SELECT g, approx_gpu.approx_count(*) FROM aqp_t.types GROUP BY g') ~ 'Gather',
          'no synopsis, parallel GROUP BY: the same answers per group');
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
SELECT ok(last_run()->>'answered_from' = 'rows' AND last_run()->>'reason' IS NOT NULL,
          'last_run() after a table without synopsis: answered_from rows, reason: ' || coalesce(last_run()->>'reason', 'none'));

-- ---- clean up -------------------------------------------------------------------------------
SELECT count(*) AS to_drop FROM synopses WHERE name LIKE 'tap\_%' \gset
SELECT count(drop_synopsis(name)) AS dropped FROM synopses WHERE name LIKE 'tap\_%' \gset
SELECT ok(:to_drop >= 2 AND :dropped = :to_drop AND NOT EXISTS (SELECT 1 FROM synopses WHERE name LIKE 'tap\_%'),
          'the test synopses dropped (' || :to_drop || ')');
DROP SCHEMA aqp_t CASCADE;
SELECT * FROM finish();
