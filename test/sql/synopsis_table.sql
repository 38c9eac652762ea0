-- Table synopses: create_synopsis over a relation's columns (every
-- row counts, NULLs are data, text-like columns are dictionaries), what the
-- stored value holds, renames, dropped and retyped columns, a dropped table,
-- freshness, strata, and every ERROR. Output is engine-independent: counts,
-- exact integers and booleans.
SET extra_float_digits = 0;
SET approx_gpu.random_seed = 13;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
CREATE TYPE st_color AS ENUM ('red', 'green', 'blue');
CREATE TABLE st_data AS
  SELECT i AS id,
         CASE WHEN i % 10 = 0 THEN NULL ELSE (i % 50)::float8 END AS price,
         (i % 7)::numeric * 1.5 AS qty,
         date '2024-01-01' + (i % 90) AS day,
         timestamptz '2024-01-01 00:00+00' + (i % 48) * interval '1 hour' AS at,
         CASE WHEN i % 13 = 0 THEN NULL ELSE (ARRAY['AA', 'BB', 'CC', 'DD'])[1 + i % 4] END AS carrier,
         i % 3 = 0 AS flag,
         (ARRAY['red', 'green', 'blue']::st_color[])[1 + i % 3] AS color
  FROM generate_series(1, 2000) i;
SELECT pg_stat_force_next_flush();

-- create: N counts every row (NULLs included); the info shows each column's
-- encoding, dictionaries and NULLs
CREATE TEMP TABLE st_info AS
SELECT approx_gpu.create_synopsis('st', 'st_data'::regclass,
                                  ARRAY['id', 'price', 'qty', 'day', 'at', 'carrier', 'flag', 'color']::name[],
                                  500, 'cdf', 'never') AS i;
SELECT (i->>'N')::int AS n, (i->>'m')::int AS m, (i->>'d')::int AS d, (i->>'strata')::int AS strata,
       (i->>'skipped')::int AS skipped FROM st_info;
SELECT c->>'name' AS name, c->>'encoding' AS encoding, c->>'categorical' AS categorical, c->>'mode' AS mode,
       (c->>'dictionary_size')::int AS dictionary_size, (c->>'null_count')::int > 0 AS has_nulls
FROM st_info, jsonb_array_elements(i->'columns') c;
-- the catalog row: bound to the table by OID and attribute numbers, no query
SELECT name, relation, attnums, atttypes, query IS NULL AS no_query, stratify, rows_built,
       relfilenode = (SELECT relfilenode FROM pg_class WHERE oid = 'st_data'::regclass) AS same_relfilenode
FROM approx_gpu.synopses WHERE name = 'st';
-- the stored value: format 3, NULL sample values as JSON null, the dictionaries
-- sorted; text and binary forms round-trip
SELECT get_byte(synopsis::bytea, 0) AS version_byte,
       synopsis::text LIKE '%"dictionary": ["AA", "BB", "CC", "DD"]%' AS carrier_dictionary,
       synopsis::text LIKE '%"dictionary": ["blue", "green", "red"]%' AS enum_dictionary_by_strcmp,
       synopsis::text LIKE '%"dictionary": ["f", "t"]%' AS bool_dictionary,
       synopsis::text LIKE '%null%' AS has_json_null,
       synopsis::text::approx_gpu.kde_synopsis::text = synopsis::text AS text_round_trip,
       synopsis::bytea::approx_gpu.kde_synopsis::bytea = synopsis::bytea AS binary_round_trip
FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'st';
-- the unbounded box holds every row, NULLs included; a dictionary code box
-- is about its share of the rows
SELECT approx_gpu.approx_count(synopsis, ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::float8[],
                               ARRAY[NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL]::float8[]) AS all_rows,
       abs(approx_gpu.approx_count(synopsis, ARRAY[NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL]::float8[],
                                   ARRAY[NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL]::float8[])
           / (SELECT count(*) FROM st_data WHERE carrier = 'AA') - 1) < 0.3 AS carrier_aa_close
FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'st';
SELECT s->>'status' AS status, s->'reason' AS reason, s->'columns' AS columns, (s->>'rows_built')::int AS rows_built
FROM approx_gpu.synopsis_status('st') s;

