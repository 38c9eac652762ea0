-- KDE bandwidth selection: kde_bandwidth, kde_lscv and their aggregates.
-- Reference values come from test/ref/kde_reference.py (naive double
-- precision, the formulas of DESIGN.md). Output is engine-independent:
-- tolerance checks print booleans.
SET extra_float_digits = 0;
CREATE TABLE kde_data AS
  SELECT i, sin(i * 1.3::float8) + (i % 2) * 4 AS x,
         cos(i * 0.7::float8) + sin(i * 1.3::float8) * 0.5 AS y
  FROM generate_series(1, 400) i;
CREATE TABLE kde_arr AS SELECT array_agg(x ORDER BY i) AS x FROM kde_data;
CREATE TABLE kde_pts AS
  SELECT array_agg(ARRAY[x, y] ORDER BY i) AS p FROM kde_data WHERE i <= 300;

-- plug-in (default), scott, silverman against the reference
SELECT abs(approx_gpu.kde_bandwidth(x) / 0.2810003364590792 - 1) < 1e-6 AS plugin_ok FROM kde_arr;
SELECT approx_gpu.kde_bandwidth(x) = approx_gpu.kde_bandwidth(x, 'plugin') AS default_is_plugin FROM kde_arr;
SELECT abs(approx_gpu.kde_bandwidth(x, 'scott') / 0.680011571241188 - 1) < 1e-12 AS scott_ok FROM kde_arr;
SELECT abs(approx_gpu.kde_bandwidth(x, 'silverman') / 0.5773683152047824 - 1) < 1e-12 AS silverman_ok FROM kde_arr;
SELECT abs(approx_gpu.kde_bandwidth(x, 'LSCV') / 0.1698784123697475 - 1) < 1e-3 AS lscv_1d_ok FROM kde_arr;
-- bandwidths are in the data's units: scaling the data scales h
SELECT abs(approx_gpu.kde_bandwidth(array(SELECT 1000 * v + 1e5 FROM unnest(x) v)) / (1000 * 0.2810003364590792) - 1) < 1e-6
  AS plugin_scale_equivariant FROM kde_arr;

-- kde_lscv, 1-D and 2-D
SELECT abs(sqrt(r.bandwidth_matrix[1][1]) / 0.1698784123697475 - 1) < 1e-3 AS h_ok,
       abs(r.objective / -0.23472047137480945 - 1) < 1e-6 AS objective_ok,
       abs(r.h0 / 0.3195771718380609 - 1) < 1e-12 AS h0_ok,
       r.at_boundary, array_dims(r.bandwidth_matrix)
FROM kde_arr, approx_gpu.kde_lscv(x) r;
SELECT abs(r.h / 0.1369966262483062 - 1) < 1e-3 AS h_ok,
       abs(r.objective / -0.07955452778516009 - 1) < 1e-6 AS objective_ok,
       abs(r.h0 / 0.3864972939343459 - 1) < 1e-12 AS h0_ok,
       r.at_boundary, array_dims(r.bandwidth_matrix),
       r.bandwidth_matrix[1][2] = r.bandwidth_matrix[2][1] AS symmetric
FROM kde_pts, approx_gpu.kde_lscv(p) r;
SELECT r.bandwidth_matrix[1][2] = 0 AND r.bandwidth_matrix[2][1] = 0 AS diagonal_has_no_covariance,
       r.h > 0 AS positive
FROM kde_pts, approx_gpu.kde_lscv(p, 50, 'diagonal') r;
-- many tied points: the objective falls towards h -> 0 and the minimum sits on the boundary
SELECT r.at_boundary, abs(r.h / (r.h0 / 4) - 1) < 1e-9 AS at_lower_end
FROM approx_gpu.kde_lscv(array(SELECT (i % 5)::float8 FROM generate_series(1, 200) i)) r;

-- NULL elements are skipped (and counted), a NULL argument gives NULL
SELECT approx_gpu.kde_bandwidth(x) AS h_plain FROM kde_arr \gset
SELECT approx_gpu.kde_bandwidth(x || ARRAY[NULL, NULL]::float8[]) = :h_plain AS nulls_skipped FROM kde_arr;
SELECT (approx_gpu.last_run()->>'rows_skipped')::int AS rows_skipped, (approx_gpu.last_run()->>'rows')::int AS rows,
       approx_gpu.last_run()->>'function' AS function;
SELECT approx_gpu.kde_bandwidth(NULL) IS NULL AS strict_null, approx_gpu.kde_bandwidth(ARRAY[1, 2]::float8[], NULL) IS NULL AS strict_method;
SELECT r IS NULL AS strict_lscv FROM approx_gpu.kde_lscv(NULL) r;

