
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
CREATE FUNCTION approx_gpu_internal.aqp_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_support' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_count_trans(bigint) RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT approx_gpu_internal.aqp_support;
CREATE FUNCTION approx_gpu_internal.aqp_sum_trans(float8, float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sum_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT approx_gpu_internal.aqp_support;
CREATE FUNCTION approx_gpu_internal.aqp_avg_trans(float8[], float8) RETURNS float8[]
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_avg_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT approx_gpu_internal.aqp_support;
COMMENT ON FUNCTION approx_gpu_internal.aqp_support(internal) IS
    'Planner support function of the approx_* transition functions: loads the library (and its planner hook) while the planner costs them';
COMMENT ON FUNCTION approx_gpu_internal.aqp_count_trans(bigint) IS 'Transition function of approx_count(*) and approx_count_ci(*): counts rows';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sum_trans(float8, float8) IS 'Transition function of approx_sum and approx_sum_ci: sums non-NULL values';
COMMENT ON FUNCTION approx_gpu_internal.aqp_avg_trans(float8[], float8) IS 'Transition function of approx_avg and approx_avg_ci: count and sum of non-NULL values';
CREATE FUNCTION approx_gpu_internal.aqp_count_final(bigint) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_count_ci_final(bigint) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_ci_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sum_ci_final(float8) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sum_ci_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_avg_ci_final(float8[]) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_avg_ci_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE AGGREGATE approx_count(*) (
    SFUNC = approx_gpu_internal.aqp_count_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = approx_gpu_internal.aqp_count_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count(*) IS
    'count(*) as float8, answered from a fresh synopsis of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_sum(float8) (
    SFUNC = approx_gpu_internal.aqp_sum_trans, STYPE = float8, COMBINEFUNC = pg_catalog.float8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_sum(float8) IS
    'sum(x) as float8, answered from a fresh synopsis of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_avg(float8) (
    SFUNC = approx_gpu_internal.aqp_avg_trans, STYPE = float8[], INITCOND = '{0,0,0}', FINALFUNC = pg_catalog.float8_avg,
    COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_avg(float8) IS
    'avg(x) as float8, answered from a fresh synopsis of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_count_ci(*) (
    SFUNC = approx_gpu_internal.aqp_count_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = approx_gpu_internal.aqp_count_ci_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count_ci(*) IS
    'approx_count(*) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
CREATE AGGREGATE approx_sum_ci(float8) (
    SFUNC = approx_gpu_internal.aqp_sum_trans, STYPE = float8, FINALFUNC = approx_gpu_internal.aqp_sum_ci_final,
    COMBINEFUNC = pg_catalog.float8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_sum_ci(float8) IS
    'approx_sum(x) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
CREATE AGGREGATE approx_avg_ci(float8) (
    SFUNC = approx_gpu_internal.aqp_avg_trans, STYPE = float8[], INITCOND = '{0,0,0}', FINALFUNC = approx_gpu_internal.aqp_avg_ci_final,
    COMBINEFUNC = pg_catalog.float8_combine, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_avg_ci(float8) IS
    'approx_avg(x) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';

-- ---- approx_count(expr) and the percentiles (issue 27) ----------------------------------
-- Over rows exact: count(x) as float8, percentile_cont / percentile_disc
-- (PostgreSQL's own ordered-set machinery; the _ci forms with lower = upper =
-- estimate). The box path does not answer them; the sample path does.
CREATE FUNCTION approx_gpu_internal.aqp_count_value_trans(bigint, "any") RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT approx_gpu_internal.aqp_support;
COMMENT ON FUNCTION approx_gpu_internal.aqp_count_value_trans(bigint, "any") IS
    'Transition function of approx_count(x) and approx_count_ci(x): counts rows where x is not NULL';
CREATE AGGREGATE approx_count("any") (
    SFUNC = approx_gpu_internal.aqp_count_value_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = approx_gpu_internal.aqp_count_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count("any") IS
    'count(x) as float8, answered from a sample of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_count_ci("any") (
    SFUNC = approx_gpu_internal.aqp_count_value_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = approx_gpu_internal.aqp_count_ci_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count_ci("any") IS
    'approx_count(x) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';

CREATE FUNCTION approx_gpu_internal.aqp_ordered_set_trans(internal, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_ordered_set_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE
    SUPPORT approx_gpu_internal.aqp_support;
COMMENT ON FUNCTION approx_gpu_internal.aqp_ordered_set_trans(internal, float8) IS
    'Transition function of approx_percentile_cont / _disc: PostgreSQL''s ordered_set_transition';
CREATE FUNCTION approx_gpu_internal.aqp_percentile_cont_final(internal, float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_cont_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_percentile_cont_ci_final(internal, float8) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_cont_ci_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_percentile_disc_final(internal, float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_disc_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_percentile_disc_ci_final(internal, float8) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_disc_ci_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.aqp_percentile_cont_final(internal, float8) IS 'Final function of approx_percentile_cont: percentile_cont';
COMMENT ON FUNCTION approx_gpu_internal.aqp_percentile_cont_ci_final(internal, float8) IS 'Final function of approx_percentile_cont_ci';
COMMENT ON FUNCTION approx_gpu_internal.aqp_percentile_disc_final(internal, float8) IS 'Final function of approx_percentile_disc: percentile_disc';
COMMENT ON FUNCTION approx_gpu_internal.aqp_percentile_disc_ci_final(internal, float8) IS 'Final function of approx_percentile_disc_ci';
-- Ordered-set aggregates: no partial aggregation (PostgreSQL never splits them).
CREATE AGGREGATE approx_percentile_cont(fraction float8 ORDER BY x float8) (
    SFUNC = approx_gpu_internal.aqp_ordered_set_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_percentile_cont_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_cont(float8 ORDER BY float8) IS
    'percentile_cont(fraction) WITHIN GROUP (ORDER BY x), answered from a sample of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_percentile_cont_ci(fraction float8 ORDER BY x float8) (
    SFUNC = approx_gpu_internal.aqp_ordered_set_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_percentile_cont_ci_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_cont_ci(float8 ORDER BY float8) IS
    'approx_percentile_cont with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
CREATE AGGREGATE approx_percentile_disc(fraction float8 ORDER BY x float8) (
    SFUNC = approx_gpu_internal.aqp_ordered_set_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_percentile_disc_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_disc(float8 ORDER BY float8) IS
    'percentile_disc(fraction) WITHIN GROUP (ORDER BY x), answered from a sample of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_percentile_disc_ci(fraction float8 ORDER BY x float8) (
    SFUNC = approx_gpu_internal.aqp_ordered_set_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_percentile_disc_ci_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_disc_ci(float8 ORDER BY float8) IS
    'approx_percentile_disc with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';

-- ---- the sample path's weighted aggregates (issue 27) ------------------------------------
-- Written by the planner in place of approx_* when it answers a query from a
-- table's sample: each row also passes its stratum (1..n) and the sample
-- relation's OID, whose design (rows and sample rows per stratum) the sample
-- plan supplies at run time. Called anywhere else: ERROR 55000.
CREATE FUNCTION approx_gpu_internal.aqp_sample_count_trans(internal, int, oid) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_count_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_sum_trans(internal, float8, int, oid, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_sum_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_count_trans(internal, int, oid) IS 'Transition function of sample_count: the group''s rows per stratum';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_sum_trans(internal, float8, int, oid, int) IS
    'Transition function of sample_sum and sample_avg: per stratum the moments of the group''s non-NULL values (measure: the sample relation''s column that x reads, 0 for an expression; read by the final function)';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_combine(internal, internal) IS 'Merges two partial sample_count / sample_sum / sample_avg states';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_serial(internal) IS 'Serialises a sample_count / sample_sum / sample_avg state';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_deserial(bytea, internal) IS 'Deserialises a sample_count / sample_sum / sample_avg state';
-- Final functions read the design of their sample: STABLE (and the estimate
-- depends on approx_gpu.confidence).
CREATE FUNCTION approx_gpu_internal.aqp_sample_count_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_count_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_count_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_count_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_sum_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_sum_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_sum_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_sum_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_avg_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_avg_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_avg_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_avg_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_count_final(internal) IS 'Final function of sample_count: the Horvitz-Thompson COUNT';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_count_ci_final(internal) IS 'Final function of sample_count_ci: the COUNT and its interval';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_sum_final(internal) IS 'Final function of sample_sum: the Horvitz-Thompson SUM';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_sum_ci_final(internal) IS 'Final function of sample_sum_ci: the SUM and its interval';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_avg_final(internal) IS 'Final function of sample_avg: the ratio SUM / COUNT';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_avg_ci_final(internal) IS 'Final function of sample_avg_ci: the AVG and its interval';
CREATE AGGREGATE approx_gpu_internal.sample_count(stratum int, sample oid) (
    SFUNC = approx_gpu_internal.aqp_sample_count_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_count_final,
    COMBINEFUNC = approx_gpu_internal.aqp_sample_combine, SERIALFUNC = approx_gpu_internal.aqp_sample_serial, DESERIALFUNC = approx_gpu_internal.aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_count_ci(stratum int, sample oid) (
    SFUNC = approx_gpu_internal.aqp_sample_count_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_count_ci_final,
    COMBINEFUNC = approx_gpu_internal.aqp_sample_combine, SERIALFUNC = approx_gpu_internal.aqp_sample_serial, DESERIALFUNC = approx_gpu_internal.aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_sum(x float8, stratum int, sample oid, measure int) (
    SFUNC = approx_gpu_internal.aqp_sample_sum_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_sum_final,
    COMBINEFUNC = approx_gpu_internal.aqp_sample_combine, SERIALFUNC = approx_gpu_internal.aqp_sample_serial, DESERIALFUNC = approx_gpu_internal.aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_sum_ci(x float8, stratum int, sample oid, measure int) (
    SFUNC = approx_gpu_internal.aqp_sample_sum_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_sum_ci_final,
    COMBINEFUNC = approx_gpu_internal.aqp_sample_combine, SERIALFUNC = approx_gpu_internal.aqp_sample_serial, DESERIALFUNC = approx_gpu_internal.aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_avg(x float8, stratum int, sample oid, measure int) (
    SFUNC = approx_gpu_internal.aqp_sample_sum_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_avg_final,
    COMBINEFUNC = approx_gpu_internal.aqp_sample_combine, SERIALFUNC = approx_gpu_internal.aqp_sample_serial, DESERIALFUNC = approx_gpu_internal.aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_avg_ci(x float8, stratum int, sample oid, measure int) (
    SFUNC = approx_gpu_internal.aqp_sample_sum_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_avg_ci_final,
    COMBINEFUNC = approx_gpu_internal.aqp_sample_combine, SERIALFUNC = approx_gpu_internal.aqp_sample_serial, DESERIALFUNC = approx_gpu_internal.aqp_sample_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_gpu_internal.sample_count(int, oid) IS 'Internal (sample plans): Horvitz-Thompson COUNT of a stratified sample';
COMMENT ON AGGREGATE approx_gpu_internal.sample_count_ci(int, oid) IS 'Internal (sample plans): sample_count with its interval at approx_gpu.confidence';
COMMENT ON AGGREGATE approx_gpu_internal.sample_sum(float8, int, oid, int) IS 'Internal (sample plans): Horvitz-Thompson SUM of a stratified sample';
COMMENT ON AGGREGATE approx_gpu_internal.sample_sum_ci(float8, int, oid, int) IS 'Internal (sample plans): sample_sum with its interval at approx_gpu.confidence';
COMMENT ON AGGREGATE approx_gpu_internal.sample_avg(float8, int, oid, int) IS 'Internal (sample plans): ratio estimate of AVG from a stratified sample';
COMMENT ON AGGREGATE approx_gpu_internal.sample_avg_ci(float8, int, oid, int) IS 'Internal (sample plans): sample_avg with its interval at approx_gpu.confidence';

CREATE FUNCTION approx_gpu_internal.aqp_sample_values_trans(internal, float8, int, oid, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_values_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_values_trans(internal, float8, int, oid, float8) IS
    'Transition function of sample_percentile_cont / _disc: the group''s values and their strata';
CREATE FUNCTION approx_gpu_internal.aqp_sample_cont_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_cont_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_cont_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_cont_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_disc_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_disc_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.aqp_sample_disc_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_disc_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_cont_final(internal) IS 'Final function of sample_percentile_cont: the weighted percentile';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_cont_ci_final(internal) IS 'Final function of sample_percentile_cont_ci: the percentile and its interval';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_disc_final(internal) IS 'Final function of sample_percentile_disc: the weighted percentile';
COMMENT ON FUNCTION approx_gpu_internal.aqp_sample_disc_ci_final(internal) IS 'Final function of sample_percentile_disc_ci: the percentile and its interval';
-- Plain aggregates (the fraction is an argument, equal on every row of a
-- group); no partial aggregation, as the ordered-set aggregates they replace.
CREATE AGGREGATE approx_gpu_internal.sample_percentile_cont(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = approx_gpu_internal.aqp_sample_values_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_cont_final, PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_percentile_cont_ci(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = approx_gpu_internal.aqp_sample_values_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_cont_ci_final, PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_percentile_disc(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = approx_gpu_internal.aqp_sample_values_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_disc_final, PARALLEL = SAFE);
CREATE AGGREGATE approx_gpu_internal.sample_percentile_disc_ci(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = approx_gpu_internal.aqp_sample_values_trans, STYPE = internal, FINALFUNC = approx_gpu_internal.aqp_sample_disc_ci_final, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_gpu_internal.sample_percentile_cont(float8, int, oid, float8) IS
    'Internal (sample plans): weighted percentile_cont of a stratified sample';
COMMENT ON AGGREGATE approx_gpu_internal.sample_percentile_cont_ci(float8, int, oid, float8) IS
    'Internal (sample plans): sample_percentile_cont with its order-statistics interval';
COMMENT ON AGGREGATE approx_gpu_internal.sample_percentile_disc(float8, int, oid, float8) IS
    'Internal (sample plans): weighted percentile_disc of a stratified sample';
COMMENT ON AGGREGATE approx_gpu_internal.sample_percentile_disc_ci(float8, int, oid, float8) IS
    'Internal (sample plans): sample_percentile_disc with its order-statistics interval';
