-- Hostile inputs for every SQL entry point of the extension: every
-- statement below ends in a result or in an ERROR with a proper SQLSTATE --
-- never XX000 (internal error), never a crash.
--
-- Part 1 (generated from the catalog): for each function and aggregate of the
-- extension (pg_proc rows that depend on it) a base call with valid arguments
-- (hostile_base below; a test fails when an entry point has none), then the
-- same call with each argument in turn replaced by every hostile value of its
-- type (hostile_value: NULL, empty and NULL-element arrays, lower bounds other
-- than 1, 2-D and 3-D arrays, NaN, +-Infinity, 1e308, denormals, 0, negative
-- and 2^31-1 sizes, empty / unknown / malformed texts and queries), and once
-- with every argument NULL. Each call runs in a subtransaction
-- (pg_temp.outcome); one TAP line per entry point lists the calls whose
-- SQLSTATE is not proper.
-- Part 2 (hand-written): inner queries that drop or alter what the call uses
-- or call the extension again, malformed synopsis text and binary forms,
-- parallel aggregates with extreme arguments, cancellation.
-- Part 3: the server did not crash-restart (postmaster start time and this
-- backend unchanged; test/run also greps the server log).
--
-- Known defects fixed on other branches are skipped (pgTAP skip) with the
-- branch named; enable them after the merge.
\ir preamble.psql
SET search_path = approx_gpu, approx_gpu_internal, public;
SET jit = off;
SET approx_gpu.random_seed = 11;
-- tests written out below (besides one per entry point and one per known defect)
\set hand_tests 72
BEGIN;

-- ---- sentinel: the postmaster's start time and this backend -------------------------
-- (a crash-restart keeps the postmaster's start time but restarts every
-- auxiliary process)
CREATE TEMP TABLE hostile_sentinel AS SELECT pg_postmaster_start_time() AS started, pg_backend_pid() AS pid,
  ARRAY(SELECT pid FROM pg_stat_activity WHERE backend_type IN ('checkpointer', 'background writer', 'walwriter') ORDER BY backend_type) AS aux;

