-- approx_gpu 0.6.0 -> 0.7.0. Every change to sql/ext/*.sql after 0.6.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.7.0'" to load this file. \quit

-- ==== issue 27, the weighted aggregates and their intervals (h/est): approx_count(expr),
-- ==== the approx_percentile_* ordered-set aggregates, the sample path's sample_* aggregates
-- ---- approx_count(expr) and the percentiles (issue 27) ----------------------------------
-- Over rows exact: count(x) as float8, percentile_cont / percentile_disc
-- (PostgreSQL's own ordered-set machinery; the _ci forms with lower = upper =
-- estimate). The box path does not answer them; the sample path does.
CREATE FUNCTION aqp_count_value_trans(bigint, "any") RETURNS bigint
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_count_trans' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
    SUPPORT aqp_support;
COMMENT ON FUNCTION aqp_count_value_trans(bigint, "any") IS
    'Transition function of approx_count(x) and approx_count_ci(x): counts rows where x is not NULL';
CREATE AGGREGATE approx_count("any") (
    SFUNC = aqp_count_value_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = aqp_count_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count("any") IS
    'count(x) as float8, answered from a sample of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_count_ci("any") (
    SFUNC = aqp_count_value_trans, STYPE = bigint, INITCOND = '0', FINALFUNC = aqp_count_ci_final,
    COMBINEFUNC = pg_catalog.int8pl, PARALLEL = SAFE);
COMMENT ON AGGREGATE approx_count_ci("any") IS
    'approx_count(x) with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';

CREATE FUNCTION aqp_ordered_set_trans(internal, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_ordered_set_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE
    SUPPORT aqp_support;
COMMENT ON FUNCTION aqp_ordered_set_trans(internal, float8) IS
    'Transition function of approx_percentile_cont / _disc: PostgreSQL''s ordered_set_transition';
CREATE FUNCTION aqp_percentile_cont_final(internal, float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_cont_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION aqp_percentile_cont_ci_final(internal, float8) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_cont_ci_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION aqp_percentile_disc_final(internal, float8) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_disc_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION aqp_percentile_disc_ci_final(internal, float8) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_percentile_disc_ci_final' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION aqp_percentile_cont_final(internal, float8) IS 'Final function of approx_percentile_cont: percentile_cont';
COMMENT ON FUNCTION aqp_percentile_cont_ci_final(internal, float8) IS 'Final function of approx_percentile_cont_ci';
COMMENT ON FUNCTION aqp_percentile_disc_final(internal, float8) IS 'Final function of approx_percentile_disc: percentile_disc';
COMMENT ON FUNCTION aqp_percentile_disc_ci_final(internal, float8) IS 'Final function of approx_percentile_disc_ci';
-- Ordered-set aggregates: no partial aggregation (PostgreSQL never splits them).
CREATE AGGREGATE approx_percentile_cont(fraction float8 ORDER BY x float8) (
    SFUNC = aqp_ordered_set_trans, STYPE = internal, FINALFUNC = aqp_percentile_cont_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_cont(float8 ORDER BY float8) IS
    'percentile_cont(fraction) WITHIN GROUP (ORDER BY x), answered from a sample of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_percentile_cont_ci(fraction float8 ORDER BY x float8) (
    SFUNC = aqp_ordered_set_trans, STYPE = internal, FINALFUNC = aqp_percentile_cont_ci_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_cont_ci(float8 ORDER BY float8) IS
    'approx_percentile_cont with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';
CREATE AGGREGATE approx_percentile_disc(fraction float8 ORDER BY x float8) (
    SFUNC = aqp_ordered_set_trans, STYPE = internal, FINALFUNC = aqp_percentile_disc_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_disc(float8 ORDER BY float8) IS
    'percentile_disc(fraction) WITHIN GROUP (ORDER BY x), answered from a sample of the table when the query allows it (else exact)';
CREATE AGGREGATE approx_percentile_disc_ci(fraction float8 ORDER BY x float8) (
    SFUNC = aqp_ordered_set_trans, STYPE = internal, FINALFUNC = aqp_percentile_disc_ci_final,
    FINALFUNC_MODIFY = SHAREABLE);
COMMENT ON AGGREGATE approx_percentile_disc_ci(float8 ORDER BY float8) IS
    'approx_percentile_disc with its interval at approx_gpu.confidence (over rows: lower = upper = estimate)';

-- ---- the sample path's weighted aggregates (issue 27) ------------------------------------
-- Written by the planner in place of approx_* when it answers a query from a
-- table's sample: each row also passes its stratum (1..n) and the sample
-- relation's OID, whose design (rows and sample rows per stratum) the sample
-- plan supplies at run time. Called anywhere else: ERROR 55000.
CREATE FUNCTION aqp_sample_count_trans(internal, int, oid) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_count_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_sum_trans(internal, float8, int, oid, int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_sum_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_combine' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION aqp_sample_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION aqp_sample_count_trans(internal, int, oid) IS 'Transition function of sample_count: the group''s rows per stratum';
COMMENT ON FUNCTION aqp_sample_sum_trans(internal, float8, int, oid, int) IS
    'Transition function of sample_sum and sample_avg: per stratum the moments of the group''s non-NULL values (measure: the sample relation''s column that x reads, 0 for an expression; read by the final function)';
COMMENT ON FUNCTION aqp_sample_combine(internal, internal) IS 'Merges two partial sample_count / sample_sum / sample_avg states';
COMMENT ON FUNCTION aqp_sample_serial(internal) IS 'Serialises a sample_count / sample_sum / sample_avg state';
COMMENT ON FUNCTION aqp_sample_deserial(bytea, internal) IS 'Deserialises a sample_count / sample_sum / sample_avg state';
-- Final functions read the design of their sample: STABLE (and the estimate
-- depends on approx_gpu.confidence).
CREATE FUNCTION aqp_sample_count_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_count_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_count_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_count_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_sum_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_sum_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_sum_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_sum_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_avg_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_avg_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_avg_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_avg_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION aqp_sample_count_final(internal) IS 'Final function of sample_count: the Horvitz-Thompson COUNT';
COMMENT ON FUNCTION aqp_sample_count_ci_final(internal) IS 'Final function of sample_count_ci: the COUNT and its interval';
COMMENT ON FUNCTION aqp_sample_sum_final(internal) IS 'Final function of sample_sum: the Horvitz-Thompson SUM';
COMMENT ON FUNCTION aqp_sample_sum_ci_final(internal) IS 'Final function of sample_sum_ci: the SUM and its interval';
COMMENT ON FUNCTION aqp_sample_avg_final(internal) IS 'Final function of sample_avg: the ratio SUM / COUNT';
COMMENT ON FUNCTION aqp_sample_avg_ci_final(internal) IS 'Final function of sample_avg_ci: the AVG and its interval';
CREATE AGGREGATE sample_count(stratum int, sample oid) (
    SFUNC = aqp_sample_count_trans, STYPE = internal, FINALFUNC = aqp_sample_count_final,
    COMBINEFUNC = aqp_sample_combine, SERIALFUNC = aqp_sample_serial, DESERIALFUNC = aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE sample_count_ci(stratum int, sample oid) (
    SFUNC = aqp_sample_count_trans, STYPE = internal, FINALFUNC = aqp_sample_count_ci_final,
    COMBINEFUNC = aqp_sample_combine, SERIALFUNC = aqp_sample_serial, DESERIALFUNC = aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE sample_sum(x float8, stratum int, sample oid, measure int) (
    SFUNC = aqp_sample_sum_trans, STYPE = internal, FINALFUNC = aqp_sample_sum_final,
    COMBINEFUNC = aqp_sample_combine, SERIALFUNC = aqp_sample_serial, DESERIALFUNC = aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE sample_sum_ci(x float8, stratum int, sample oid, measure int) (
    SFUNC = aqp_sample_sum_trans, STYPE = internal, FINALFUNC = aqp_sample_sum_ci_final,
    COMBINEFUNC = aqp_sample_combine, SERIALFUNC = aqp_sample_serial, DESERIALFUNC = aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE sample_avg(x float8, stratum int, sample oid, measure int) (
    SFUNC = aqp_sample_sum_trans, STYPE = internal, FINALFUNC = aqp_sample_avg_final,
    COMBINEFUNC = aqp_sample_combine, SERIALFUNC = aqp_sample_serial, DESERIALFUNC = aqp_sample_deserial,
    PARALLEL = SAFE);
CREATE AGGREGATE sample_avg_ci(x float8, stratum int, sample oid, measure int) (
    SFUNC = aqp_sample_sum_trans, STYPE = internal, FINALFUNC = aqp_sample_avg_ci_final,
    COMBINEFUNC = aqp_sample_combine, SERIALFUNC = aqp_sample_serial, DESERIALFUNC = aqp_sample_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE sample_count(int, oid) IS 'Internal (sample plans): Horvitz-Thompson COUNT of a stratified sample';
COMMENT ON AGGREGATE sample_count_ci(int, oid) IS 'Internal (sample plans): sample_count with its interval at approx_gpu.confidence';
COMMENT ON AGGREGATE sample_sum(float8, int, oid, int) IS 'Internal (sample plans): Horvitz-Thompson SUM of a stratified sample';
COMMENT ON AGGREGATE sample_sum_ci(float8, int, oid, int) IS 'Internal (sample plans): sample_sum with its interval at approx_gpu.confidence';
COMMENT ON AGGREGATE sample_avg(float8, int, oid, int) IS 'Internal (sample plans): ratio estimate of AVG from a stratified sample';
COMMENT ON AGGREGATE sample_avg_ci(float8, int, oid, int) IS 'Internal (sample plans): sample_avg with its interval at approx_gpu.confidence';

CREATE FUNCTION aqp_sample_values_trans(internal, float8, int, oid, float8) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_values_trans' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION aqp_sample_values_trans(internal, float8, int, oid, float8) IS
    'Transition function of sample_percentile_cont / _disc: the group''s values and their strata';
CREATE FUNCTION aqp_sample_cont_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_cont_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_cont_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_cont_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_disc_final(internal) RETURNS float8
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_disc_final' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION aqp_sample_disc_ci_final(internal) RETURNS approx_estimate
    AS 'MODULE_PATHNAME', 'approx_gpu_aqp_sample_disc_ci_final' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION aqp_sample_cont_final(internal) IS 'Final function of sample_percentile_cont: the weighted percentile';
COMMENT ON FUNCTION aqp_sample_cont_ci_final(internal) IS 'Final function of sample_percentile_cont_ci: the percentile and its interval';
COMMENT ON FUNCTION aqp_sample_disc_final(internal) IS 'Final function of sample_percentile_disc: the weighted percentile';
COMMENT ON FUNCTION aqp_sample_disc_ci_final(internal) IS 'Final function of sample_percentile_disc_ci: the percentile and its interval';
-- Plain aggregates (the fraction is an argument, equal on every row of a
-- group); no partial aggregation, as the ordered-set aggregates they replace.
CREATE AGGREGATE sample_percentile_cont(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = aqp_sample_values_trans, STYPE = internal, FINALFUNC = aqp_sample_cont_final, PARALLEL = SAFE);
CREATE AGGREGATE sample_percentile_cont_ci(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = aqp_sample_values_trans, STYPE = internal, FINALFUNC = aqp_sample_cont_ci_final, PARALLEL = SAFE);
CREATE AGGREGATE sample_percentile_disc(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = aqp_sample_values_trans, STYPE = internal, FINALFUNC = aqp_sample_disc_final, PARALLEL = SAFE);
CREATE AGGREGATE sample_percentile_disc_ci(x float8, stratum int, sample oid, fraction float8) (
    SFUNC = aqp_sample_values_trans, STYPE = internal, FINALFUNC = aqp_sample_disc_ci_final, PARALLEL = SAFE);
COMMENT ON AGGREGATE sample_percentile_cont(float8, int, oid, float8) IS
    'Internal (sample plans): weighted percentile_cont of a stratified sample';
COMMENT ON AGGREGATE sample_percentile_cont_ci(float8, int, oid, float8) IS
    'Internal (sample plans): sample_percentile_cont with its order-statistics interval';
COMMENT ON AGGREGATE sample_percentile_disc(float8, int, oid, float8) IS
    'Internal (sample plans): weighted percentile_disc of a stratified sample';
COMMENT ON AGGREGATE sample_percentile_disc_ci(float8, int, oid, float8) IS
    'Internal (sample plans): sample_percentile_disc with its order-statistics interval';

-- ==== store (issue 27 item 1, issue 26 item 12): metadata apart from values, sample relations ====

-- ---- storage: metadata, values, sample relations (0.7.0; docs/synopsis.md "Storage") ----
-- approx_gpu.synopses keeps only metadata: no row-level security, readable by
-- PUBLIC and dumped by pg_dump (a config table), so that pg_dump by a
-- non-superuser works (issue 26 item 12). The values -- sampled rows and
-- dictionary strings -- move to synopsis_values: an extension member that is
-- no config table (pg_dump skips it), each role seeing only its own rows. A
-- restored metadata row has no value (unusable) until refresh_synopsis
-- rebuilds it from the build parameters kept here. A table synopsis' sample
-- rows are also a relation of approx_gpu_samples (the sample path): UNLOGGED,
-- owned by the extension's owner, an extension member named after the table's
-- OID and a number (no user text), made and dropped only by the C functions.
CREATE SCHEMA approx_gpu_samples;
COMMENT ON SCHEMA approx_gpu_samples IS
    'Sample relations of table synopses (internal: no privileges for anyone but the extension''s owner)';
REVOKE ALL ON SCHEMA approx_gpu_samples FROM PUBLIC;
CREATE SEQUENCE approx_gpu_samples.sample_names;
COMMENT ON SEQUENCE approx_gpu_samples.sample_names IS 'Numbers of sample relation names (s<table oid>_<n>)';
REVOKE ALL ON SEQUENCE approx_gpu_samples.sample_names FROM PUBLIC;

CREATE TABLE synopsis_values (
    owner    regrole NOT NULL,
    name     text NOT NULL,
    synopsis kde_synopsis NOT NULL,
    PRIMARY KEY (owner, name),
    FOREIGN KEY (owner, name) REFERENCES synopses (owner, name) ON DELETE CASCADE ON UPDATE CASCADE
);
COMMENT ON TABLE synopsis_values IS
    'The value (sampled rows, dictionaries, bandwidths) of each synopsis of synopses; visible to its owner (and roles with the owner''s privileges); not dumped by pg_dump';
INSERT INTO synopsis_values SELECT owner, name, synopsis FROM synopses;
ALTER TABLE synopsis_values ENABLE ROW LEVEL SECURITY;
CREATE POLICY synopsis_values_owner_reads ON synopsis_values FOR SELECT
    USING (pg_catalog.pg_has_role(owner::oid, 'USAGE'));
REVOKE ALL ON synopsis_values FROM PUBLIC;
GRANT SELECT ON synopsis_values TO PUBLIC;

-- What refresh_synopsis needs to rebuild from metadata alone (NULL: as
-- stored in the value, a row that had none to read them from), and the
-- sample relation with its column map.
ALTER TABLE synopses
    ADD COLUMN sample_size int4,
    ADD COLUMN bandwidth text,
    ADD COLUMN smoothing text,
    ADD COLUMN sample_relid oid,
    ADD COLUMN sample_attnums int2[];
UPDATE synopses SET sample_size = (kde_synopsis_info(synopsis) OPERATOR(pg_catalog.->>) 'sample_size')::int4,
                    bandwidth = kde_synopsis_info(synopsis) OPERATOR(pg_catalog.->>) 'bandwidth',
                    smoothing = kde_synopsis_info(synopsis) OPERATOR(pg_catalog.->>) 'smoothing';
ALTER TABLE synopses DROP COLUMN synopsis;
DROP POLICY synopses_owner_reads ON synopses;
ALTER TABLE synopses DISABLE ROW LEVEL SECURITY;
COMMENT ON TABLE synopses IS
    'Named KDE synopses'' metadata, one namespace per owner (readable by everyone; the values are in synopsis_values); written by create/refresh/drop_synopsis, and by restores of pg_dump (rows of roles the restoring role has the privileges of)';
COMMENT ON COLUMN synopses.sample_size IS 'The sample size it was built with (refresh_synopsis rebuilds with it)';
COMMENT ON COLUMN synopses.bandwidth IS 'The bandwidth method it was built with';
COMMENT ON COLUMN synopses.smoothing IS 'The smoothing it was built with';
COMMENT ON COLUMN synopses.sample_relid IS 'A table synopsis'' sample relation in approx_gpu_samples (NULL: none: built before 0.7.0 or restored; only the box path answers)';
COMMENT ON COLUMN synopses.sample_attnums IS 'Column k of the sample relation holds attribute sample_attnums[k] of relation (every live column at the build); the stratum number follows last';

-- A restore by a non-superuser inserts rows (pg_dump's COPY): only for roles
-- whose privileges it has (a row's query runs as its owner), and never
-- naming a sample relation (none is dumped). create/refresh_synopsis write
-- as the table's owner.
CREATE FUNCTION synopses_check_insert() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF current_user OPERATOR(pg_catalog.=) (SELECT c.relowner::pg_catalog.regrole::pg_catalog.name
                                              FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) TG_RELID) THEN
        RETURN NEW;
    END IF;
    IF NOT pg_catalog.pg_has_role(NEW.owner::pg_catalog.oid, 'USAGE') THEN
        RAISE EXCEPTION '@extschema@.synopses: a row of role % may only be restored by a role with its privileges', NEW.owner
            USING ERRCODE = '42501';
    END IF;
    NEW.sample_relid := NULL;
    NEW.sample_attnums := NULL;
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION synopses_check_insert() IS 'Trigger: rows inserted by others than create/refresh_synopsis (restores) belong to roles the inserter has the privileges of and name no sample relation';
REVOKE ALL ON FUNCTION synopses_check_insert() FROM PUBLIC;
CREATE TRIGGER synopses_check_insert BEFORE INSERT ON synopses FOR EACH ROW EXECUTE FUNCTION synopses_check_insert();
GRANT INSERT ON synopses TO PUBLIC;

-- The sample relations of dropped tables (a DROP TABLE cannot cascade to
-- them: an extension member that depends on a table turns DROP TABLE into a
-- request to drop the extension).
CREATE FUNCTION synopses_drop_samples() RETURNS void
    AS 'MODULE_PATHNAME', 'approx_gpu_synopses_drop_samples' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION synopses_drop_samples() IS 'Drops the sample relations whose table no longer exists (the sql_drop event trigger)';
REVOKE ALL ON FUNCTION synopses_drop_samples() FROM PUBLIC;
CREATE OR REPLACE FUNCTION synopses_drop_relations() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    gone oid;
BEGIN
    FOR gone IN
        DELETE FROM @extschema@.synopses s USING pg_catalog.pg_event_trigger_dropped_objects() o
         WHERE o.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.objsubid = 0
           AND s.relation::pg_catalog.oid = o.objid
        RETURNING s.owner::pg_catalog.oid
    LOOP
        IF NOT EXISTS (SELECT 1 FROM @extschema@.synopses WHERE owner::pg_catalog.oid = gone)
           AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE oid = gone)
           AND gone <> (SELECT relowner FROM pg_catalog.pg_class WHERE oid = '@extschema@.synopses'::pg_catalog.regclass) THEN
            EXECUTE pg_catalog.format('REVOKE SELECT ON @extschema@.synopses FROM %I', gone::pg_catalog.regrole::pg_catalog.text);
        END IF;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger_dropped_objects() o
                WHERE o.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.objsubid = 0
                  AND o.object_type IN ('table', 'materialized view')) THEN
        PERFORM approx_gpu_internal.synopses_drop_samples();
    END IF;
END
$$;

-- ---- parts: partitioned tables and inheritance parents (issue 27 item 6) ----
COMMENT ON COLUMN synopses.relfilenode IS 'The table''s relfilenode when built (another one: truncated or rewritten since); for a partitioned table or inheritance parent a fingerprint of its members'' (OID, relfilenode) pairs (another one: a partition or child attached, detached, dropped, truncated or rewritten since)';

-- ---- census (take-all) stratum (issue 27, heavy tails) ------------------------
-- census => true keeps, per measure column, the rows of largest |value|
-- whole (weight 1, no variance; src/core/sample_census.hpp); NULL (the
-- default) keeps them for the measures whose tail it pays for
-- (census_pays), decided at each build; stored so that refresh_synopsis
-- keeps it. Synopses of older versions were built without one (false).
ALTER TABLE synopses ADD COLUMN census boolean DEFAULT false;
ALTER TABLE synopses ALTER COLUMN census DROP DEFAULT;
COMMENT ON COLUMN synopses.census IS 'The census => argument of a table synopsis: true, a census (take-all) stratum of each measure''s largest values; NULL, of the measures whose top values hold more of their spread than the census costs (decided at each build); false, none (refresh_synopsis keeps it)';
DROP FUNCTION create_synopsis(text, regclass, name[], int, text, text, name[]);
CREATE FUNCTION create_synopsis(name text, relation regclass, columns name[], sample_size int DEFAULT 10000,
                                bandwidth text DEFAULT 'cdf', smoothing text DEFAULT 'auto',
                                stratify name[] DEFAULT NULL, census boolean DEFAULT NULL) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_create_table_synopsis' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION create_synopsis(text, regclass, name[], int, text, text, name[], boolean) IS
    'Builds and stores a named synopsis of the table''s columns (every row, NULLs included; bool, text, varchar, char and enum columns as dictionaries; stratify: a congressional sample by those columns; census: the rows of each numeric non-stratify synopsis column''s largest |values| kept whole, a tenth of sample_size; NULL: of the table''s numeric columns whose tail it pays for, unless stratified) as the caller; returns kde_synopsis_info';

-- ---- schemas (item 4) -------------------------------------------------------------
-- The control file names no schema any more: a fresh install puts the
-- user-facing objects into the schema CREATE EXTENSION is given (public by
-- default); a database updated from an older version keeps its schema
-- approx_gpu. What only the extension uses moves to approx_gpu_internal
-- (sql/ext/00_runtime.sql; README "Schemas"). Objects added above that are
-- internal are moved here too.
CREATE SCHEMA approx_gpu_internal;
COMMENT ON SCHEMA approx_gpu_internal IS
    'Internal objects of approx_gpu (support functions, weighted sample aggregates, triggers, synopsis values): not for direct use';
GRANT USAGE ON SCHEMA approx_gpu_internal TO PUBLIC;
ALTER TABLE @extschema@.synopsis_values SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_bandwidth_sfunc(internal, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_bandwidth_sfunc(internal, float8, text) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_lscv_sfunc(internal, float8[]) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_lscv_sfunc(internal, float8[], int) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_points_combine(internal, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_points_serial(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_points_deserial(bytea, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_bandwidth_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_lscv_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_sfunc(internal, float8[]) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_sfunc(internal, float8[], int) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_sfunc(internal, float8[], int, text) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_sfunc(internal, float8[], int, text, text) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_merge_sfunc(internal, kde_synopsis) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_combine(internal, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_serial(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_deserial(bytea, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_synopsis_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.kde_merge_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.synopses_drop_relations() SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.synopses_follow_renames() SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.synopses_check_insert() SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.synopses_drop_samples() SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_support(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_count_trans(bigint) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sum_trans(float8, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_avg_trans(float8[], float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_count_final(bigint) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_count_ci_final(bigint) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sum_ci_final(float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_avg_ci_final(float8[]) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_count_value_trans(bigint, "any") SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_ordered_set_trans(internal, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_percentile_cont_final(internal, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_percentile_cont_ci_final(internal, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_percentile_disc_final(internal, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_percentile_disc_ci_final(internal, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_count_trans(internal, int, oid) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_sum_trans(internal, float8, int, oid, int) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_combine(internal, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_serial(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_deserial(bytea, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_count_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_count_ci_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_sum_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_sum_ci_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_avg_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_avg_ci_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_values_trans(internal, float8, int, oid, float8) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_cont_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_cont_ci_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_disc_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.aqp_sample_disc_ci_final(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.topk_sfunc(internal, bigint, float8, int) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.bottomk_sfunc(internal, bigint, float8, int) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.topk_combine(internal, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.topk_serial(internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.topk_deserial(bytea, internal) SET SCHEMA approx_gpu_internal;
ALTER FUNCTION @extschema@.topk_final(internal) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_count(int, oid) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_count_ci(int, oid) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_sum(float8, int, oid, int) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_sum_ci(float8, int, oid, int) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_avg(float8, int, oid, int) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_avg_ci(float8, int, oid, int) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_percentile_cont(float8, int, oid, float8) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_percentile_cont_ci(float8, int, oid, float8) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_percentile_disc(float8, int, oid, float8) SET SCHEMA approx_gpu_internal;
ALTER AGGREGATE @extschema@.sample_percentile_disc_ci(float8, int, oid, float8) SET SCHEMA approx_gpu_internal;