-- a rename of the table and of a column follows (attribute numbers)
ALTER TABLE st_data RENAME COLUMN price TO cost;
ALTER TABLE st_data RENAME TO st_rows;
SELECT s->>'status' AS status, s->>'relation' AS relation, s->'columns' AS columns FROM approx_gpu.synopsis_status('st') s;
SELECT (approx_gpu.refresh_synopsis('st')->>'N')::int AS refreshed_n;
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('st') s;

-- freshness: more than 20% of the rows changed -> stale; TRUNCATE -> stale
UPDATE st_rows SET qty = qty + 1 WHERE id <= 700;
SELECT pg_stat_force_next_flush();
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('st') s;
SET approx_gpu.synopsis_max_staleness = 0.5;
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('st') s;
RESET approx_gpu.synopsis_max_staleness;
SELECT (approx_gpu.refresh_synopsis('st')->>'N')::int AS refreshed_n;
SELECT pg_stat_force_next_flush();
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('st') s;
UPDATE st_rows SET qty = qty + 1 WHERE id <= 100;
SELECT pg_stat_force_next_flush();
SELECT s->>'status' AS status_after_5_percent FROM approx_gpu.synopsis_status('st') s;
CREATE TABLE st_copy AS SELECT * FROM st_rows;
TRUNCATE st_rows;
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('st') s;
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('st')$$);
INSERT INTO st_rows SELECT * FROM st_copy;
SELECT (approx_gpu.refresh_synopsis('st')->>'N')::int AS refreshed_n;
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('st') s;

-- a dropped column or a retyped one makes the synopsis unusable (refresh says why)
SELECT (approx_gpu.create_synopsis('st2', 'st_rows', ARRAY['id', 'qty']::name[], 200)->>'N')::int AS n;
ALTER TABLE st_rows DROP COLUMN qty;
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('st') s;
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('st2') s;
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('st2')$$);
SELECT (approx_gpu.create_synopsis('st3', 'st_rows', ARRAY['id', 'day']::name[], 200)->>'N')::int AS n;
ALTER TABLE st_rows ALTER COLUMN id TYPE int8;
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('st3') s;
-- a refresh rebuilds it with the column's new type
SELECT (approx_gpu.refresh_synopsis('st3')->>'N')::int AS refreshed_n;
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('st3') s;
-- a query-text synopsis is not bound to a table
SELECT (approx_gpu.create_synopsis('stq', 'SELECT id::float8 AS id FROM st_rows', 100)->>'N')::int AS n;
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('stq') s;
SELECT approx_gpu.drop_synopsis('stq');

-- a dropped table drops its synopses
SELECT count(*) AS synopses_of_st_rows FROM approx_gpu.synopses WHERE relation = 'st_rows'::regclass;
DROP TABLE st_rows;
SELECT count(*) AS left_over FROM approx_gpu.synopses WHERE name IN ('st', 'st2', 'st3');
-- drop_synopsis of a table synopsis
SELECT (approx_gpu.create_synopsis('stc', 'st_copy', ARRAY['id', 'carrier']::name[], 200)->>'N')::int AS n;
SELECT approx_gpu.drop_synopsis('stc');
SELECT count(*) AS left_over FROM approx_gpu.synopses WHERE name = 'stc';
-- a materialized view is a table here
CREATE MATERIALIZED VIEW st_mv AS SELECT id, carrier FROM st_copy;
SELECT (approx_gpu.create_synopsis('stmv', 'st_mv', ARRAY['id', 'carrier']::name[], 200)->>'N')::int AS n;
SELECT approx_gpu.drop_synopsis('stmv');

-- stratified: every stratum is in the sample; strata under the floor (100
-- rows) are kept whole, so their counts are exact
CREATE TABLE st_groups AS
  SELECT CASE WHEN i <= 5000 THEN 'big' WHEN i <= 5300 THEN 'mid' WHEN i <= 5350 THEN 'small' ELSE 'tiny' END AS grp,
         (i % 100)::float8 AS x, i % 4 AS k
  FROM generate_series(1, 5357) i;
CREATE TEMP TABLE st_ginfo AS
SELECT approx_gpu.create_synopsis('stg', 'st_groups', ARRAY['grp', 'x', 'k']::name[], 500, 'cdf', 'never',
                                  ARRAY['grp']::name[]) AS i;
