-- approx_gpu 0.6.0 -> 0.7.0. Every change to sql/ext/*.sql after 0.6.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.7.0'" to load this file. \quit

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
    'The value (sampled rows, dictionaries, bandwidths) of each synopsis of approx_gpu.synopses; visible to its owner (and roles with the owner''s privileges); not dumped by pg_dump';
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
        RAISE EXCEPTION 'approx_gpu.synopses: a row of role % may only be restored by a role with its privileges', NEW.owner
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
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_event_trigger_dropped_objects() o
                WHERE o.classid = 'pg_catalog.pg_class'::pg_catalog.regclass AND o.objsubid = 0
                  AND o.object_type IN ('table', 'materialized view')) THEN
        PERFORM approx_gpu.synopses_drop_samples();
    END IF;
END
$$;
