-- SQL semantics a table synopsis must keep (issue 26, items 6, 7, 8, 10):
-- group keys and equality follow the column's own equality (nondeterministic
-- collations, bpchar), keys and equality are exact for every accepted type
-- (int8 and timestamp beyond 2^53 microseconds/units, numeric), empty
-- ANY / ALL arrays treat NULL rows as SQL does, and the JSON-predicate
-- functions refuse what plain SQL refuses. Every synopsis holds the whole
-- table (nothing smoothed), so an answer from it equals the exact one.
-- Output: booleans against exact SQL, last_run()'s answered_from / reason,
-- errors.
SET approx_gpu.random_seed = 7;
CREATE FUNCTION sem_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(approx_gpu.last_run()->>'reason', approx_gpu.last_run()->>'synopsis', '-') $$;
-- GROUP BY cols of tab from the synopsis against the exact GROUP BY (keys
-- and counts; EXCEPT ALL compares with the key type's own equality)
CREATE FUNCTION sem_groups(tab text, cols text, OUT equals_exact bool, OUT answered text) LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TEMP TABLE sem_a AS SELECT %s, round(approx_gpu.approx_count(*))::bigint AS n FROM %s GROUP BY %s',
                 cols, tab, cols);
  answered := sem_answer();
  EXECUTE format('CREATE TEMP TABLE sem_e AS SELECT %s, count(*) AS n FROM %s GROUP BY %s', cols, tab, cols);
  EXECUTE 'SELECT NOT EXISTS (SELECT * FROM sem_a EXCEPT ALL SELECT * FROM sem_e)
              AND NOT EXISTS (SELECT * FROM sem_e EXCEPT ALL SELECT * FROM sem_a)' INTO equals_exact;
  DROP TABLE sem_a, sem_e;
END $$;
CREATE FUNCTION sem_where(tab text, cond text, OUT equals_exact bool, OUT answered text) LANGUAGE plpgsql AS $$
DECLARE a float8; e bigint;
BEGIN
  EXECUTE format('SELECT approx_gpu.approx_count(*) FROM %s WHERE %s', tab, cond) INTO a;
  answered := sem_answer();
  EXECUTE format('SELECT count(*) FROM %s WHERE %s', tab, cond) INTO e;
  equals_exact := abs(a - e) < 1e-6;
END $$;

-- ---- item 6: GROUP BY follows the column's equality ----------------------------------
-- (this PostgreSQL is built with ICU)
CREATE COLLATION sem_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE sem_coll (ci text COLLATE sem_ci, cs text, bp bpchar, bp3 char(3), v int4);
INSERT INTO sem_coll
SELECT (ARRAY['abc', 'ABC', 'Abc', 'x'])[1 + g % 4], (ARRAY['abc', 'ABC', 'Abc', 'x'])[1 + g % 4],
       (ARRAY['a', 'a  ', 'b', 'b '])[1 + g % 4], (ARRAY['a', 'a  ', 'b', 'b '])[1 + g % 4], g % 3
  FROM generate_series(1, 200) g;
SELECT approx_gpu.create_synopsis('sem_coll_all', 'sem_coll'::regclass, ARRAY['ci', 'cs', 'bp', 'bp3', 'v']::name[],
                                  1000, 'cdf', 'never') IS NOT NULL AS created;
SELECT c AS "group by", r.* FROM (VALUES
  ('ci'), ('cs'), ('bp'), ('bp3'), ('ci, v'), ('v, bp'), ('cs, bp3')
) v(c), LATERAL sem_groups('sem_coll', c) r;
-- WHERE falls back by the same rule; a deterministic COLLATE in WHERE answers
SELECT c AS "where", r.* FROM (VALUES
  ('ci = ''abc'''), ('cs = ''abc'''), ('ci = ''abc'' COLLATE "C"'), ('bp = ''a'''), ('bp3 IS NULL')
) v(c), LATERAL sem_where('sem_coll', c) r;
-- a synopsis stratified on a nondeterministic column: its strata are finer
-- than the groups; GROUP BY it falls back, other queries still answer
SELECT approx_gpu.create_synopsis('sem_coll_strata', 'sem_coll'::regclass, ARRAY['ci', 'v']::name[],
                                  1000, 'cdf', 'never', ARRAY['ci']::name[]) IS NOT NULL AS created;
SELECT * FROM sem_groups('sem_coll', 'ci');
SELECT * FROM sem_where('sem_coll', 'v = 1');
SELECT approx_gpu.drop_synopsis('sem_coll_strata') IS NOT NULL AS dropped,
       approx_gpu.drop_synopsis('sem_coll_all') IS NOT NULL AS dropped_all;