SELECT (i->>'N')::int AS n, (i->>'strata')::int AS strata, (i->>'m')::int >= 500 AS m_at_least_500 FROM st_ginfo;
SELECT stratify FROM approx_gpu.synopses WHERE name = 'stg';
SELECT synopsis::text LIKE '%"strata": [[5000, %' AS strata_in_text,
       synopsis::text::approx_gpu.kde_synopsis::text = synopsis::text AS text_round_trip
FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stg';
-- codes: big 0, mid 1, small 2, tiny 3
SELECT g.code, g.grp, (SELECT count(*) FROM st_groups WHERE grp = g.grp) AS exact,
       round(approx_gpu.approx_count(s.synopsis, ARRAY[g.code, NULL, NULL]::float8[], ARRAY[g.code, NULL, NULL]::float8[])::numeric, 6) AS estimate
FROM (VALUES (0, 'big'), (1, 'mid'), (2, 'small'), (3, 'tiny')) g(code, grp), approx_gpu_internal.synopsis_values s
WHERE s.name = 'stg' ORDER BY g.code;
SELECT round(approx_gpu.approx_count(synopsis, ARRAY[NULL, NULL, NULL]::float8[], ARRAY[NULL, NULL, NULL]::float8[])::numeric, 6) AS all_rows,
       round(approx_gpu.approx_count(synopsis, ARRAY[3, NULL, 1]::float8[], ARRAY[3, NULL, 1]::float8[])::numeric, 6) AS tiny_k1,
       (SELECT count(*) FROM st_groups WHERE grp = 'tiny' AND k = 1) AS tiny_k1_exact
FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stg';
SELECT s->>'status' AS status, (s->>'strata')::int AS strata FROM approx_gpu.synopsis_status('stg') s;
-- statistics counters that went backwards (a reset, crash recovery): stale
SELECT pg_stat_force_next_flush();
SELECT pg_stat_reset_single_table_counters('st_groups'::regclass);
SELECT s->>'status' AS status, s->>'reason' AS reason FROM approx_gpu.synopsis_status('stg') s;
SELECT (approx_gpu.refresh_synopsis('stg')->>'strata')::int AS refreshed_strata;
SELECT s->>'status' AS status FROM approx_gpu.synopsis_status('stg') s;
-- an integer stratify column works too
SELECT (approx_gpu.create_synopsis('stk', 'st_groups', ARRAY['k', 'x']::name[], 200, 'cdf', 'never',
                                   ARRAY['k']::name[])->>'strata')::int AS strata;
