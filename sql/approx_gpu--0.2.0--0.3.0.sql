-- approx_gpu 0.2.0 -> 0.3.0. Every change to sql/ext/*.sql after 0.2.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.3.0'" to load this file. \quit

ALTER TABLE synopses ALTER COLUMN query DROP NOT NULL;

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

-- ---- approximate aggregates in plain SQL (issue 13) ----------------------------
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
