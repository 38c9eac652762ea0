
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