-- stratified or dictionary synopses do not merge
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(synopsis, synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stg'$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge_agg(synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stg'$$);
SELECT (approx_gpu.create_synopsis('stn', 'st_copy', ARRAY['id', 'day']::name[], 100)->>'N')::int AS n;
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(synopsis, synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stc2'$$);
SELECT (approx_gpu.create_synopsis('stc2', 'st_copy', ARRAY['id', 'carrier']::name[], 100)->>'N')::int AS n;
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(synopsis, synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stc2'$$);
-- a merge of unstratified numeric/date synopses keeps the encodings
SELECT (approx_gpu.kde_synopsis_info(approx_gpu.kde_merge(synopsis, synopsis))->'columns'->1->>'encoding') AS merged_encoding
FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = 'stn';

-- errors
CREATE TABLE st_bad (a int, b float8, j jsonb, d date, f float8);
INSERT INTO st_bad VALUES (1, 1, '{}', '2024-01-01', 1), (2, 'NaN', '{}', 'infinity', 'Infinity');
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'nope']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'j']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'a']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'ctid']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY[]::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', NULL]::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'b']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'd']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'f']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a']::name[], 100, 'cdf', 'auto', ARRAY['b']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a', 'b']::name[], 100, 'cdf', 'auto', ARRAY['b']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a']::name[], 100, 'cdf', 'auto', ARRAY['a', 'a']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis(NULL, 'st_bad', ARRAY['a']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', NULL::regclass, ARRAY['a']::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', NULL::name[])$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a']::name[], NULL)$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a']::name[], 1)$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_bad', ARRAY['a']::name[], 100, 'magic')$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('stg', 'st_groups', ARRAY['x']::name[])$$);
CREATE TABLE st_empty (a int);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_empty', ARRAY['a']::name[])$$);
CREATE TABLE st_parted (a int, b int) PARTITION BY RANGE (a);
CREATE TABLE st_parted_1 PARTITION OF st_parted FOR VALUES FROM (0) TO (100);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_parted', ARRAY['a']::name[])$$);
CREATE VIEW st_view AS SELECT a FROM st_bad;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_view', ARRAY['a']::name[])$$);
CREATE MATERIALIZED VIEW st_mv_empty AS SELECT a FROM st_bad WITH NO DATA;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_mv_empty', ARRAY['a']::name[])$$);
-- privileges as for the real query; row-level security that applies: ERROR
CREATE ROLE regress_syntab_reader;
CREATE TABLE st_priv AS SELECT i AS a, i * 2 AS b FROM generate_series(1, 100) i;
GRANT SELECT (a) ON st_priv TO regress_syntab_reader;
CREATE TABLE st_rls AS SELECT i AS a FROM generate_series(1, 100) i;
GRANT SELECT ON st_rls TO regress_syntab_reader;
ALTER TABLE st_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY st_rls_half ON st_rls FOR SELECT USING (a <= 50);
SET ROLE regress_syntab_reader;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_priv', ARRAY['a', 'b']::name[])$$);
SELECT pg_temp.err($$SELECT count(b) FROM st_priv$$);
SELECT (approx_gpu.create_synopsis('e_cols', 'st_priv', ARRAY['a']::name[], 50)->>'N')::int AS column_privilege_is_enough;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_rls', ARRAY['a']::name[])$$);
SELECT approx_gpu.drop_synopsis('e_cols');
RESET ROLE;
-- the table's owner is not subject to its policy (RLS not forced): allowed
SELECT (approx_gpu.create_synopsis('st_rls_owner', 'st_rls', ARRAY['a']::name[], 50)->>'N')::int AS owner_n;
SELECT approx_gpu.drop_synopsis('st_rls_owner');

-- census (take-all) stratum: the rows of the measures' largest |values|
-- kept whole (a tenth of the sample: 100 of 1000, x the only measure: k
-- stratifies, note is a dictionary), the rest sampled from the other rows
CREATE TABLE st_heavy AS
  SELECT i AS id, CASE WHEN i % 1000 = 0 THEN 1e7 ELSE i % 100 END::float8 AS x, i % 3 AS k, 'n' || (i % 5) AS note
  FROM generate_series(1, 20000) i;
CREATE FUNCTION pg_temp.strata(syn text) RETURNS TABLE (n int8, m int8) LANGUAGE sql AS $$
  SELECT (e->>0)::int8, (e->>2)::int8 - (e->>1)::int8
    FROM approx_gpu_internal.synopsis_values v, jsonb_array_elements(v.synopsis::text::jsonb->'strata') e
   WHERE v.name = syn $$;
CREATE FUNCTION pg_temp.heavy_in_sample(syn text) RETURNS int8 LANGUAGE plpgsql AS $$
DECLARE r int8;
BEGIN
  EXECUTE format('SELECT count(*) FROM %s WHERE x = 1e7',
                 (SELECT sample_relid::regclass FROM approx_gpu.synopses WHERE name = syn)) INTO r;
  RETURN r;
END $$;
SELECT (i->>'N')::int AS n, (i->>'strata')::int AS strata, (i->>'m')::int AS m
FROM (SELECT approx_gpu.create_synopsis('sth', 'st_heavy', ARRAY['x', 'k', 'note']::name[], 1000, 'cdf', 'never',
                                        ARRAY['k']::name[], census => true) AS i) c;
SELECT census FROM approx_gpu.synopses WHERE name = 'sth';
-- one stratum kept whole, of census_size rows; the strata add up to the table
SELECT count(*) FILTER (WHERE n = m) AS whole_strata, max(n) FILTER (WHERE n = m) AS census_rows,
       sum(n) AS strata_rows, sum(m) <= 1000 AS within_budget FROM pg_temp.strata('sth');
