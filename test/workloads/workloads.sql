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

-- The queries of the workload files, read by the client and concatenated,
-- each after a line '-- file: W/qN.sql' (psql: \set files `...`; the
-- server needs no access to the files): name (ssb.q1_1), search_path schema
-- (W) and text without its final semicolon, in file order per workload.
CREATE OR REPLACE FUNCTION workload_queries(files text)
RETURNS TABLE (name text, schema text, query text)
LANGUAGE sql IMMUTABLE STRICT AS $$
SELECT w || '.' || q, w, regexp_replace(substr(part, strpos(part, E'\n') + 1), ';\s*$', '')
  FROM regexp_split_to_table(files, '^-- file: ', 'n') part,
       LATERAL regexp_match(part, '^([a-z_]+)/(q[0-9_]+)\.sql') m, LATERAL (SELECT m[1] AS w, m[2] AS q) x
 WHERE m IS NOT NULL
 ORDER BY w, string_to_array(substr(q, 2), '_')::int[] $$;

-- A query's rows, each as the JSON of its values in column order
-- (row_to_json keeps the order; jsonb would sort the keys). path: the
-- search_path to run it with (for the rest of the transaction), NULL: as is.
CREATE OR REPLACE FUNCTION workload_rows(query text, path text DEFAULT NULL) RETURNS json[]
LANGUAGE plpgsql AS $$
DECLARE r record; out json[] := '{}';
BEGIN
    IF path IS NOT NULL THEN PERFORM set_config('search_path', path, true); END IF;
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
-- say: (answered_from, reason, plan node, rows returned); path as above.
CREATE OR REPLACE FUNCTION workload_answer(query text, path text DEFAULT NULL, OUT answered_from text,
                                           OUT reason text, OUT node text, OUT n_rows int)
LANGUAGE plpgsql AS $$
DECLARE line text; r record;
BEGIN
    IF path IS NOT NULL THEN PERFORM set_config('search_path', path, true); END IF;
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

-- The query and its approximate twin row for row (workload_same), and where
-- the twin was answered from; path as above.
CREATE OR REPLACE FUNCTION workload_check(query text, path text DEFAULT NULL, OUT same_rows boolean,
                                          OUT answered_from text, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE exact json[] := workload_rows(query, path);
BEGIN
    same_rows := workload_same(exact, workload_rows(workload_approx(query), path));
    answered_from := approx_gpu.last_run()->>'answered_from';
    reason := approx_gpu.last_run()->>'reason';
END $$;
