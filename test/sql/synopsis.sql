-- KDE synopses: the type, the aggregates, box estimates and intervals, named
-- synopses and their guards, and every ERROR. Output is engine-independent:
-- counts, exact integers and booleans of tolerance checks.
SET extra_float_digits = 0;
SET approx_gpu.random_seed = 42;
CREATE TABLE syn_data AS
  SELECT i, (i % 50)::float8 AS a, sin(i * 0.37) * 10 + i * 0.001 AS b, ((i * 7) % 13)::float8 AS c
  FROM generate_series(1, 5000) i;
CREATE TABLE syn AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 1000, 'scott') AS s FROM syn_data;
-- the build reports itself: N rows, the sample, the bandwidths' time
SELECT (r->>'rows')::int AS rows, (r->>'sample_rows')::int AS sample_rows, r->>'function' AS function,
       (r->>'ms_compute')::float8 >= 0 AS timed
FROM approx_gpu.last_run() r;

-- what a synopsis holds
SELECT (i->>'N')::int AS n, (i->>'m')::int AS m, (i->>'d')::int AS d, (i->>'sample_size')::int AS sample_size,
       i->>'bandwidth' AS bandwidth, i->>'smoothing' AS smoothing, i->'discrete_columns' AS discrete,
       (i->>'skipped')::int AS skipped, (i->>'bytes')::int AS bytes
FROM syn, approx_gpu.kde_synopsis_info(s) i;
SELECT c->>'column' AS col, c->>'name' AS name, (c->>'box_bandwidth')::float8 > 0 AS box_h_positive,
       (c->>'density_bandwidth')::float8 > 0 AS density_h_positive, c->>'discrete' AS discrete, (c->>'step')::float8 AS step,
       (c->>'min')::float8 >= 0 AS min_ok
FROM syn, jsonb_array_elements(approx_gpu.kde_synopsis_info(s)->'columns') c;
-- text form: readable JSON, exact round trip; binary form: send/recv round trip
SELECT left(s::text, 100) AS text_form FROM syn;
SELECT s::text::approx_gpu.kde_synopsis::text = s::text AS text_round_trip,
       s::bytea::approx_gpu.kde_synopsis::bytea = s::bytea AS binary_round_trip,
       get_byte(s::bytea, 0) AS version_byte, length(s::bytea) AS binary_bytes FROM syn;
-- format 1 (0.1.0's stored form) is still read and answers as before: its smoothed column is a
-- raw-scale KDE with unscaled intervals, the same as the format 2 value with mode "kde"
CREATE TEMP TABLE syn_v1 AS SELECT
  '{"version": 1, "N": 100, "m": 4, "d": 1, "sample_size": 4, "skipped": 0, "bandwidth": "scott", "smoothing": "auto",
    "columns": [{"name": null, "mean": 2.5, "sd": 1.2909944487358056, "min": 1, "max": 4, "density_bandwidth": 0.5,
                 "box_bandwidth": 0.5, "step": 1, "discrete": false}], "sample": [[1], [2], [3], [4]]}'::approx_gpu.kde_synopsis AS v1,
  '{"version": 2, "N": 100, "m": 4, "d": 1, "sample_size": 4, "skipped": 0, "bandwidth": "scott", "smoothing": "auto",
    "joint_cv_error": [-1, -1],
    "columns": [{"name": null, "mean": 2.5, "sd": 1.2909944487358056, "min": 1, "max": 4, "density_bandwidth": 0.5,
                 "box_bandwidth": 0.5, "step": 1, "shift": 0, "log_bandwidth": 0, "interval_scale": 1, "cv_coverage": -1,
                 "discrete": false, "mode": "kde", "cv_error": [-1, -1, -1]}], "sample": [[1], [2], [3], [4]]}'::approx_gpu.kde_synopsis AS v2;
SELECT get_byte(v1::bytea, 0) AS stored_as_version, v1::bytea = v2::bytea AS same_value,
       approx_gpu.kde_synopsis_info(v1)->'columns'->0->>'mode' AS mode,
       abs(approx_gpu.approx_count(v1, ARRAY[1.5], ARRAY[3.5]) - 57.93274836399427) < 1e-9 AS count_is_the_old_kde_answer,
       (approx_gpu.approx_count_ci(v1, ARRAY[1.5], ARRAY[3.5])).upper = (approx_gpu.approx_count_ci(v2, ARRAY[1.5], ARRAY[3.5])).upper AS same_interval