SELECT pg_temp.heavy_in_sample('sth') AS heavy_rows_kept;
-- refresh keeps it
SELECT (approx_gpu.refresh_synopsis('sth')->>'strata')::int AS refreshed_strata;
SELECT census FROM approx_gpu.synopses WHERE name = 'sth';
SELECT count(*) FILTER (WHERE n = m) AS whole_strata, sum(n) AS strata_rows FROM pg_temp.strata('sth');
SELECT pg_temp.heavy_in_sample('sth') AS heavy_rows_kept;
-- the box path over sth (stratified by k, census => true): one row per k,
-- none twice (the census stratum holds rows of every k), each covering the truth
CREATE TABLE st_census_g AS SELECT k, approx_gpu.approx_count_ci(*) AS c, approx_gpu.approx_sum_ci(x) AS s
  FROM st_heavy WHERE x >= 0 GROUP BY k;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, approx_gpu.last_run()->>'reason' AS reason;
SELECT k, (a.c).lower <= e.n AND e.n <= (a.c).upper AS count_covered,
       (a.s).lower <= e.total AND e.total <= (a.s).upper AS sum_covered
  FROM st_census_g a JOIN (SELECT k, count(*) AS n, sum(x) AS total FROM st_heavy GROUP BY k) e USING (k) ORDER BY k;
SELECT count(*) AS groups, count(DISTINCT k) AS distinct_groups FROM st_census_g;
-- without stratify: the census is a stratum beside the one of the other rows
SELECT (approx_gpu.create_synopsis('sth2', 'st_heavy', ARRAY['x']::name[], 1000, census => true)->>'strata')::int AS strata;
SELECT n, m FROM pg_temp.strata('sth2') ORDER BY n;
-- a partitioned table: a census stratum per partition, from one table-wide census
CREATE TABLE st_hpart (id int, x float8) PARTITION BY RANGE (id);
CREATE TABLE st_hpart_1 PARTITION OF st_hpart FOR VALUES FROM (1) TO (10001);
CREATE TABLE st_hpart_2 PARTITION OF st_hpart FOR VALUES FROM (10001) TO (20001);
INSERT INTO st_hpart SELECT id, x FROM st_heavy;
SELECT (approx_gpu.create_synopsis('sthp', 'st_hpart', ARRAY['x']::name[], 1000, census => true)->>'strata')::int AS strata;
SELECT count(*) FILTER (WHERE n = m) AS whole_strata, sum(n) FILTER (WHERE n = m) AS census_rows,
       sum(n) AS strata_rows FROM pg_temp.strata('sthp');
SELECT pg_temp.heavy_in_sample('sthp') AS heavy_rows_kept;
-- ... and the default decides it over the parent's rows: the same census strata
SELECT (approx_gpu.create_synopsis('sthpa', 'st_hpart', ARRAY['x']::name[], 1000)->>'strata')::int AS strata;
SELECT count(*) FILTER (WHERE n = m) AS whole_strata, sum(n) FILTER (WHERE n = m) AS census_rows,
       sum(n) AS strata_rows FROM pg_temp.strata('sthpa');
