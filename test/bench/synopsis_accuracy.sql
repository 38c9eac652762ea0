-- Accuracy of a KDE synopsis against the plain sample estimator (the same
-- reservoir with indicator membership, i.e. smoothing = 'never': what
-- TABLESAMPLE or VerdictDB would give), on random boxes, against exact answers
-- from plain SQL. Shared by test/pgtap/synopsis.sql (CI thresholds) and
-- test/bench/synopsis_sql.sh (the targets). Defines pg_temp functions only.
--
-- pg_temp.synopsis_boxes(tab, cols, agg_col, n_boxes, min_sel, max_sel, min_width, max_width, p_constrain, seed)
--   fills pg_temp.acc_boxes (id, lo[], hi[], n, s, a) with n_boxes boxes whose
--   exact selectivity lies in [min_sel, max_sel]. Each column is constrained
--   with probability p_constrain (the first always) to a window covering a random
--   fraction in [min_width, max_width] of its sorted values (edges at data
--   values); a pilot sample (BERNOULLI, about 40000 rows, fixed seed) gives the
--   quantiles and screens candidates before the exact query.
-- pg_temp.synopsis_accuracy(kde, plain, agg_col) -> one row: median relative
--   errors (percent) of COUNT, SUM and AVG for both estimators and the
--   coverage of the KDE synopsis' 95% intervals.
-- pg_temp.synopsis_accuracy_pooled(tab, cols, agg_col, m, seeds) -> the same
--   row, every number averaged over several samples: for each sampling seed
--   (approx_gpu.random_seed) a KDE synopsis (defaults) and a plain one of m
--   rows of tab, evaluated on the boxes of pg_temp.acc_boxes. One sample's
--   boxes share its luck, so a single seed says little about a small difference.

CREATE FUNCTION pg_temp.synopsis_boxes(tab text, cols text[], agg_col int, n_boxes int, min_sel float8,
                                       max_sel float8, min_width float8, max_width float8, p_constrain float8,
                                       seed float8) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  d int := array_length(cols, 1);
  n bigint;
  sorted float8[][];
  col_vals float8[];
  lo float8[]; hi float8[];
  j int; tries int := 0; got int := 0;
  w float8; u float8; pilot_n bigint; pilot_sel float8;
  cond text; exact record;
BEGIN
  DROP TABLE IF EXISTS pg_temp.acc_boxes;
  CREATE TEMP TABLE acc_boxes (id int, lo float8[], hi float8[], n float8, s float8, a float8);
  EXECUTE format('SELECT count(*) FROM %s', tab) INTO n;
  DROP TABLE IF EXISTS pg_temp.acc_pilot;
  EXECUTE format('CREATE TEMP TABLE acc_pilot AS SELECT %s FROM %s TABLESAMPLE BERNOULLI (%s) REPEATABLE (%s)',
                 (SELECT string_agg(format('%I', c), ', ') FROM unnest(cols) c), tab,
                 least(100, 100.0 * 40000 / n), floor(seed * 1000)::int);
  SELECT count(*) INTO pilot_n FROM acc_pilot;
  -- 2001 evenly spaced quantiles of every column, from the pilot (box edges are data values)
  FOR j IN 1..d LOOP
    EXECUTE format('SELECT array_agg(v ORDER BY v) FROM (SELECT %I AS v FROM acc_pilot) s', cols[j]) INTO col_vals;
    col_vals := ARRAY(SELECT col_vals[1 + floor((k / 2000.0) * (pilot_n - 1))::int] FROM generate_series(0, 2000) k);
    sorted := sorted || ARRAY[col_vals];
  END LOOP;
  PERFORM setseed(seed);
  WHILE got < n_boxes AND tries < 200 * n_boxes LOOP
    tries := tries + 1;
    lo := '{}'; hi := '{}'; cond := 'true';
    FOR j IN 1..d LOOP
      IF j = 1 OR random() < p_constrain THEN
        w := min_width + random() * (max_width - min_width);
        u := random() * (1 - w);
        lo := lo || sorted[j][1 + floor(u * 2000)::int];
        hi := hi || sorted[j][1 + floor((u + w) * 2000)::int];
        cond := cond || format(' AND %I BETWEEN %s AND %s', cols[j], lo[j]::text, hi[j]::text);
      ELSE
        lo := lo || '-Infinity'::float8;
        hi := hi || 'Infinity'::float8;
      END IF;
    END LOOP;
    EXECUTE format('SELECT count(*)::float8 / %s FROM acc_pilot WHERE %s', pilot_n, cond) INTO pilot_sel;
    CONTINUE WHEN pilot_sel < min_sel / 2 OR pilot_sel > max_sel * 1.5;
    EXECUTE format('SELECT count(*)::float8 AS n, sum(%I)::float8 AS s, avg(%I)::float8 AS a FROM %s WHERE %s',
                   cols[agg_col], cols[agg_col], tab, cond) INTO exact;
    CONTINUE WHEN exact.n < min_sel * n OR exact.n > max_sel * n OR exact.s = 0;
    got := got + 1;
    INSERT INTO acc_boxes VALUES (got, lo, hi, exact.n, exact.s, exact.a);
  END LOOP;
  RETURN got;
