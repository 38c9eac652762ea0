-- Nothing to qualify (issue 27 item 4): the other suites run on 0.5's layout
-- (CREATE EXTENSION approx_gpu SCHEMA approx_gpu, test/lib.sh); this one
-- installs the extension as a user does, in databases of its own: with no
-- SCHEMA (user-facing objects in public, used unqualified), and into a schema
-- that is not on search_path (used qualified). Internal objects are in
-- approx_gpu_internal either way. Prints booleans and answer paths only.
SELECT current_database() AS regress_db \gset
SET client_min_messages = warning;
DROP DATABASE IF EXISTS approx_schema_default;
DROP DATABASE IF EXISTS approx_schema_custom;
DROP ROLE IF EXISTS regress_schema_user;
RESET client_min_messages;
CREATE DATABASE approx_schema_default TEMPLATE template0;
CREATE DATABASE approx_schema_custom TEMPLATE template0;
CREATE ROLE regress_schema_user;

-- ---- the default layout: CREATE EXTENSION approx_gpu; ------------------------------
\c approx_schema_default
SET search_path = "$user", public;
CREATE EXTENSION approx_gpu;
SELECT e.extnamespace::regnamespace AS installed_into FROM pg_extension e WHERE e.extname = 'approx_gpu';
-- where the objects are: user-facing ones in public, internal ones apart
CREATE TEMP VIEW members AS
SELECT d.classid, d.objid, coalesce(p.pronamespace, c.relnamespace, t.typnamespace) AS nsp,
       coalesce(p.proname, c.relname, t.typname) AS name
  FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'approx_gpu'
  LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
  LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
  LEFT JOIN pg_type t ON d.classid = 'pg_type'::regclass AND t.oid = d.objid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e';
SELECT bool_and(nsp = 'public'::regnamespace) AS user_facing_in_public
  FROM members WHERE name IN ('approx_count', 'approx_sum', 'approx_avg', 'approx_count_ci', 'approx_sum_ci',
                              'approx_avg_ci', 'approx_percentile_cont', 'create_synopsis', 'synopsis_status',
                              'last_run', 'kde_synopsis_agg', 'topk', 'synopses', 'kde_synopsis', 'approx_estimate');
SELECT bool_and(nsp = 'approx_gpu_internal'::regnamespace) AS internal_apart
  FROM members WHERE name IN ('synopsis_values', 'sample_count', 'sample_sum_ci', 'sample_percentile_disc',
                              'aqp_support', 'aqp_count_trans', 'aqp_sample_combine', 'synopses_drop_relations',
                              'synopses_check_insert', 'kde_synopsis_sfunc', 'topk_sfunc');
SELECT count(*) AS internal_looking_in_public FROM members
 WHERE nsp = 'public'::regnamespace AND (name LIKE 'aqp\_%' OR name LIKE 'sample\_%' OR name LIKE '%\_sfunc'
                                         OR name LIKE 'synopses\_%' OR name = 'synopsis_values');
SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'approx_gpu') AS no_approx_gpu_schema,
       has_schema_privilege('regress_schema_user', 'approx_gpu_internal', 'USAGE') AS internal_usage,
       has_schema_privilege('regress_schema_user', 'approx_gpu_internal', 'CREATE') AS internal_create;
-- a role other than the owner cannot create objects among the internal ones
SET ROLE regress_schema_user;
CREATE FUNCTION approx_gpu_internal.sample_count(int) RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE TABLE approx_gpu_internal.intruder (a int);
RESET ROLE;

-- unqualified: a table synopsis answers from its boxes and from its sample
SET approx_gpu.random_seed = 4;
CREATE TABLE t AS SELECT i AS id, i % 20 AS k, ((i * 7919) % 1000)::float8 AS x,
                         CASE WHEN i % 3 = 0 THEN 'alpha' ELSE 'beta' END AS note
  FROM generate_series(1, 20000) i;
ANALYZE t;
SELECT create_synopsis('t_syn', 't'::regclass, ARRAY['x', 'k']::name[], 4000, 'cdf', 'never') IS NOT NULL AS created;
CREATE FUNCTION answer() RETURNS text LANGUAGE sql AS $$
SELECT coalesce(last_run()->>'answered_from', '-') || coalesce(': ' || (last_run()->>'reason'), '') $$;
CREATE TEMP TABLE b1 AS SELECT approx_count(*) AS n, approx_sum(x) AS s, approx_avg_ci(x) AS a FROM t WHERE x < 500;
SELECT answer();
SELECT abs(n / (SELECT count(*) FROM t WHERE x < 500) - 1) < 0.1 AS count_close,
       abs(s / (SELECT sum(x) FROM t WHERE x < 500) - 1) < 0.1 AS sum_close,
       (a).lower <= (a).estimate AND (a).estimate <= (a).upper AS ci_ordered FROM b1;
