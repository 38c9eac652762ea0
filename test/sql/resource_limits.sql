-- Limits that protect the server from an unprivileged role (issue 26 items
-- 13 and 15): they are superuser-only settings, and what a query's text or a
-- call's arguments ask for is bounded before anything is allocated.
LOAD 'approx_gpu';  -- the settings exist (not placeholders) before a role tries them
SET search_path = public, approx_gpu;
SET client_min_messages = warning;
CREATE ROLE regress_rl_user;
RESET client_min_messages;
-- ---- superuser-only settings --------------------------------------------------
SET ROLE regress_rl_user;
SET approx_gpu.closure_max_memory = '1TB';
SET approx_gpu.gpu_memory_limit = '1TB';
SET approx_gpu.cpu_threads = 64;
SET approx_gpu.box_memory_limit = '1TB';
SET approx_gpu.service_request_limit = 0;
-- the moving-object caps were superuser-only already
SET approx_gpu.moving_max_cells = 1000000000;
RESET ROLE;
SELECT name, context FROM pg_settings
 WHERE name IN ('approx_gpu.closure_max_memory', 'approx_gpu.gpu_memory_limit', 'approx_gpu.cpu_threads',
                'approx_gpu.box_memory_limit', 'approx_gpu.service_request_limit', 'approx_gpu.moving_max_cells',
                'approx_gpu.moving_session_memory')
 ORDER BY name;
-- ---- boxes bounded by bytes ------------------------------------------------------
CREATE TABLE rl_t AS
  SELECT g AS id, g % 5000 AS a, (g * 7) % 5000 AS b, g % 3 AS c, g % 11 AS e, g % 13 AS f, g % 17 AS h, (g % 97)::float8 AS x
    FROM generate_series(1, 20000) g;
SELECT approx_gpu.create_synopsis('rl_syn', 'rl_t', ARRAY['a', 'b', 'c', 'e', 'f', 'h', 'x'], 2000) IS NOT NULL AS built;
CREATE FUNCTION rl_answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(approx_gpu.last_run()->>'reason', '-') $$;
-- Two 4,096-value IN lists: 2^24 boxes of 7 columns (about 3 GB) are never
-- built; the query runs over the rows, and the answer is the exact one.
SELECT format('SELECT approx_count(*) FROM rl_t WHERE a IN (%s) AND b IN (%s)',
              (SELECT string_agg(g::text, ',') FROM generate_series(0, 4095) g),
              (SELECT string_agg(g::text, ',') FROM generate_series(0, 4095) g)) AS q \gset
SELECT (:q) = (SELECT count(*) FROM rl_t WHERE a < 4096 AND b < 4096) AS exact;
SELECT regexp_replace(rl_answer(), '\(\d+\) would need \d+ MB', '(N) would need M MB') AS answer;
-- A small query is answered from the synopsis; with the limit lowered (a
-- superuser may) the same query's boxes no longer fit.
SELECT c, approx_count(*) > 0 AS some FROM rl_t WHERE e IN (1, 3, 5) AND f IN (2, 4, 6) GROUP BY c ORDER BY c;
SELECT rl_answer();
SET approx_gpu.box_memory_limit = '64kB';
SET approx_gpu.box_path_max_groups = 1000000;  -- the box path, not the sample path, takes these groups
SELECT format('SELECT e, f, approx_count(*) FROM rl_t WHERE a IN (%s) GROUP BY e, f',
              (SELECT string_agg(g::text, ',') FROM generate_series(0, 598, 2) g)) AS q2 \gset