SELECT pg_temp.heavy_in_sample('sthpa') AS heavy_rows_kept;
-- no measure to keep (k stratifies, note is a dictionary)
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_heavy', ARRAY['k', 'note']::name[], 100, 'cdf', 'never', ARRAY['k']::name[], true)$$);
-- census NULL (the default): a census of the table's numeric columns whose
-- top rows hold more of their spread than the census' tenth of the sample
-- costs (census_pays). x's 20 values of 10^7 are all of it: kept, as with
-- true; id (1..20000) and k (0..2) have no tail: none.
SELECT (approx_gpu.create_synopsis('sta', 'st_heavy', ARRAY['x']::name[], 1000)->>'strata')::int AS strata;
SELECT census IS NULL AS census_auto FROM approx_gpu.synopses WHERE name = 'sta';
SELECT n, m FROM pg_temp.strata('sta') ORDER BY n;
SELECT pg_temp.heavy_in_sample('sta') AS heavy_rows_kept;
-- ... and refresh decides again, on the table as it is now: without the
-- tail, no census (one stratum-less sample, as the relation reader draws it)
UPDATE st_heavy SET x = 7 WHERE x = 1e7;
SELECT (approx_gpu.refresh_synopsis('sta')->>'strata')::int AS refreshed_strata;
SELECT census IS NULL AS census_auto FROM approx_gpu.synopses WHERE name = 'sta';
UPDATE st_heavy SET x = 1e7 WHERE id % 1000 = 0;
-- the default reads every numeric column of the table, not only the
-- synopsis': the sample path aggregates any (x here)
SELECT (approx_gpu.create_synopsis('stu', 'st_heavy', ARRAY['id', 'k']::name[], 1000)->>'strata')::int AS strata;
SELECT n, m FROM pg_temp.strata('stu') ORDER BY n;
SELECT pg_temp.heavy_in_sample('stu') AS heavy_rows_kept;
-- a table whose numeric columns have no tail: none (NaN and infinities of a
-- column the synopsis does not hold are no ERROR, and no census candidate)
CREATE TABLE st_light AS SELECT id, k, CASE WHEN id = 5 THEN 'NaN'::float8 WHEN id = 6 THEN 'Infinity'::float8 ELSE id % 10 END AS y
  FROM st_heavy;
SELECT (approx_gpu.create_synopsis('stl', 'st_light', ARRAY['id', 'k']::name[], 1000)->>'strata')::int AS strata;
-- stratified: the default keeps none (each stratum is one value of k, the
-- group the box path answers GROUP BY k from; census => true mixes them);
-- stratified by k with no measure: none, no error
SELECT (approx_gpu.create_synopsis('sts', 'st_heavy', ARRAY['x', 'id', 'k']::name[], 1000, stratify => ARRAY['k']::name[])->>'strata')::int AS strata;
SELECT count(*) FILTER (WHERE n = m) AS whole_strata FROM pg_temp.strata('sts');
SELECT (approx_gpu.create_synopsis('stk2', 'st_heavy', ARRAY['k', 'note']::name[], 100, stratify => ARRAY['k']::name[])->>'strata')::int AS strata;
-- a table the sample holds whole needs no census: 100 rows, sample_size 1000
CREATE TABLE st_small AS SELECT * FROM st_heavy WHERE id <= 100 OR id = 1000;
SELECT (approx_gpu.create_synopsis('stw', 'st_small', ARRAY['x']::name[], 1000)->>'strata')::int AS strata;
-- census => false: none, stored as false
SELECT (approx_gpu.create_synopsis('stf', 'st_heavy', ARRAY['x']::name[], 1000, census => false)->>'strata')::int AS strata;
SELECT census FROM approx_gpu.synopses WHERE name = 'stf';
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses
 WHERE name IN ('sth', 'sth2', 'sthp', 'sthpa', 'sta', 'stu', 'stl', 'sts', 'stk2', 'stw', 'stf') ORDER BY name;

SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE name IN ('stg', 'stk', 'stn', 'stc2') ORDER BY name;
SELECT count(*) AS left_over FROM approx_gpu.synopses;
DROP OWNED BY regress_syntab_reader;
DROP ROLE regress_syntab_reader;

-- ---- stratified, census and partitioned builds through the parallel relation reader ----
-- Both passes (rows per stratum and census candidates, then each stratum's
-- rows of smallest hash(seed, leaf, TID)) run in the reader's workers beside
-- the leader: with a fixed seed the same synopsis whatever the workers.
SET approx_gpu.random_seed = 11;
CREATE TABLE st_par AS
  SELECT i AS id, CASE WHEN i % 100 < 60 THEN 'AA' WHEN i % 100 < 90 THEN 'BB' WHEN i % 100 < 99 THEN 'CC' END AS carrier,
         CASE WHEN i % 13 <> 0 THEN i % 3 END AS k3, CASE WHEN i % 997 = 0 THEN 1e6 + i ELSE i % 50 END::float8 AS x,
         repeat(md5(i::text), 20) AS note, md5((i % 300)::text) || repeat('-', 40) AS tag
  FROM generate_series(1, 60000) i;