FROM syn_v1;
-- the casts' functions by name, and the row type of the _ci functions
SELECT approx_gpu.kde_synopsis_to_bytea(s) = s::bytea AS to_bytea_is_the_cast,
       approx_gpu.kde_synopsis_from_bytea(approx_gpu.kde_synopsis_to_bytea(s))::text = s::text AS from_bytea_round_trip,
       pg_typeof(approx_gpu.approx_count_ci(s, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[])) AS ci_type
FROM syn;

-- estimates against the exact answers (box a in [10, 30], b <= 0, c unbounded)
SELECT abs(approx_gpu.approx_count(s, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[])
           / (SELECT count(*) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0) - 1) < 0.15 AS count_close,
       abs(approx_gpu.approx_sum(s, 1, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[])
           / (SELECT sum(a) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0) - 1) < 0.15 AS sum_close,
       abs(approx_gpu.approx_avg(s, 1, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[])
           / (SELECT avg(a) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0) - 1) < 0.05 AS avg_close
FROM syn;
-- intervals contain their estimate; COUNT intervals stay inside [0, N]
SELECT (c).lower <= (c).estimate AND (c).estimate <= (c).upper AND (c).lower >= 0 AND (c).upper <= 5000 AS count_ci_ok,
       (sm).lower <= (sm).estimate AND (sm).estimate <= (sm).upper AS sum_ci_ok,
       (av).lower <= (av).estimate AND (av).estimate <= (av).upper AS avg_ci_ok,
       ((w).upper - (w).lower) > ((c).upper - (c).lower) AS wider_at_99
FROM (SELECT approx_gpu.approx_count_ci(s, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[]) c,
             approx_gpu.approx_sum_ci(s, 2, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[]) sm,
             approx_gpu.approx_avg_ci(s, 3, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[]) av,
             approx_gpu.approx_count_ci(s, ARRAY[10, NULL, NULL]::float8[], ARRAY[30, 0, NULL]::float8[], 0.99) w
      FROM syn) q;
-- unbounded: NULL and +-Infinity bounds; COUNT = N exactly
SELECT approx_gpu.approx_count(s, ARRAY[NULL, NULL, NULL]::float8[], ARRAY[NULL, NULL, NULL]::float8[]) AS count_all,
       approx_gpu.approx_count(s, '{-Infinity,-Infinity,-Infinity}', '{Infinity,Infinity,Infinity}') AS count_all_inf,
       approx_gpu.approx_count_ci(s, ARRAY[NULL, NULL, NULL]::float8[], ARRAY[NULL, NULL, NULL]::float8[]) AS count_all_ci
FROM syn;
-- an empty box (lo > hi): COUNT = SUM = 0, AVG NULL
SELECT approx_gpu.approx_count(s, ARRAY[30, NULL, NULL]::float8[], ARRAY[10, NULL, NULL]::float8[]) AS empty_count,
       approx_gpu.approx_sum(s, 2, ARRAY[30, NULL, NULL]::float8[], ARRAY[10, NULL, NULL]::float8[]) AS empty_sum,
       approx_gpu.approx_avg(s, 2, ARRAY[30, NULL, NULL]::float8[], ARRAY[10, NULL, NULL]::float8[]) IS NULL AS empty_avg_null,
       approx_gpu.approx_count_ci(s, ARRAY[30, NULL, NULL]::float8[], ARRAY[10, NULL, NULL]::float8[]) AS empty_count_ci,
       approx_gpu.approx_avg_ci(s, 2, ARRAY[30, NULL, NULL]::float8[], ARRAY[10, NULL, NULL]::float8[]) AS empty_avg_ci
FROM syn;
-- a box no sample row of a discrete column falls in: AVG NULL (a has values 0..49)
SELECT approx_gpu.approx_avg(s, 2, ARRAY[60, NULL, NULL]::float8[], ARRAY[70, NULL, NULL]::float8[]) IS NULL AS avg_null,
       approx_gpu.approx_count(s, ARRAY[60, NULL, NULL]::float8[], ARRAY[70, NULL, NULL]::float8[]) AS count_zero