CREATE TEMP TABLE rl_groups AS :q2;
SELECT regexp_replace(rl_answer(), '\(\d+\) would need \d+ MB', '(N) would need M MB') AS answer;
SELECT (SELECT count(*) FROM rl_groups) = (SELECT count(*) FROM (SELECT DISTINCT e, f FROM rl_t WHERE a < 600 AND a % 2 = 0) s) AS exact_groups;
SELECT regexp_replace(rl_answer(), '\(\d+\) would need \d+ MB', '(N) would need M MB') AS answer;
RESET approx_gpu.box_memory_limit;
RESET approx_gpu.box_path_max_groups;
-- ---- sample_size far above the table's size (item 15) ------------------------------
CREATE TABLE rl_tiny AS SELECT g AS a FROM generate_series(1, 3) g;
SELECT (approx_gpu.create_synopsis('rl_tiny_syn', 'rl_tiny', ARRAY['a'], sample_size => 100000000))->>'m' AS m;
SELECT (approx_gpu.create_synopsis('rl_tiny_strat', 'rl_tiny', ARRAY['a'], sample_size => 100000000, stratify => ARRAY['a']))->>'m' AS m;
SELECT approx_count(*) FROM rl_tiny;
SELECT rl_answer();
-- Past what any value can hold: a clean 54000, before anything is read.
SELECT approx_gpu.create_synopsis('rl_tiny_big', 'rl_tiny', ARRAY['a'], sample_size => 2000000000);
SELECT approx_gpu.drop_synopsis('rl_syn'), approx_gpu.drop_synopsis('rl_tiny_syn'), approx_gpu.drop_synopsis('rl_tiny_strat');
DROP FUNCTION rl_answer();
DROP TABLE rl_t, rl_tiny;
DROP ROLE regress_rl_user;
-- ---- the sample path's state and a role's synopsis storage (issue 37 item 10) ----------
-- A SELECT-only role can build a synopsis with one stratum per row (60,000
-- strata and 400 SUM terms once needed 1.3 GB in one allocation: XX000; 64
-- terms left 117 MB kept in the backend). Here 3,000 strata.
SET client_min_messages = warning;
CREATE ROLE regress_rl_reader;
RESET client_min_messages;
CREATE TABLE rl_s AS SELECT g AS u, (g % 7)::float8 AS v FROM generate_series(1, 3000) g;
GRANT SELECT ON rl_s TO regress_rl_reader;
-- the backend's kept spreads, read as a superuser may
CREATE FUNCTION rl_spread_cache(OUT entries int, OUT bytes int8) LANGUAGE sql SECURITY DEFINER AS $$
SELECT count(*)::int, coalesce(sum(total_bytes), 0)::int8 FROM pg_backend_memory_contexts
 WHERE name = 'approx_gpu sample spread' $$;
CREATE FUNCTION rl_reason() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(approx_gpu.last_run()->>'answered_from', '-') || ': ' ||
       coalesce(regexp_replace(approx_gpu.last_run()->>'reason', '^.*sample path: ', ''), '-') $$;
SET ROLE regress_rl_reader;
-- the new limits are superuser-only
SET approx_gpu.sample_max_state = '1GB';
SET approx_gpu.sample_spread_cache_size = '1GB';
SET approx_gpu.max_synopsis_rows_per_role = -1;
SELECT (approx_gpu.create_synopsis('rl_s_syn', 'rl_s', ARRAY['u', 'v'], 3000, stratify => ARRAY['u']))->>'m' AS m;
SELECT approx_gpu.synopsis_status('rl_s_syn')->>'strata' AS strata;
SET approx_gpu.box_path = off;
-- within the default budget (64 MB): the sample answers (every row sampled: exact)
SELECT approx_sum(v + 1) AS s1, approx_sum(v + 2) AS s2 FROM rl_s \gset
SELECT :s1 = (SELECT sum(v + 1) FROM rl_s) AND :s2 = (SELECT sum(v + 2) FROM rl_s) AS right, rl_reason() AS answer;
RESET ROLE;
SELECT name, context, setting, unit FROM pg_settings
 WHERE name IN ('approx_gpu.sample_max_state', 'approx_gpu.sample_spread_cache_size',
                'approx_gpu.max_synopsis_rows_per_role')
 ORDER BY name;
-- past a lowered budget (a superuser may): the exact path, with the reason
SET approx_gpu.sample_max_state = '800kB';
SET ROLE regress_rl_reader;
SELECT approx_sum(v + 1) AS s1 FROM rl_s \gset
SELECT :s1 = (SELECT sum(v + 1) FROM rl_s) AS right, rl_reason() AS answer;
SELECT approx_sum(v + 1) AS s1, approx_sum(v + 2) AS s2 FROM rl_s \gset
SELECT :s1 = (SELECT sum(v + 1) FROM rl_s) AND :s2 = (SELECT sum(v + 2) FROM rl_s) AS right, rl_reason() AS answer;
-- a plan made under a larger budget falls back when it runs
RESET ROLE;
SET approx_gpu.sample_max_state = '1MB';
SET ROLE regress_rl_reader;
PREPARE rl_p AS SELECT approx_sum(v + 1) AS s1, approx_sum(v + 2) AS s2 FROM rl_s;
EXECUTE rl_p \gset
SELECT :s1 = (SELECT sum(v + 1) FROM rl_s) AND :s2 = (SELECT sum(v + 2) FROM rl_s) AS right, rl_reason() AS answer;
RESET ROLE;
SET approx_gpu.sample_max_state = '800kB';
SET ROLE regress_rl_reader;
EXECUTE rl_p \gset
SELECT :s1 = (SELECT sum(v + 1) FROM rl_s) AND :s2 = (SELECT sum(v + 2) FROM rl_s) AS right, rl_reason() AS answer;
DEALLOCATE rl_p;
RESET ROLE;
RESET approx_gpu.sample_max_state;
-- The kept spreads are bounded by bytes: eight measures (96 kB each) are
-- kept under the default 16 MB; under 256 kB at most that is kept, and a
-- spread larger than the setting is not kept at all. The answers (and
-- their intervals) are the same either way.
SET ROLE regress_rl_reader;
CREATE TEMP TABLE rl_a1 AS
  SELECT approx_sum_ci(v + 1)::text AS a1, approx_sum_ci(v + 3)::text AS a3, approx_sum_ci(v + 5)::text AS a5,
         approx_sum_ci(v + 7)::text AS a7, approx_sum(v + 2) AS a2, approx_sum(v + 4) AS a4, approx_sum(v + 6) AS a6,
         approx_sum(v + 8) AS a8 FROM rl_s;
