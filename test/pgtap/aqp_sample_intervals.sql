-- Honest intervals on the sample path (issue 27 item 2), planted cases over a
-- 1% sample (400 of 40,000 rows, random_seed fixed): the rows a WHERE picks
-- are chosen by reading the sample relation (as superuser), so that a query
-- matches 0, 1, 2 or many sample rows for certain. Checks are booleans:
--   (a) no sample row (TPC-H Q19's case): COUNT [0, upper > 0] covering the
--       exact count, SUM, AVG and the median (-inf, inf), never [0, 0] or a NULL row
--   (b) one sample row: SUM / AVG (-inf, inf); two: finite, width > 0
--   (c) many rows and GROUP BY: width > 0 for every group, covering the exact answer
--   (d) a sample of the whole table: zero width, equal to the exact answer
--   (e) max_relative_error: an answer the sample cannot bound runs the exact plan
--   (f) a heavy tail with a census stratum: its huge values in the sample for certain, SUM near exact
\ir preamble.psql
SET jit = off;
SET approx_gpu.random_seed = 27;
SELECT plan(23);

DROP SCHEMA IF EXISTS hon CASCADE;
CREATE SCHEMA hon;
CREATE TABLE hon.t AS
SELECT i AS id, i % 10 AS g, ((i::bigint * 104729) % 1000) / 10.0::float8 AS x,
       CASE WHEN i % 7 = 0 THEN 'a' ELSE 'b' END AS note
  FROM generate_series(1, 40000) i;
ANALYZE hon.t;
SELECT approx_gpu.create_synopsis('hon_syn', 'hon.t'::regclass, ARRAY['x', 'g']::name[], 400, 'cdf', 'never')
       IS NOT NULL AS created \gset
-- ids in the sample, and 30 ids that are not
SELECT format('%s', sample_relid::regclass) AS sample FROM approx_gpu.synopses WHERE name = 'hon_syn' \gset
CREATE TABLE hon.seen AS SELECT id FROM :sample;
CREATE TABLE hon.unseen AS SELECT id FROM hon.t WHERE id NOT IN (SELECT id FROM hon.seen) ORDER BY id LIMIT 30;
SELECT min(id) AS one, max(id) AS two FROM hon.seen \gset
CREATE FUNCTION hon.answer() RETURNS text LANGUAGE sql AS $$ SELECT approx_gpu.last_run()->>'answered_from' $$;

-- (a) the OR keeps the box path out; no sample row matches. By default such
-- a query runs exact (approx_gpu.max_missing_groups, "Missing groups" in
-- docs/aqp.md); at 1 that rule is off and the sample's own answer shows.
SET approx_gpu.max_missing_groups = 1;
CREATE TABLE hon.a AS
SELECT approx_count_ci(*) AS n, approx_sum_ci(x) AS s, approx_avg_ci(x) AS a, approx_sum(x) AS s0,
       approx_percentile_cont_ci(0.5) WITHIN GROUP (ORDER BY x) AS p
  FROM hon.t WHERE id IN (SELECT id FROM hon.unseen) OR note = 'none';
SELECT is(hon.answer(), 'sample', '(a) answered from the sample');
SELECT ok((n).estimate = 0 AND (n).lower = 0 AND (n).upper > 0
          AND (SELECT count(*) FROM hon.unseen) BETWEEN (n).lower AND (n).upper,
          '(a) COUNT of no sample row: [0, upper], upper > 0, covers the exact count') FROM hon.a;
SELECT ok((s).lower = '-Infinity' AND (s).upper = 'Infinity' AND s0 = 0,
          '(a) SUM of no sample row: 0 with the interval (-inf, inf)') FROM hon.a;
SELECT ok((a).estimate IS NULL AND (a).lower = '-Infinity' AND (a).upper = 'Infinity',
          '(a) AVG of no sample row: NULL with the interval (-inf, inf)') FROM hon.a;
SELECT ok((p).estimate IS NULL AND (p).lower = '-Infinity' AND (p).upper = 'Infinity',
          '(a) median of no sample row: NULL with the interval (-inf, inf)') FROM hon.a;

RESET approx_gpu.max_missing_groups;

-- (b) one sample row, then two
CREATE TABLE hon.b1 AS
SELECT approx_sum_ci(x) AS s, approx_avg_ci(x) AS a, approx_count_ci(*) AS n
  FROM hon.t WHERE id = :one OR id IN (SELECT id FROM hon.unseen);
SELECT is(hon.answer(), 'sample', '(b) answered from the sample');
SELECT ok((s).lower = '-Infinity' AND (s).upper = 'Infinity' AND (a).lower = '-Infinity' AND (a).upper = 'Infinity'
          AND (n).lower < (n).estimate AND (n).estimate < (n).upper,
          '(b) one sample row: SUM and AVG (-inf, inf), COUNT a finite interval around it') FROM hon.b1;
CREATE TABLE hon.b2 AS
SELECT approx_sum_ci(x) AS s, approx_avg_ci(x) AS a FROM hon.t WHERE id = :one OR id = :two;
SELECT ok((s).lower < (s).upper AND (a).lower < (a).upper
          AND (s).upper < 'Infinity' AND (s).lower > '-Infinity' AND (a).upper < 'Infinity' AND (a).lower > '-Infinity',
          '(b) two sample rows: SUM and AVG finite, of positive width') FROM hon.b2;

-- (c) many rows, grouped and not
CREATE TABLE hon.c AS
SELECT g, approx_count_ci(*) AS n, approx_sum_ci(x) AS s, approx_avg_ci(x) AS a
  FROM hon.t WHERE note = 'b' OR x < 5 GROUP BY g;
SELECT is(hon.answer(), 'sample', '(c) answered from the sample');
SELECT ok(count(*) = 10 AND bool_and((c.n).lower < (c.n).upper AND (c.s).lower < (c.s).upper AND (c.a).lower < (c.a).upper),
          '(c) every group''s COUNT, SUM and AVG interval has width') FROM hon.c c;
SELECT ok(count(*) >= 9 * 3, '(c) >= 27 of the 30 (group, aggregate) intervals cover the exact answer (' || count(*) || ')')
  FROM hon.c c JOIN (SELECT g, count(*) AS n, sum(x) AS s, avg(x) AS a FROM hon.t WHERE note = 'b' OR x < 5 GROUP BY g) e USING (g),
       LATERAL (VALUES (e.n BETWEEN (c.n).lower AND (c.n).upper), (e.s BETWEEN (c.s).lower AND (c.s).upper),
                       (e.a BETWEEN (c.a).lower AND (c.a).upper)) v(covers)
 WHERE covers;

-- (d) the whole table sampled: exact, zero width
CREATE TABLE hon.w AS SELECT id, g, x, note FROM hon.t WHERE id <= 300;
ANALYZE hon.w;
SELECT approx_gpu.create_synopsis('hon_whole', 'hon.w'::regclass, ARRAY['x', 'g']::name[], 1000, 'cdf', 'never')
       IS NOT NULL AS created \gset
CREATE TABLE hon.d AS
SELECT approx_sum_ci(x) AS s, approx_count_ci(*) AS n, approx_avg_ci(x) AS a FROM hon.w WHERE note = 'a' OR id = 5;
SELECT is(hon.answer(), 'sample', '(d) answered from the sample');
SELECT ok((d.s).lower = (d.s).upper AND (d.n).lower = (d.n).upper AND (d.a).lower = (d.a).upper
          AND (d.n).estimate = e.n AND abs((d.s).estimate - e.s) <= 1e-9 * e.s,
          '(d) a whole sample: zero width, the exact answer')
  FROM hon.d d, (SELECT count(*) AS n, sum(x) AS s FROM hon.w WHERE note = 'a' OR id = 5) e;
CREATE TABLE hon.d0 AS SELECT approx_sum_ci(x) AS s, approx_avg_ci(x) AS a FROM hon.w WHERE note = 'none' OR id < 0;
SELECT ok(s IS NULL AND a IS NULL, '(d) a whole sample with no matching row: NULL, as sum and avg') FROM hon.d0;

-- (e) the guard
SET approx_gpu.max_relative_error = 0.5;
CREATE TABLE hon.e AS SELECT approx_sum(x) AS s FROM hon.t WHERE id IN (SELECT id FROM hon.unseen) OR note = 'none';
SELECT isnt(hon.answer(), 'sample', '(e) max_relative_error: SUM of no sample row runs the exact plan');
SELECT ok(s = (SELECT sum(x) FROM hon.t WHERE id IN (SELECT id FROM hon.unseen)), '(e) ... and returns the exact SUM') FROM hon.e;
CREATE TABLE hon.e2 AS SELECT approx_sum(x) AS s FROM hon.w WHERE note = 'none' OR id < 0;
SELECT is(hon.answer(), 'sample', '(e) ... but a whole sample''s NULL is exact: answered from the sample');
RESET approx_gpu.max_relative_error;

-- (f) 20 rows of 10^7 among 40,000 of 1..100 (99% of the sum): a 1% sample
-- without a census holds few of them; with one (40 rows kept whole) all
CREATE TABLE hon.h AS
SELECT i AS id, CASE WHEN i > 40000 THEN 1e7 ELSE 1 + i % 100 END::float8 AS x FROM generate_series(1, 40020) i;
ANALYZE hon.h;
SELECT approx_gpu.create_synopsis('hon_plain', 'hon.h'::regclass, ARRAY['x']::name[], 400, 'cdf', 'never', census => false)
       IS NOT NULL AS created \gset
SELECT format('%s', sample_relid::regclass) AS psample FROM approx_gpu.synopses WHERE name = 'hon_plain' \gset
SELECT ok((SELECT count(*) FROM :psample WHERE x = 1e7) < 20, '(f) without a census: not every row of 10^7 is in the sample');
SELECT approx_gpu.drop_synopsis('hon_plain') IS NOT NULL AS dropped \gset
SELECT approx_gpu.create_synopsis('hon_census', 'hon.h'::regclass, ARRAY['x']::name[], 400, 'cdf', 'never', census => true)
       IS NOT NULL AS created \gset
SELECT format('%s', sample_relid::regclass) AS hsample FROM approx_gpu.synopses WHERE name = 'hon_census' \gset
SELECT is((SELECT count(*) FROM :hsample WHERE x = 1e7), 20::bigint, '(f) census: every row of 10^7 is in the sample');
CREATE TABLE hon.f AS SELECT approx_sum_ci(x) AS s FROM hon.h WHERE id > 0 OR x < 0;
SELECT is(hon.answer(), 'sample', '(f) answered from the sample');
SELECT ok(e.s BETWEEN (f.s).lower AND (f.s).upper AND abs((f.s).estimate - e.s) < 0.05 * e.s,
          '(f) census: the SUM interval covers the exact sum, within 5%') FROM hon.f f, (SELECT sum(x) AS s FROM hon.h) e;

SELECT approx_gpu.drop_synopsis('hon_census') IS NOT NULL AS dropped \gset
-- ... and by default (census NULL) the build finds the tail itself
SELECT approx_gpu.create_synopsis('hon_auto', 'hon.h'::regclass, ARRAY['x']::name[], 400, 'cdf', 'never')
       IS NOT NULL AS created \gset
SELECT format('%s', sample_relid::regclass) AS asample FROM approx_gpu.synopses WHERE name = 'hon_auto' \gset
SELECT is((SELECT count(*) FROM :asample WHERE x = 1e7), 20::bigint, '(f) census by default: every row of 10^7 is in the sample');
CREATE TABLE hon.f2 AS SELECT approx_sum_ci(x) AS s FROM hon.h WHERE id > 0 OR x < 0;
SELECT ok(e.s BETWEEN (f.s).lower AND (f.s).upper, '(f) census by default: the SUM interval covers the exact sum')
  FROM hon.f2 f, (SELECT sum(x) AS s FROM hon.h) e;
SELECT approx_gpu.drop_synopsis('hon_auto') IS NOT NULL AS dropped \gset
SELECT approx_gpu.drop_synopsis('hon_syn') IS NOT NULL AS dropped \gset
SELECT approx_gpu.drop_synopsis('hon_whole') IS NOT NULL AS dropped \gset
DROP SCHEMA hon CASCADE;
SELECT * FROM finish();
