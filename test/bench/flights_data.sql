-- A flights-like table for the plain-SQL approximate aggregates:
-- a third real-shaped data set with NULLs, dates, a text column and a boolean,
-- generated deterministically in SQL (no network, no R). Used by
-- test/pgtap/aqp.sql (200,000 rows) and test/bench/aqp_sql.sh (ROWS rows).
-- Defines pg_temp.flights_table(tab, n, seed, temp DEFAULT true), which
-- creates table `tab` (a name as SQL text, schema-qualified if wanted; a
-- temporary one unless temp = false) of n rows with
-- setseed(seed); the same (n, seed) gives the same rows on every machine
-- (random() is PostgreSQL's own generator; the scan is a single function scan).
--
--   carrier    text: 17 regular carriers with Zipf frequencies (weight 1/k^1.2),
--              three rare ones placed by row number: 'PT' every 1,000th row,
--              'YV' every 2,500th, 'ZW' every 5,000th (200, 80 and 40 rows at
--              n = 200,000: two of them below a stratum floor of 100); 5% NULL
--   origin     int: 1,000 airports 0..999, skewed (floor(1000 u^2): airport 0
--              about 3.2% of the rows, airport 999 about 0.05%)
--   day        date in 2024 (52 weeks from Monday 2024-01-01), a summer bump
--              (week = 52 (u + 0.08 sin 2 pi u)) and weekday weights
--              Mon..Sun 1, 0.95, 0.95, 1, 1.05, 0.75, 0.9
--   cancelled  bool: 2% of the rows, 4% in the first 8 weeks (winter)
--   dep_delay  int minutes: NULL when cancelled and for 8% more (about 10% NULL);
--              else 55% early / on time (round(N(-4, 4))) and 45% late,
--              lognormal round(exp(N(2.3, 1.1))) (median 10, a heavy tail to
--              hours), 3 minutes more on Fridays
--   distance   int miles: a mixture of short haul exp(N(5.9, 0.5)) (~365) and
--              long haul exp(N(7.2, 0.4)) (~1,340), 35% long, clamped to
--              [60, 4980]; 80% heaped to a multiple of 10 (as reported distances are)
CREATE FUNCTION pg_temp.flights_table(tab text, n int, seed float8, temp boolean DEFAULT true) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM setseed(seed);
  EXECUTE format($q$
    CREATE %s TABLE %s AS
    SELECT carrier, origin, day, cancelled,
           CASE WHEN cancelled OR u_null < 0.08 THEN NULL
                WHEN u_late < 0.55 THEN round(-4 + 4 * z1)
                ELSE round(exp(2.3 + 1.1 * z1)) + CASE WHEN extract(isodow FROM day) = 5 THEN 3 ELSE 0 END
           END::int AS dep_delay,
           CASE WHEN u_heap < 0.8 THEN 10 * round(dist / 10) ELSE round(dist) END::int AS distance
    FROM (
      SELECT CASE WHEN i %% 1000 = 3 THEN 'PT' WHEN i %% 2500 = 1 THEN 'YV' WHEN i %% 5000 = 2 THEN 'ZW'
                  WHEN u_carrier < 0.05 THEN NULL
                  ELSE (ARRAY['WN', 'AA', 'DL', 'UA', 'OO', 'B6', 'AS', 'NK', 'YX', 'MQ', 'F9', '9E',
                              'OH', 'G4', 'HA', 'QX', 'C5'])[width_bucket((u_carrier - 0.05) / 0.95, $2)]
             END AS carrier,
             least(999, floor(1000 * u_origin * u_origin))::int AS origin,
             date '2024-01-01' + 7 * least(51, floor(52 * (u_week + 0.08 * sin(2 * pi() * u_week))))::int
               + CASE WHEN u_wd < 1 / 6.6 THEN 0 WHEN u_wd < 1.95 / 6.6 THEN 1 WHEN u_wd < 2.9 / 6.6 THEN 2
                      WHEN u_wd < 3.9 / 6.6 THEN 3 WHEN u_wd < 4.95 / 6.6 THEN 4 WHEN u_wd < 5.7 / 6.6 THEN 5
                      ELSE 6 END AS day,
             u_cancel < CASE WHEN u_week < 8 / 52.0 THEN 0.04 ELSE 0.02 END AS cancelled,
             u_null, u_late, u_heap, z1,
             least(4980, greatest(60, CASE WHEN u_long < 0.35 THEN exp(7.2 + 0.4 * z2) ELSE exp(5.9 + 0.5 * z2) END)) AS dist
      FROM (SELECT i, random() AS u_carrier, random() AS u_origin, random() AS u_week, random() AS u_wd,
                   random() AS u_cancel, random() AS u_null, random() AS u_late, random() AS u_heap,
                   random() AS u_long,
                   sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z1,
                   sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()) AS z2
            FROM generate_series(1, $1) i) g) f $q$,
    CASE WHEN temp THEN 'TEMP' ELSE '' END, tab)
  USING n, ARRAY(SELECT coalesce(sum(power(k, -1.2)) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
                          / (SELECT sum(power(j, -1.2)) FROM generate_series(1, 17) j)
                 FROM generate_series(1, 17) k ORDER BY k)::float8[];
  EXECUTE format('ANALYZE %s', tab);
END $$;

