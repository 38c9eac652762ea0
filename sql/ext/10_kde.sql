
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
CREATE FUNCTION approx_gpu_internal.kde_bandwidth_sfunc(internal, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_bandwidth_sfunc(internal, float8, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_lscv_sfunc(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_lscv_sfunc(internal, float8[], int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv_sfunc' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_points_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_points_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_points_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_points_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_points_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_points_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_bandwidth_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_bandwidth_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_lscv_final(internal) RETURNS lscv_result
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_lscv_final' LANGUAGE C STABLE PARALLEL SAFE;

CREATE AGGREGATE kde_bandwidth_agg(x float8) (
    SFUNC = approx_gpu_internal.kde_bandwidth_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_bandwidth_final,
    COMBINEFUNC = approx_gpu_internal.kde_points_combine, SERIALFUNC = approx_gpu_internal.kde_points_serial, DESERIALFUNC = approx_gpu_internal.kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_bandwidth_agg(float8) IS 'Plug-in kernel density bandwidth of the rows';

CREATE AGGREGATE kde_bandwidth_agg(x float8, method text) (
    SFUNC = approx_gpu_internal.kde_bandwidth_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_bandwidth_final,
    COMBINEFUNC = approx_gpu_internal.kde_points_combine, SERIALFUNC = approx_gpu_internal.kde_points_serial, DESERIALFUNC = approx_gpu_internal.kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_bandwidth_agg(float8, text) IS
    'Kernel density bandwidth of the rows by plugin, lscv, scott or silverman (method equal on every row)';

CREATE AGGREGATE kde_lscv_agg(x float8[]) (
    SFUNC = approx_gpu_internal.kde_lscv_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_lscv_final,
    COMBINEFUNC = approx_gpu_internal.kde_points_combine, SERIALFUNC = approx_gpu_internal.kde_points_serial, DESERIALFUNC = approx_gpu_internal.kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_lscv_agg(float8[]) IS 'LSCV bandwidth matrix of the rows (each row one point), grid 150';

CREATE AGGREGATE kde_lscv_agg(x float8[], grid int) (
    SFUNC = approx_gpu_internal.kde_lscv_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_lscv_final,
    COMBINEFUNC = approx_gpu_internal.kde_points_combine, SERIALFUNC = approx_gpu_internal.kde_points_serial, DESERIALFUNC = approx_gpu_internal.kde_points_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_lscv_agg(float8[], int) IS
    'LSCV bandwidth matrix of the rows (each row one point) with a grid of the given size (equal on every row)';
