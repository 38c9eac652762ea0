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
