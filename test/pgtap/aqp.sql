-- Approximate aggregates in plain SQL (issue 13): properties of the planner's
-- answers from table synopses, on three real-shaped data sets: diamonds and
-- movielens (Debian's R packages, test/bench/synopsis_data.sh) and a
-- generated flights table with NULLs, dates, a text and a bool column
-- (test/bench/flights_data.sql, 200,000 rows).
--   (a) SELECT approx_count(*), approx_sum(x), approx_avg(x) FROM t WHERE <box>
--       through the planner = approx_count / approx_sum / approx_avg(s, lo, hi)
--       on the same stored synopsis (approx_gpu.synopses.synopsis), 1e-9 relative
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
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
SET client_min_messages = warning;
SET search_path = approx_gpu, public;
SET jit = off;
SET max_parallel_workers_per_gather = 0;  -- the same row order, so the same sample for both synopses of a seed
SELECT plan(36);
\ir ../bench/flights_data.sql

CREATE FUNCTION pg_temp.pct(x float8) RETURNS text LANGUAGE sql AS $$ SELECT round(x::numeric, 2)::text || '%' $$;
-- |a - b| <= 1e-9 |b| (+ a floor for answers near 0); NULL = NULL
CREATE FUNCTION pg_temp.close(a float8, b float8, rel float8 DEFAULT 1e-9) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN a IS NULL OR b IS NULL THEN a IS NULL AND b IS NULL
              ELSE abs(a - b) <= rel * abs(b) + 1e-12 END $$;

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

-- ---- random boxes through plain SQL ------------------------------------------------------
-- pg_temp.aqp_boxes(tab, cols, kinds, n_boxes, min_sel, max_sel, p_constrain, seed, agg_col)
-- fills pg_temp.boxes (id, pred, lo[], hi[], n, s, a): n_boxes boxes of exact selectivity
-- in [min_sel, max_sel]; cols are the synopsis' columns in its order; kinds[j] is 'num'
-- (a number column), 'date' (bounds are days since 2000-01-01, the synopsis' encoding)
-- or 'skip' (never constrained). Column 1 is always constrained, each other with
-- probability p_constrain, to a window covering a random 20-90% of its non-NULL values
-- (edges at data values, 2001 quantiles of a pilot sample); pred is the WHERE clause,
-- lo / hi the same box in the synopsis' encoding (NULL = unbounded); n, s, a the
-- exact count(*), sum(agg_col), avg(agg_col).
CREATE FUNCTION pg_temp.aqp_boxes(tab text, cols text[], kinds text[], n_boxes int, min_sel float8, max_sel float8,
                                  p_constrain float8, seed float8, agg_col text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  d int := array_length(cols, 1);
  n bigint; pilot_n bigint; pilot_sel float8;
  q float8[][]; vals float8[]; lo float8[]; hi float8[];
  j int; tries int := 0; got int := 0; w float8; u float8;
  cond text; exact record; expr text;
BEGIN
  DROP TABLE IF EXISTS pg_temp.boxes;
  CREATE TEMP TABLE boxes (id int, pred text, lo float8[], hi float8[], n float8, s float8, a float8);
  EXECUTE format('SELECT count(*) FROM %s', tab) INTO n;
  DROP TABLE IF EXISTS pg_temp.pilot;
  EXECUTE format('CREATE TEMP TABLE pilot AS SELECT * FROM %s TABLESAMPLE BERNOULLI (%s) REPEATABLE (%s)',
                 tab, least(100, 100.0 * 40000 / n), floor(seed * 1000)::int);
  SELECT count(*) INTO pilot_n FROM pilot;
  FOR j IN 1..d LOOP
    expr := CASE kinds[j] WHEN 'date' THEN format('(%I - date ''2000-01-01'')::float8', cols[j])
                          WHEN 'num' THEN format('%I::float8', cols[j]) ELSE 'NULL::float8' END;
    EXECUTE format('SELECT array_agg(v ORDER BY v) FROM (SELECT %s AS v FROM pilot) s WHERE v IS NOT NULL', expr) INTO vals;
    IF vals IS NULL THEN vals := ARRAY[0::float8]; END IF;
    vals := ARRAY(SELECT vals[1 + floor((k / 2000.0) * (cardinality(vals) - 1))::int] FROM generate_series(0, 2000) k);
    q := q || ARRAY[vals];
  END LOOP;
  PERFORM setseed(seed);
  WHILE got < n_boxes AND tries < 200 * n_boxes LOOP
    tries := tries + 1;
    lo := '{}'; hi := '{}'; cond := 'true';
    FOR j IN 1..d LOOP
      IF kinds[j] <> 'skip' AND (j = 1 OR random() < p_constrain) THEN
        w := 0.2 + random() * 0.7;
        u := random() * (1 - w);
        lo := lo || q[j][1 + floor(u * 2000)::int];
        hi := hi || q[j][1 + floor((u + w) * 2000)::int];
        cond := cond || CASE kinds[j]
          WHEN 'date' THEN format(' AND %I BETWEEN %L::date AND %L::date', cols[j],
                                  date '2000-01-01' + lo[j]::int, date '2000-01-01' + hi[j]::int)
          ELSE format(' AND %I BETWEEN %s AND %s', cols[j], lo[j]::text, hi[j]::text) END;
      ELSE
        lo := lo || NULL::float8;
        hi := hi || NULL::float8;
      END IF;
    END LOOP;
    cond := substr(cond, 10);  -- without 'true AND '
    EXECUTE format('SELECT count(*)::float8 / %s FROM pilot WHERE %s', pilot_n, cond) INTO pilot_sel;
    CONTINUE WHEN pilot_sel < min_sel / 2 OR pilot_sel > max_sel * 1.5;
    EXECUTE format('SELECT count(*)::float8 AS n, sum(%1$I)::float8 AS s, avg(%1$I)::float8 AS a FROM %2$s WHERE %3$s',
                   agg_col, tab, cond) INTO exact;
    CONTINUE WHEN exact.n < min_sel * n OR exact.n > max_sel * n OR exact.s = 0;
    got := got + 1;
    INSERT INTO boxes VALUES (got, cond, lo, hi, exact.n, exact.s, exact.a);
  END LOOP;
  RETURN got;
END $$;

-- Per box and synopsis: the planner's answers (estimates and intervals), where they came
-- from, and a reference computed without the planner on the same stored synopsis:
-- kind 'kde' (defaults): approx_count / approx_sum / approx_avg(s, lo, hi);
-- kind 'plain' (smoothing 'never'): the plain sample estimator from the stored sample,
-- N/m * (sample rows in the box) and N/m * (the sum of their agg values).
CREATE TEMP TABLE res (set_name text, seed int, kind text, id int,
                       c float8, s float8, a float8, c_lo float8, c_hi float8, s_lo float8, s_hi float8, a_lo float8, a_hi float8,
                       answered_from text, ref_c float8, ref_s float8, ref_a float8, compared boolean DEFAULT true);
CREATE FUNCTION pg_temp.aqp_eval(set_name text, tab text, syn text, agg_col text, agg_idx int, seed int, kind text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  b record; r record; ci record; st approx_gpu.kde_synopsis; src text; ref record;
  big_n float8; m float8; d int;
BEGIN
  SELECT synopsis INTO st FROM approx_gpu.synopses WHERE name = syn;
  IF kind = 'plain' THEN
    big_n := (st::text::jsonb->>'N')::float8;
    m := (st::text::jsonb->>'m')::float8;
    d := (st::text::jsonb->>'d')::int;
    DROP TABLE IF EXISTS pg_temp.samp;
    -- a NULL sample value (NaN) is JSON null or a non-number: SQL NULL here
    CREATE TEMP TABLE samp AS
      SELECT ARRAY(SELECT CASE WHEN jsonb_typeof(v) = 'number' THEN v::text::float8 END
                   FROM jsonb_array_elements(row_) WITH ORDINALITY e(v, k) ORDER BY k) AS x
      FROM jsonb_array_elements(st::text::jsonb->'sample') s(row_);
  END IF;
  FOR b IN SELECT * FROM boxes ORDER BY id LOOP
    EXECUTE format('SELECT approx_gpu.approx_count(*) AS c, approx_gpu.approx_sum(%1$I) AS s, approx_gpu.approx_avg(%1$I) AS a FROM %2$s WHERE %3$s',
                   agg_col, tab, b.pred) INTO r;
    src := approx_gpu.last_run()->>'answered_from';
    EXECUTE format('SELECT approx_gpu.approx_count_ci(*) AS c, approx_gpu.approx_sum_ci(%1$I) AS s, approx_gpu.approx_avg_ci(%1$I) AS a FROM %2$s WHERE %3$s',
                   agg_col, tab, b.pred) INTO ci;
    IF approx_gpu.last_run()->>'answered_from' IS DISTINCT FROM src THEN src := 'mixed'; END IF;
    IF kind = 'kde' THEN
      SELECT approx_gpu.approx_count(st, b.lo, b.hi) AS c, approx_gpu.approx_sum(st, agg_idx, b.lo, b.hi) AS s,
             approx_gpu.approx_avg(st, agg_idx, b.lo, b.hi) AS a INTO ref;
    ELSE
      SELECT big_n / m * count(*) AS c, big_n / m * sum(x[agg_idx]) AS s, avg(x[agg_idx]) AS a INTO ref
      FROM samp
      WHERE NOT EXISTS (SELECT 1 FROM generate_subscripts(b.lo, 1) j
                        WHERE b.lo[j] IS NOT NULL AND NOT coalesce(x[j] BETWEEN b.lo[j] AND b.hi[j], false));
    END IF;
    INSERT INTO res VALUES (set_name, seed, kind, b.id, r.c, r.s, r.a, (ci.c).lower, (ci.c).upper, (ci.s).lower, (ci.s).upper,
                            (ci.a).lower, (ci.a).upper, src, ref.c, ref.s, ref.a);
  END LOOP;
END $$;

-- For each seed: the plain synopsis (smoothing 'never') first, its answers, dropped; then
-- the default one (the most recent synopsis answers), its answers; the default one of
-- the last seed stays.
CREATE FUNCTION pg_temp.aqp_run(set_name text, tab text, cols text[], agg_col text, seeds int[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE seed int; syn text; agg_idx int := array_position(cols, agg_col);
BEGIN
  FOREACH seed IN ARRAY seeds LOOP
    PERFORM set_config('approx_gpu.random_seed', seed::text, false);
    syn := 'tap_' || set_name || '_plain';
    PERFORM approx_gpu.create_synopsis(syn, tab::regclass, cols::name[], 10000, 'cdf', 'never');
    PERFORM pg_temp.aqp_eval(set_name, tab, syn, agg_col, agg_idx, seed, 'plain');
    PERFORM approx_gpu.drop_synopsis(syn);
    syn := 'tap_' || set_name;
    IF EXISTS (SELECT 1 FROM approx_gpu.synopses WHERE name = syn) THEN PERFORM approx_gpu.drop_synopsis(syn); END IF;
    PERFORM approx_gpu.create_synopsis(syn, tab::regclass, cols::name[], 10000);
    PERFORM pg_temp.aqp_eval(set_name, tab, syn, agg_col, agg_idx, seed, 'kde');
  END LOOP;
END $$;

-- The five checks of one data set: (a) twice, (b) twice, (d) once.
CREATE FUNCTION pg_temp.aqp_checks(set_name text, label text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE acc record; eq record; pl record;
BEGIN
  SELECT count(*) AS boxes, count(*) FILTER (WHERE answered_from = 'synopsis') AS from_syn,
         count(*) FILTER (WHERE pg_temp.close(c, ref_c) AND pg_temp.close(s, ref_s) AND pg_temp.close(a, ref_a)) AS same
    INTO eq FROM res WHERE res.set_name = aqp_checks.set_name AND kind = 'kde' AND compared;
  RETURN NEXT ok(eq.boxes > 0 AND eq.from_syn = eq.boxes,
                 format('%s: the planner answered all %s box queries from the synopsis (%s did)', label, eq.boxes, eq.from_syn));
  RETURN NEXT ok(eq.boxes > 0 AND eq.same = eq.boxes,
                 format('%s: SQL approx_count(*), approx_sum, approx_avg = approx_count / sum / avg(s, lo, hi) on the stored synopsis within 1e-9 (%s of %s boxes)',
                        label, eq.same, eq.boxes));
  SELECT count(*) AS boxes, count(*) FILTER (WHERE answered_from = 'synopsis' AND pg_temp.close(c, ref_c, 1e-12)
                                                  AND pg_temp.close(s, ref_s, 1e-12) AND pg_temp.close(a, ref_a, 1e-12)) AS same
    INTO pl FROM res WHERE res.set_name = aqp_checks.set_name AND kind = 'plain';
  RETURN NEXT ok(pl.boxes > 0 AND pl.same = pl.boxes,
                 format('%s: smoothing ''never'' is the plain sample estimator N/m * (sample rows in the box), its SUM and AVG (%s of %s boxes)',
                        label, pl.same, pl.boxes));
  -- median relative errors per seed (percent), then their mean over the seeds
  SELECT max(boxes) AS boxes, avg(kc) AS kc, avg(pc) AS pc, avg(ks) AS ks, avg(ps) AS ps, avg(ka) AS ka, avg(pa) AS pa,
         avg(cc) AS cc, avg(cs) AS cs, avg(ca) AS ca, avg(pcc) AS pcc
    INTO acc FROM (
      SELECT r.seed, count(*) FILTER (WHERE r.kind = 'kde') AS boxes,
             100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(r.c / b.n - 1)) FILTER (WHERE r.kind = 'kde') AS kc,
             100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(r.c / b.n - 1)) FILTER (WHERE r.kind = 'plain') AS pc,
             100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(r.s / b.s - 1)) FILTER (WHERE r.kind = 'kde') AS ks,
             100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(r.s / b.s - 1)) FILTER (WHERE r.kind = 'plain') AS ps,
             -- an AVG the sample cannot answer (no sample row in the box) counts as a 100% error
             100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY coalesce(abs(r.a / b.a - 1), 1)) FILTER (WHERE r.kind = 'kde') AS ka,
             100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY coalesce(abs(r.a / b.a - 1), 1)) FILTER (WHERE r.kind = 'plain') AS pa,
             avg(coalesce(r.c_lo <= b.n AND b.n <= r.c_hi, false)::int) FILTER (WHERE r.kind = 'kde') AS cc,
             avg(coalesce(r.s_lo <= b.s AND b.s <= r.s_hi, false)::int) FILTER (WHERE r.kind = 'kde') AS cs,
             avg(coalesce(r.a_lo <= b.a AND b.a <= r.a_hi, false)::int) FILTER (WHERE r.kind = 'kde') AS ca,
             avg(coalesce(r.c_lo <= b.n AND b.n <= r.c_hi, false)::int) FILTER (WHERE r.kind = 'plain') AS pcc
      FROM res r JOIN boxes_all b ON b.set_name = r.set_name AND b.id = r.id
      WHERE r.set_name = aqp_checks.set_name GROUP BY r.seed) per_seed;
  RETURN NEXT ok(acc.boxes >= 200 AND acc.kc <= acc.pc + 0.3 AND acc.ks <= acc.ps + 0.3 AND acc.ka <= acc.pa + 0.3,
                 format('%s, %s boxes, 3 samples, through SQL: median error COUNT %s (plain %s), SUM %s (plain %s), AVG %s (plain %s)',
                        label, acc.boxes, pg_temp.pct(acc.kc), pg_temp.pct(acc.pc), pg_temp.pct(acc.ks), pg_temp.pct(acc.ps),
                        pg_temp.pct(acc.ka), pg_temp.pct(acc.pa)));
  RETURN NEXT ok(least(acc.cc, acc.cs, acc.ca) >= 0.85,
                 format('%s: approx_count_ci / sum_ci / avg_ci 95%% intervals cover COUNT %s, SUM %s, AVG %s of the boxes (plain sample''s COUNT %s)',
                        label, round(acc.cc::numeric, 3), round(acc.cs::numeric, 3), round(acc.ca::numeric, 3), round(acc.pcc::numeric, 3)));
END $$;
CREATE TEMP TABLE boxes_all (set_name text, id int, pred text, lo float8[], hi float8[], n float8, s float8, a float8);

-- ---- (a) (b) (d) on the three data sets -----------------------------------------------------
\if :have_dia
SELECT pg_temp.aqp_boxes('aqp_t.dia', ARRAY['carat', 'depth', 'table', 'price'], ARRAY['num', 'num', 'num', 'num'],
                         200, 0.01, 1, 0.6, 0.11, 'price') AS n_boxes \gset
INSERT INTO boxes_all SELECT 'dia', * FROM boxes;
SELECT pg_temp.aqp_run('dia', 'aqp_t.dia', ARRAY['carat', 'depth', 'table', 'price'], 'price', ARRAY[1, 2, 3]);
SELECT pg_temp.aqp_checks('dia', 'diamonds');
\else
SELECT skip('R data sets not installed (r-cran-ggplot2): diamonds not checked', 5);
\endif

\if :have_ml
SELECT pg_temp.aqp_boxes('aqp_t.ml', ARRAY['year', 'rating', 'ts', 'userid'], ARRAY['num', 'num', 'num', 'num'],
                         200, 0.01, 1, 0.6, 0.12, 'rating') AS n_boxes \gset
INSERT INTO boxes_all SELECT 'ml', * FROM boxes;
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
SELECT pg_temp.aqp_boxes('aqp_t.flights', ARRAY['distance', 'day', 'dep_delay', 'carrier', 'cancelled'],
                         ARRAY['num', 'date', 'num', 'skip', 'skip'], 200, 0.01, 1, 0.6, 0.13, 'distance') AS n_boxes \gset
INSERT INTO boxes_all SELECT 'flights', * FROM boxes;
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