-- errors: SQLSTATE and message, which names the function and the argument
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth('{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[1.5])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[NULL, 2]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[3, 3, 3, 3]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[1, 'NaN', 3]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[1, 'Infinity', 3]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[1, '-Infinity', 3]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[1, 2, 3]::float8[], 'bogus')$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[[1, 2], [3, 4]]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv('{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[[1, 2]]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[1, 2, 3, 4]::float8[], 1)$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[1, 2, 3, 4]::float8[], 150, 'spherical')$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[[[1, 2], [3, 4]]]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv('{{1,2},{3}}'::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(array_fill(1.0::float8, ARRAY[3, 33]))$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[[1, 2], [2, 4], [3, 6], [4, 8]]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[[1, 'NaN'], [2, 4], [3, 5]]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[1, 1, 1, 1]::float8[])$$);

-- aggregates equal the functions on the same data
SELECT approx_gpu.kde_bandwidth_agg(x) = (SELECT approx_gpu.kde_bandwidth(x) FROM kde_arr) AS agg_plugin FROM kde_data;
SELECT approx_gpu.kde_bandwidth_agg(x, 'silverman') = (SELECT approx_gpu.kde_bandwidth(x, 'silverman') FROM kde_arr)
  AS agg_silverman FROM kde_data;
SELECT (approx_gpu.kde_lscv_agg(ARRAY[x, y])).h = (SELECT (approx_gpu.kde_lscv(p)).h FROM kde_pts) AS agg_lscv
FROM kde_data WHERE i <= 300;
SELECT (approx_gpu.kde_lscv_agg(ARRAY[x, y], 40)).h = (SELECT (approx_gpu.kde_lscv(p, 40)).h FROM kde_pts) AS agg_lscv_grid
FROM kde_data WHERE i <= 300;
-- NULL rows and points with a NULL coordinate are skipped
SELECT approx_gpu.kde_bandwidth_agg(v) = (SELECT approx_gpu.kde_bandwidth(x) FROM kde_arr) AS agg_skips_nulls
FROM (SELECT x AS v FROM kde_data UNION ALL SELECT NULL) s;
SELECT (approx_gpu.kde_lscv_agg(v)).h = (SELECT (approx_gpu.kde_lscv(p)).h FROM kde_pts) AS lscv_agg_skips_nulls
FROM (SELECT ARRAY[x, y] AS v FROM kde_data WHERE i <= 300 UNION ALL SELECT ARRAY[1, NULL]::float8[]) s;
-- empty input: NULL, like avg()
SELECT approx_gpu.kde_bandwidth_agg(x) IS NULL AS empty_is_null FROM kde_data WHERE false;
SELECT approx_gpu.kde_lscv_agg(ARRAY[x]) IS NULL AS empty_lscv_is_null FROM kde_data WHERE false;
-- grouped
SELECT i % 2 AS grp, approx_gpu.kde_bandwidth_agg(x, 'scott') > 0 AS ok FROM kde_data GROUP BY 1 ORDER BY 1;
-- aggregate errors
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(x, CASE WHEN i < 10 THEN 'plugin' ELSE 'scott' END) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv_agg(ARRAY[x, y], CASE WHEN i < 10 THEN 40 ELSE 50 END) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv_agg(CASE WHEN i < 10 THEN ARRAY[x] ELSE ARRAY[x, y] END) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(x) FROM kde_data WHERE i = 1$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(x, 'nope') FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(CASE WHEN i = 7 THEN 'NaN'::float8 ELSE x END) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv_agg(ARRAY[x, y], 1) FROM kde_data$$);

-- a NULL parameter (method, grid) on any row is ERROR 22004,
-- naming the aggregate and argument; a NULL x is still skipped
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(x, CASE WHEN i % 2 = 0 THEN NULL ELSE 'silverman' END) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(x, NULL) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth_agg(NULL::float8, NULL) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv_agg(ARRAY[x, y], CASE WHEN i = 200 THEN NULL ELSE 40 END) FROM kde_data$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv_agg(ARRAY[x, y], NULL) FROM kde_data$$);
SELECT approx_gpu.kde_bandwidth_agg(CASE WHEN i % 2 = 0 THEN NULL ELSE x END, 'silverman')
       = (SELECT approx_gpu.kde_bandwidth(array_agg(x), 'silverman') FROM kde_data WHERE i % 2 = 1) AS null_x_skipped
FROM kde_data;

-- data at 1e-300 and 1e307 scale give the relative bandwidth
-- of the same data at scale 1 (every method); a truly constant x still errors.
-- Scaled by a power of two (exact): the same bandwidth bit for bit, any engine.
SELECT m, approx_gpu.kde_bandwidth(array(SELECT v * 2 ^ -997 FROM unnest(x) v), m) / 2 ^ -997
          = approx_gpu.kde_bandwidth(x, m) AS tiny_exact,
          approx_gpu.kde_bandwidth(array(SELECT v * 2 ^ 1017 FROM unnest(x) v), m) / 2 ^ 1017
          = approx_gpu.kde_bandwidth(x, m) AS huge_exact
