-- ---- top-k: topk/bottomk aggregates and NRA top-k over sorted lists -------------

CREATE TYPE scored AS (id bigint, score float8);
COMMENT ON TYPE scored IS 'An (id, score) pair of a top-k answer';

CREATE FUNCTION approx_gpu_internal.topk_sfunc(internal, bigint, float8, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.topk_sfunc(internal, bigint, float8, int) IS 'Transition function of topk';
CREATE FUNCTION approx_gpu_internal.bottomk_sfunc(internal, bigint, float8, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_bottomk_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.bottomk_sfunc(internal, bigint, float8, int) IS 'Transition function of bottomk';
CREATE FUNCTION approx_gpu_internal.topk_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.topk_combine(internal, internal) IS 'Merges two partial topk/bottomk states';
CREATE FUNCTION approx_gpu_internal.topk_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.topk_serial(internal) IS 'Serialises a topk/bottomk state';
CREATE FUNCTION approx_gpu_internal.topk_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.topk_deserial(bytea, internal) IS 'Deserialises a topk/bottomk state';
CREATE FUNCTION approx_gpu_internal.topk_final(internal) RETURNS scored[]
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.topk_final(internal) IS 'Final function of topk/bottomk: the ordered answer';

CREATE AGGREGATE topk(id bigint, score float8, k int) (
    SFUNC = approx_gpu_internal.topk_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.topk_final,
    COMBINEFUNC = approx_gpu_internal.topk_combine, SERIALFUNC = approx_gpu_internal.topk_serial, DESERIALFUNC = approx_gpu_internal.topk_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE topk(bigint, float8, int) IS
    'The k rows with the largest scores, exactly ORDER BY score DESC, id ASC LIMIT k (k equal on every row; NULL ids or scores skipped)';

CREATE AGGREGATE bottomk(id bigint, score float8, k int) (
    SFUNC = approx_gpu_internal.bottomk_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.topk_final,
    COMBINEFUNC = approx_gpu_internal.topk_combine, SERIALFUNC = approx_gpu_internal.topk_serial, DESERIALFUNC = approx_gpu_internal.topk_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE bottomk(bigint, float8, int) IS
    'The k rows with the smallest scores, exactly ORDER BY score ASC, id ASC LIMIT k (k equal on every row; NULL ids or scores skipped)';

CREATE FUNCTION topk_nra(relation regclass, id_column name, score_columns name[], k int, batch int DEFAULT 1024)
    RETURNS TABLE(id bigint, score float8)
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_nra' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION topk_nra(regclass, name, name[], int, int) IS
    'Exact top k objects by the sum of their scores over score_columns (a missing score counts as the column''s minimum), found by NRA over one descending list per column (its own scan of a B-tree index on the column, else a cursor), batch rows per list per round; needs a unique index on id_column';

-- ---- over a relation (0.4.0): every pair goes to the selection engine ------------------------
CREATE FUNCTION topk(relation regclass, id_column name, score_column name, k int) RETURNS scored[]
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION topk(regclass, name, name, int) IS
    'The k rows of relation with the largest score_column, exactly ORDER BY score DESC, id ASC LIMIT k; the table is read by parallel workers and every pair is selected by the engine (rows with a NULL skipped)';

CREATE FUNCTION bottomk(relation regclass, id_column name, score_column name, k int) RETURNS scored[]
    AS 'MODULE_PATHNAME', 'approx_gpu_bottomk_relation' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION bottomk(regclass, name, name, int) IS
    'The k rows of relation with the smallest score_column, exactly ORDER BY score ASC, id ASC LIMIT k; the table is read by parallel workers and every pair is selected by the engine (rows with a NULL skipped)';
