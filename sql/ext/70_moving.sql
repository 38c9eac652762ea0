
-- ---- moving objects: a grid index with batched updates and range queries (G-LFPP) ----
-- An index lives in the backend (session) that created it and is NOT
-- transactional: ROLLBACK keeps every change made to it; it disappears with
-- mo_drop() or when the session ends. Its engine (GPU or CPU) is fixed by
-- approx_gpu.device at mo_create(). PARALLEL UNSAFE: the state is in the leader.

CREATE FUNCTION mo_create(name text, xmin float8, ymin float8, xmax float8, ymax float8, cells_x int, cells_y int)
    RETURNS void AS 'MODULE_PATHNAME', 'approx_gpu_mo_create' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_create(text, float8, float8, float8, float8, int, int) IS
    'Creates a moving-object grid index of cells_x x cells_y cells over [xmin,xmax] x [ymin,ymax] in this session, on the GPU when approx_gpu.device allows (not transactional: survives ROLLBACK, gone at session end)';

CREATE FUNCTION mo_load(name text, query text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_load' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_load(text, text) IS
    'Inserts or moves the objects of query (columns id, x, y) as one batch; a later row for the same id wins; rows with a NULL are skipped; returns the distinct ids written (not transactional)';

CREATE FUNCTION mo_update(name text, ids bigint[], xs float8[], ys float8[]) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_update' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_update(text, bigint[], float8[], float8[]) IS
    'Applies a batch of positions: unknown ids are inserted, known ids move, a later entry for the same id wins; all or nothing; returns the distinct ids written (not transactional)';

CREATE FUNCTION mo_delete(name text, ids bigint[]) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_delete' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_delete(text, bigint[]) IS
    'Removes the given ids (unknown ids are ignored) as one batch; returns how many were removed (not transactional)';

CREATE FUNCTION mo_range(name text, xmin float8, ymin float8, xmax float8, ymax float8) RETURNS SETOF bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_range' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE ROWS 1000;
COMMENT ON FUNCTION mo_range(text, float8, float8, float8, float8) IS
    'Ids of the objects inside the closed rectangle (clipped to the extent; bounds may be infinite), in ascending order';

CREATE FUNCTION mo_range_count(name text, xmin float8[], ymin float8[], xmax float8[], ymax float8[]) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_range_count' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_range_count(text, float8[], float8[], float8[], float8[]) IS
    'Objects inside each closed rectangle (xmin[i], ymin[i], xmax[i], ymax[i]) of a batch of range queries';

CREATE FUNCTION mo_info(name text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_info' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_info(text) IS
    'A moving-object index: device, objects, cells, buckets, memory (its bytes, the session''s total and approx_gpu.moving_session_memory), and the last update and query batches (counts, milliseconds)';

CREATE FUNCTION mo_drop(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_drop' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_drop(text) IS
    'Drops a moving-object index of this session and frees its memory (not transactional)';

CREATE FUNCTION mo_load(name text, relation regclass, id_column name, x_column name, y_column name) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_mo_load_relation' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION mo_load(text, regclass, name, name, name) IS
    'Inserts or moves the objects of a table (id_column, x_column, y_column) as one batch, read by parallel workers; rows with a NULL are skipped; returns the distinct ids written (not transactional)';