DELETE FROM st_par WHERE id % 1000 = 7;
CREATE FUNCTION pg_temp.syn_bytes(n text) RETURNS bytea LANGUAGE sql AS
  $$SELECT approx_gpu.kde_synopsis_to_bytea(synopsis) FROM approx_gpu.synopses JOIN approx_gpu_internal.synopsis_values USING (owner, name) WHERE name = n$$;
CREATE FUNCTION pg_temp.census_ids(syn text) RETURNS TABLE (id int) LANGUAGE plpgsql AS $$
BEGIN
  -- the census stratum: the smaller of the two
  RETURN QUERY EXECUTE format('SELECT id FROM %1$s WHERE approx_stratum = (SELECT approx_stratum FROM %1$s GROUP BY 1 ORDER BY count(*) LIMIT 1) ORDER BY id',
                              (SELECT sample_relid::regclass FROM approx_gpu.synopses WHERE name = syn));
END $$;
SET approx_gpu.read_workers = 2;
SELECT (approx_gpu.create_synopsis('stp_par', 'st_par', ARRAY['carrier', 'k3', 'x']::name[], 2000,
                                   stratify => ARRAY['carrier', 'k3']::name[])->>'strata')::int AS strata;
SELECT approx_gpu.last_run()->>'read' AS read, (approx_gpu.last_run()->>'read_workers')::int > 0 AS workers_helped,
       approx_gpu.last_run()->>'read_passes' AS passes;
SET approx_gpu.read_workers = 0;
SELECT (approx_gpu.create_synopsis('stp_ser', 'st_par', ARRAY['carrier', 'k3', 'x']::name[], 2000,
                                   stratify => ARRAY['carrier', 'k3']::name[])->>'strata')::int AS strata;
SELECT approx_gpu.last_run()->>'read' AS read;
RESET approx_gpu.read_workers;
SET max_parallel_workers_per_gather = 0;
SELECT (approx_gpu.create_synopsis('stp_auto', 'st_par', ARRAY['carrier', 'k3', 'x']::name[], 2000,
                                   stratify => ARRAY['carrier', 'k3']::name[])->>'strata')::int AS strata;
RESET max_parallel_workers_per_gather;
SET approx_gpu.read_workers = 2;
BEGIN ISOLATION LEVEL SERIALIZABLE;  -- the table AM's slots instead of pages
SELECT (approx_gpu.create_synopsis('stp_slots', 'st_par', ARRAY['carrier', 'k3', 'x']::name[], 2000,
                                   stratify => ARRAY['carrier', 'k3']::name[])->>'strata')::int AS strata;
COMMIT;
SELECT pg_temp.syn_bytes('stp_par') = pg_temp.syn_bytes('stp_ser') AS workers_or_not_the_same,
       pg_temp.syn_bytes('stp_par') = pg_temp.syn_bytes('stp_auto') AS per_gather_0_the_same,
       pg_temp.syn_bytes('stp_par') = pg_temp.syn_bytes('stp_slots') AS slots_the_same;
