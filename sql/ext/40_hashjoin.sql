
-- ---- hashed joins (GPU cuckoo hashing) -----------------------------------------

CREATE FUNCTION hash_join(build_query text, probe_query text)
    RETURNS TABLE(key bigint, build_value bigint, probe_value bigint)
    AS 'MODULE_PATHNAME', 'approx_gpu_hash_join' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED ROWS 1000;
COMMENT ON FUNCTION hash_join(text, text) IS
    'Equi-join of two queries of (key, value) integer columns, like build JOIN probe USING (key): every matching (key, build_value, probe_value); NULL keys never match';

CREATE FUNCTION hash_join_count(build_query text, probe_query text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_hash_join_count' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION hash_join_count(text, text) IS
    'Number of rows of hash_join(build_query, probe_query), computed without materialising them';