-- ---- helpers ---------------------------------------------------------------------------
-- 'ok' or 'SQLSTATE message' of one statement, run in a subtransaction.
CREATE FUNCTION pg_temp.outcome(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE stmt;
  RETURN 'ok';
EXCEPTION WHEN OTHERS OR query_canceled THEN
  RETURN SQLSTATE || ' ' || SQLERRM;
END $$;

-- The SQLSTATE alone ('ok' when it succeeded).
CREATE FUNCTION pg_temp.state(stmt text) RETURNS text LANGUAGE sql AS $$
  SELECT split_part(pg_temp.outcome(stmt), ' ', 1) $$;

-- A proper outcome: a result, or an ERROR of a class that names what is wrong
-- with the input or the request (data exception, integrity, syntax/access,
-- insufficient resources, program limit, object state, feature not supported,
-- a statement_timeout) -- not internal (XX), not system (58), not an
-- undefined class.
CREATE FUNCTION pg_temp.proper(outcome text) RETURNS boolean LANGUAGE sql AS $$
  SELECT outcome = 'ok' OR (left(outcome, 2) IN ('22', '23', '2B', '2D', '25', '2F', '39', '3F', '40', '42', '53', '54', '55', '57', '0A')
                            AND left(outcome, 5) <> 'XX000') $$;

-- ---- fixtures ------------------------------------------------------------------------------
CREATE TEMP TABLE hostile_t (id int PRIMARY KEY, a float8, b float8, k bigint, v bigint);
INSERT INTO hostile_t SELECT g, (g * 37 % 101)::float8, (g * 17 % 53)::float8 + 0.5, g % 13, g FROM generate_series(1, 200) g;
-- a table synopsis needs a table that outlives the session (dropped at the end)
DROP TABLE IF EXISTS public.hostile_perm;
CREATE TABLE public.hostile_perm AS SELECT a, b, k FROM hostile_t;
CREATE TEMP TABLE hostile_noidx (id int, a float8);
INSERT INTO hostile_noidx VALUES (1, 1), (2, 2);
CREATE TEMP VIEW hostile_view AS SELECT * FROM hostile_t;
CREATE TEMP SEQUENCE hostile_seq;
CREATE TYPE pg_temp.hostile_comp AS (id int, a float8);
CREATE TEMP TABLE hostile_part (id int PRIMARY KEY, a float8, b float8) PARTITION BY RANGE (id);
CREATE TEMP TABLE hostile_part_1 PARTITION OF hostile_part FOR VALUES FROM (0) TO (1000);
INSERT INTO hostile_part SELECT id, a, b FROM hostile_t;
CREATE TEMP TABLE hostile_syn AS
  SELECT kde_synopsis_agg(ARRAY[a, b], 100) AS s FROM hostile_t;
CREATE TEMP TABLE hostile_syn1 AS
  SELECT kde_synopsis_agg(ARRAY[a], 50, 'plugin', 'never') AS s FROM hostile_t;
\o /dev/null
SELECT create_synopsis('hostile_named', 'SELECT a, b FROM hostile_t', 100);
SELECT create_synopsis('hostile_scratch', 'SELECT a, b FROM hostile_t', 100);
SELECT mo_create('hostile_mo', 0, 0, 100, 100, 8, 8);
SELECT mo_load('hostile_mo', 'SELECT id, a, b FROM hostile_t');
SELECT mo_create('hostile_mo_scratch', 0, 0, 100, 100, 8, 8);
\o

-- ---- part 1: generated calls -------------------------------------------------------------
-- Valid arguments of each entry point (SQL expressions; aggregates see the
-- rows g = 1..8).
CREATE TEMP TABLE hostile_base (fn regprocedure PRIMARY KEY, args text[]);
INSERT INTO hostile_base VALUES
  ('device_info()', '{}'),
  ('gpu_service_info()', '{}'),
  ('last_run()', '{}'),
  ('kde_bandwidth(float8[],text)', $${"'{1,2,4,7,11,16,22}'::float8[]","'plugin'"}$$),
  ('kde_lscv(float8[],int,text)', $${"'{{1,2},{2,5},{4,1},{7,3},{11,8},{16,2}}'::float8[]","20","'full'"}$$),
  ('kde_bandwidth_sfunc(internal,float8)', $${"NULL","1.5"}$$),
  ('kde_bandwidth_sfunc(internal,float8,text)', $${"NULL","1.5","'plugin'"}$$),
  ('kde_lscv_sfunc(internal,float8[])', $${"NULL","'{1,2}'::float8[]"}$$),
  ('kde_lscv_sfunc(internal,float8[],int)', $${"NULL","'{1,2}'::float8[]","20"}$$),
  ('kde_points_combine(internal,internal)', $${"NULL","NULL"}$$),
  ('kde_points_serial(internal)', $${"NULL"}$$),
  ('kde_points_deserial(bytea,internal)', $${"'\\x00'::bytea","NULL"}$$),
  ('kde_bandwidth_final(internal)', $${"NULL"}$$),
  ('kde_lscv_final(internal)', $${"NULL"}$$),
  ('kde_bandwidth_agg(float8)', $${"(g * g)::float8"}$$),
  ('kde_bandwidth_agg(float8,text)', $${"(g * g)::float8","'silverman'"}$$),
  ('kde_lscv_agg(float8[])', $${"ARRAY[g, g * g % 5]::float8[]"}$$),
  ('kde_lscv_agg(float8[],int)', $${"ARRAY[g, g * g % 5]::float8[]","20"}$$),
  ('kde_synopsis_in(cstring)', $${"(SELECT s::text FROM hostile_syn)::cstring"}$$),
  ('kde_synopsis_out(kde_synopsis)', $${"(SELECT s FROM hostile_syn)"}$$),
  ('kde_synopsis_recv(internal)', $${"NULL"}$$),
  ('kde_synopsis_send(kde_synopsis)', $${"(SELECT s FROM hostile_syn)"}$$),
  ('kde_synopsis_to_bytea(kde_synopsis)', $${"(SELECT s FROM hostile_syn)"}$$),
  ('kde_synopsis_from_bytea(bytea)', $${"(SELECT s::bytea FROM hostile_syn)"}$$),
  ('kde_synopsis_sfunc(internal,float8[])', $${"NULL","'{1,2}'::float8[]"}$$),
  ('kde_synopsis_sfunc(internal,float8[],int)', $${"NULL","'{1,2}'::float8[]","10"}$$),
  ('kde_synopsis_sfunc(internal,float8[],int,text)', $${"NULL","'{1,2}'::float8[]","10","'cdf'"}$$),
  ('kde_synopsis_sfunc(internal,float8[],int,text,text)', $${"NULL","'{1,2}'::float8[]","10","'cdf'","'auto'"}$$),
  ('kde_merge_sfunc(internal,kde_synopsis)', $${"NULL","(SELECT s FROM hostile_syn)"}$$),
  ('kde_synopsis_combine(internal,internal)', $${"NULL","NULL"}$$),
  ('kde_synopsis_serial(internal)', $${"NULL"}$$),
  ('kde_synopsis_deserial(bytea,internal)', $${"'\\x00'::bytea","NULL"}$$),
  ('kde_synopsis_final(internal)', $${"NULL"}$$),
  ('kde_merge_final(internal)', $${"NULL"}$$),
  ('kde_synopsis_agg(float8[])', $${"ARRAY[g, g * g % 5]::float8[]"}$$),
  ('kde_synopsis_agg(float8[],int)', $${"ARRAY[g, g * g % 5]::float8[]","5"}$$),
  ('kde_synopsis_agg(float8[],int,text)', $${"ARRAY[g, g * g % 5]::float8[]","5","'scott'"}$$),
  ('kde_synopsis_agg(float8[],int,text,text)', $${"ARRAY[g, g * g % 5]::float8[]","5","'scott'","'always'"}$$),
  ('kde_merge(kde_synopsis,kde_synopsis)', $${"(SELECT s FROM hostile_syn)","(SELECT s FROM hostile_syn)"}$$),
  ('kde_merge_agg(kde_synopsis)', $${"(SELECT s FROM hostile_syn)"}$$),
  ('approx_count(kde_synopsis,float8[],float8[])', $${"(SELECT s FROM hostile_syn)","'{10,1}'::float8[]","'{60,40}'::float8[]"}$$),
  ('approx_sum(kde_synopsis,int,float8[],float8[])', $${"(SELECT s FROM hostile_syn)","1","'{10,1}'::float8[]","'{60,40}'::float8[]"}$$),
  ('approx_avg(kde_synopsis,int,float8[],float8[])', $${"(SELECT s FROM hostile_syn)","2","'{10,1}'::float8[]","'{60,40}'::float8[]"}$$),
  ('approx_count_ci(kde_synopsis,float8[],float8[],float8)', $${"(SELECT s FROM hostile_syn)","'{10,1}'::float8[]","'{60,40}'::float8[]","0.9"}$$),
  ('approx_sum_ci(kde_synopsis,int,float8[],float8[],float8)', $${"(SELECT s FROM hostile_syn)","1","'{10,1}'::float8[]","'{60,40}'::float8[]","0.9"}$$),
  ('approx_avg_ci(kde_synopsis,int,float8[],float8[],float8)', $${"(SELECT s FROM hostile_syn)","2","'{10,1}'::float8[]","'{60,40}'::float8[]","0.9"}$$),
  ('approx_count_many(kde_synopsis,float8[],float8[])', $${"(SELECT s FROM hostile_syn)","'{{10,1},{0,0}}'::float8[]","'{{60,40},{5,5}}'::float8[]"}$$),
  ('approx_sum_many(kde_synopsis,int,float8[],float8[])', $${"(SELECT s FROM hostile_syn)","1","'{{10,1},{0,0}}'::float8[]","'{{60,40},{5,5}}'::float8[]"}$$),
  ('approx_avg_many(kde_synopsis,int,float8[],float8[])', $${"(SELECT s FROM hostile_syn)","2","'{{10,1},{0,0}}'::float8[]","'{{60,40},{5,5}}'::float8[]"}$$),
  ('kde_density(kde_synopsis,float8[])', $${"(SELECT s FROM hostile_syn)","'{50,25}'::float8[]"}$$),
  ('kde_synopsis_info(kde_synopsis)', $${"(SELECT s FROM hostile_syn)"}$$),
  ('create_synopsis(text,text,int,text,text)', $${"format('hostile_new_%s', nextval('hostile_seq'))","'SELECT a, b FROM hostile_t'","50","'cdf'","'auto'"}$$),
  ('create_synopsis(text,regclass,name[],int,text,text,name[],boolean)', $${"format('hostile_new_%s', nextval('hostile_seq'))","'hostile_perm'::regclass","'{a,b}'::name[]","50","'cdf'","'auto'","'{k}'::name[]","true"}$$),
  ('synopsis_status(text)', $${"'hostile_named'"}$$),
  ('synopses_drop_relations()', '{}'),
  ('synopses_follow_renames()', '{}'),
  ('synopses_drop_samples()', '{}'),
  ('synopses_check_insert()', '{}'),
  ('approx_count()', '{}'),
  ('approx_count_ci()', '{}'),
  ('approx_sum(float8)', $${"g::float8"}$$),
  ('approx_avg(float8)', $${"g::float8"}$$),
  ('approx_sum_ci(float8)', $${"g::float8"}$$),
  ('approx_avg_ci(float8)', $${"g::float8"}$$),
  ('aqp_support(internal)', $${"NULL"}$$),
  ('aqp_count_trans(bigint)', $${"3"}$$),
  ('aqp_sum_trans(float8,float8)', $${"1.5","2"}$$),
  ('aqp_avg_trans(float8[],float8)', $${"'{2,3,5}'::float8[]","2"}$$),
  ('aqp_count_final(bigint)', $${"5"}$$),
  ('aqp_count_ci_final(bigint)', $${"5"}$$),
  ('aqp_sum_ci_final(float8)', $${"1.5"}$$),
  ('aqp_avg_ci_final(float8[])', $${"'{2,3,5}'::float8[]"}$$),
  ('approx_count("any")', $${"g"}$$),
  ('approx_count_ci("any")', $${"g"}$$),
  ('aqp_count_value_trans(bigint,"any")', $${"3","1"}$$),
  ('approx_percentile_cont(float8,float8)', $${"0.5","g::float8"}$$),
  ('approx_percentile_cont_ci(float8,float8)', $${"0.5","g::float8"}$$),
  ('approx_percentile_disc(float8,float8)', $${"0.5","g::float8"}$$),
  ('approx_percentile_disc_ci(float8,float8)', $${"0.5","g::float8"}$$),
  ('aqp_ordered_set_trans(internal,float8)', $${"NULL","1.5"}$$),
  ('aqp_percentile_cont_final(internal,float8)', $${"NULL","0.5"}$$),
  ('aqp_percentile_cont_ci_final(internal,float8)', $${"NULL","0.5"}$$),
  ('aqp_percentile_disc_final(internal,float8)', $${"NULL","0.5"}$$),
  ('aqp_percentile_disc_ci_final(internal,float8)', $${"NULL","0.5"}$$),
  ('sample_count(int,oid)', $${"1","'hostile_t'::regclass::oid"}$$),
  ('sample_count_ci(int,oid)', $${"1","'hostile_t'::regclass::oid"}$$),
  ('sample_sum(float8,int,oid,int)', $${"g::float8","1","'hostile_t'::regclass::oid","0"}$$),
  ('sample_sum_ci(float8,int,oid,int)', $${"g::float8","1","'hostile_t'::regclass::oid","0"}$$),
  ('sample_avg(float8,int,oid,int)', $${"g::float8","1","'hostile_t'::regclass::oid","0"}$$),
  ('sample_avg_ci(float8,int,oid,int)', $${"g::float8","1","'hostile_t'::regclass::oid","0"}$$),
  ('sample_percentile_cont(float8,int,oid,float8)', $${"g::float8","1","'hostile_t'::regclass::oid","0.5"}$$),
  ('sample_percentile_cont_ci(float8,int,oid,float8)', $${"g::float8","1","'hostile_t'::regclass::oid","0.5"}$$),
  ('sample_percentile_disc(float8,int,oid,float8)', $${"g::float8","1","'hostile_t'::regclass::oid","0.5"}$$),
  ('sample_percentile_disc_ci(float8,int,oid,float8)', $${"g::float8","1","'hostile_t'::regclass::oid","0.5"}$$),
  ('aqp_sample_count_trans(internal,int,oid)', $${"NULL","1","'hostile_t'::regclass::oid"}$$),
  ('aqp_sample_sum_trans(internal,float8,int,oid,int)', $${"NULL","1.5","1","'hostile_t'::regclass::oid","0"}$$),
  ('aqp_sample_values_trans(internal,float8,int,oid,float8)', $${"NULL","1.5","1","'hostile_t'::regclass::oid","0.5"}$$),
  ('aqp_sample_combine(internal,internal)', $${"NULL","NULL"}$$),
  ('aqp_sample_serial(internal)', $${"NULL"}$$),
  ('aqp_sample_deserial(bytea,internal)', $${"'\\x00'::bytea","NULL"}$$),
  ('aqp_sample_count_final(internal)', $${"NULL"}$$),
  ('aqp_sample_count_ci_final(internal)', $${"NULL"}$$),
  ('aqp_sample_sum_final(internal)', $${"NULL"}$$),
  ('aqp_sample_sum_ci_final(internal)', $${"NULL"}$$),
  ('aqp_sample_avg_final(internal)', $${"NULL"}$$),
  ('aqp_sample_avg_ci_final(internal)', $${"NULL"}$$),
  ('aqp_sample_cont_final(internal)', $${"NULL"}$$),
  ('aqp_sample_cont_ci_final(internal)', $${"NULL"}$$),
  ('aqp_sample_disc_final(internal)', $${"NULL"}$$),
  ('aqp_sample_disc_ci_final(internal)', $${"NULL"}$$),
  ('refresh_synopsis(text)', $${"'hostile_scratch'"}$$),
  ('drop_synopsis(text)', $${"'hostile_scratch'"}$$),
  ('drop_synopsis(text,regrole)', $${"'hostile_scratch'","CURRENT_USER::regrole"}$$),
  ('approx_count(text,jsonb)', $${"'hostile_named'","'{\"a\": [10, 60], \"b\": [null, 40]}'::jsonb"}$$),
  ('approx_sum(text,text,jsonb)', $${"'hostile_named'","'a'","'{\"a\": [10, 60], \"b\": 3.5}'::jsonb"}$$),
  ('approx_avg(text,text,jsonb)', $${"'hostile_named'","'b'","'{\"a\": [10, 60]}'::jsonb"}$$),
  ('topk_sfunc(internal,bigint,float8,int)', $${"NULL","1","1.5","3"}$$),
  ('bottomk_sfunc(internal,bigint,float8,int)', $${"NULL","1","1.5","3"}$$),
  ('topk_combine(internal,internal)', $${"NULL","NULL"}$$),
  ('topk_serial(internal)', $${"NULL"}$$),
  ('topk_deserial(bytea,internal)', $${"'\\x00'::bytea","NULL"}$$),
  ('topk_final(internal)', $${"NULL"}$$),
  ('topk(bigint,float8,int)', $${"g::bigint","(g % 3)::float8","3"}$$),
  ('bottomk(bigint,float8,int)', $${"g::bigint","(g % 3)::float8","3"}$$),
  ('topk(regclass,name,name,int)', $${"'hostile_t'::regclass","'id'","'a'","5"}$$),
  ('bottomk(regclass,name,name,int)', $${"'hostile_t'::regclass","'id'","'b'","5"}$$),
  ('topk_nra(regclass,name,name[],int,int)', $${"'hostile_t'::regclass","'id'","'{a,b}'::name[]","5","16"}$$),
  ('hash_join(text,text)', $${"'SELECT k, v FROM hostile_t'","'SELECT k, -v FROM hostile_t WHERE id < 50'"}$$),
  ('hash_join_count(text,text)', $${"'SELECT k, v FROM hostile_t'","'SELECT k, -v FROM hostile_t WHERE id < 50'"}$$),
  ('hash_join(regclass,name,name,regclass,name,name)', $${"'hostile_t'::regclass","'k'","'v'","'hostile_part'::regclass","'id'","'id'"}$$),
  ('hash_join_count(regclass,name,regclass,name)', $${"'hostile_t'::regclass","'k'","'hostile_part'::regclass","'id'"}$$),
  ('transitive_closure(text)', $${"'SELECT id, id % 17 + 1 FROM hostile_t'"}$$),
  ('reachability_count(text)', $${"'SELECT id, id % 17 + 1 FROM hostile_t'"}$$),
  ('reachable(text,bigint)', $${"'SELECT id, id % 17 + 1 FROM hostile_t'","3"}$$),
  ('transitive_closure(regclass,name,name)', $${"'hostile_t'::regclass","'id'","'k'"}$$),
  ('reachability_count(regclass,name,name)', $${"'hostile_t'::regclass","'id'","'k'"}$$),
  ('reachable(regclass,name,name,bigint)', $${"'hostile_t'::regclass","'id'","'k'","3"}$$),
  ('mo_create(text,float8,float8,float8,float8,int,int)', $${"format('hostile_mo_new_%s', nextval('hostile_seq'))","0","0","10","10","4","4"}$$),
  ('mo_load(text,text)', $${"'hostile_mo'","'SELECT id, a, b FROM hostile_t WHERE id < 20'"}$$),
  ('mo_load(text,regclass,name,name,name)', $${"'hostile_mo'","'hostile_t'::regclass","'id'","'a'","'b'"}$$),
  ('mo_update(text,bigint[],float8[],float8[])', $${"'hostile_mo'","'{1,2}'::bigint[]","'{5,6}'::float8[]","'{7,8}'::float8[]"}$$),
  ('mo_delete(text,bigint[])', $${"'hostile_mo'","'{3,4}'::bigint[]"}$$),
  ('mo_range(text,float8,float8,float8,float8)', $${"'hostile_mo'","0","0","50","50"}$$),
  ('mo_range_count(text,float8[],float8[],float8[],float8[])', $${"'hostile_mo'","'{0,10}'::float8[]","'{0,10}'::float8[]","'{50,20}'::float8[]","'{50,20}'::float8[]"}$$),
  ('mo_info(text)', $${"'hostile_mo'"}$$),
  ('mo_drop(text)', $${"'hostile_mo_scratch'"}$$);

-- Hostile values by argument type (and, for text, by argument name): each
-- replaces one argument of a base call. NULL is added for every type.
CREATE TEMP TABLE hostile_value (typ regtype, argname text, val text);
INSERT INTO hostile_value (typ, val)
  SELECT 'float8[]'::regtype, v FROM unnest(ARRAY[
    $$'{}'::float8[]$$, $$'{NULL}'::float8[]$$, $$'{1,NULL,3}'::float8[]$$, $$'{NULL,NULL}'::float8[]$$,
    $$'[0:2]={1,2,3}'::float8[]$$, $$'[-5:-4]={10,20}'::float8[]$$, $$'{{1,2},{3,4}}'::float8[]$$,
    $$'[0:1][3:4]={{1,2},{3,4}}'::float8[]$$, $$'{{1,NULL},{3,4}}'::float8[]$$, $$'{{{1}}}'::float8[]$$,
    $$'{{1,2,3}}'::float8[]$$, $$'{{1},{2},{3}}'::float8[]$$,
    $$'{NaN}'::float8[]$$, $$'{1,NaN,2}'::float8[]$$, $$'{Infinity,1}'::float8[]$$, $$'{1,-Infinity}'::float8[]$$,
    $$'{-Infinity,Infinity}'::float8[]$$, $$'{1e308,-1e308,1}'::float8[]$$, $$'{1e308,1e308}'::float8[]$$,
    $$'{4.9e-324,1e-320,0}'::float8[]$$, $$'{4.9e-324,-4.9e-324}'::float8[]$$, $$'{0,0,0}'::float8[]$$, $$'{5}'::float8[]$$,
    $$array_fill(1::float8, ARRAY[40])$$, $$(SELECT array_agg(g::float8) FROM generate_series(1, 40) g)$$]) v
  UNION ALL SELECT 'float8'::regtype, v FROM unnest(ARRAY[
    $$'NaN'::float8$$, $$'Infinity'::float8$$, $$'-Infinity'::float8$$, '1e308::float8', '-1e308::float8',
    '4.9e-324::float8', '-4.9e-324::float8', '0::float8', '-1::float8', '1::float8', '2::float8']) v
  UNION ALL SELECT 'int'::regtype, v FROM unnest(ARRAY['0', '-1', '1', '2', '-2147483648', '2147483647', '100001']) v
  UNION ALL SELECT 'oid'::regtype, v FROM unnest(ARRAY['0::oid', '4294967295::oid', $$'pg_class'::regclass::oid$$]) v
  UNION ALL SELECT 'bigint'::regtype, v FROM unnest(ARRAY['0::bigint', '-1::bigint', '(-9223372036854775807 - 1)::bigint',
    '9223372036854775807::bigint']) v
  UNION ALL SELECT 'bigint[]'::regtype, v FROM unnest(ARRAY[
    $$'{}'::bigint[]$$, $$'{NULL}'::bigint[]$$, $$'{1,NULL}'::bigint[]$$, $$'[0:1]={1,2}'::bigint[]$$,
    $$'{{1},{2}}'::bigint[]$$, $$'{{{1}}}'::bigint[]$$, $$'{-9223372036854775808,9223372036854775807}'::bigint[]$$,
    $$'{1,1,1}'::bigint[]$$]) v
  UNION ALL SELECT 'jsonb'::regtype, v FROM unnest(ARRAY[
    $$'null'::jsonb$$, $$'[]'::jsonb$$, $$'{}'::jsonb$$, $$'"a"'::jsonb$$, $$'3'::jsonb$$, $$'[1, 2]'::jsonb$$,
    $$'{"a": [60, 10]}'::jsonb$$, $$'{"a": "x"}'::jsonb$$, $$'{"a": [1]}'::jsonb$$, $$'{"a": [1, 2, 3]}'::jsonb$$,
    $$'{"a": [null, null], "b": null}'::jsonb$$, $$'{"a": ["1", 2]}'::jsonb$$, $$'{"a": [1e400, -1e400]}'::jsonb$$,
    $$'{"a": [1e-400, 4.9e-324]}'::jsonb$$, $$'{"a": true}'::jsonb$$, $$'{"a": {"lo": 1}}'::jsonb$$,
    $$'{"a": [[1], [2]]}'::jsonb$$, $$'{"no_such": 1}'::jsonb$$, $$'{"": 1}'::jsonb$$, $$'{"a": 1, "a": 2}'::jsonb$$]) v
  UNION ALL SELECT 'kde_synopsis'::regtype, v FROM unnest(ARRAY[
    '(SELECT s FROM hostile_syn1)', '(SELECT kde_synopsis_agg(ARRAY[1, 2]::float8[]))',
    '(SELECT kde_synopsis_agg(ARRAY[g, g]::float8[], 2) FROM generate_series(1, 3) g)']) v
  UNION ALL SELECT 'bytea'::regtype, v FROM unnest(ARRAY[
    $$'\x'::bytea$$, $$'\x00'::bytea$$, $$'\x01'::bytea$$, $$'\xffffffffffffffffffffffff'::bytea$$,
    $$(SELECT substr(s::bytea, 1, 40) FROM hostile_syn)$$, $$(SELECT s::bytea || '\x00'::bytea FROM hostile_syn)$$,
    $$(SELECT overlay(s::bytea placing '\xff' from 1) FROM hostile_syn)$$]) v
  UNION ALL SELECT 'cstring'::regtype, v FROM unnest(ARRAY[
    $$''::cstring$$, $$'null'::cstring$$, $$'{}'::cstring$$, $$'[]'::cstring$$, $$'{"version": 99}'::cstring$$,
    $$'not json'::cstring$$, $$(SELECT left(s::text, 60) FROM hostile_syn)::cstring$$,
    $$(SELECT replace(s::text, '"N": 200', '"N": -1') FROM hostile_syn)::cstring$$]) v
  UNION ALL SELECT 'regclass'::regtype, v FROM unnest(ARRAY[
    $$'hostile_noidx'::regclass$$, $$'hostile_view'::regclass$$, $$'pg_class'::regclass$$,
    $$'approx_gpu.synopses'::regclass$$, $$'hostile_t_pkey'::regclass$$, $$'hostile_seq'::regclass$$,
    $$'hostile_comp'::regclass$$, $$'hostile_part'::regclass$$, $$0::oid::regclass$$, $$4294967295::oid::regclass$$]) v
  UNION ALL SELECT 'regrole'::regtype, v FROM unnest(ARRAY[
    $$0::oid::regrole$$, $$4294967295::oid::regrole$$, $$'pg_signal_backend'::regrole$$]) v
  UNION ALL SELECT 'name'::regtype, v FROM unnest(ARRAY[$$''::name$$, $$'no_such'::name$$, $$'ctid'::name$$, $$'a'::name$$]) v
  UNION ALL SELECT 'name[]'::regtype, v FROM unnest(ARRAY[
    $$'{}'::name[]$$, $$'{NULL}'::name[]$$, $$'{a,NULL}'::name[]$$, $$'{{a},{b}}'::name[]$$, $$'[0:1]={a,b}'::name[]$$,
    $$'{ctid}'::name[]$$, $$'{no_such}'::name[]$$, $$'{id}'::name[]$$, $$'{a,a}'::name[]$$,
    $$(SELECT array_agg('a'::name) FROM generate_series(1, 40))$$]) v;
-- text, by what the argument means
INSERT INTO hostile_value (typ, argname, val)
  SELECT 'text'::regtype, n, v FROM unnest(ARRAY['method', 'covariance', 'bandwidth', 'smoothing']) n,
    unnest(ARRAY[$$''$$, $$'no_such'$$, $$' plugin'$$, $$repeat('x', 100000)$$, $$E'plugin\\x01'$$]) v
  UNION ALL SELECT 'text'::regtype, 'name', v FROM unnest(ARRAY[
    $$''$$, $$'no_such'$$, $$repeat('n', 63)$$, $$repeat('n', 64)$$, $$repeat('n', 201)$$, $$repeat('n', 100000)$$,
    $$'hostile_named'$$, $$'hostile_mo'$$]) v
  UNION ALL SELECT 'text'::regtype, 'column_name', v FROM unnest(ARRAY[$$''$$, $$'no_such'$$, $$'A'$$]) v
  UNION ALL SELECT 'text'::regtype, q, v FROM unnest(ARRAY['query', 'build_query', 'probe_query', 'edges_query']) q,
    unnest(ARRAY[
      $$''$$, $$' '$$, $$';'$$, $$'SELECT'$$, $$'SELECT 1'$$, $$'SELECT 1, 2'$$, $$'SELECT 1, 2, 3'$$, $$'SELECT 1, 2, 3, 4'$$,
      $$'SELECT NULL, NULL'$$, $$'SELECT NULL, NULL, NULL'$$, $$'SELECT 1.5, 2'$$, $$'SELECT 1.5::numeric, 2.5::numeric'$$,
      $$'SELECT ''a'', ''b'''$$, $$'SELECT ''a'', 1, 2'$$, $$'SELECT 1::float8, ''NaN''::float8, ''Infinity''::float8'$$,
      $$'SELECT 1, ''Infinity''::float8, 1'$$, $$'SELECT 1, 1e308::float8, -1e308::float8'$$,
      $$'SELECT 1, 2 WHERE false'$$, $$'SELECT 1 AS a, 2 AS b, 3 AS c WHERE false'$$, $$'SELECT 1, 2 UNION ALL SELECT 1/0, 2'$$, $$'SELECT * FROM no_such_table'$$,
      $$'SELECT 1, 2; SELECT 3, 4'$$, $$'VALUES (1, 2)'$$, $$'TABLE hostile_t'$$, $$'CREATE TEMP TABLE hostile_x (a int)'$$,
      $$'COMMIT'$$, $$'SELECT $1, $2'$$, $$'SELECT -9223372036854775808::int8, 9223372036854775807::int8, 0'$$,
      $$'SELECT k, v FROM hostile_t FOR UPDATE'$$, $$'SELECT g, g + 1, g FROM generate_series(1, 3) g'$$]) v;

-- Generated calls known to fail today: not run, reported as pgTAP skips.
CREATE TEMP TABLE hostile_known (fn regprocedure, val text, reason text);
-- (none now: the last ones, topk_nra of OID 0 and create_synopsis of a query
-- without rows, were fixed; add a row here rather than delete a case)

-- One entry point: the base call, each argument replaced by each hostile
-- value of its type (and by NULL), and every argument NULL. Returns how many
-- calls ran and the ones whose outcome is not proper.
CREATE FUNCTION pg_temp.hostile_calls(f regprocedure, OUT calls int, OUT bad text[]) LANGUAGE plpgsql AS $$
DECLARE
  p pg_proc;
  base text[];
  types regtype[];
  names text[];
  variants text[][];
  a text[];
  i int;
  v text;
  stmt text;
  res text;
  fname text;
  nd int;  -- direct arguments of an ordered-set aggregate (NULL: not one)
BEGIN
  SELECT * INTO p FROM pg_proc WHERE oid = f;
  SELECT aggnumdirectargs INTO nd FROM pg_aggregate WHERE aggfnoid = f AND aggkind = 'o';
  SELECT b.args INTO base FROM hostile_base b WHERE b.fn = f;
  fname := quote_ident(p.proname);
  types := ARRAY(SELECT t::regtype FROM unnest(p.proargtypes::oid[]) t);
  names := coalesce(p.proargnames, array_fill(''::text, ARRAY[p.pronargs]));
  calls := 0;
  bad := '{}';
  -- the base call, then one argument at a time, then every argument NULL
  FOR i IN 0 .. p.pronargs + 1 LOOP
    FOR v IN
      SELECT x FROM (
        SELECT NULL::text AS x WHERE i = 0 OR i = p.pronargs + 1
        UNION ALL SELECT format('NULL::%s', types[i]) WHERE i BETWEEN 1 AND p.pronargs AND types[i] <> 'internal'::regtype
        UNION ALL SELECT h.val FROM hostile_value h
          WHERE i BETWEEN 1 AND p.pronargs AND h.typ = types[i] AND (h.argname IS NULL OR h.argname = names[i])
            AND NOT EXISTS (SELECT 1 FROM hostile_known k WHERE k.fn = f AND k.val = h.val)) c
    LOOP
      a := base;
      IF i BETWEEN 1 AND p.pronargs THEN a[i] := v; END IF;
      IF i = p.pronargs + 1 THEN
        IF p.pronargs = 0 THEN CONTINUE; END IF;
        a := ARRAY(SELECT CASE WHEN t = 'internal'::regtype THEN 'NULL' ELSE format('NULL::%s', t) END FROM unnest(types) t);
      END IF;
      stmt := CASE
        WHEN nd IS NOT NULL THEN format('SELECT (%s(%s) WITHIN GROUP (ORDER BY %s)) IS NULL FROM generate_series(1, 8) g',
          fname, array_to_string(a[1:nd], ', '), array_to_string(a[nd + 1:], ', '))
        WHEN p.prokind = 'a' THEN format('SELECT (%s(%s)) IS NULL FROM generate_series(1, 8) g', fname, array_to_string(a, ', '))
        WHEN p.proretset THEN format('SELECT count(*) FROM %s(%s)', fname, array_to_string(a, ', '))
        ELSE format('SELECT (%s(%s)) IS NULL', fname, array_to_string(a, ', ')) END;
      res := pg_temp.outcome(stmt);
      calls := calls + 1;
      INSERT INTO hostile_log VALUES (f, stmt, res);
      IF NOT pg_temp.proper(res) THEN bad := bad || (stmt || ' => ' || res); END IF;
    END LOOP;
  END LOOP;
END $$;
CREATE TEMP TABLE hostile_log (fn regprocedure, stmt text, outcome text);

-- The entry points: every function and aggregate of the extension.
CREATE TEMP TABLE hostile_fn AS
  SELECT p.oid::regprocedure AS fn FROM pg_proc p
    JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
    JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'approx_gpu';

SELECT plan((SELECT count(*)::int FROM hostile_fn) + (SELECT count(*)::int FROM hostile_known) + :hand_tests);

SELECT is(ARRAY(SELECT fn::text FROM hostile_fn EXCEPT SELECT fn::text FROM hostile_base ORDER BY 1), '{}'::text[],
          'every entry point of the extension has a base call in hostile_base');

-- (mo_drop and drop_synopsis last: their hostile names drop the fixtures)
SELECT ok(cardinality(r.bad) = 0, format('hostile inputs: %s (%s calls)', h.fn, r.calls))
       || CASE WHEN cardinality(r.bad) > 0 THEN E'\n' || diag(array_to_string(r.bad, E'\n')) ELSE '' END
  FROM hostile_fn h, LATERAL pg_temp.hostile_calls(h.fn) r
  ORDER BY h.fn::text ~ 'drop', h.fn::text;
SELECT skip(format('%s with %s: %s', fn, val, reason)) FROM hostile_known ORDER BY fn::text, val;

-- ---- part 2: hand-written cases ------------------------------------------------------------
-- Runs any statement (DDL included) from inside an inner query.
CREATE FUNCTION pg_temp.run(cmd text) RETURNS int LANGUAGE plpgsql AS $$ BEGIN EXECUTE cmd; RETURN 1; END $$;
-- A procedure-like function that tries to end the transaction.
CREATE FUNCTION pg_temp.commit_now() RETURNS int LANGUAGE plpgsql AS $$ BEGIN COMMIT; RETURN 1; END $$;
CREATE TEMP TABLE hb (k bigint, v bigint);
INSERT INTO hb SELECT g % 10, g FROM generate_series(1, 100) g;
CREATE TEMP TABLE hp (k bigint, v bigint);
INSERT INTO hp SELECT g % 7, g FROM generate_series(1, 50) g;
CREATE TEMP TABLE he (s bigint, d bigint);
INSERT INTO he SELECT g, g + 1 FROM generate_series(1, 30) g;
CREATE TEMP TABLE hm (id bigint, x float8, y float8);
INSERT INTO hm SELECT g, g, g FROM generate_series(1, 20) g;
-- create_synopsis runs its query as the owner in a security-restricted
-- operation, where temporary objects are off limits: a plain table
CREATE TABLE public.hostile_syn_t (a float8, b float8);
INSERT INTO public.hostile_syn_t SELECT g, g % 7 FROM generate_series(1, 100) g;
\o /dev/null
SELECT create_synopsis('hostile_a', 'SELECT a, b FROM public.hostile_syn_t', 50);
SELECT create_synopsis('hostile_b', 'SELECT a, b FROM public.hostile_syn_t', 50);
SELECT create_synopsis('hostile_g', 'SELECT a, b FROM public.hostile_syn_t', 50);
SELECT mo_create('hostile_m', 0, 0, 100, 100, 4, 4);
SELECT mo_create('hostile_m2', 0, 0, 100, 100, 4, 4);
\o

-- hash_join / hash_join_count: inner queries that drop, alter or re-enter
SELECT is(pg_temp.state($$SELECT hash_join_count('SELECT k, pg_temp.run(''DROP TABLE hp'') FROM hb', 'SELECT k, v FROM hp')$$),
          '42P01', 'hash_join_count: the build query drops the probe table -> 42P01 for the probe query');
SELECT is(pg_temp.state($$SELECT hash_join_count('SELECT k, pg_temp.run(''DROP TABLE hb'') FROM hb', 'SELECT k, v FROM hp')$$),
          '55006', 'hash_join_count: the build query drops its own table -> 55006 (in use)');
SELECT is(pg_temp.state($$SELECT count(*) FROM hash_join('SELECT k, v FROM hb', 'SELECT k, pg_temp.run(''DROP TABLE hb'') FROM hp')$$),
          '42P01', 'hash_join: the probe query drops the build table (already read) -> its own query fails, 42P01');
SELECT is(pg_temp.state($$SELECT hash_join_count('SELECT k, pg_temp.run(''ALTER TABLE hp ALTER v TYPE text'') FROM hb', 'SELECT k, v FROM hp')$$),
          '42804', 'hash_join_count: the build query changes the probe column''s type -> 42804');
SELECT is(pg_temp.state($$SELECT hash_join_count('SELECT k, pg_temp.commit_now() FROM hb', 'SELECT k, v FROM hp')$$),
          '2D000', 'hash_join_count: an inner query that commits -> 2D000');
SELECT is(hash_join_count('SELECT k, hash_join_count(''SELECT k, v FROM hb'', ''SELECT k, v FROM hp'') FROM hb', 'SELECT k, v FROM hp'),
          (SELECT count(*) FROM hb JOIN hp USING (k)), 'hash_join_count re-entered from its own build query');
SELECT is((SELECT count(*) FROM hash_join('SELECT key, probe_value FROM approx_gpu.hash_join(''SELECT k, v FROM hb'', ''SELECT k, v FROM hp'')', 'SELECT k, v FROM hp')),
          (SELECT count(*) FROM (hb JOIN hp p1 USING (k)) JOIN hp p2 USING (k)), 'hash_join over hash_join: a nested SRF as the build query');
SELECT is(pg_temp.state($$SELECT hash_join('SELECT k, v FROM hb', 'SELECT k, v FROM hp')$$), 'ok',
          'hash_join in the select list');
-- Inner queries run read-only (they also run inside parallel operations such
-- as CREATE TABLE AS): a data-modifying one is refused, naming the argument.
SELECT is(pg_temp.state($$SELECT count(*) FROM hash_join('WITH d AS (DELETE FROM hb WHERE k = 1 RETURNING k, v) SELECT k, v FROM d', 'SELECT k, v FROM hp')$$),
          '22023', 'hash_join: a data-modifying build query (DELETE ... RETURNING) -> 22023');
SELECT is((SELECT count(*) FROM hb WHERE k = 1), 10::bigint, 'hash_join: the refused build query deleted nothing');
SELECT is(pg_temp.state($$SELECT hash_join_count('SELECT k, v FROM hb', 'SELECT k, v FROM hp WHERE approx_gpu.mo_drop(''hostile_nope'') IS NULL')$$),
          '42704', 'hash_join_count: the probe query calls mo_drop of an unknown index -> 42704');
SET LOCAL statement_timeout = '1s';
SELECT is(pg_temp.state($$SELECT hash_join_count('SELECT a, b FROM generate_series(1, 100000) a, generate_series(1, 100000) b', 'SELECT 1, 1')$$),
          '57014', 'hash_join_count: statement_timeout cancels a build query of 10^10 rows');
RESET statement_timeout;
SELECT is(pg_temp.state('SELECT 1'), 'ok', 'the session works after the cancel');

-- an ERROR while the engine hands rows to the tuplestore (spilling past
-- temp_file_limit): caught in the sink, rethrown after the engine is gone
SET LOCAL work_mem = '64kB';
SET LOCAL temp_file_limit = '200kB';
SELECT is(pg_temp.state($$SELECT count(*) FROM hash_join('SELECT 1, g FROM generate_series(1, 1000) g', 'SELECT 1, g FROM generate_series(1, 1000) g')$$),
          '53400', 'hash_join: the result spills past temp_file_limit inside the engine''s sink -> 53400');
SELECT is(pg_temp.state($$SELECT count(*) FROM transitive_closure('SELECT g, g + 1 FROM generate_series(1, 2000) g')$$),
          '53400', 'transitive_closure: the result spills past temp_file_limit while pairs are pulled -> 53400');
RESET temp_file_limit;
RESET work_mem;
SELECT is(hash_join_count('SELECT 1, g FROM generate_series(1, 1000) g', 'SELECT 1, g FROM generate_series(1, 1000) g'), 1000000::bigint,
          'the next join after the rethrown error works');

-- transitive_closure / reachability_count / reachable
SELECT is(pg_temp.state($$SELECT count(*) FROM transitive_closure('SELECT s, d + pg_temp.run(''DROP TABLE he'') FROM he')$$),
          '55006', 'transitive_closure: the edge query drops its own table -> 55006');
SELECT is(pg_temp.state($$SELECT count(*) FROM transitive_closure('SELECT s, d FROM he WHERE pg_temp.run(''TRUNCATE he'') = 1')$$),
          '55006', 'transitive_closure: the edge query truncates its own table -> 55006');
SELECT is(reachability_count('SELECT s, reachability_count(''SELECT s, d FROM he'') FROM he WHERE s < 3'),
          2::bigint, 'reachability_count re-entered from its own edge query (edges 1 -> 465, 2 -> 465)');
SELECT is(pg_temp.state($$SELECT count(*) FROM reachable('WITH x AS (DELETE FROM he WHERE s > 25 RETURNING s, d) SELECT s, d FROM x', 26)$$),
          '22023', 'reachable: a data-modifying edge query (DELETE ... RETURNING) -> 22023');
SELECT is((SELECT count(*) FROM he WHERE s > 25), 5::bigint, 'reachable: the refused edge query deleted nothing');
SELECT is(pg_temp.state($$SELECT transitive_closure('SELECT s, d FROM he')$$), 'ok', 'transitive_closure in the select list');
SELECT is(pg_temp.state($$SELECT reachable('SELECT s, d FROM he', 1)$$), 'ok', 'reachable in the select list');
SELECT is((SELECT count(*) FROM generate_series(1, 3) g, LATERAL transitive_closure(format('SELECT s, d FROM he WHERE s <= %s', g * 5))),
          (SELECT sum(n * (n + 1) / 2) FROM (VALUES (5), (10), (15)) v(n))::bigint, 'transitive_closure rescanned in a LATERAL join');
SET LOCAL approx_gpu.closure_max_memory = '1kB';
SELECT is(pg_temp.state($$SELECT reachability_count('SELECT g, g + 1 FROM generate_series(1, 100000) g')$$),
          '54000', 'reachability_count past closure_max_memory -> 54000');
RESET approx_gpu.closure_max_memory;
SELECT is((SELECT count(*) FROM transitive_closure($$SELECT s, d FROM (VALUES (-9223372036854775808, 9223372036854775807),
            (9223372036854775807, -9223372036854775808), (0, 0), (NULL, 1), (1, NULL)) t(s, d)$$)),
          5::bigint, 'transitive_closure: int8 extremes, a self-loop and NULL endpoints');

-- named synopses: inner queries that drop, create or re-enter
SELECT is(pg_temp.state($$SELECT create_synopsis('hostile_c', 'SELECT a, b FROM public.hostile_syn_t WHERE (SELECT 1 FROM approx_gpu.drop_synopsis(''hostile_b'')) = 1')$$),
          'ok', 'create_synopsis: its query drops another synopsis');
-- (the state a racing session leaves: the insert finds the name taken)
SELECT is(pg_temp.state($$SELECT create_synopsis('hostile_d', 'SELECT a, b FROM public.hostile_syn_t WHERE (SELECT approx_gpu.create_synopsis(''hostile_d'', ''SELECT 1.0::float8'')) IS NOT NULL')$$),
          '42710', 'create_synopsis: its query creates the same name first -> 42710 (was a raw 23505)');
SELECT is(pg_temp.state($$SELECT create_synopsis('hostile_e', 'SELECT a, b + pg_temp.run(''DROP TABLE public.hostile_syn_t'') FROM public.hostile_syn_t')$$),
          '55006', 'create_synopsis: its query drops its own table -> 55006');
SELECT ok(pg_temp.proper(pg_temp.outcome($$SELECT create_synopsis('hostile_f', 'SELECT a, b FROM public.hostile_syn_t WHERE (SELECT 1 FROM approx_gpu.drop_synopsis(''hostile_g'')) = 1 AND (SELECT approx_gpu.approx_count(''hostile_g'', ''{}'')) > 0')$$)),
          'create_synopsis: its query drops a synopsis and then reads it');
SELECT is(pg_temp.state($$SELECT approx_count('hostile_a', '{}'), drop_synopsis('hostile_a') FROM generate_series(1, 2)$$),
          '42704', 'approx_count next to drop_synopsis of the same name in one statement -> 42704 on the second row');
-- a stored query that drops its own synopsis when refreshed (at creation there is nothing to drop)
SELECT create_synopsis('hostile_r', $q$SELECT a, b FROM public.hostile_syn_t WHERE (SELECT count(*) FROM
  (SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name = 'hostile_r') d) >= 0$q$) IS NOT NULL AS created_r \gset
SELECT is(pg_temp.state($$SELECT refresh_synopsis('hostile_r')$$), '55000',
          'refresh_synopsis: its query drops the same synopsis -> 55000 (was a silent no-op)');
DROP TABLE public.hostile_syn_t;
SELECT is(pg_temp.state($$SELECT refresh_synopsis('hostile_a')$$), '42P01', 'refresh_synopsis after its table was dropped -> 42P01');
SELECT is((SELECT approx_count('hostile_a', '{}')), 100::float8, 'a synopsis still answers after its table was dropped');

-- moving objects: inner queries that drop, load or re-enter
SELECT is(pg_temp.state($$SELECT mo_load('hostile_m', 'SELECT id, x, y FROM hm WHERE (SELECT approx_gpu.mo_drop(''hostile_m'')) IS NULL')$$),
          '55000', 'mo_load: its query drops the same index -> 55000 (was a use-after-free that crashed the server)');
SELECT mo_create('hostile_m', 0, 0, 100, 100, 4, 4) IS NOT NULL AS recreated \gset
SELECT is(pg_temp.state($$SELECT mo_load('hostile_m', 'SELECT id, x, y FROM hm WHERE (SELECT approx_gpu.mo_drop(''hostile_m2'')) IS NULL')$$),
          'ok', 'mo_load: its query drops another index');
SELECT is(mo_load('hostile_m', 'SELECT id, x, y FROM hm WHERE (SELECT approx_gpu.mo_update(''hostile_m'', ARRAY[1000]::bigint[], ARRAY[1.0], ARRAY[1.0])) = 1'),
          20::bigint, 'mo_load: its query updates the same index');
SELECT is(mo_load('hostile_m', 'SELECT id, x, y FROM hm WHERE (SELECT approx_gpu.mo_load(''hostile_m'', ''SELECT 5000, 1.0::float8, 2.0::float8'')) = 1'),
          20::bigint, 'mo_load re-entered from its own query');
SELECT is((mo_info('hostile_m')->>'objects')::bigint, 22::bigint, 'the index holds the rows of all three batches');
-- the relation form over a view runs the view's query, which may drop the index
CREATE TEMP VIEW hm_dropper AS SELECT id, x, y FROM hm WHERE (SELECT approx_gpu.mo_drop('hostile_m')) IS NULL;
SELECT is(pg_temp.state($$SELECT mo_load('hostile_m', 'hm_dropper'::regclass, 'id', 'x', 'y')$$),
          '55000', 'mo_load over a view whose query drops the same index -> 55000');
SELECT mo_create('hostile_m', 0, 0, 100, 100, 4, 4) IS NOT NULL AS recreated \gset
SELECT is(mo_load('hostile_m', 'hm'::regclass, 'id', 'x', 'y'), 20::bigint, 'mo_load over the table itself');
DROP VIEW hm_dropper;
SELECT is(pg_temp.state($$SELECT mo_load('hostile_m', 'SELECT id, x, y + pg_temp.run(''DROP TABLE hm'') FROM hm')$$),
          '55006', 'mo_load: its query drops its own table -> 55006');
SELECT is(pg_temp.state($$SELECT mo_range('hostile_m', 0, 0, 100, 100), mo_drop('hostile_m')$$),
          '42704', 'mo_range next to mo_drop of the same index in one statement -> 42704 on the second row');
SELECT is(pg_temp.state($$SELECT mo_info('hostile_m')$$), '42704', 'the dropped index is gone');

-- aggregates: parallel plans with extreme arguments
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
-- (a plain table: parallel workers do not scan temporary ones; rolled back)
CREATE TABLE public.hostile_rows AS SELECT g AS id, (g * 7919 % 1000)::float8 AS score FROM generate_series(1, 20000) g;
ANALYZE public.hostile_rows;
SELECT ok(tap.plan_text('SELECT topk(id, score, 5) FROM public.hostile_rows') LIKE '%Partial Aggregate%',
          'the aggregates below run in a parallel plan (partial states, serial/deserial, combine)');
SELECT is((SELECT cardinality(topk(id, score, 2147483647)) FROM public.hostile_rows), 20000, 'topk with k = 2^31-1 returns every row');
SELECT is(pg_temp.state($$SELECT kde_synopsis_agg(ARRAY[score], 2147483647) FROM public.hostile_rows$$), '54000',
          'kde_synopsis_agg with sample_size = 2^31-1 -> 54000');
SELECT is(pg_temp.state($$SELECT topk(id, score, (id % 2)::int + 1) FROM public.hostile_rows$$), '22023', 'topk with k varying by row -> 22023');
SELECT is(pg_temp.state($$SELECT kde_lscv_agg(ARRAY[score, score * 2, score * 3], 100000) FROM public.hostile_rows WHERE id <= 50$$),
          '22000', 'kde_lscv_agg of collinear points (singular covariance), grid 100000 -> an error of class 22');
-- arguments that differ between the rows read by different workers: the
-- combine function sees the mismatch
SELECT is(ARRAY(SELECT pg_temp.state(q) FROM unnest(ARRAY[
    $$SELECT kde_lscv_agg(CASE WHEN id < 10000 THEN ARRAY[score, id] ELSE ARRAY[score, id, 1] END) FROM public.hostile_rows$$,
    $$SELECT kde_synopsis_agg(CASE WHEN id < 10000 THEN ARRAY[score, id] ELSE ARRAY[score, id, 1] END) FROM public.hostile_rows$$,
    $$SELECT kde_synopsis_agg(ARRAY[score], CASE WHEN id < 10000 THEN 10 ELSE 20 END) FROM public.hostile_rows$$,
    $$SELECT topk(id, score, CASE WHEN id < 10000 THEN 10 ELSE 20 END) FROM public.hostile_rows$$,
    $$SELECT kde_bandwidth_agg(score, CASE WHEN id < 10000 THEN 'plugin' ELSE 'scott' END) FROM public.hostile_rows$$,
    $$SELECT kde_bandwidth_agg(CASE WHEN id = 15000 THEN 'NaN' ELSE score END) FROM public.hostile_rows$$,
    $$SELECT topk(id, CASE WHEN id = 15000 THEN 'NaN' ELSE score END, 5) FROM public.hostile_rows$$,
    $$SELECT bottomk(id, CASE WHEN id % 2 = 0 THEN 'Infinity'::float8 ELSE '-Infinity' END, 3) FROM public.hostile_rows$$,
    $$SELECT kde_merge_agg(s) FROM (SELECT kde_synopsis_agg(ARRAY[score], 10) s FROM public.hostile_rows
        UNION ALL SELECT kde_synopsis_agg(ARRAY[score, score], 10) FROM public.hostile_rows) x$$]) q),
  ARRAY['2202E', '2202E', '22023', '22023', '22023', '22023', '22023', 'ok', '2202E'],
  'parallel aggregates: d, sample_size, k, method differing between rows; NaN in a worker; +-Infinity scores; synopses of 1 and 2 columns merged');
SELECT is(pg_temp.state($q$SELECT kde_merge_agg(s) FROM (SELECT replace(s::text, '"N": 200', '"N": 9007199254740992')::kde_synopsis AS s
            FROM hostile_syn, generate_series(1, 2000)) v$q$), '22003', 'kde_merge_agg: N summing past 2^63 -> 22003 (was 53200 after an allocation of 2^64 bytes)');

-- kde_synopsis_recv: binary COPY of malformed values (a bytea's binary COPY
-- form is its bytes, so a file written from bytea is read back by recv);
-- needs a superuser (server files), else skipped
CREATE TEMP TABLE hostile_recv (s kde_synopsis);
CREATE FUNCTION pg_temp.recv_state(b bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE path text := current_setting('data_directory') || '/hostile_recv.bin';
BEGIN
  EXECUTE format('COPY (SELECT %L::bytea) TO %L (FORMAT binary)', b, path);
  RETURN pg_temp.state(format('COPY hostile_recv FROM %L (FORMAT binary)', path));
END $$;
SELECT CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
  is(ARRAY(SELECT pg_temp.recv_state(b) FROM unnest(ARRAY[
      (SELECT s::bytea FROM hostile_syn), (SELECT substr(s::bytea, 1, 30) FROM hostile_syn),
      (SELECT s::bytea || '\x00'::bytea FROM hostile_syn), (SELECT overlay(s::bytea placing '\x63' from 1) FROM hostile_syn),
      ''::bytea, '\x01'::bytea, '\x01ffffffffffffffffffffffffffffffff'::bytea]) b),
     ARRAY['ok', '22P03', '22P03', '22P03', '22P03', '22P03', '22P03'],
     'kde_synopsis_recv (binary COPY): a valid value, then truncated, trailing byte, bad version, empty, header only, garbage -> 22P03')
  ELSE skip('binary COPY from a server file needs a superuser') END;

-- settings at their limits
SET LOCAL approx_gpu.device = 'gpu';
SELECT ok(pg_temp.state($$SELECT reachability_count('SELECT s, d FROM he')$$) IN ('ok', '55000'),
          'device = gpu: a result on a GPU machine, 55000 without a GPU');
SET LOCAL approx_gpu.device = 'auto';
SET LOCAL approx_gpu.gpu_min_rows = 0;
SET LOCAL approx_gpu.gpu_memory_limit = '1kB';
SELECT is(hash_join_count('SELECT k, v FROM hb', 'SELECT k, v FROM hp'), (SELECT count(*) FROM hb JOIN hp USING (k)),
          'device = auto with a 1 kB GPU memory limit: the CPU answers');
SET LOCAL approx_gpu.device = 'cpu';
SET LOCAL approx_gpu.cpu_threads = 64;
SELECT is(reachability_count('SELECT g, g % 500 + 1 FROM generate_series(1, 3000) g'), 3000::bigint * 500,
          'cpu_threads = 64 on a small machine');
SELECT is(pg_temp.state($$SET approx_gpu.no_such_setting = 1$$), '42602', 'a misspelt approx_gpu setting -> 42602 (reserved prefix)');
SELECT is(pg_temp.state($$SET approx_gpu.cpu_threads = 65$$), '22023', 'cpu_threads past its cap -> 22023');

-- synopsis text forms that are malformed in ways the generated cases miss
SELECT is(ARRAY(SELECT pg_temp.state(format('SELECT %L::kde_synopsis', t)) FROM unnest(ARRAY[
    (SELECT replace(s::text, '"d": 2', '"d": 2147483647') FROM hostile_syn),
    (SELECT replace(s::text, '"sample_size": 100', '"sample_size": 9223372036854775807') FROM hostile_syn),
    (SELECT regexp_replace(s::text, '"version": [0-9]+', '"version": 1.5') FROM hostile_syn),
    (SELECT regexp_replace(s::text, '"min": [^,]*', '"min": 1e400') FROM hostile_syn),
    (SELECT regexp_replace(s::text, '"box_bandwidth": [^,]*', '"box_bandwidth": 0') FROM hostile_syn),
    (SELECT regexp_replace(s::text, '"sample": .*', '"sample": []}') FROM hostile_syn),
    (SELECT s::text || ' ' FROM hostile_syn),
    (SELECT s::text || 'x' FROM hostile_syn),
    repeat('[', 100000)]) t), ARRAY['22P02', '22P02', '22P02', '22P02', '22P02', '22P02', 'ok', '22P02', '54001'],
  'kde_synopsis text forms: d, sample_size, version, non-finite min, zero bandwidth, missing sample, trailing text, deep nesting (54001)');

-- ---- a SELECT-only role's synopses and queries (issue 37 item 10) -------------------------
-- Its settings are superuser-only (42501); what it may build on a table it
-- does not own is bounded (54000); a query over a synopsis with one stratum
-- per row past the sample path's budget takes the exact path (no error).
CREATE ROLE hostile_reader;
GRANT SELECT ON public.hostile_perm TO hostile_reader;
CREATE TABLE public.hostile_strata_t AS SELECT g AS u, (g % 7)::float8 AS v FROM generate_series(1, 400) g;
GRANT SELECT ON public.hostile_strata_t TO hostile_reader;
SET LOCAL approx_gpu.max_synopsis_rows_per_role = 600;
SET LOCAL approx_gpu.sample_max_state = '64kB';
SET LOCAL ROLE hostile_reader;
SELECT is(ARRAY[pg_temp.state($$SET approx_gpu.sample_max_state = '1GB'$$),
                pg_temp.state($$SET approx_gpu.sample_spread_cache_size = '1GB'$$),
                pg_temp.state($$SET approx_gpu.max_synopsis_rows_per_role = -1$$)],
          ARRAY['42501', '42501', '42501'], 'the sample path''s and the builds'' limits are superuser-only (42501)');
SELECT is(pg_temp.state($$SELECT create_synopsis('hostile_strata_syn', 'public.hostile_strata_t', '{u,v}', 400, stratify => '{u}')$$),
          'ok', 'a SELECT-only role builds a synopsis of one stratum per row');
SELECT is((synopsis_status('hostile_strata_syn')->>'strata')::int, 400, 'one stratum per row');
SELECT is(pg_temp.state($$SELECT create_synopsis('hostile_rl_2', 'public.hostile_perm', '{a,k}', 150, stratify => '{k}')$$),
          'ok', 'a second synopsis within approx_gpu.max_synopsis_rows_per_role');
SELECT is(pg_temp.state($$SELECT create_synopsis('hostile_rl_3', 'public.hostile_perm', '{a,k}', 100)$$),
          '54000', 'past approx_gpu.max_synopsis_rows_per_role on tables it does not own -> 54000');
SELECT is(pg_temp.state($$SELECT refresh_synopsis('hostile_strata_syn')$$), 'ok',
          'a rebuild does not count its own old sample');
SET LOCAL approx_gpu.box_path = off;
SELECT is(pg_temp.state(format('SELECT %s FROM public.hostile_strata_t',
                               (SELECT string_agg(format('approx_sum(v + %s)', k), ', ') FROM generate_series(1, 400) k))),
          'ok', '400 SUM terms over 400 strata past approx_gpu.sample_max_state: an answer, not an error');
SELECT matches(last_run()->>'reason', 'approx_gpu.sample_max_state', 'and the exact path says why');
RESET ROLE;
-- The issue's shape at full size under the default settings: 60,000 strata
-- and 400 SUM terms (was XX000 invalid memory alloc request size 1347360000).
RESET approx_gpu.sample_max_state;
CREATE TABLE public.hostile_strata_big AS SELECT g AS u, (g % 7)::float8 AS v FROM generate_series(1, 60000) g;
SELECT create_synopsis('hostile_strata_big', 'public.hostile_strata_big', '{u,v}', 60000, stratify => '{u}') IS NOT NULL;
SELECT is(pg_temp.state(format('SELECT %s FROM public.hostile_strata_big',
                               (SELECT string_agg(format('approx_sum(v + %s)', k), ', ') FROM generate_series(1, 400) k))),
          'ok', '400 SUM terms over 60,000 strata: an answer, not XX000');
SELECT matches(last_run()->>'reason', 'approx_gpu.sample_max_state', 'the exact path, with the reason');

-- ---- part 3: the server did not crash-restart ----------------------------------------------
-- (A crash-restart kills this session too, so the plan would come up short;
-- test/run also looks for one in the server log.)
SELECT is(pg_postmaster_start_time(), started, 'the postmaster was not restarted') FROM hostile_sentinel;
SELECT is(pg_backend_pid(), pid, 'this backend survived every case') FROM hostile_sentinel;
SELECT is(ARRAY(SELECT pid FROM pg_stat_activity WHERE backend_type IN ('checkpointer', 'background writer', 'walwriter') ORDER BY backend_type),
          aux, 'the auxiliary processes were not restarted (no crash-restart cycle)') FROM hostile_sentinel;

SELECT * FROM finish();
ROLLBACK;