FROM syn;
-- batched boxes = one box at a time
SELECT bool_and(abs(m[k] / approx_gpu.approx_count(s, ARRAY[lo[k][1], lo[k][2], lo[k][3]], ARRAY[hi[k][1], hi[k][2], hi[k][3]]) - 1) < 1e-12) AS count_many_ok,
       count(*) AS boxes
FROM syn, (SELECT ARRAY[[0, -5, 2], [10, NULL, NULL], [-1, 0, 0]]::float8[] AS lo,
                  ARRAY[[20, 5, 9], [30, 0, NULL], [100, 100, 100]]::float8[] AS hi) b,
     LATERAL (SELECT approx_gpu.approx_count_many(s, lo, hi) AS m) mm, generate_series(1, 3) k;
SELECT approx_gpu.approx_avg_many(s, 1, ARRAY[[0, -5, 2], [5, NULL, NULL]]::float8[], ARRAY[[20, 5, 9], [1, NULL, NULL]]::float8[]) IS NOT NULL AS avg_many_array,
       (approx_gpu.approx_avg_many(s, 1, ARRAY[[0, -5, 2], [5, NULL, NULL]]::float8[], ARRAY[[20, 5, 9], [1, NULL, NULL]]::float8[]))[2] IS NULL AS avg_many_empty_is_null,
       approx_gpu.approx_sum_many(s, 1, ARRAY[[5, NULL, NULL]]::float8[], ARRAY[[1, NULL, NULL]]::float8[]) AS sum_many_empty,
       approx_gpu.approx_count_many(s, '{}', '{}') AS no_boxes
FROM syn;
SELECT (approx_gpu.last_run()->>'boxes')::int AS boxes, approx_gpu.last_run()->>'function' AS function;
-- density: positive near the data, integrates the sample (far away: 0)
SELECT approx_gpu.kde_density(s, ARRAY[25, 0, 6]::float8[]) > 0 AS density_positive,
       approx_gpu.kde_density(s, ARRAY[1e6, 1e6, 1e6]::float8[]) AS density_far
FROM syn;

-- the whole relation in the sample (sample_size > N) and no smoothing: the exact answers
CREATE TABLE syn_exact AS SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 10000, 'scott', 'never') AS s FROM syn_data;
SELECT (approx_gpu.kde_synopsis_info(s)->>'m')::int AS m,
       approx_gpu.approx_count(s, ARRAY[10, NULL, 3]::float8[], ARRAY[30, 0, 8]::float8[])
         = (SELECT count(*) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0 AND c BETWEEN 3 AND 8) AS count_exact,
       abs(approx_gpu.approx_sum(s, 2, ARRAY[10, NULL, 3]::float8[], ARRAY[30, 0, 8]::float8[])
         / (SELECT sum(b) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0 AND c BETWEEN 3 AND 8) - 1) < 1e-12 AS sum_exact,
       approx_gpu.approx_count_ci(s, ARRAY[10, NULL, 3]::float8[], ARRAY[30, 0, 8]::float8[]) AS ci_collapses
FROM syn_exact;
-- smoothing and bandwidth choices
SELECT sm, approx_gpu.kde_synopsis_info(approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 400, 'scott', sm))->'discrete_columns' AS discrete
FROM syn_data, (VALUES ('auto'), ('always'), ('never')) v(sm) GROUP BY sm ORDER BY sm;
SELECT bw, bool_and((c->>'box_bandwidth')::float8 > 0 AND (c->>'density_bandwidth')::float8 > 0) AS positive,
       bool_or((c->>'box_bandwidth')::float8 <> (c->>'density_bandwidth')::float8) AS two_bandwidths
FROM (SELECT bw, approx_gpu.kde_synopsis_agg(ARRAY[b, a + i * 0.0001], 300, bw) AS s
      FROM syn_data, (VALUES ('cdf'), ('plugin'), ('lscv'), ('scott')) v(bw) GROUP BY bw) q,
     jsonb_array_elements(approx_gpu.kde_synopsis_info(s)->'columns') c
GROUP BY bw ORDER BY bw;
-- a constant column is discrete with a positive bandwidth
SELECT c->>'discrete' AS discrete, (c->>'box_bandwidth')::float8 > 0 AS positive
FROM (SELECT approx_gpu.kde_synopsis_agg(ARRAY[7, b], 200, 'cdf', 'always') s FROM syn_data) q,
     jsonb_array_elements(approx_gpu.kde_synopsis_info(s)->'columns') c;