-- the congressional allocation over the strata (rows n, sample rows m; a
-- NULL is a stratum key of its own): as the backend's two passes gave it
SELECT n, m FROM pg_temp.strata('stp_par') ORDER BY n, m;
-- a census build: the census rows are the table's largest |x| (ties by
-- TID), whatever the workers; one pass (the other stratum's rows are the
-- first of the uniform sample's that are no census rows)
SET approx_gpu.read_workers = 2;
SELECT (approx_gpu.create_synopsis('stp_cen', 'st_par', ARRAY['id', 'x']::name[], 1000, census => true)->>'strata')::int AS strata;
SELECT approx_gpu.last_run()->>'read' AS read, approx_gpu.last_run()->>'read_passes' AS passes;
SELECT n, m FROM pg_temp.strata('stp_cen') ORDER BY n;
SELECT count(*) AS census_rows, count(*) FILTER (WHERE id > 59950) AS top_ids, min(id) AS first_id, max(id) AS last_id, sum(id) AS id_sum
  FROM pg_temp.census_ids('stp_cen');
SET approx_gpu.read_workers = 0;
SELECT (approx_gpu.create_synopsis('stp_cen0', 'st_par', ARRAY['id', 'x']::name[], 1000, census => true)->>'strata')::int AS strata;
SELECT pg_temp.syn_bytes('stp_cen') = pg_temp.syn_bytes('stp_cen0') AS census_workers_or_not_the_same;
-- ... two where the uniform sample holds too few of them (150 rows,
-- sample_size 100: 10 census rows, the other stratum's floor of 100 rows)
CREATE TABLE st_tiny AS SELECT * FROM st_par WHERE id <= 150;
SET approx_gpu.read_workers = 2;
SELECT (approx_gpu.create_synopsis('stp_cen2', 'st_tiny', ARRAY['x']::name[], 100, census => true)->>'strata')::int AS strata;
SELECT approx_gpu.last_run()->>'read_passes' AS passes;
SELECT n, m FROM pg_temp.strata('stp_cen2') ORDER BY n;
SET approx_gpu.read_workers = 0;
SELECT (approx_gpu.create_synopsis('stp_cen3', 'st_tiny', ARRAY['x']::name[], 100, census => true)->>'strata')::int AS strata;
SELECT pg_temp.syn_bytes('stp_cen2') = pg_temp.syn_bytes('stp_cen3') AS two_passes_workers_or_not_the_same;
-- a partitioned parent (a leaf with another column order): its leaves are strata
CREATE TABLE st_ppar (carrier text, id int, x float8) PARTITION BY RANGE (id);
CREATE TABLE st_ppar_1 PARTITION OF st_ppar FOR VALUES FROM (1) TO (30001);
CREATE TABLE st_ppar_2 (x float8, id int, carrier text);
ALTER TABLE st_ppar ATTACH PARTITION st_ppar_2 FOR VALUES FROM (30001) TO (60001);
INSERT INTO st_ppar SELECT carrier, id, x FROM st_par;
SET approx_gpu.read_workers = 2;
SELECT (approx_gpu.create_synopsis('stp_part', 'st_ppar', ARRAY['carrier', 'x']::name[], 2000,
                                   stratify => ARRAY['carrier']::name[])->>'strata')::int AS strata;
SELECT approx_gpu.last_run()->>'read' AS read, (approx_gpu.last_run()->>'read_workers')::int > 0 AS workers_helped;
SELECT n, m FROM pg_temp.strata('stp_part') ORDER BY n, m;
SET approx_gpu.read_workers = 0;
SELECT (approx_gpu.create_synopsis('stp_part0', 'st_ppar', ARRAY['carrier', 'x']::name[], 2000,
                                   stratify => ARRAY['carrier']::name[])->>'strata')::int AS strata;
SELECT pg_temp.syn_bytes('stp_part') = pg_temp.syn_bytes('stp_part0') AS parent_workers_or_not_the_same;
-- many strata with long keys (300 of 200 rows, each keeping 100)
SET approx_gpu.read_workers = 2;
SELECT (approx_gpu.create_synopsis('stp_many', 'st_par', ARRAY['tag', 'x']::name[], 5000,
                                   stratify => ARRAY['tag']::name[])->>'strata')::int AS strata;
SELECT count(*) AS strata, min(n) AS min_rows, sum(n) AS rows, min(m) AS min_m, max(m) AS max_m FROM pg_temp.strata('stp_many');
SET approx_gpu.read_workers = 0;
SELECT (approx_gpu.create_synopsis('stp_many0', 'st_par', ARRAY['tag', 'x']::name[], 5000,
                                   stratify => ARRAY['tag']::name[])->>'strata')::int AS strata;
SELECT pg_temp.syn_bytes('stp_many') = pg_temp.syn_bytes('stp_many0') AS many_workers_or_not_the_same;
-- a NaN found by a worker in a stratified build names its column
UPDATE st_par SET x = 'NaN' WHERE id = 59999;
SET approx_gpu.read_workers = 2;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'st_par', ARRAY['carrier', 'x']::name[], 500, stratify => ARRAY['carrier']::name[])$$);
RESET approx_gpu.read_workers;
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses
 WHERE name IN ('stp_par', 'stp_ser', 'stp_auto', 'stp_slots', 'stp_many', 'stp_many0', 'stp_cen', 'stp_cen2', 'stp_cen3', 'stp_cen0', 'stp_part', 'stp_part0') ORDER BY name;
DROP TABLE st_par, st_ppar, st_tiny;
RESET approx_gpu.random_seed;