FROM kde_arr, unnest(ARRAY['plugin', 'scott', 'silverman', 'lscv']) m;
-- by 1e-300 and 1e307 (every value rounded): 1e-9 on the host formulas, the
-- engines' own tolerance for plug-in (1e-6) and LSCV (h ill-conditioned, 1e-4)
SELECT m, abs(approx_gpu.kde_bandwidth(array(SELECT v * 1e-300 FROM unnest(x) v), m) / 1e-300
              / approx_gpu.kde_bandwidth(x, m) - 1) < tol AS tiny_ok,
          abs(approx_gpu.kde_bandwidth(array(SELECT v * 1e307 FROM unnest(x) v), m) / 1e307
              / approx_gpu.kde_bandwidth(x, m) - 1) < tol AS huge_ok
FROM kde_arr, (VALUES ('plugin', 1e-6), ('scott', 1e-9), ('silverman', 1e-9), ('lscv', 1e-4)) t(m, tol);
-- the issue's reproducer (was "x is constant")
SELECT m, abs(approx_gpu.kde_bandwidth(ARRAY[1e-300, 2e-300, 3e-300, 5e-300], m) / 1e-300
              / approx_gpu.kde_bandwidth(ARRAY[1, 2, 3, 5]::float8[], m) - 1) < tol AS issue_reproducer_ok
FROM (VALUES ('plugin', 1e-6), ('scott', 1e-9), ('silverman', 1e-9), ('lscv', 1e-4)) t(m, tol);
-- as in synopses, data far from 0 keep their true sd (scott = 1.06 sd n^-1/5)
SELECT abs(approx_gpu.kde_bandwidth(array_agg(1e16 + (g % 7) * 2), 'scott')
           / (1.06 * stddev_samp(1e16 + (g % 7) * 2) * 4000 ^ -0.2) - 1) < 1e-9 AS far_from_zero_sd_ok
FROM generate_series(1, 4000) g;
-- up to DBL_MAX/4 in magnitude, both signs
SELECT max(abs(v)) * 7e306 < 4.49e307 AS below_quarter_max,
       abs(approx_gpu.kde_bandwidth(array_agg(v * 7e306), 'silverman') / 7e306
           / approx_gpu.kde_bandwidth(array_agg(v), 'silverman') - 1) < 1e-9 AS quarter_max_ok,
       abs(approx_gpu.kde_bandwidth(array_agg(v * 7e306)) / 7e306
           / approx_gpu.kde_bandwidth(array_agg(v)) - 1) < 1e-6 AS quarter_max_plugin_ok
FROM kde_arr, unnest(x) v;
SELECT abs(approx_gpu.kde_bandwidth(ARRAY[-4.49e307, 4.49e307, 0, 1e307]) / 4.49e307
           / approx_gpu.kde_bandwidth(ARRAY[-1, 1, 0, 1e307 / 4.49e307]) - 1) < 1e-6 AS both_signs_ok;
SELECT abs((r).h / (approx_gpu.kde_lscv(p)).h - 1) < 1e-4 AS lscv_2d_rescaled_same_h,
       abs((r).bandwidth_matrix[1][1] / 1e-300 / (approx_gpu.kde_lscv(p)).bandwidth_matrix[1][1] - 1) < 2e-4
         AS lscv_2d_matrix_ok
FROM kde_pts, LATERAL (SELECT approx_gpu.kde_lscv(array(SELECT ARRAY[p[i][1] * 1e-150, p[i][2] * 1e150]
                                                         FROM generate_series(1, 300) i)) AS r) q;
-- what is real is still an error, and says what
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[1e-300, 1e-300, 1e-300]::float8[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_bandwidth(ARRAY[-1.7e308, 1.7e308]::float8[], 'scott')$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_lscv(ARRAY[1e-300, 2e-300, 3e-300, 5e-300]::float8[])$$);

-- cancellation: far more work than 1 s on either engine; the engine polls the
-- cancel flag between chunks and the statement ends with the timeout error
SET statement_timeout = '1s';
SELECT approx_gpu.kde_bandwidth(array(SELECT (i % 9973)::float8 / 7 FROM generate_series(1, 3000000) i));
RESET statement_timeout;
SELECT 1 AS still_alive;

-- the result type
SELECT pg_typeof(approx_gpu.kde_lscv(ARRAY[1, 2, 4, 8]::float8[])) = 'approx_gpu.lscv_result'::regtype AS is_lscv_result;
DROP TABLE kde_data, kde_arr, kde_pts;