-- one row: N = m = 1
SELECT (approx_gpu.kde_synopsis_info(approx_gpu.kde_synopsis_agg(ARRAY[1.5, 2])))->>'m' AS m_one;

-- NULL rows and rows with a NULL are skipped and counted; empty input gives NULL
SELECT (i->>'N')::int AS n, (i->>'skipped')::int AS skipped
FROM (SELECT approx_gpu.kde_synopsis_info(approx_gpu.kde_synopsis_agg(x, 100)) i
      FROM (SELECT ARRAY[a, b] AS x FROM syn_data WHERE i <= 300 UNION ALL SELECT NULL
            UNION ALL SELECT ARRAY[1, NULL]::float8[]) s) q;
SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b]) IS NULL AS empty_is_null FROM syn_data WHERE false;
-- grouped, then merged: kde_merge and kde_merge_agg see every row
CREATE TABLE syn_parts AS
  SELECT i % 3 AS part, approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 500, 'scott') AS s FROM syn_data GROUP BY i % 3;
SELECT part, (approx_gpu.kde_synopsis_info(s)->>'N')::int AS n FROM syn_parts ORDER BY part;
SELECT (i->>'N')::int AS n, (i->>'m')::int AS m, i->>'bandwidth' AS bandwidth
FROM (SELECT approx_gpu.kde_synopsis_info(approx_gpu.kde_merge_agg(s)) i FROM syn_parts) q;
SELECT (approx_gpu.kde_synopsis_info(approx_gpu.kde_merge(p.s, q.s))->>'N')::int AS n_merged,
       (approx_gpu.kde_synopsis_info(approx_gpu.kde_merge(p.s, q.s))->>'m')::int AS m_merged
FROM syn_parts p, syn_parts q WHERE p.part = 0 AND q.part = 1;
SELECT approx_gpu.kde_merge_agg(s) IS NULL AS merge_empty_is_null FROM syn_parts WHERE false;
-- the same seed gives the same synopsis
SELECT (SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 1000, 'scott') FROM syn_data)::text = s::text AS reproducible FROM syn;

-- errors: SQLSTATE and message, which names the function and the argument
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;

-- errors: aggregate arguments
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 1) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100, 'bogus') FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100, 'cdf', 'sometimes') FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100 + (i > 10)::int) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100, CASE WHEN i < 10 THEN 'cdf' ELSE 'scott' END) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], NULL) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(CASE WHEN i < 10 THEN ARRAY[a] ELSE ARRAY[a, b] END) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(array_fill(a, ARRAY[33])) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[[a, b]]) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg('{}'::float8[]) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, CASE WHEN i = 7 THEN 'NaN'::float8 ELSE b END]) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, CASE WHEN i = 7 THEN 'Infinity'::float8 ELSE b END]) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 2147483647) FROM syn_data$$);
-- a NULL parameter on any row is ERROR 22004 naming it; a NULL x is skipped
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], CASE WHEN i = 4000 THEN NULL ELSE 100 END) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100, CASE WHEN i = 4000 THEN NULL ELSE 'scott' END) FROM syn_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100, 'scott', CASE WHEN i = 4000 THEN NULL ELSE 'auto' END) FROM syn_data$$);
SELECT (approx_gpu.kde_synopsis_info(approx_gpu.kde_synopsis_agg(CASE WHEN i % 2 = 0 THEN NULL ELSE ARRAY[a, b] END, 100, 'scott'))->>'N')::int
       AS n_without_null_x FROM syn_data;

-- the stored mean and sd are the sample's, also far from 0
-- (every row is in the sample: N = 4000 < sample_size); the naive two-pass sd
-- of 0.1.0 was off by far more than rounding here
CREATE TABLE syn_far AS
  SELECT approx_gpu.kde_synopsis_agg(ARRAY[1e16 + (g % 7) * 2], 5000) AS s FROM generate_series(1, 4000) g;
