-- Helpers shared by the CI suite (test/sql/aqp_workloads.sql) and the
-- benchmark (test/bench/aqp_workloads.sh). Needs approx_gpu.

-- The approximate twin of a query, mechanically: sum( -> approx_sum(,
-- count(*) -> approx_count(*), avg( -> approx_avg( (ci: their _ci forms,
-- which return approx_estimate). \m anchors at a word start, so the
-- approx_sum( just written is not rewritten again.
CREATE OR REPLACE FUNCTION workload_approx(query text, ci boolean DEFAULT false) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
SELECT regexp_replace(regexp_replace(regexp_replace(query,
         '\mcount\(\*\)', 'approx_gpu.approx_count' || s || '(*)', 'gi'),
         '\msum\(', 'approx_gpu.approx_sum' || s || '(', 'gi'),
         '\mavg\(', 'approx_gpu.approx_avg' || s || '(', 'gi')
  FROM (SELECT CASE WHEN ci THEN '_ci' ELSE '' END AS s) x $$;

-- The queries of a workload directory (test/workloads/ssb, .../tpch): name
-- (ssb.q1_1), search_path schema and text without its final semicolon, in
-- query order. pg_read_file of an absolute path: superuser or
-- pg_read_server_files.
CREATE OR REPLACE FUNCTION workload_queries(dir text, workload text)
RETURNS TABLE (name text, schema text, query text)
LANGUAGE sql STABLE STRICT AS $$
SELECT workload || '.' || regexp_replace(f, '\.sql$', ''), workload,
       regexp_replace(pg_read_file(dir || '/' || workload || '/' || f), ';\s*$', '')
  FROM pg_ls_dir(dir || '/' || workload) f
 WHERE f ~ '^q[0-9_]+\.sql$'
 ORDER BY string_to_array(regexp_replace(f, '[^0-9_]', '', 'g'), '_')::int[] $$;

-- A query's rows, each as the JSON of its values in column order
-- (row_to_json keeps the order; jsonb would sort the keys).
CREATE OR REPLACE FUNCTION workload_rows(query text) RETURNS json[]
LANGUAGE plpgsql AS $$
DECLARE r record; out json[] := '{}';
BEGIN
    FOR r IN EXECUTE query LOOP out := out || row_to_json(r); END LOOP;
    RETURN out;
END $$;

-- Row for row equality of two answers: numbers within a relative tolerance
-- (an approx_* aggregate sums in float8, sum() of numeric exactly), every
-- other value as text.
CREATE OR REPLACE FUNCTION workload_same(a json[], b json[], tolerance float8 DEFAULT 1e-9) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
SELECT cardinality(a) = cardinality(b) AND coalesce(bool_and(
         (SELECT count(*) = (SELECT count(*) FROM json_each_text(y)) AND coalesce(bool_and(
                   CASE WHEN ex.v ~ num AND ey.v ~ num
                        THEN abs(ex.v::numeric - ey.v::numeric) <= tolerance::numeric * greatest(abs(ex.v::numeric), abs(ey.v::numeric))
                        ELSE ex.v IS NOT DISTINCT FROM ey.v END), true)
            FROM json_each_text(x) WITH ORDINALITY ex(k, v, n)
            JOIN json_each_text(y) WITH ORDINALITY ey(k, v, n) USING (n))), true)
  FROM unnest(a, b) u(x, y), (SELECT '^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$' AS num) c $$;

-- Where the approximate twin's answer came from, as last_run() and EXPLAIN
-- say: (answered_from, reason, plan node, rows returned).
CREATE OR REPLACE FUNCTION workload_answer(query text, OUT answered_from text, OUT reason text,
                                           OUT node text, OUT n_rows int)
LANGUAGE plpgsql AS $$
DECLARE line text; r record;
BEGIN
    node := '-';
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ 'Approx Sample Scan' THEN node := 'Approx Sample Scan';
        ELSIF line ~ 'Approx Synopsis Scan' AND node = '-' THEN node := 'Approx Synopsis Scan'; END IF;
    END LOOP;
    n_rows := 0;
    FOR r IN EXECUTE query LOOP n_rows := n_rows + 1; END LOOP;
    answered_from := approx_gpu.last_run()->>'answered_from';
    reason := approx_gpu.last_run()->>'reason';
END $$;
