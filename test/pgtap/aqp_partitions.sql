-- Synopses of partitioned tables and inheritance parents (issue 27 item 6),
-- properties over seeded random layouts (2 to 6 range partitions, some with
-- their columns in another order, sometimes a default partition or a
-- sub-partitioned level, or an inheritance parent with children):
--   (a) the synopsis has one stratum per leaf that holds rows
--   (b) a sample_size above the rows samples every leaf whole: the sample
--       path's approx_count(*) and approx_sum(x) GROUP BY g equal count(*)
--       and sum(x) (1e-9 relative), whatever the layout
--   (c) with a small sample every leaf keeps min(its rows, 100) sample rows
--       at least (the congressional floor): the sample relation's rows per
--       stratum
-- Helpers (tap.*) come from test/pgtap_setup.sql.
\ir preamble.psql
SELECT plan(18);
DROP SCHEMA IF EXISTS pp CASCADE;
CREATE SCHEMA pp;

-- A layout of seed s: pp.t<s>, 3,000 + 500 s rows, k in [0, 1000), g four labels.
CREATE FUNCTION pp.make(s int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE n int; lo int := 0; hi int; t text := 'pp.t' || s;
BEGIN
  PERFORM setseed(s / 10.0);
  IF s % 3 = 0 THEN  -- inheritance: the parent's own rows and two or three children
    EXECUTE format('CREATE TABLE %s (k int, g text, x float8)', t);
    FOR i IN 1 .. 2 + s % 2 LOOP
      EXECUTE format('CREATE TABLE %s_%s (extra int, x float8, g text, k int)', t, i);
      EXECUTE format('ALTER TABLE %s_%s INHERIT %s', t, i, t);
    END LOOP;
  ELSE
    EXECUTE format('CREATE TABLE %s (k int, g text, x float8) PARTITION BY RANGE (k)', t);
    n := 2 + (random() * 4)::int;
    FOR i IN 1 .. n LOOP
      hi := CASE WHEN i = n THEN 1000 ELSE lo + 1 + (random() * (1000 - lo) / 2)::int END;
      IF i % 2 = 0 THEN  -- columns in another order
        EXECUTE format('CREATE TABLE %s_%s (x float8, g text, k int)', t, i);
        EXECUTE format('ALTER TABLE %s ATTACH PARTITION %s_%s FOR VALUES FROM (%s) TO (%s)', t, t, i, lo, hi);
      ELSIF i = 3 THEN  -- sub-partitioned by g
        EXECUTE format('CREATE TABLE %s_%s PARTITION OF %s FOR VALUES FROM (%s) TO (%s) PARTITION BY LIST (g)',
                       t, i, t, lo, hi);
        EXECUTE format('CREATE TABLE %s_%s_ab PARTITION OF %s_%s FOR VALUES IN (''a'', ''b'')', t, i, t, i);
        EXECUTE format('CREATE TABLE %s_%s_z PARTITION OF %s_%s DEFAULT', t, i, t, i);
      ELSE
        EXECUTE format('CREATE TABLE %s_%s PARTITION OF %s FOR VALUES FROM (%s) TO (%s)', t, i, t, lo, hi);
      END IF;
      lo := hi;
    END LOOP;
    IF s % 2 = 0 THEN EXECUTE format('CREATE TABLE %s_d PARTITION OF %s DEFAULT', t, t); END IF;
  END IF;
  EXECUTE format('INSERT INTO %s (k, g, x) SELECT (random() * 999)::int, chr(97 + (random() * 3)::int), '
                 'round((random() * 1000)::numeric, 2) FROM generate_series(1, %s)', t, 3000 + 500 * s);
  IF s % 3 = 0 THEN
    EXECUTE format('INSERT INTO %s_1 (k, g, x, extra) SELECT k, g, x * 3, 1 FROM %s LIMIT 700', t, t);
  END IF;
END $$;

-- (approx = exact per group, groups alike) of the sample path over t
CREATE FUNCTION pp.exact_when_whole(t text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE ok bool; answered text;
BEGIN
  EXECUTE format('CREATE TEMP TABLE pp_a AS SELECT g, approx_count(*) AS n, approx_sum(x) AS s FROM %s '
                 'WHERE x >= 0 OR g = ''zz'' GROUP BY g', t);
  answered := last_run()->>'answered_from';
  EXECUTE format('SELECT count(*) = (SELECT count(DISTINCT g) FROM %s) AND '
                 'bool_and(abs(a.n - e.n) <= 1e-9 * e.n AND abs(a.s - e.s) <= 1e-9 * abs(e.s)) '
                 'FROM pp_a a JOIN (SELECT g, count(*) AS n, sum(x) AS s FROM %s GROUP BY g) e USING (g)', t, t)
    INTO ok;
  DROP TABLE pp_a;
  RETURN ok AND answered = 'sample';
END $$;

-- rows per stratum of the sample relation of synopsis syn, against min(leaf rows, 100)
CREATE FUNCTION pp.floor_kept(syn text, t text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE sample regclass; ok bool;
BEGIN
  SELECT sample_relid::regclass INTO sample FROM synopses WHERE name = syn;
  -- strata are ordered by leaf OID; leaves with rows, in OID order
  EXECUTE format('WITH l AS (SELECT row_number() OVER (ORDER BY tableoid::oid) AS stratum, count(*) AS rows '
                 '           FROM %s GROUP BY tableoid), '
                 '     s AS (SELECT approx_stratum AS stratum, count(*) AS m FROM %s GROUP BY 1) '
                 'SELECT count(*) = (SELECT count(*) FROM l) AND bool_and(s.m >= least(l.rows, 100)) '
                 '  FROM l JOIN s USING (stratum)', t, sample) INTO ok;
  RETURN ok;
END $$;

SELECT pp.make(s) FROM generate_series(1, 6) s;
SELECT pg_stat_force_next_flush();

CREATE FUNCTION pp.leaves_with_rows(t text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN EXECUTE format('SELECT count(DISTINCT tableoid) FROM %s', t) INTO n; RETURN n; END $$;

SELECT create_synopsis('pp_whole_' || s, ('pp.t' || s)::regclass, ARRAY['g', 'x']::name[], 100000, 'cdf', 'never')
       IS NOT NULL FROM generate_series(1, 6) s;
SELECT is((synopsis_status('pp_whole_' || s)->>'strata')::bigint, pp.leaves_with_rows('pp.t' || s),
          format('(a) layout %s: one stratum per leaf with rows', s))
  FROM generate_series(1, 6) s;
SELECT ok(pp.exact_when_whole('pp.t' || s), format('(b) layout %s: every leaf sampled whole, approx = exact', s))
  FROM generate_series(1, 6) s;
SELECT create_synopsis('pp_small_' || s, ('pp.t' || s)::regclass, ARRAY['g', 'x']::name[], 300, 'cdf', 'never')
       IS NOT NULL FROM generate_series(1, 6) s;
SELECT ok(pp.floor_kept('pp_small_' || s, 'pp.t' || s),
          format('(c) layout %s: every leaf keeps min(its rows, 100) sample rows', s))
  FROM generate_series(1, 6) s;

SELECT drop_synopsis(name) FROM synopses WHERE name LIKE 'pp\_%';
DROP SCHEMA pp CASCADE;
SELECT * FROM finish();