END $$;

CREATE FUNCTION pg_temp.synopsis_accuracy(kde approx_gpu.kde_synopsis, plain approx_gpu.kde_synopsis, agg_col int,
    OUT boxes int, OUT kde_count float8, OUT plain_count float8, OUT kde_sum float8, OUT plain_sum float8,
    OUT kde_avg float8, OUT plain_avg float8, OUT cover_count float8, OUT cover_sum float8, OUT cover_avg float8)
LANGUAGE plpgsql AS $$
DECLARE
  lo float8[][]; hi float8[][];
  kc float8[]; pc float8[]; ks float8[]; ps float8[]; ka float8[]; pa float8[];
BEGIN
  SELECT array_agg(b.lo ORDER BY id), array_agg(b.hi ORDER BY id) INTO lo, hi FROM acc_boxes b;
  kc := approx_gpu.approx_count_many(kde, lo, hi);
  pc := approx_gpu.approx_count_many(plain, lo, hi);
  ks := approx_gpu.approx_sum_many(kde, agg_col, lo, hi);
  ps := approx_gpu.approx_sum_many(plain, agg_col, lo, hi);
  ka := approx_gpu.approx_avg_many(kde, agg_col, lo, hi);
  pa := approx_gpu.approx_avg_many(plain, agg_col, lo, hi);
  SELECT count(*),
         100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(kc[id] / n - 1)),
         100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(pc[id] / n - 1)),
         100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(ks[id] / s - 1)),
         100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(ps[id] / s - 1)),
         -- an AVG the plain sample cannot answer (no sample row in the box) counts as a 100% error
         100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY coalesce(abs(ka[id] / a - 1), 1)),
         100 * percentile_cont(0.5) WITHIN GROUP (ORDER BY coalesce(abs(pa[id] / a - 1), 1)),
         avg((c.lower <= n AND n <= c.upper)::int),
         avg((sm.lower <= s AND s <= sm.upper)::int),
         avg(coalesce(av.lower <= a AND a <= av.upper, false)::int)
    INTO boxes, kde_count, plain_count, kde_sum, plain_sum, kde_avg, plain_avg, cover_count, cover_sum, cover_avg
    FROM acc_boxes b,
         LATERAL approx_gpu.approx_count_ci(kde, b.lo, b.hi) c,
         LATERAL approx_gpu.approx_sum_ci(kde, agg_col, b.lo, b.hi) sm,
         LATERAL approx_gpu.approx_avg_ci(kde, agg_col, b.lo, b.hi) av;
END $$;

CREATE FUNCTION pg_temp.synopsis_accuracy_pooled(tab text, cols text[], agg_col int, m int, seeds int[],
    OUT boxes int, OUT kde_count float8, OUT plain_count float8, OUT kde_sum float8, OUT plain_sum float8,
    OUT kde_avg float8, OUT plain_avg float8, OUT cover_count float8, OUT cover_sum float8, OUT cover_avg float8)
LANGUAGE plpgsql AS $$
DECLARE
  arr text := (SELECT string_agg(format('%I', c), ', ') FROM unnest(cols) c);
  old_seed text := current_setting('approx_gpu.random_seed');
  seed int; kde approx_gpu.kde_synopsis; plain approx_gpu.kde_synopsis; r record;
  n int := cardinality(seeds);
BEGIN
  kde_count := 0; plain_count := 0; kde_sum := 0; plain_sum := 0; kde_avg := 0; plain_avg := 0;
  cover_count := 0; cover_sum := 0; cover_avg := 0;
  FOREACH seed IN ARRAY seeds LOOP
    PERFORM set_config('approx_gpu.random_seed', seed::text, true);
    EXECUTE format('SELECT approx_gpu.kde_synopsis_agg(ARRAY[%s], %s), approx_gpu.kde_synopsis_agg(ARRAY[%s], %s, ''scott'', ''never'') FROM %s',
                   arr, m, arr, m, tab) INTO kde, plain;
    SELECT * INTO r FROM pg_temp.synopsis_accuracy(kde, plain, agg_col);
    boxes := r.boxes;
    kde_count := kde_count + r.kde_count / n; plain_count := plain_count + r.plain_count / n;
    kde_sum := kde_sum + r.kde_sum / n; plain_sum := plain_sum + r.plain_sum / n;
    kde_avg := kde_avg + r.kde_avg / n; plain_avg := plain_avg + r.plain_avg / n;
    cover_count := cover_count + r.cover_count / n; cover_sum := cover_sum + r.cover_sum / n;
    cover_avg := cover_avg + r.cover_avg / n;
  END LOOP;
  PERFORM set_config('approx_gpu.random_seed', old_seed, true);
END $$;