-- ---- item 7: keys and equality exact for every accepted type --------------------------
CREATE TABLE sem_big (k int8, num numeric, ts timestamp, small int8);
INSERT INTO sem_big VALUES
  (9223372036854775807, 0.1234567890123456789, timestamp '1000-01-01 00:00:00.000001', 1),
  (9223372036854775806, 0.12345678901234567891, timestamp '1000-01-01 00:00:00.000002', 2),
  (-9223372036854775808, 0.5, timestamp '2024-01-01 00:00', 2),
  (9007199254740993, 1.25, timestamp '2024-01-01 00:00', 3),
  (9007199254740992, 1.25, NULL, NULL);
SELECT approx_gpu.create_synopsis('sem_big_all', 'sem_big'::regclass, ARRAY['k', 'num', 'ts', 'small']::name[],
                                  1000, 'cdf', 'never') IS NOT NULL AS created;
SELECT c AS "group by", r.* FROM (VALUES
  ('k'), ('num'), ('ts'), ('small'), ('small, k')
) v(c), LATERAL sem_groups('sem_big', c) r;
SELECT c AS "where", r.* FROM (VALUES
  ('k = 9223372036854775806'), ('k = 9007199254740993'), ('k <> 9007199254740992'), ('k IN (9007199254740993, 1)'),
  ('k < 9223372036854775807'), ('k > 0'), ('k = -9223372036854775808'),
  ('num = 0.1234567890123456789'), ('num = 1.25'), ('num IN (0.5, 1.25)'), ('num < 1'),
  ('ts = timestamp ''1000-01-01 00:00:00.000001'''), ('ts < ''2000-01-01'''), ('ts = ''2024-01-01'''),
  ('small = 2'), ('small < 3'),
  -- a numeric value float8 would round, against an integer column; float8
  -- values compare in float8 in SQL too, so they answer
  ('small = 2.0000000000000000001'), ('small < 2.0000000000000000001'), ('num = 0.5::float8'),
  ('k > 9.2e18::float8')
) v(c), LATERAL sem_where('sem_big', c) r;
SELECT approx_gpu.drop_synopsis('sem_big_all') IS NOT NULL AS dropped;

-- ---- item 8: empty ANY / ALL arrays and NULL rows ------------------------------------
CREATE TABLE sem_null (x int4, t text);
INSERT INTO sem_null SELECT CASE WHEN g % 4 = 0 THEN NULL ELSE g % 5 END,
                            CASE WHEN g % 3 = 0 THEN NULL ELSE 'v' || g % 2 END
  FROM generate_series(1, 100) g;
SELECT approx_gpu.create_synopsis('sem_null_all', 'sem_null'::regclass, ARRAY['x', 't']::name[],
                                  1000, 'cdf', 'never') IS NOT NULL AS created;
SELECT c AS "where", r.* FROM (VALUES
  ('x <> ALL (''{}'')'), ('x = ANY (''{}'')'), ('t <> ALL (''{}'')'), ('t = ANY (''{}'')'),
  ('x <> ALL (''{}'') AND x > 1'), ('x > 1 AND x <> ALL (''{}'')'), ('x <> ALL (''{}'') AND x IS NULL'),
  ('x IS NULL AND x <> ALL (''{}'')'), ('x <> ALL (''{NULL}'')'), ('x <> ALL (''{1, 2}'')'),
  ('x = ANY (''{NULL, 1}'')'), ('x <> ALL (NULL::int4[])')
) v(c), LATERAL sem_where('sem_null', c) r;
SELECT * FROM sem_groups('sem_null WHERE x <> ALL (''{}'')', 't');
-- a prepared statement's array parameter, generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE sem_p(int4[]) AS SELECT round(approx_gpu.approx_count(*)) FROM sem_null WHERE x <> ALL ($1);
PREPARE sem_q(int4[]) AS SELECT round(approx_gpu.approx_count(*)) FROM sem_null WHERE x = ANY ($1);
EXECUTE sem_p('{}');
SELECT sem_answer();
EXECUTE sem_q('{}');
EXECUTE sem_p('{1}');
SELECT count(*) AS exact_all, count(*) FILTER (WHERE x <> 1) AS exact_not_1 FROM sem_null;
DEALLOCATE sem_p;
DEALLOCATE sem_q;
RESET plan_cache_mode;
SELECT approx_gpu.drop_synopsis('sem_null_all') IS NOT NULL AS dropped;

-- ---- item 10: JSON-predicate functions refuse what plain SQL refuses -----------------
CREATE TYPE sem_mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE sem_json (t text, b bool, e sem_mood, d date, ts timestamp, tz timestamptz, x float8, bp char(3));
INSERT INTO sem_json
SELECT (ARRAY['alpha', 'beta', 'gamma'])[1 + g % 3], g % 2 = 0, (ARRAY['sad', 'ok', 'happy']::sem_mood[])[1 + g % 3],
       date '2024-02-25' + g % 8, timestamp '2024-02-01 00:00' + g * interval '1 hour',
       timestamptz '2024-02-01 00:00+00' + g * interval '1 hour', g / 4.0, (ARRAY['a', 'bb', 'ccc'])[1 + g % 3]
  FROM generate_series(1, 120) g;
