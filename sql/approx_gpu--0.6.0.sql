-- approx_gpu: approximate and GPU-accelerated analytics.
-- This script is generated from sql/ext/*.sql (one fragment per feature).

\echo Use "CREATE EXTENSION approx_gpu" to load this file. \quit

-- Every function of the extension is meant for every role (named synopses
-- guard themselves by their owner, row-level security and their own checks).
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-- ---- runtime: introspection --------------------------------------------------

CREATE FUNCTION device_info() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_device_info' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION device_info() IS
    'GPUs visible to this backend (name, memory, compute capability) or why there are none';

CREATE FUNCTION last_run() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_last_run' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION last_run() IS
    'What the last approx_gpu call in this backend did: device, rows read and skipped, milliseconds';

CREATE FUNCTION gpu_service_info() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_service_info' LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION gpu_service_info() IS
    'The GPU service (shared_preload_libraries): whether it runs, its CUDA contexts, memory pool, queue, request counts and resident cache';

-- ---- KDE bandwidth selection -------------------------------------------------

CREATE TYPE lscv_result AS (
    h                float8,
    bandwidth_matrix float8[],
    objective        float8,
    h0               float8,
    at_boundary      boolean
);
COMMENT ON TYPE lscv_result IS
    'LSCV bandwidth: scalar h, bandwidth matrix h^2*S, objective at h, start h0, and whether h sits on the search boundary';

CREATE FUNCTION kde_bandwidth(x float8[], method text DEFAULT 'plugin') RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kde_bandwidth(float8[], text) IS
    'Gaussian kernel density bandwidth of x (data units) by plugin, lscv, scott or silverman';

CREATE FUNCTION kde_lscv(x float8[], grid int DEFAULT 150, covariance text DEFAULT 'full') RETURNS lscv_result
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kde_lscv(float8[], int, text) IS
    'Least-squares cross-validation bandwidth matrix h^2*S of the n x d points x (S = covariance, full or diagonal)';

-- STABLE, not IMMUTABLE: the answer depends on approx_gpu.device (the GPU and
-- CPU engines agree to about 1e-8, not bit for bit).

-- Aggregates: shared internal state (the points), merged by combine.
CREATE FUNCTION kde_bandwidth_sfunc(internal, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION kde_bandwidth_sfunc(internal, float8, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION kde_lscv_sfunc(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION kde_lscv_sfunc(internal, float8[], int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION kde_points_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_points_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION kde_points_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_points_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_points_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_points_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_bandwidth_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION kde_lscv_final(internal) RETURNS lscv_result
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv_final' LANGUAGE C STABLE PARALLEL SAFE;

CREATE AGGREGATE kde_bandwidth_agg(x float8) (
    SFUNC = kde_bandwidth_sfunc, STYPE = internal, FINALFUNC = kde_bandwidth_final,
    COMBINEFUNC = kde_points_combine, SERIALFUNC = kde_points_serial, DESERIALFUNC = kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_bandwidth_agg(float8) IS 'Plug-in kernel density bandwidth of the rows';

CREATE AGGREGATE kde_bandwidth_agg(x float8, method text) (
    SFUNC = kde_bandwidth_sfunc, STYPE = internal, FINALFUNC = kde_bandwidth_final,
    COMBINEFUNC = kde_points_combine, SERIALFUNC = kde_points_serial, DESERIALFUNC = kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_bandwidth_agg(float8, text) IS
    'Kernel density bandwidth of the rows by plugin, lscv, scott or silverman (method equal on every row)';

CREATE AGGREGATE kde_lscv_agg(x float8[]) (
    SFUNC = kde_lscv_sfunc, STYPE = internal, FINALFUNC = kde_lscv_final,
    COMBINEFUNC = kde_points_combine, SERIALFUNC = kde_points_serial, DESERIALFUNC = kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_lscv_agg(float8[]) IS 'LSCV bandwidth matrix of the rows (each row one point), grid 150';

CREATE AGGREGATE kde_lscv_agg(x float8[], grid int) (
    SFUNC = kde_lscv_sfunc, STYPE = internal, FINALFUNC = kde_lscv_final,
    COMBINEFUNC = kde_points_combine, SERIALFUNC = kde_points_serial, DESERIALFUNC = kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_lscv_agg(float8[], int) IS
    'LSCV bandwidth matrix of the rows (each row one point) with a grid of the given size (equal on every row)';

-- ---- KDE synopses: approximate COUNT / SUM / AVG over boxes ------------------

CREATE TYPE kde_synopsis;

CREATE FUNCTION kde_synopsis_in(cstring) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_out(kde_synopsis) RETURNS cstring
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_recv(internal) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_send(kde_synopsis) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE kde_synopsis (
    INPUT = kde_synopsis_in, OUTPUT = kde_synopsis_out,
    RECEIVE = kde_synopsis_recv, SEND = kde_synopsis_send,
    INTERNALLENGTH = VARIABLE, STORAGE = extended);
COMMENT ON TYPE kde_synopsis IS
    'KDE synopsis of a relation: N, a uniform sample, per-column statistics, density and box bandwidths, per-column mode (exact, kde, log_kde) with its cross-validated evidence (text form: JSON)';
COMMENT ON FUNCTION kde_synopsis_in(cstring) IS 'kde_synopsis from its JSON text form (every field validated)';
COMMENT ON FUNCTION kde_synopsis_out(kde_synopsis) IS 'JSON text form of a kde_synopsis (exact round trip)';
COMMENT ON FUNCTION kde_synopsis_recv(internal) IS 'kde_synopsis from its binary form (version byte, little-endian, validated)';
COMMENT ON FUNCTION kde_synopsis_send(kde_synopsis) IS 'Binary form of a kde_synopsis (version byte, little-endian)';

-- The binary form as bytea, both ways (to ship synopses between servers; the
-- same validation as recv).
CREATE FUNCTION kde_synopsis_to_bytea(kde_synopsis) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_from_bytea(bytea) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_from_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (kde_synopsis AS bytea) WITH FUNCTION kde_synopsis_to_bytea(kde_synopsis);
CREATE CAST (bytea AS kde_synopsis) WITH FUNCTION kde_synopsis_from_bytea(bytea);
COMMENT ON FUNCTION kde_synopsis_to_bytea(kde_synopsis) IS 'The binary form of a kde_synopsis (what send gives)';
COMMENT ON FUNCTION kde_synopsis_from_bytea(bytea) IS 'A kde_synopsis from its binary form (validated like recv)';

CREATE TYPE approx_estimate AS (estimate float8, lower float8, upper float8);
COMMENT ON TYPE approx_estimate IS 'An approximate answer and its confidence interval';

-- Aggregates: internal state = reservoir + counters + parameters; combine
-- merges reservoirs; bandwidths are computed in the final function.
CREATE FUNCTION kde_synopsis_sfunc(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_sfunc(internal, float8[], int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_sfunc(internal, float8[], int, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_sfunc(internal, float8[], int, text, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_merge_sfunc(internal, kde_synopsis) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_merge_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_combine' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION kde_synopsis_final(internal) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION kde_merge_final(internal) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_merge_final' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE AGGREGATE kde_synopsis_agg(x float8[]) (
    SFUNC = kde_synopsis_sfunc, STYPE = internal, FINALFUNC = kde_synopsis_final,
    COMBINEFUNC = kde_synopsis_combine, SERIALFUNC = kde_synopsis_serial, DESERIALFUNC = kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[]) IS
    'KDE synopsis of the rows (each row one point x): sample of 10000, cdf bandwidths, auto smoothing; the sample is random, reproducible when approx_gpu.random_seed is set';
CREATE AGGREGATE kde_synopsis_agg(x float8[], sample_size int) (
    SFUNC = kde_synopsis_sfunc, STYPE = internal, FINALFUNC = kde_synopsis_final,
    COMBINEFUNC = kde_synopsis_combine, SERIALFUNC = kde_synopsis_serial, DESERIALFUNC = kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int) IS
    'KDE synopsis of the rows with a sample of sample_size rows (equal on every row)';
CREATE AGGREGATE kde_synopsis_agg(x float8[], sample_size int, bandwidth text) (
    SFUNC = kde_synopsis_sfunc, STYPE = internal, FINALFUNC = kde_synopsis_final,
    COMBINEFUNC = kde_synopsis_combine, SERIALFUNC = kde_synopsis_serial, DESERIALFUNC = kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int, text) IS
    'KDE synopsis of the rows; bandwidth cdf, plugin, lscv or scott (equal on every row)';
CREATE AGGREGATE kde_synopsis_agg(x float8[], sample_size int, bandwidth text, smoothing text) (
    SFUNC = kde_synopsis_sfunc, STYPE = internal, FINALFUNC = kde_synopsis_final,
    COMBINEFUNC = kde_synopsis_combine, SERIALFUNC = kde_synopsis_serial, DESERIALFUNC = kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int, text, text) IS
    'KDE synopsis of the rows; smoothing auto (each column exact or smoothed by cross-validation on the sample), always or never (equal on every row)';

CREATE FUNCTION kde_merge(a kde_synopsis, b kde_synopsis) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_merge' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kde_merge(kde_synopsis, kde_synopsis) IS
    'Synopsis of the union of two relations (hypergeometric reservoir merge; bandwidths recomputed); random, reproducible when approx_gpu.random_seed is set';
CREATE AGGREGATE kde_merge_agg(kde_synopsis) (
    SFUNC = kde_merge_sfunc, STYPE = internal, FINALFUNC = kde_merge_final,
    COMBINEFUNC = kde_synopsis_combine, SERIALFUNC = kde_synopsis_serial, DESERIALFUNC = kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_merge_agg(kde_synopsis) IS
    'Synopsis of the union of the relations behind the synopses (shards, partitions); bandwidths recomputed';

-- Box estimates: lo and hi hold one bound per column; NULL or +-Infinity = unbounded.
-- Estimates are STABLE, not IMMUTABLE: they depend on approx_gpu.device (the
-- GPU and CPU engines agree to about 1e-9 relative, not bit for bit).
CREATE FUNCTION approx_count(s kde_synopsis, lo float8[], hi float8[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_count' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_count(kde_synopsis, float8[], float8[]) IS
    'Estimated COUNT(*) of the rows inside the box [lo, hi]';
CREATE FUNCTION approx_sum(s kde_synopsis, col int, lo float8[], hi float8[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_sum' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_sum(kde_synopsis, int, float8[], float8[]) IS
    'Estimated SUM of column col (1-based) over the rows inside the box [lo, hi]';
CREATE FUNCTION approx_avg(s kde_synopsis, col int, lo float8[], hi float8[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_avg' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_avg(kde_synopsis, int, float8[], float8[]) IS
    'Estimated AVG of column col (1-based) over the rows inside the box [lo, hi]; NULL for an empty box';

CREATE FUNCTION approx_count_ci(s kde_synopsis, lo float8[], hi float8[], confidence float8 DEFAULT 0.95)
    RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_count_ci' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_count_ci(kde_synopsis, float8[], float8[], float8) IS
    'Estimated COUNT(*) inside the box with its confidence interval (normal approximation, clipped to [0, N])';
CREATE FUNCTION approx_sum_ci(s kde_synopsis, col int, lo float8[], hi float8[], confidence float8 DEFAULT 0.95)
    RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_sum_ci' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_sum_ci(kde_synopsis, int, float8[], float8[], float8) IS
    'Estimated SUM of column col inside the box with its confidence interval';
CREATE FUNCTION approx_avg_ci(s kde_synopsis, col int, lo float8[], hi float8[], confidence float8 DEFAULT 0.95)
    RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_avg_ci' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_avg_ci(kde_synopsis, int, float8[], float8[], float8) IS
    'Estimated AVG of column col inside the box with its confidence interval (ratio estimator, delta method)';

CREATE FUNCTION approx_count_many(s kde_synopsis, lo float8[], hi float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_count_many' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_count_many(kde_synopsis, float8[], float8[]) IS
    'Estimated COUNT(*) of q boxes at once: lo and hi are q x d arrays, one box per row';
CREATE FUNCTION approx_sum_many(s kde_synopsis, col int, lo float8[], hi float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_sum_many' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_sum_many(kde_synopsis, int, float8[], float8[]) IS
    'Estimated SUM of column col for q boxes at once (q x d bounds)';
CREATE FUNCTION approx_avg_many(s kde_synopsis, col int, lo float8[], hi float8[]) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_avg_many' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_avg_many(kde_synopsis, int, float8[], float8[]) IS
    'Estimated AVG of column col for q boxes at once (q x d bounds); NULL elements for empty boxes';

CREATE FUNCTION kde_density(s kde_synopsis, x float8[]) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_density' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kde_density(kde_synopsis, float8[]) IS
    'Product-Gaussian kernel density estimate at the point x (density bandwidths, every column smoothed)';
CREATE FUNCTION kde_synopsis_info(s kde_synopsis) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_info' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kde_synopsis_info(kde_synopsis) IS
    'N, m, d, sample size, skipped rows, bandwidth method, smoothing, bytes, the guard''s joint CV errors, per column: name, both bandwidths, discrete, mode, log-scale shift and bandwidth, interval scale, cross-validated errors and coverage, step, statistics';

-- ---- named synopses ---------------------------------------------------------
-- A synopsis holds raw sample rows, so it is guarded like the data: PUBLIC may
-- only read, row-level security shows each role its own rows (and those of
-- roles whose privileges it has), and only the functions below write, as the
-- table's owner with search_path = pg_catalog, pg_temp. Names are per owner:
-- the key is (owner, name), and a name resolves among the rows the caller may
-- see, its own first; a row the caller may not see behaves exactly as a
-- missing one. The stored query runs as the synopsis' owner in a
-- security-restricted operation with search_path set to exactly the path
-- captured when it was created (the owner's effective schemas, temporary
-- schemas left out, then pg_temp last), so it resolves the same objects
-- whoever refreshes it. search_path NULL: unknown (a row stored by 0.1.0);
-- only the owner itself may refresh such a row, which captures its path.
-- A row whose owner role was dropped is never run and never answers; a
-- superuser sees it and can drop it.
CREATE TABLE synopses (
    name        text NOT NULL,
    owner       regrole NOT NULL,
    query       text,
    synopsis    kde_synopsis NOT NULL,
    created     timestamptz NOT NULL DEFAULT now(),
    search_path text,
    PRIMARY KEY (owner, name)
);
COMMENT ON TABLE synopses IS
    'Named KDE synopses, one namespace per owner: each row visible to its owner (and roles with the owner''s privileges), a table synopsis also to its table''s owner; written only by create/refresh/drop_synopsis';
COMMENT ON COLUMN synopses.search_path IS
    'The search_path the query runs with (the owner''s effective path at creation, pg_temp last); NULL: unknown (stored by 0.1.0), only the owner may refresh';
ALTER TABLE synopses ENABLE ROW LEVEL SECURITY;
CREATE POLICY synopses_owner_reads ON synopses FOR SELECT
    USING (pg_catalog.pg_has_role(owner::oid, 'USAGE'));
REVOKE ALL ON synopses FROM PUBLIC;
GRANT SELECT ON synopses TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('synopses', '');

CREATE FUNCTION create_synopsis(name text, query text, sample_size int DEFAULT 10000, bandwidth text DEFAULT 'cdf',
                                smoothing text DEFAULT 'auto') RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_create_synopsis' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION create_synopsis(text, text, int, text, text) IS
    'Builds and stores a named synopsis of the query''s rows (its columns become the dimensions, by name); returns kde_synopsis_info';
CREATE FUNCTION refresh_synopsis(name text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_refresh_synopsis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION refresh_synopsis(text) IS
    'Rebuilds a named synopsis by running its query as its owner (owner only); returns kde_synopsis_info';
CREATE FUNCTION drop_synopsis(name text) RETURNS void
    AS 'MODULE_PATHNAME', 'approx_gpu_drop_synopsis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION drop_synopsis(text) IS 'Removes a named synopsis (its owner, or the owner of its table)';

CREATE FUNCTION approx_count(name text, predicate jsonb) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_count_named' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION approx_count(text, jsonb) IS
    'Estimated COUNT(*) of a named synopsis'' rows matching {"column": [lo, hi], ...} (null = unbounded)';
CREATE FUNCTION approx_sum(name text, column_name text, predicate jsonb) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_sum_named' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION approx_sum(text, text, jsonb) IS
    'Estimated SUM of a column of a named synopsis over the rows matching the predicate';
CREATE FUNCTION approx_avg(name text, column_name text, predicate jsonb) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_approx_avg_named' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION approx_avg(text, text, jsonb) IS
    'Estimated AVG of a column of a named synopsis over the rows matching the predicate; NULL for an empty box';

-- ---- table synopses (0.3.0) ---------------------------------------------------
-- A synopsis bound to a relation and its columns (by OID and attribute
-- number: a rename follows; a dropped table drops its synopses, through the
-- event trigger below; a dropped or retyped column makes them unusable).
-- query is NULL for those rows; relation is NULL for query-text synopses.
ALTER TABLE synopses
    ADD COLUMN relation regclass,
    ADD COLUMN attnums int2[],
    ADD COLUMN atttypes regtype[],
    ADD COLUMN collations oid[],
    ADD COLUMN stratify int2[],
    ADD COLUMN rows_built int8,
    ADD COLUMN changes_built int8,
    ADD COLUMN pending_inserts int8,
    ADD COLUMN relfilenode oid,
    ADD CONSTRAINT synopses_query_or_relation CHECK ((query IS NULL) <> (relation IS NULL));
CREATE INDEX synopses_relation ON synopses (relation);
COMMENT ON COLUMN synopses.relation IS 'The table of a table synopsis (NULL: a query-text synopsis)';
COMMENT ON COLUMN synopses.attnums IS 'The synopsis columns as attribute numbers of relation (a rename follows)';
COMMENT ON COLUMN synopses.atttypes IS 'Each column''s type when built (a retyped column makes the synopsis unusable)';
COMMENT ON COLUMN synopses.collations IS 'Each column''s collation when built (a changed collation makes the synopsis unusable)';
COMMENT ON COLUMN synopses.stratify IS 'Attribute numbers of the stratify columns (NULL: a uniform sample)';
COMMENT ON COLUMN synopses.rows_built IS 'Rows of the table when built (N, NULL rows included)';
COMMENT ON COLUMN synopses.changes_built IS 'n_tup_ins + n_tup_upd + n_tup_del of the table as the statistics reported them when built';
COMMENT ON COLUMN synopses.pending_inserts IS 'Rows the build read that the statistics had not counted yet (forgiven as late inserts by the staleness check)';
COMMENT ON COLUMN synopses.relfilenode IS 'The table''s relfilenode when built (another one: truncated or rewritten since)';

CREATE FUNCTION create_synopsis(name text, relation regclass, columns name[], sample_size int DEFAULT 10000,
                                bandwidth text DEFAULT 'cdf', smoothing text DEFAULT 'auto',
                                stratify name[] DEFAULT NULL) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_create_table_synopsis' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION create_synopsis(text, regclass, name[], int, text, text, name[]) IS
    'Builds and stores a named synopsis of the table''s columns (every row, NULLs included; bool, text, varchar, char and enum columns as dictionaries; stratify: a congressional sample by those columns) as the caller; returns kde_synopsis_info';
CREATE FUNCTION synopsis_status(name text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_synopsis_status' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION synopsis_status(text) IS
    'Whether a named synopsis can answer queries: {"status": "fresh" | "stale" | "unusable" | "query", "reason": ...} with its table, columns and build counters';

-- Whose synopsis answers a query (docs/aqp.md): the table owner's (and
-- those of roles with its privileges) answer everyone, any other role's only
-- that role. So the table's owner (and roles with its privileges) sees every
-- synopsis of its table, and can drop it (by name, or by name and owner when
-- several roles use the name).
ALTER POLICY synopses_owner_reads ON synopses
    USING (pg_catalog.pg_has_role(owner::oid, 'USAGE')
           OR pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                      WHERE c.oid OPERATOR(pg_catalog.=) relation::oid), 'USAGE'));
CREATE FUNCTION drop_synopsis(name text, owner regrole) RETURNS void
    AS 'MODULE_PATHNAME', 'approx_gpu_drop_synopsis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION drop_synopsis(text, regrole) IS
    'Removes the named synopsis of that owner (its owner, or the owner of its table)';

-- A dropped table drops its synopses (and an owner left without synopses
-- loses its SELECT on the table, as drop_synopsis does).
CREATE FUNCTION synopses_drop_relations() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    gone oid;
BEGIN
    FOR gone IN
        DELETE FROM approx_gpu.synopses s USING pg_catalog.pg_event_trigger_dropped_objects() o
         WHERE o.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.objsubid = 0
           AND s.relation::pg_catalog.oid = o.objid
        RETURNING s.owner::pg_catalog.oid
    LOOP
        IF NOT EXISTS (SELECT 1 FROM approx_gpu.synopses WHERE owner::pg_catalog.oid = gone)
           AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE oid = gone)
           AND gone <> (SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'approx_gpu.synopses'::pg_catalog.regclass) THEN
            EXECUTE pg_catalog.format('REVOKE SELECT ON approx_gpu.synopses FROM %I', gone::pg_catalog.regrole::pg_catalog.text);
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION synopses_drop_relations() IS 'Event trigger: removes the synopses of dropped tables';
REVOKE ALL ON FUNCTION synopses_drop_relations() FROM PUBLIC;
CREATE EVENT TRIGGER approx_gpu_synopses_drop ON sql_drop EXECUTE FUNCTION synopses_drop_relations();

-- ---- freshness beyond the counters, columns by name (0.6.0) -------------------
-- What the change counters cannot show (issue 26): the columns by name as
-- well as by number (a restore renumbers them after a dropped column; a
-- rename updates the stored name, below), the cluster and database the
-- counters belong to, the statistics' reset times (pg_stat_reset*, crash
-- recovery), inserts apart (only late inserts are forgiven), the enum labels
-- the dictionaries hold, and a build that could not vouch for its own
-- freshness. A row with system_identifier NULL was built before 0.6.0: stale
-- until refreshed.
ALTER TABLE synopses
    ADD COLUMN attnames name[],
    ADD COLUMN inserts_built int8,
    ADD COLUMN system_identifier int8,
    ADD COLUMN database_oid oid,
    ADD COLUMN stats_reset timestamptz,
    ADD COLUMN cluster_stats_reset timestamptz,
    ADD COLUMN label_hashes int8[],
    ADD COLUMN built_stale text;
COMMENT ON COLUMN synopses.attnames IS 'Each column''s name (kept current on RENAME COLUMN); a name found at another number rebinds the column (a restore)';
COMMENT ON COLUMN synopses.inserts_built IS 'n_tup_ins of the table when built (pending_inserts forgives only inserts)';
COMMENT ON COLUMN synopses.system_identifier IS 'pg_control_system().system_identifier of the cluster that built it (another cluster: stale; NULL: built before 0.6.0)';
COMMENT ON COLUMN synopses.database_oid IS 'The database that built it (another one: stale)';
COMMENT ON COLUMN synopses.stats_reset IS 'pg_stat_database.stats_reset when built (a later reset of the database''s or a table''s counters: stale)';
COMMENT ON COLUMN synopses.cluster_stats_reset IS 'pg_stat_bgwriter.stats_reset when built (crash recovery resets it: stale)';
COMMENT ON COLUMN synopses.label_hashes IS 'Per column: a hash of the pg_enum rows of the labels its dictionary holds (0: not an enum); another hash (a renamed label): stale';
COMMENT ON COLUMN synopses.built_stale IS 'Why the build could not vouch for its freshness (an old REPEATABLE READ snapshot); NULL: it could';

-- RENAME COLUMN: the stored name follows the column, in the table and in
-- its inheritance children and partitions (which the rename recurses to),
-- matched by number and only while the old name is gone: a row whose numbers
-- a restore moved, or whose column was dropped, is never renamed after
-- another column.
CREATE FUNCTION synopses_follow_renames() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    WITH RECURSIVE renamed AS (
        SELECT c.objid AS relid, a.attname AS newname
          FROM pg_catalog.pg_event_trigger_ddl_commands() c
          JOIN pg_catalog.pg_attribute a ON a.attrelid = c.objid AND a.attnum = c.objsubid AND NOT a.attisdropped
         WHERE c.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND c.objsubid > 0
        UNION
        SELECT i.inhrelid, r.newname FROM renamed r JOIN pg_catalog.pg_inherits i ON i.inhparent = r.relid
    )
    UPDATE approx_gpu.synopses s
       SET attnames = (SELECT pg_catalog.array_agg(
                                  CASE WHEN u.n = k.attnum AND NOT EXISTS (
                                           SELECT 1 FROM pg_catalog.pg_attribute a
                                            WHERE a.attrelid = s.relation AND a.attname = u.old AND NOT a.attisdropped)
                                       THEN k.attname ELSE u.old END ORDER BY u.i)
                         FROM ROWS FROM (pg_catalog.unnest(s.attnums), pg_catalog.unnest(s.attnames))
                              WITH ORDINALITY AS u(n, old, i))
      FROM renamed r
      JOIN pg_catalog.pg_attribute k ON k.attrelid = r.relid AND k.attname = r.newname AND NOT k.attisdropped
     WHERE s.relation::pg_catalog.oid = r.relid AND s.attnames IS NOT NULL AND k.attnum = ANY (s.attnums);
END
$$;
COMMENT ON FUNCTION synopses_follow_renames() IS 'Event trigger: a renamed column''s synopses store its new name';
REVOKE ALL ON FUNCTION synopses_follow_renames() FROM PUBLIC;
CREATE EVENT TRIGGER approx_gpu_synopses_rename ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'ALTER MATERIALIZED VIEW') EXECUTE FUNCTION synopses_follow_renames();

-- ---- approximate aggregates in plain SQL -----------------------------------------
-- approx_count(*), approx_sum(x), approx_avg(x) and their _ci forms are real
-- aggregates: over rows they give the exact answer (the _ci forms with lower =
-- upper = estimate). When a query reads one table with a fresh synopsis that
-- covers it, the planner answers them from the synopsis instead (EXPLAIN shows
-- an "Approx Synopsis Scan"; approx_gpu.last_run() says which happened and why).
-- The transition functions carry a planner support function: the planner calls
-- it while costing the aggregates, which loads the library (and its planner
-- hook) during a session's first query; shared_preload_libraries = 'approx_gpu'
-- is the alternative.
CREATE FUNCTION aqp_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION aqp_count_trans(bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT aqp_support;
CREATE FUNCTION aqp_sum_trans(float8, float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sum_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT aqp_support;
CREATE FUNCTION aqp_avg_trans(float8[], float8) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_avg_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT aqp_support;
COMMENT ON FUNCTION aqp_support(internal) IS
    'Planner support function of the approx_* transition functions: loads the library (and its planner hook) while the planner costs them';
COMMENT ON FUNCTION aqp_count_trans(bigint) IS 'Transition function of approx_count(*) and approx_count_ci(*): counts rows';
COMMENT ON FUNCTION aqp_sum_trans(float8, float8) IS 'Transition function of approx_sum and approx_sum_ci: sums non-NULL values';
COMMENT ON FUNCTION aqp_avg_trans(float8[], float8) IS 'Transition function of approx_avg and approx_avg_ci: count and sum of non-NULL values';
CREATE FUNCTION aqp_count_final(bigint) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION aqp_count_ci_final(bigint) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_ci_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION aqp_sum_ci_final(float8) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sum_ci_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION aqp_avg_ci_final(float8[]) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_avg_ci_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE approx_count(*) (
    SFUNC = aqp_count_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = aqp_count_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count(*) IS
    'count(*) as float8, answered from a fresh synopsis of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_sum(float8) (
    SFUNC = aqp_sum_trans, STYPE = float8, COMBINEFUNC = pg_catalog.float8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_sum(float8) IS
    'sum(x) as float8, answered from a fresh synopsis of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_avg(float8) (
    SFUNC = aqp_avg_trans, STYPE = float8[], INITCOND = '{0,0,0}', FINALFUNC = pg_catalog.float8_avg,
    COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_avg(float8) IS
    'avg(x) as float8, answered from a fresh synopsis of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_count_ci(*) (
    SFUNC = aqp_count_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = aqp_count_ci_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count_ci(*) IS
    'approx_count(*) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
CREATE AGGREGATE approx_sum_ci(float8) (
    SFUNC = aqp_sum_trans, STYPE = float8, FINALFUNC = aqp_sum_ci_final,
    COMBINEFUNC = pg_catalog.float8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_sum_ci(float8) IS
    'approx_sum(x) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
CREATE AGGREGATE approx_avg_ci(float8) (
    SFUNC = aqp_avg_trans, STYPE = float8[], INITCOND = '{0,0,0}', FINALFUNC = aqp_avg_ci_final,
    COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_avg_ci(float8) IS
    'approx_avg(x) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
-- ---- top-k: topk/bottomk aggregates and NRA top-k over sorted lists -------------

CREATE TYPE scored AS (id bigint, score float8);
COMMENT ON TYPE scored IS 'An (id, score) pair of a top-k answer';

CREATE FUNCTION topk_sfunc(internal, bigint, float8, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION topk_sfunc(internal, bigint, float8, int) IS 'Transition function of topk';
CREATE FUNCTION bottomk_sfunc(internal, bigint, float8, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_bottomk_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bottomk_sfunc(internal, bigint, float8, int) IS 'Transition function of bottomk';
CREATE FUNCTION topk_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION topk_combine(internal, internal) IS 'Merges two partial topk/bottomk states';
CREATE FUNCTION topk_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION topk_serial(internal) IS 'Serialises a topk/bottomk state';
CREATE FUNCTION topk_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION topk_deserial(bytea, internal) IS 'Deserialises a topk/bottomk state';
CREATE FUNCTION topk_final(internal) RETURNS scored[]
    AS 'MODULE_PATHNAME', 'approx_gpu_topk_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION topk_final(internal) IS 'Final function of topk/bottomk: the ordered answer';

CREATE AGGREGATE topk(id bigint, score float8, k int) (
    SFUNC = topk_sfunc, STYPE = internal, FINALFUNC = topk_final,
    COMBINEFUNC = topk_combine, SERIALFUNC = topk_serial, DESERIALFUNC = topk_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE topk(bigint, float8, int) IS
    'The k rows with the largest scores, exactly ORDER BY score DESC, id ASC LIMIT k (k equal on every row; NULL ids or scores skipped)';

CREATE AGGREGATE bottomk(id bigint, score float8, k int) (
    SFUNC = bottomk_sfunc, STYPE = internal, FINALFUNC = topk_final,
    COMBINEFUNC = topk_combine, SERIALFUNC = topk_serial, DESERIALFUNC = topk_deserial,
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
