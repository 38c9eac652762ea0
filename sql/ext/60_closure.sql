
-- ---- transitive closure (blocked/condensed bit matrices; STAR with closure_algorithm) ----

CREATE FUNCTION transitive_closure(edges_query text) RETURNS TABLE(src bigint, dst bigint)
    AS 'MODULE_PATHNAME', 'approx_gpu_transitive_closure' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
    ROWS 10000;
COMMENT ON FUNCTION transitive_closure(text) IS
    'Pairs (src, dst) joined by a path of length >= 1 in the graph of the edges (src, dst) that edges_query returns (integer ids; NULL endpoints skipped)';

CREATE FUNCTION reachability_count(edges_query text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_reachability_count' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION reachability_count(text) IS
    'Number of pairs transitive_closure(edges_query) would return, counted without materialising them';

CREATE FUNCTION reachable(edges_query text, source bigint) RETURNS SETOF bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_reachable' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION reachable(text, bigint) IS
    'Vertices reachable from source by a path of length >= 1 in the graph of edges_query, ascending';

-- ---- over a relation (0.4.0): the edges read by the parallel columnar reader -------------------
CREATE FUNCTION transitive_closure(edges regclass, src_column name, dst_column name)
    RETURNS TABLE(src bigint, dst bigint)
    AS 'MODULE_PATHNAME', 'approx_gpu_transitive_closure_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED
    ROWS 10000;
COMMENT ON FUNCTION transitive_closure(regclass, name, name) IS
    'Pairs (src, dst) joined by a path of length >= 1 in the graph of the edges (src_column, dst_column) of a table (integer ids; NULL endpoints skipped)';

CREATE FUNCTION reachability_count(edges regclass, src_column name, dst_column name) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_reachability_count_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION reachability_count(regclass, name, name) IS
    'Number of pairs transitive_closure(edges, src_column, dst_column) would return, counted without materialising them';

CREATE FUNCTION reachable(edges regclass, src_column name, dst_column name, source bigint) RETURNS SETOF bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_reachable_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION reachable(regclass, name, name, bigint) IS
    'Vertices reachable from source by a path of length >= 1 in the graph of the edges of a table, ascending';