SELECT approx_gpu.create_synopsis('sem_json_all', 'sem_json'::regclass,
                                  ARRAY['t', 'b', 'e', 'd', 'ts', 'tz', 'x', 'bp']::name[], 1000, 'cdf', 'never') IS NOT NULL AS created;
-- what plain SQL refuses: sum / avg of text, bool, enum, date, timestamp(tz) ...
SELECT approx_gpu.approx_avg('sem_json_all', 't', '{}');
SELECT approx_gpu.approx_sum('sem_json_all', 'b', '{}');
SELECT approx_gpu.approx_avg('sem_json_all', 'e', '{}');
SELECT approx_gpu.approx_sum('sem_json_all', 'd', '{}');
SELECT approx_gpu.approx_avg('sem_json_all', 'ts', '{}');
SELECT approx_gpu.approx_sum('sem_json_all', 'tz', '{}');
-- ... numbers compared with a dictionary or date column, ranges on a dictionary column
SELECT approx_gpu.approx_count('sem_json_all', '{"t": [0, 1]}');
SELECT approx_gpu.approx_count('sem_json_all', '{"e": 1}');
SELECT approx_gpu.approx_count('sem_json_all', '{"d": [8820, null]}');
SELECT approx_gpu.approx_count('sem_json_all', '{"t": ["alpha", "beta"]}');
SELECT approx_gpu.approx_count('sem_json_all', '{"x": "1"}');
SELECT approx_gpu.approx_count('sem_json_all', '{"e": "angry"}');
-- what SQL allows is interpreted as SQL does: values of the column's type
SELECT round(approx_gpu.approx_count('sem_json_all', '{"t": "beta"}')) = (SELECT count(*) FROM sem_json WHERE t = 'beta') AS text_eq,
       round(approx_gpu.approx_count('sem_json_all', '{"t": "zeta"}')) = 0 AS text_absent,
       round(approx_gpu.approx_count('sem_json_all', '{"b": true}')) = (SELECT count(*) FROM sem_json WHERE b) AS bool_eq,
       round(approx_gpu.approx_count('sem_json_all', '{"e": "ok", "b": "false"}')) =
         (SELECT count(*) FROM sem_json WHERE e = 'ok' AND NOT b) AS enum_bool_eq,
       round(approx_gpu.approx_count('sem_json_all', '{"bp": "a"}')) = (SELECT count(*) FROM sem_json WHERE bp = 'a') AS bpchar_eq,
       round(approx_gpu.approx_count('sem_json_all', '{"d": ["2024-02-27", "2024-03-01"]}')) =
         (SELECT count(*) FROM sem_json WHERE d BETWEEN '2024-02-27' AND '2024-03-01') AS date_range,
       round(approx_gpu.approx_count('sem_json_all', '{"d": "2024-02-28"}')) = (SELECT count(*) FROM sem_json WHERE d = '2024-02-28') AS date_eq,
       round(approx_gpu.approx_count('sem_json_all', '{"ts": [null, "2024-02-03 12:00"]}')) =
         (SELECT count(*) FROM sem_json WHERE ts <= '2024-02-03 12:00') AS ts_range,
       round(approx_gpu.approx_count('sem_json_all', '{"tz": ["2024-02-02 00:00+00", null]}')) =
         (SELECT count(*) FROM sem_json WHERE tz >= '2024-02-02 00:00+00') AS tz_range,
       abs(approx_gpu.approx_avg('sem_json_all', 'x', '{"t": "gamma", "d": [null, "2024-02-28"]}') -
         (SELECT avg(x) FROM sem_json WHERE t = 'gamma' AND d <= '2024-02-28')) < 1e-9 AS avg_x;
-- the value-level functions refuse the same sums over a table synopsis' value
SELECT approx_gpu.approx_avg(synopsis, 1, '{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}', '{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}')
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'sem_json_all';
SELECT approx_gpu.approx_sum_many(synopsis, 4, '{{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}}', '{{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}}')
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'sem_json_all';
SELECT abs(approx_gpu.approx_avg(synopsis, 7, '{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}', '{NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL}') -
           (SELECT avg(x) FROM sem_json)) < 1e-9 AS number_avg
  FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'sem_json_all';
SELECT approx_gpu.drop_synopsis('sem_json_all') IS NOT NULL AS dropped;

DROP FUNCTION sem_groups(text, text), sem_where(text, text), sem_answer();
DROP TABLE sem_coll, sem_big, sem_null, sem_json;
DROP TYPE sem_mood;
DROP COLLATION sem_ci;