SELECT (i->>'m')::int AS m,
       abs((s::text::jsonb->'columns'->0->>'mean')::numeric - (SELECT avg(1e16 + (g % 7) * 2) FROM generate_series(1, 4000) g)) <= 2
         AS mean_ok_to_one_ulp,
       abs((i->'columns'->0->>'sd')::float8 / (SELECT stddev_samp(1e16 + (g % 7) * 2) FROM generate_series(1, 4000) g) - 1)
         < 1e-12 AS sd_ok
FROM syn_far, approx_gpu.kde_synopsis_info(s) i;
-- a synopsis stored by 0.1.0 holds the naive mean and sd: still accepted;
-- a value that is neither is not
CREATE FUNCTION pg_temp.legacy_sd(j jsonb) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE total float8 := 0; ss float8 := 0; mean float8; v float8; m int := jsonb_array_length(j->'sample');
BEGIN
  FOR k IN 0 .. m - 1 LOOP total := total + (j->'sample'->k->>0)::float8; END LOOP;
  mean := total / m;
  FOR k IN 0 .. m - 1 LOOP v := (j->'sample'->k->>0)::float8 - mean; ss := ss + v * v; END LOOP;
  RETURN sqrt(ss / (m - 1));
END $$;
SELECT abs(pg_temp.legacy_sd(s::text::jsonb) / (s::text::jsonb->'columns'->0->>'sd')::float8 - 1) > 1e-3 AS legacy_sd_differs,
       jsonb_set(s::text::jsonb, '{columns,0,sd}', to_jsonb(pg_temp.legacy_sd(s::text::jsonb)))::text::approx_gpu.kde_synopsis
         IS NOT NULL AS legacy_sd_accepted
