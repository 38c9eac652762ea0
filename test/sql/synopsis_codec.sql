-- The codec of table synopses (src/synopsis/synopsis_codec.cpp): how a
-- column's SQL values become the numbers and dictionary codes of the sample
-- and come back as group keys. For every column type a table synopsis
-- accepts, a synopsis holding the whole table answers each query exactly as
-- the exact query does: GROUP BY keys (the codec's way back to SQL),
-- comparisons with literals of the column's type and of other comparable
-- types (the codec's query side). The last part checks what float8 cannot
-- keep (int8 beyond 2^53, numeric keys) runs over the rows. Output: booleans,
-- exact integers and last_run()'s answered_from.
SET approx_gpu.random_seed = 5;
CREATE TYPE codec_mood AS ENUM ('sad', 'ok', 'happy');  -- declared order is not strcmp's
CREATE TABLE codec_t (i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric, d date, ts timestamp,
                      tz timestamptz, b bool, t text, vc varchar(8), bp char(3), e codec_mood);
INSERT INTO codec_t
SELECT CASE WHEN g % 23 = 0 THEN NULL ELSE (g % 7 - 3)::int2 END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE 70000 + g % 5 END,
       CASE WHEN g % 31 = 0 THEN NULL ELSE 5000000000 * (g % 4) - 7 END,
       CASE WHEN g % 37 = 0 THEN NULL ELSE ((g % 6) * 0.25)::float4 + (g % 2) * 0.1::float4 END,
       CASE WHEN g % 41 = 0 THEN NULL ELSE (g % 5) / 10.0 END,
       CASE WHEN g % 43 = 0 THEN NULL ELSE (g % 9 - 4) * 1.25 END,
       CASE WHEN g % 47 = 0 THEN NULL ELSE date '2024-02-25' + g % 8 END,
       CASE WHEN g % 53 = 0 THEN NULL ELSE timestamp '2024-02-01 00:00' + (g % 6) * interval '6 hours 30 minutes' END,
       CASE WHEN g % 59 = 0 THEN NULL ELSE timestamptz '2024-02-01 00:00+00' + (g % 5) * interval '7 hours' END,
       CASE WHEN g % 61 = 0 THEN NULL ELSE g % 3 = 0 END,
       CASE WHEN g % 67 = 0 THEN NULL ELSE (ARRAY['alpha', 'beta', 'gamma', 'Delta', ''])[1 + g % 5] END,
       CASE WHEN g % 71 = 0 THEN NULL ELSE 'x' || (g % 3) END,
       CASE WHEN g % 73 = 0 THEN NULL ELSE (ARRAY['ab', 'abc', 'a'])[1 + g % 3] END,
       CASE WHEN g % 79 = 0 THEN NULL ELSE (ARRAY['sad', 'ok', 'happy']::codec_mood[])[1 + g % 3] END
  FROM generate_series(1, 600) g;
-- the whole table is the sample (600 rows, sample_size 1000), nothing smoothed
SELECT (i->>'N')::int AS n, (i->>'m')::int AS m,
       (SELECT string_agg(c->>'name' || ' ' || (c->>'encoding'), ', ') FROM jsonb_array_elements(i->'columns') c) AS encodings
  FROM approx_gpu.create_synopsis('codec_all', 'codec_t'::regclass,
                                  ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'num', 'd', 'ts', 'tz', 'b', 't', 'vc', 'bp', 'e']::name[],
                                  1000, 'cdf', 'never') i;

-- approx_count(*) WHERE cond against count(*) WHERE cond
CREATE FUNCTION codec_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(approx_gpu.last_run()->>'reason', approx_gpu.last_run()->>'synopsis', '-') $$;
CREATE FUNCTION codec_where(cond text, OUT equals_exact bool, OUT answered text) LANGUAGE plpgsql AS $$
DECLARE a float8; e bigint;
BEGIN
  EXECUTE 'SELECT approx_gpu.approx_count(*) FROM codec_t WHERE ' || cond INTO a;
  answered := codec_answer();
  EXECUTE 'SELECT count(*) FROM codec_t WHERE ' || cond INTO e;
  equals_exact := abs(a - e) < 1e-6;  -- a whole-table sample: the count up to rounding
END $$;
-- GROUP BY cols from the synopsis against the exact GROUP BY (keys and counts;
-- EXCEPT compares with the key type's equality, NULL keys included)
CREATE FUNCTION codec_groups(cols text, OUT equals_exact bool, OUT answered text, OUT groups bigint)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TEMP TABLE codec_approx AS SELECT %s, round(approx_gpu.approx_count(*))::bigint AS n FROM codec_t GROUP BY %s',
                 cols, cols);
  answered := codec_answer();
  EXECUTE format('CREATE TEMP TABLE codec_exact AS SELECT %s, count(*) AS n FROM codec_t GROUP BY %s', cols, cols);
  EXECUTE 'SELECT NOT EXISTS (SELECT * FROM codec_approx EXCEPT ALL SELECT * FROM codec_exact)
              AND NOT EXISTS (SELECT * FROM codec_exact EXCEPT ALL SELECT * FROM codec_approx),
                  (SELECT count(*) FROM codec_approx)' INTO equals_exact, groups;
  DROP TABLE codec_approx, codec_exact;
END $$;

-- ---- back to SQL: group keys of every type ----------------------------------------------
SELECT c AS "group by", r.* FROM (VALUES
  ('i2'), ('i4'), ('i8'), ('f4'), ('f8'), ('num'), ('d'), ('ts'), ('tz'),
  ('b'), ('t'), ('vc'), ('bp'), ('e'), ('b, e'), ('t, i2')
) v(c), LATERAL codec_groups(c) r;
-- the keys keep their type (and a char(n) key its padding)
SELECT pg_typeof(i8) AS i8, pg_typeof(num) AS num, pg_typeof(d) AS d, pg_typeof(tz) AS tz, pg_typeof(bp) AS bp,
       pg_typeof(e) AS e, octet_length(bp) AS bp_length
  FROM (SELECT i8, num, d, tz, bp, e, approx_gpu.approx_count(*) FROM codec_t
         WHERE bp IS NOT NULL GROUP BY i8, num, d, tz, bp, e LIMIT 1) s;
SELECT codec_answer();

-- ---- the query side: comparison values of the column's type and of others -------------
SELECT c AS "where", r.* FROM (VALUES
  -- integers: any number type encodes the same
  ('i2 = 2'), ('i2 < 0'), ('i2 >= -1 AND i2 <= 2'), ('i2 IN (-3, 3)'), ('i2 <> 0'), ('i2 = 2::int8'),
  ('i2 < 0.5'), ('i2 = 2.0::float8'), ('i2 = 2::numeric'), ('i2 > -2::int2'),
  ('i4 = 70003'), ('i4 < 70002'), ('i4 = 70003::int8'), ('i4 > 70001.5'), ('i4 <= 70001::float4'),
  ('i4 BETWEEN 70001 AND 70003'), ('i4 NOT IN (70000, 70004)'),
  ('i8 = 4999999993'), ('i8 = -7'), ('i8 = -7::int4'), ('i8 = -7::int2'), ('i8 < 4999999993.5'),
  ('i8 BETWEEN -7 AND 10000000000'), ('i8 > 9999999992::float8'),
  -- floats: exact binary values, float4 against float8 as PostgreSQL widens it
  ('f4 = 0.25'), ('f4 = 0.35::float4'), ('f4 = 0.35'), ('f4 < 0.75'), ('f4 >= 1::int4'), ('f4 IN (0.5, 1.25)'),
  ('f8 = 0.1'), ('f8 = 0.1::float4'), ('f8 < 0.3'), ('f8 >= 0.2::numeric'), ('f8 = 0::int8'), ('f8 <> 0.4'),
  -- numeric
  ('num = 1.25'), ('num = 2.5::float8'), ('num < 0'), ('num = -5::int4'), ('num BETWEEN -2.5 AND 2.5'),
  ('num IN (-1.25, 3.75)'),
  -- date: a timestamp value counts in fractional days
  ('d = date ''2024-02-29'''), ('d < ''2024-02-28'''), ('d BETWEEN ''2024-02-26'' AND ''2024-03-01'''),
  ('d >= timestamp ''2024-02-28 12:00'''), ('d > timestamp ''2024-02-28 00:00'''),
  ('d = timestamp ''2024-02-28 00:00'''), ('d = timestamp ''2024-02-28 00:00:01'''),
  ('d < ''infinity''::date'), ('d > ''-infinity''::date'), ('d < ''infinity''::timestamp'), ('d IN (''2024-03-01'', ''2024-03-02'')'),
  -- timestamp: a date value is its midnight
  ('ts = timestamp ''2024-02-01 06:30'''), ('ts >= date ''2024-02-02'''), ('ts < ''2024-02-01 13:00'''),
  ('ts = date ''2024-02-01'''), ('ts > ''-infinity''::timestamp'), ('ts < ''infinity''::date'),
  ('ts <> timestamp ''2024-02-01 00:00'''),
  -- timestamptz: only timestamptz values (a date or timestamp depends on the time zone)
  ('tz = timestamptz ''2024-02-01 07:00+00'''), ('tz < ''2024-02-01 14:00+00'''), ('tz >= ''2024-02-01 21:00+00''::timestamptz'),
  ('tz < ''infinity''::timestamptz'), ('tz >= date ''2024-02-02'''),
  -- dictionary columns: the value's output string looked up in the sample's dictionary
  ('b'), ('NOT b'), ('b = true'), ('b <> false'), ('b IS NULL'), ('b IS NOT NULL'),
  ('t = ''beta'''), ('t = '''''), ('t <> ''beta'''), ('t IN (''alpha'', ''Delta'')'), ('t NOT IN (''gamma'')'),
  ('t = ''zeta'''), ('t <> ''zeta'''), ('t = ''beta''::varchar'), ('t IS NULL'),
  ('vc = ''x1'''), ('vc = ''x1''::text'), ('vc IN (''x0'', ''x2'')'), ('vc <> ''x0'''),
  ('bp IS NULL'), ('bp = ''ab'''),
  ('e = ''ok'''), ('e <> ''sad'''), ('e IN (''sad'', ''happy'')'), ('e IS NOT NULL'), ('e < ''ok'''),
  -- several columns at once
  ('i2 < 0 AND t = ''beta'' AND d >= ''2024-02-28'' AND b'), ('e = ''ok'' AND tz < ''2024-02-01 14:00+00'' AND f8 > 0')
) v(c), LATERAL codec_where(c) r;
-- a prepared statement's parameters encode as literals do (generic plan)
SET plan_cache_mode = force_generic_plan;
PREPARE codec_p(int8, date, text, codec_mood) AS
  SELECT round(approx_gpu.approx_count(*)) FROM codec_t WHERE i4 < $1 AND ts >= $2 AND t <> $3 AND e = $4;
EXECUTE codec_p(70003, '2024-02-01', 'beta', 'happy');
SELECT codec_answer();
SELECT count(*) FROM codec_t WHERE i4 < 70003 AND ts >= '2024-02-01' AND t <> 'beta' AND e = 'happy';
DEALLOCATE codec_p;
RESET plan_cache_mode;

-- ---- a stratified build (its own scan of the table) encodes the same ------------------
-- every stratum is smaller than its share: still the whole table; the newest
-- synopsis answers
SELECT (i->>'m')::int AS m, (i->>'strata')::int AS strata
  FROM approx_gpu.create_synopsis('codec_strata', 'codec_t'::regclass,
                                  ARRAY['i2', 'i4', 'i8', 'f4', 'f8', 'num', 'd', 'ts', 'tz', 'b', 't', 'vc', 'bp', 'e']::name[],
                                  1000, 'cdf', 'never', ARRAY['e', 'b']::name[]) i;
SELECT c AS "group by", r.* FROM (VALUES
  ('i8'), ('f4'), ('num'), ('d'), ('ts'), ('tz'), ('t'), ('bp'), ('e, b'), ('e')
) v(c), LATERAL codec_groups(c) r;
SELECT c AS "where", r.* FROM (VALUES
  ('i8 = -7::int4'), ('f8 >= 0.2::numeric'), ('num = 1.25'), ('d >= timestamp ''2024-02-28 12:00'''),
  ('ts >= date ''2024-02-02'''), ('tz < ''2024-02-01 14:00+00'''), ('t IN (''alpha'', ''Delta'')'), ('e <> ''sad''')
) v(c), LATERAL codec_where(c) r;
SELECT approx_gpu.drop_synopsis('codec_strata') IS NOT NULL AS dropped;

-- ---- what float8 cannot keep runs over the rows --------------------------------------------
-- int8 beyond 2^53 and numeric with more than 15 significant digits do not
-- round trip (9007199254740993 shares 9007199254740992's number, a numeric
-- key would come back rounded to 15 digits): such keys and values fall back,
-- with the reason, and the answers are exact (test/sql/synopsis_semantics.sql
-- has the rest).
CREATE TABLE codec_loss (i8 int8, num numeric);
INSERT INTO codec_loss VALUES (9007199254740992, 0.1234567890123456789), (9007199254740993, 0.5);
SELECT approx_gpu.create_synopsis('codec_loss_all', 'codec_loss'::regclass, ARRAY['i8', 'num']::name[], 1000,
                                  'cdf', 'never') IS NOT NULL AS created;
SELECT i8, round(approx_gpu.approx_count(*)) AS n FROM codec_loss GROUP BY i8 ORDER BY i8;
SELECT codec_answer();
SELECT round(approx_gpu.approx_count(*)) AS n FROM codec_loss WHERE i8 = 9007199254740993;
SELECT codec_answer();
SELECT num, round(approx_gpu.approx_count(*)) AS n FROM codec_loss GROUP BY num ORDER BY num;
SELECT codec_answer();

SELECT approx_gpu.drop_synopsis('codec_all') IS NOT NULL AS dropped,
       approx_gpu.drop_synopsis('codec_loss_all') IS NOT NULL AS dropped_loss;
DROP FUNCTION codec_where(text), codec_groups(text), codec_answer();
DROP TABLE codec_t, codec_loss;
DROP TYPE codec_mood;
