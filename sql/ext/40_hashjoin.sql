
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
