-- approx_gpu 0.3.0 -> 0.4.0. Every change to sql/ext/*.sql after 0.3.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.4.0'" to load this file. \quit

-- ---- over a relation (0.4.0): every pair goes to the selection engine ------------------------
CREATE FUNCTION topk(relation regclass, id_column name, score_column name, k int) RETURNS scored[]
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION topk(regclass, name, name, int) IS
    'The k rows of relation with the largest score_column, exactly ORDER BY score DESC, id ASC LIMIT k; the table is read by parallel workers and every pair is selected by the engine (rows with a NULL skipped)';

CREATE FUNCTION bottomk(relation regclass, id_column name, score_column name, k int) RETURNS scored[]
    AS 'MODULE_PATHNAME', 'approx_gpu_bottomk_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION bottomk(regclass, name, name, int) IS
    'The k rows of relation with the smallest score_column, exactly ORDER BY score ASC, id ASC LIMIT k; the table is read by parallel workers and every pair is selected by the engine (rows with a NULL skipped)';

-- ---- over relations (0.4.0): both sides read by the parallel columnar reader ------------------
CREATE FUNCTION hash_join(build regclass, build_key_column name, build_value_column name,
                          probe regclass, probe_key_column name, probe_value_column name)
    RETURNS TABLE(key bigint, build_value bigint, probe_value bigint)
    AS 'MODULE_PATHNAME', 'approx_gpu_hash_join_relations' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION hash_join(regclass, name, name, regclass, name, name) IS
    'Equi-join of two tables on integer key columns, like build JOIN probe USING (key): every matching (key, build_value, probe_value); NULL keys never match; tables read by parallel workers';

CREATE FUNCTION hash_join_count(build regclass, build_key_column name, probe regclass, probe_key_column name)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_hash_join_count_relations' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION hash_join_count(regclass, name, regclass, name) IS
    'Number of rows of build JOIN probe ON build_key_column = probe_key_column, computed without materialising them; tables read by parallel workers';

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

CREATE FUNCTION mo_load(name text, relation regclass, id_column name, x_column name, y_column name) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_load_relation' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_load(text, regclass, name, name, name) IS
    'Inserts or moves the objects of a table (id_column, x_column, y_column) as one batch, read by parallel workers; rows with a NULL are skipped; returns the distinct ids written (not transactional)';

COMMENT ON FUNCTION topk_nra(regclass, name, name[], int, int) IS
    'Exact top k objects by the sum of their scores over score_columns (a missing score counts as the column''s minimum), found by NRA over one descending list per column (its own scan of a B-tree index on the column, else a cursor), batch rows per list per round; needs a unique index on id_column';