SELECT rl_reason() AS answer;
SELECT entries, bytes <= 16 * 1024 * 1024 AS within FROM rl_spread_cache();
RESET ROLE;
SET approx_gpu.sample_spread_cache_size = '256kB';
SET ROLE regress_rl_reader;
CREATE TEMP TABLE rl_a2 AS
  SELECT approx_sum_ci(v + 1)::text AS a1, approx_sum_ci(v + 3)::text AS a3, approx_sum_ci(v + 5)::text AS a5,
         approx_sum_ci(v + 7)::text AS a7, approx_sum(v + 2) AS a2, approx_sum(v + 4) AS a4, approx_sum(v + 6) AS a6,
         approx_sum(v + 8) AS a8 FROM rl_s;
SELECT rl_reason() AS answer;
SELECT entries BETWEEN 1 AND 2 AS some_kept, bytes <= 256 * 1024 AS within FROM rl_spread_cache();
RESET ROLE;
SET approx_gpu.sample_spread_cache_size = '64kB';
SET ROLE regress_rl_reader;
CREATE TEMP TABLE rl_a3 AS
  SELECT approx_sum_ci(v + 1)::text AS a1, approx_sum_ci(v + 3)::text AS a3, approx_sum_ci(v + 5)::text AS a5,
         approx_sum_ci(v + 7)::text AS a7, approx_sum(v + 2) AS a2, approx_sum(v + 4) AS a4, approx_sum(v + 6) AS a6,
         approx_sum(v + 8) AS a8 FROM rl_s;
SELECT rl_reason() AS answer;
SELECT * FROM rl_spread_cache();
SELECT count(DISTINCT (a1, a2, a3, a4, a5, a6, a7, a8)) AS distinct_answers, count(*) AS runs
  FROM (SELECT * FROM rl_a1 UNION ALL SELECT * FROM rl_a2 UNION ALL SELECT * FROM rl_a3) a;
RESET ROLE;
RESET approx_gpu.sample_spread_cache_size;
-- What a role may build on tables it does not own is bounded (sample rows
-- of all its synopses of such tables, approx_gpu.max_synopsis_rows_per_role);
-- a rebuild does not count its own old sample; the table's owner is not bounded.
SET approx_gpu.max_synopsis_rows_per_role = 5000;
SET ROLE regress_rl_reader;
SELECT approx_gpu.create_synopsis('rl_s_more', 'rl_s', ARRAY['u', 'v'], 3000);
SELECT (approx_gpu.create_synopsis('rl_s_small', 'rl_s', ARRAY['u', 'v'], 2000))->>'m' AS m;
SELECT approx_gpu.create_synopsis('rl_s_two', 'rl_s', ARRAY['u', 'v'], 2);
SELECT (approx_gpu.refresh_synopsis('rl_s_syn'))->>'m' AS m;
RESET ROLE;
SELECT (approx_gpu.create_synopsis('rl_s_owner', 'rl_s', ARRAY['u', 'v'], 3000))->>'m' AS m;
RESET approx_gpu.max_synopsis_rows_per_role;
SELECT approx_gpu.drop_synopsis('rl_s_owner');
SET ROLE regress_rl_reader;
SELECT approx_gpu.drop_synopsis('rl_s_syn'), approx_gpu.drop_synopsis('rl_s_small');
RESET approx_gpu.box_path;
DROP TABLE rl_a1, rl_a2, rl_a3;
RESET ROLE;
DROP FUNCTION rl_spread_cache(), rl_reason();
DROP TABLE rl_s;
DROP OWNED BY regress_rl_reader;
DROP ROLE regress_rl_reader;
