-- Accuracy of plain-SQL approximate aggregates answered by the
-- planner from table synopses, against exact answers and against the same
-- synopsis read without the planner. Shared by test/pgtap/aqp.sql (CI
-- thresholds) and test/bench/aqp_sql.sh (the report against the targets).
-- Defines pg_temp functions and the temp tables boxes_all and res:
-- pg_temp.aqp_boxes(set_name, tab, cols, kinds, n_boxes, min_sel, max_sel, p_constrain, seed, agg_col)
--   random boxes of a data set (pg_temp.boxes, also appended to boxes_all)
-- pg_temp.aqp_run(set_name, tab, cols, agg_col, seeds [, prefix]) builds, per
--   sampling seed, a plain synopsis (smoothing 'never', named prefix ||
--   set_name || '_plain', dropped after use) and a default one (prefix ||
--   set_name, the last seed's stays) with create_synopsis and records the planner's answers for every box (res)
-- pg_temp.aqp_summary(set_name) -> one row: boxes (per seed), answers (every
--   box x seed x synopsis), how many came from the synopsis, how many equal the reference, median relative errors
--   (percent, the mean over the seeds of each seed's median) of COUNT / SUM /
--   AVG for the default and the plain synopsis, and the coverage of the 95%
--   intervals (default; plain for COUNT).

-- |a - b| <= 1e-9 |b| (+ a floor for answers near 0); NULL = NULL
CREATE FUNCTION pg_temp.close(a float8, b float8, rel float8 DEFAULT 1e-9) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN a IS NULL OR b IS NULL THEN a IS NULL AND b IS NULL
              ELSE abs(a - b) <= rel * abs(b) + 1e-12 END $$;


-- ---- random boxes through plain SQL ------------------------------------------------------
-- pg_temp.aqp_boxes(set_name, tab, cols, kinds, n_boxes, min_sel, max_sel, p_constrain, seed, agg_col)
-- fills pg_temp.boxes (and appends them to boxes_all under set_name) (id, pred, lo[], hi[], n, s, a): n_boxes boxes of exact selectivity
-- in [min_sel, max_sel]; cols are the synopsis' columns in its order; kinds[j] is 'num'
-- (a number column), 'date' (bounds are days since 2000-01-01, the synopsis' encoding)
-- or 'skip' (never constrained). Column 1 is always constrained, each other with
-- probability p_constrain, to a window covering a random 20-90% of its non-NULL values
-- (edges at data values, 2001 quantiles of a pilot sample); pred is the WHERE clause,
-- lo / hi the same box in the synopsis' encoding (NULL = unbounded); n, s, a the
-- exact count(*), sum(agg_col), avg(agg_col).
CREATE TEMP TABLE boxes_all (set_name text, id int, pred text, lo float8[], hi float8[], n float8, s float8, a float8);
CREATE FUNCTION pg_temp.aqp_boxes(set_name text, tab text, cols text[], kinds text[], n_boxes int, min_sel float8, max_sel float8,
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
    INSERT INTO boxes_all VALUES (set_name, got, cond, lo, hi, exact.n, exact.s, exact.a);
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
  SELECT synopsis INTO st FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = syn;
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
CREATE FUNCTION pg_temp.aqp_run(set_name text, tab text, cols text[], agg_col text, seeds int[], prefix text DEFAULT 'tap_') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE seed int; syn text; agg_idx int := array_position(cols, agg_col);
BEGIN
  FOREACH seed IN ARRAY seeds LOOP
    PERFORM set_config('approx_gpu.random_seed', seed::text, false);
    syn := prefix || set_name || '_plain';
    -- census => false, both: the reference is the one-stratum estimator N/m
    -- (a census, the default where a column's tail pays for it, is a stratum)
    PERFORM approx_gpu.create_synopsis(syn, tab::regclass, cols::name[], 10000, 'cdf', 'never', census => false);
    PERFORM pg_temp.aqp_eval(set_name, tab, syn, agg_col, agg_idx, seed, 'plain');
    PERFORM approx_gpu.drop_synopsis(syn);
    syn := prefix || set_name;
    IF EXISTS (SELECT 1 FROM approx_gpu.synopses WHERE name = syn) THEN PERFORM approx_gpu.drop_synopsis(syn); END IF;
    PERFORM approx_gpu.create_synopsis(syn, tab::regclass, cols::name[], 10000, census => false);
    PERFORM pg_temp.aqp_eval(set_name, tab, syn, agg_col, agg_idx, seed, 'kde');
  END LOOP;
END $$;

CREATE FUNCTION pg_temp.aqp_summary(set_name text,
    OUT boxes int, OUT answers int, OUT from_synopsis int, OUT n_compared int, OUT same int, OUT plain_boxes int, OUT plain_same int,
    OUT kde_count float8, OUT plain_count float8, OUT kde_sum float8, OUT plain_sum float8, OUT kde_avg float8, OUT plain_avg float8,
    OUT cover_count float8, OUT cover_sum float8, OUT cover_avg float8, OUT plain_cover_count float8,
    OUT cover_min float8, OUT cover_max float8)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT count(*), count(*) FILTER (WHERE r.answered_from = 'synopsis'),
         count(*) FILTER (WHERE r.kind = 'kde' AND r.compared),
         count(*) FILTER (WHERE r.kind = 'kde' AND r.compared AND pg_temp.close(r.c, r.ref_c) AND pg_temp.close(r.s, r.ref_s)
                          AND pg_temp.close(r.a, r.ref_a)),
         count(*) FILTER (WHERE r.kind = 'plain'),
         count(*) FILTER (WHERE r.kind = 'plain' AND r.answered_from = 'synopsis' AND pg_temp.close(r.c, r.ref_c, 1e-12)
                          AND pg_temp.close(r.s, r.ref_s, 1e-12) AND pg_temp.close(r.a, r.ref_a, 1e-12))
    INTO answers, from_synopsis, n_compared, same, plain_boxes, plain_same
    FROM res r WHERE r.set_name = aqp_summary.set_name;
  SELECT max(nb), avg(kc), avg(pc), avg(ks), avg(ps), avg(ka), avg(pa), avg(cc), avg(cs), avg(ca), avg(pcc),
         min(least(cc, cs, ca)), max(greatest(cc, cs, ca))
    INTO boxes, kde_count, plain_count, kde_sum, plain_sum, kde_avg, plain_avg, cover_count, cover_sum, cover_avg,
         plain_cover_count, cover_min, cover_max
    FROM (
      SELECT r.seed, count(*) FILTER (WHERE r.kind = 'kde') AS nb,
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
      WHERE r.set_name = aqp_summary.set_name GROUP BY r.seed) per_seed;
END $$;