CREATE TEMP TABLE s1 AS SELECT approx_count(*) AS n, approx_sum_ci(x) AS s FROM t WHERE note LIKE 'al%' OR k = 3;
SELECT answer();
SELECT abs(n / (SELECT count(*) FROM t WHERE note LIKE 'al%' OR k = 3) - 1) < 0.1 AS count_close,
       (s).lower < (s).estimate AND (s).estimate < (s).upper AS ci_ordered FROM s1;
-- the same with public off the path: the aggregates are known by OID, not by name
SET search_path = pg_catalog;
CREATE TEMP TABLE s2 AS SELECT public.approx_count(*) AS n FROM public.t WHERE note = 'beta' OR k = 1;
SELECT public.last_run()->>'answered_from' AS answered_from;
RESET search_path;
SELECT abs(n / (SELECT count(*) FROM t WHERE note = 'beta' OR k = 1) - 1) < 0.1 AS count_close FROM s2;
-- a sample relation was made, in approx_gpu_samples
SELECT count(*) AS sample_relations FROM pg_class WHERE relnamespace = 'approx_gpu_samples'::regnamespace AND relkind = 'r';
-- DROP EXTENSION (the table synopsis still there) leaves nothing of it behind
DROP TABLE b1, s1;
DROP EXTENSION approx_gpu;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname IN ('approx_gpu_internal', 'approx_gpu_samples');
SELECT count(*) AS functions_left FROM pg_proc WHERE proname IN ('approx_count', 'sample_count', 'aqp_support');

-- ---- a schema not on search_path: CREATE EXTENSION approx_gpu SCHEMA analytics; ------
\c approx_schema_custom
CREATE SCHEMA analytics;
CREATE EXTENSION approx_gpu SCHEMA analytics;
SELECT e.extnamespace::regnamespace AS installed_into FROM pg_extension e WHERE e.extname = 'approx_gpu';
SELECT count(*) AS in_public FROM pg_proc WHERE pronamespace = 'public'::regnamespace;
SET search_path = public;
SET approx_gpu.random_seed = 4;
CREATE TABLE t AS SELECT i AS id, i % 20 AS k, ((i * 7919) % 1000)::float8 AS x,
                         CASE WHEN i % 3 = 0 THEN 'alpha' ELSE 'beta' END AS note
  FROM generate_series(1, 20000) i;
ANALYZE t;
SELECT analytics.create_synopsis('t_syn', 't'::regclass, ARRAY['x', 'k']::name[], 4000, 'cdf', 'never')
       IS NOT NULL AS created;
SELECT (analytics.synopsis_status('t_syn')->>'status') AS status;
CREATE TEMP TABLE c1 AS SELECT analytics.approx_count(*) AS n FROM t WHERE x < 500;
SELECT coalesce(analytics.last_run()->>'answered_from', '-') AS answered_from;
SELECT abs(n / (SELECT count(*) FROM t WHERE x < 500) - 1) < 0.1 AS count_close FROM c1;
CREATE TEMP TABLE c2 AS SELECT analytics.approx_sum(x) AS s FROM t WHERE note LIKE 'al%' OR k = 3;
SELECT coalesce(analytics.last_run()->>'answered_from', '-') AS answered_from;
SELECT abs(s / (SELECT sum(x) FROM t WHERE note LIKE 'al%' OR k = 3) - 1) < 0.1 AS sum_close FROM c2;
SELECT analytics.drop_synopsis('t_syn');
SELECT count(*) AS sample_relations FROM pg_class WHERE relnamespace = 'approx_gpu_samples'::regnamespace AND relkind = 'r';
DROP EXTENSION approx_gpu;
SELECT count(*) AS schemas_left FROM pg_namespace WHERE nspname IN ('approx_gpu_internal', 'approx_gpu_samples');

-- ---- clean up ------------------------------------------------------------------------
\c :regress_db
DROP DATABASE approx_schema_default;
DROP DATABASE approx_schema_custom;
DROP ROLE regress_schema_user;
