-- Generated data of the shapes that break fixed-bandwidth KDE synopses (issue
-- 12), for test/pgtap/synopsis.sql (CI) and test/bench/synopsis_sql.sh (the
-- benchmark). Defines pg_temp.synopsis_shape(tab, shape, n, seed) which
-- creates table `tab` (columns a, b; a temporary one unless temp = false) of n
-- rows with setseed(seed); the
-- SUM / AVG column is given in the comments. The same shapes (other seeds,
-- 10^6 rows) are in test/bench/synopsis_accuracy_bench.cpp.
--   lognormal_int   a = round(exp(N(3, 1.6))) integer sizes, many ties, 4+ orders of
--                   magnitude; b = a small count depending on a (geometric, capped at 12). SUM a.
--   pareto_int      a = floor(10 U^(-1/1.1)) (Pareto tail, alpha 1.1); b = 1..5 depending on a. SUM a.
--   zero_inflated   a = 0 w.p. 0.45, else exp(N(2, 1)) (a point mass at 0 and a continuum);
--                   b = N(50, 10) + 5 [a > 0]. SUM a.
--   point_mass_mix  a = 100 w.p. 0.3, else N(100, 15); b = U(0, 10) + a / 100. SUM b.
--   weekly_dates    a = day 0..1095 with weekday weights 1,1,1,1,1.3,0.4,0.2 and a yearly
--                   bump; b = exp(N(3, 1)) (an amount). SUM b.
CREATE FUNCTION pg_temp.synopsis_shape(tab text, shape text, n int, seed float8, temp boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE q text;
BEGIN
  PERFORM setseed(seed);
  q := CASE shape
    WHEN 'lognormal_int' THEN
      'SELECT a, least(12, floor(-ln(1 - random()) * (1 + ln(1 + a) / 3)))::float8 AS b
         FROM (SELECT round(exp(3 + 1.6 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())))::float8 AS a
               FROM generate_series(1, $1)) g'
    WHEN 'pareto_int' THEN
      'SELECT a, (1 + floor(random() * CASE WHEN a > 30 THEN 5 ELSE 3 END))::float8 AS b
         FROM (SELECT floor(10 * power(1 - random(), -1 / 1.1))::float8 AS a FROM generate_series(1, $1)) g'
    WHEN 'zero_inflated' THEN
      'SELECT a, 50 + 10 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) + CASE WHEN a > 0 THEN 5 ELSE 0 END AS b
         FROM (SELECT CASE WHEN random() < 0.45 THEN 0
                           ELSE exp(2 + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) END::float8 AS a
               FROM generate_series(1, $1)) g'
    WHEN 'point_mass_mix' THEN
      'SELECT a, 10 * random() + a / 100 AS b
         FROM (SELECT CASE WHEN random() < 0.3 THEN 100
                           ELSE 100 + 15 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) END::float8 AS a
               FROM generate_series(1, $1)) g'
    WHEN 'weekly_dates' THEN
      'SELECT a, exp(3 + sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random())) AS b
         FROM (SELECT d::float8 AS a FROM (SELECT floor(random() * 1096)::int AS d, random() AS u
                                          FROM generate_series(1, 3 * $1)) r
               WHERE u * 1.95 < (ARRAY[1, 1, 1, 1, 1.3, 0.4, 0.2])[1 + d % 7] * (1 + 0.5 * sin(2 * pi() * d / 365.25))
               LIMIT $1) g'
  END;
  IF q IS NULL THEN RAISE EXCEPTION 'unknown shape %', shape; END IF;
  EXECUTE format('DROP TABLE IF EXISTS %I', tab);
  EXECUTE format('CREATE %s TABLE %I AS %s', CASE WHEN temp THEN 'TEMP' ELSE '' END, tab, replace(q, '$1', n::text));
  EXECUTE format('ANALYZE %I', tab);
END $$;