FROM syn_far;
SELECT pg_temp.err($$SELECT jsonb_set(s::text::jsonb, '{columns,0,sd}', to_jsonb(1.5 * pg_temp.legacy_sd(s::text::jsonb)))::text::approx_gpu.kde_synopsis FROM syn_far$$);
DROP TABLE syn_far;
-- errors: estimates
SELECT pg_temp.err($$SELECT approx_gpu.approx_count(s, ARRAY[1, 2]::float8[], ARRAY[3, 4, 5]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count(s, ARRAY[1, 2, 3]::float8[], ARRAY[[3, 4, 5]]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count(s, ARRAY[1, 'NaN', 3]::float8[], ARRAY[3, 4, 5]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_sum(s, 0, ARRAY[1, 2, 3]::float8[], ARRAY[3, 4, 5]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_avg(s, 4, ARRAY[1, 2, 3]::float8[], ARRAY[3, 4, 5]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count_ci(s, ARRAY[1, 2, 3]::float8[], ARRAY[3, 4, 5]::float8[], 1.5) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_sum_ci(s, 1, ARRAY[1, 2, 3]::float8[], ARRAY[3, 4, 5]::float8[], 0) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count_many(s, ARRAY[1, 2, 3]::float8[], ARRAY[3, 4, 5]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count_many(s, ARRAY[[1, 2]]::float8[], ARRAY[[3, 4]]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count_many(s, ARRAY[[1, 2, 3], [1, 2, 3]]::float8[], ARRAY[[3, 4, 5]]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_sum_many(s, 9, ARRAY[[1, 2, 3]]::float8[], ARRAY[[3, 4, 5]]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_density(s, ARRAY[1, 2]::float8[]) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(s, (SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b], 100, 'scott') FROM syn_data)) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(s, (SELECT approx_gpu.kde_synopsis_agg(ARRAY[a, b, c], 100, 'cdf') FROM syn_data)) FROM syn$$);
-- malformed binary forms through the bytea cast's function: another version, truncated, trailing bytes
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_from_bytea(set_byte(s::bytea, 0, 4)) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_from_bytea(set_byte(s::bytea, 0, 0)) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_from_bytea(substr(s::bytea, 1, 100)) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_from_bytea(s::bytea || '\x00'::bytea) FROM syn$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_synopsis_from_bytea(''::bytea)$$);
-- errors: malformed values (text and binary input)
SELECT pg_temp.err($$SELECT 'not json'::approx_gpu.kde_synopsis$$);
SELECT pg_temp.err($$SELECT '{}'::approx_gpu.kde_synopsis$$);
SELECT pg_temp.err($$SELECT '[1, 2]'::approx_gpu.kde_synopsis$$);
SELECT pg_temp.err($$SELECT replace(s::text, '"version": 3', '"version": 4')::approx_gpu.kde_synopsis FROM syn$$);
-- format 3's keys under versions 1 and 2, an unknown mode, a mode that contradicts the discrete flag
SELECT pg_temp.err($$SELECT replace(s::text, '"version": 3', '"version": 1')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT replace(s::text, '"version": 3', '"version": 2')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"mode": "[a-z_]+"', '"mode": "magic"')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"discrete": true, "mode": "exact"', '"discrete": true, "mode": "kde"')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"interval_scale": [0-9.e+-]+', '"interval_scale": 0.5')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT replace(s::text, '"m": 1000', '"m": 999')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT replace(s::text, '"N": 5000', '"N": 500')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT replace(s::text, '"d": 3', '"d": 40')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT replace(s::text, '"scott"', '"magic"')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"box_bandwidth": [0-9.e+-]+', '"box_bandwidth": -1')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"max": [0-9.e+-]+', '"max": 1')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"mean": [0-9.e+-]+', '"mean": 1e999')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT regexp_replace(s::text, '"sample": \[\[', '"sample": [["x", ')::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT '\x00'::bytea::approx_gpu.kde_synopsis$$);
SELECT pg_temp.err($$SELECT '\x01'::bytea::approx_gpu.kde_synopsis$$);
SELECT pg_temp.err($$SELECT substr(s::bytea, 1, 200)::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT (s::bytea || '\x00'::bytea)::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT set_byte(s::bytea, 4, 33)::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT set_byte(s::bytea, 23, 127)::approx_gpu.kde_synopsis FROM syn$$);
SELECT pg_temp.err($$SELECT set_byte(s::bytea, 1, 9)::approx_gpu.kde_synopsis FROM syn$$);
SELECT 1 AS still_alive;

-- named synopses: the query's columns become the dimensions, by name
SET approx_gpu.progress_interval = 86400;
SELECT (i->>'N')::int AS n, (i->>'m')::int AS m, i->'discrete_columns' AS discrete,
       jsonb_path_query_array(i, '$.columns[*].name') AS names
FROM approx_gpu.create_synopsis('syn_named', 'SELECT a, b AS "B", c FROM syn_data', 2000, 'scott') i;
RESET approx_gpu.progress_interval;
SELECT name, owner = current_user::regrole AS owner_is_me, query, created <= now() AS created_ok FROM approx_gpu.synopses ORDER BY name;
-- the metadata table is dumped with the extension's objects and readable by
-- everyone: no row-level security (pg_dump by a non-superuser), INSERT for
-- restores (a trigger takes only rows of the inserter's roles); the values
-- are in synopsis_values (docs/synopsis.md "Storage")
SELECT 'approx_gpu.synopses'::regclass = ANY (extconfig) AS kept_by_pg_dump FROM pg_extension WHERE extname = 'approx_gpu';
SELECT relrowsecurity AS row_level_security, has_table_privilege('public', 'approx_gpu.synopses', 'INSERT') AS public_may_insert,
       has_table_privilege('public', 'approx_gpu.synopses', 'SELECT') AS public_may_select
FROM pg_class WHERE oid = 'approx_gpu.synopses'::regclass;
SELECT abs(approx_gpu.approx_count('syn_named', '{"a": [10, 30], "B": [null, 0]}')
           / (SELECT count(*) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0) - 1) < 0.15 AS named_count_close,
       abs(approx_gpu.approx_sum('syn_named', 'a', '{"a": [10, 30], "B": [null, 0]}')
           / (SELECT sum(a) FROM syn_data WHERE a BETWEEN 10 AND 30 AND b <= 0) - 1) < 0.15 AS named_sum_close,
       abs(approx_gpu.approx_avg('syn_named', 'c', '{"c": [2, 9]}')
           / (SELECT avg(c) FROM syn_data WHERE c BETWEEN 2 AND 9) - 1) < 0.05 AS named_avg_close,
       approx_gpu.approx_count('syn_named', '{}') AS count_all,
       approx_gpu.approx_count('syn_named', '{"c": 4}') > 0 AS point_predicate,
       approx_gpu.approx_avg('syn_named', 'a', '{"a": [30, 10]}') IS NULL AS empty_avg_null;
-- refresh sees new rows; drop removes
INSERT INTO syn_data SELECT i, i % 50, 0, 1 FROM generate_series(5001, 6000) i;
SELECT (approx_gpu.refresh_synopsis('syn_named')->>'N')::int AS n_after_refresh;
SELECT approx_gpu.approx_count('syn_named', '{}') AS count_after_refresh;
-- errors of named synopses
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('syn_named', '{"nope": [1, 2]}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_sum('syn_named', 'b', '{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('syn_named', '[1, 2]')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('syn_named', '{"a": [1, 2, 3]}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('syn_named', '{"a": ["x", 2]}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('no_such_synopsis', '{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_named', 'SELECT a FROM syn_data')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_text', 'SELECT a, i::text FROM syn_data')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_dup', 'SELECT a, b AS a FROM syn_data')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_none', 'SELECT a FROM syn_data WHERE false')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_dml', 'DELETE FROM syn_data')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_bad', 'SELECT a FROM syn_data', 1)$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('', 'SELECT a FROM syn_data')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('syn_null', NULL)$$);
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('no_such_synopsis')$$);
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('no_such_synopsis')$$);

-- guards: PUBLIC cannot write the table; another role neither sees, reads, refreshes nor drops
-- your synopsis; a refresh runs the stored query as its owner
CREATE ROLE regress_syn_alice;
CREATE ROLE regress_syn_bob;
CREATE ROLE regress_syn_carol IN ROLE regress_syn_alice;
GRANT USAGE ON SCHEMA approx_gpu TO regress_syn_alice, regress_syn_bob;
GRANT SELECT ON syn_data TO regress_syn_alice, regress_syn_bob;
SET ROLE regress_syn_alice;
SELECT (approx_gpu.create_synopsis('alice_syn', 'SELECT a, c FROM syn_data', 500, 'scott')->>'N')::int AS alice_n;
SELECT approx_gpu.approx_count('alice_syn', '{}') AS alice_reads;
SELECT name FROM approx_gpu.synopses ORDER BY name;
SET ROLE regress_syn_bob;
SELECT count(*) AS bob_sees FROM approx_gpu.synopses;
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('alice_syn', '{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('alice_syn')$$);
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('alice_syn')$$);
SELECT pg_temp.err($$INSERT INTO approx_gpu.synopses (name, owner, query)
  VALUES ('forged', 'regress_syn_alice', 'SELECT 1')$$);
SELECT pg_temp.err($$INSERT INTO approx_gpu_internal.synopsis_values (name, owner, synopsis)
  VALUES ('forged', 'regress_syn_bob', NULL)$$);
SELECT pg_temp.err($$UPDATE approx_gpu.synopses SET query = 'SELECT 1'$$);
SELECT pg_temp.err($$DELETE FROM approx_gpu.synopses$$);
SET ROLE regress_syn_carol;
SELECT approx_gpu.approx_count('alice_syn', '{}') AS member_reads;
RESET ROLE;
-- the superuser's refresh runs alice's query as alice: without her privilege it fails
REVOKE SELECT ON syn_data FROM regress_syn_alice;
SELECT approx_gpu.refresh_synopsis('alice_syn');
GRANT SELECT ON syn_data TO regress_syn_alice;
SELECT (approx_gpu.refresh_synopsis('alice_syn')->>'N')::int AS refreshed_as_alice;
SET ROLE regress_syn_alice;
SELECT approx_gpu.drop_synopsis('alice_syn');
RESET ROLE;
SELECT approx_gpu.drop_synopsis('syn_named');
SELECT count(*) AS synopses_left FROM approx_gpu.synopses;
REVOKE ALL ON syn_data FROM regress_syn_alice, regress_syn_bob;
REVOKE USAGE ON SCHEMA approx_gpu FROM regress_syn_alice, regress_syn_bob;
DROP ROLE regress_syn_carol, regress_syn_bob, regress_syn_alice;

-- cancellation: far more than 1 s of work on either engine (3 * 10^6 rows, a
-- sample of 10^6, O(m^2) bandwidths); the statement ends with the timeout error
SET statement_timeout = '1s';
SELECT approx_gpu.kde_synopsis_agg(ARRAY[i * 0.5, sin(i)], 1000000) FROM generate_series(1, 3000000) i;
RESET statement_timeout;
SELECT 1 AS still_alive;

DROP TABLE syn_data, syn, syn_exact, syn_parts;
