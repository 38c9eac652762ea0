
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
CREATE FUNCTION approx_gpu_internal.kde_synopsis_sfunc(internal, float8[]) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_sfunc(internal, float8[], int) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_sfunc(internal, float8[], int, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_sfunc(internal, float8[], int, text, text) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_merge_sfunc(internal, kde_synopsis) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_merge_sfunc' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_combine(internal, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_combine' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_serial(internal) RETURNS bytea
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_serial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_deserial(bytea, internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_deserial' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_synopsis_final(internal) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_synopsis_final' LANGUAGE C VOLATILE PARALLEL SAFE;
CREATE FUNCTION approx_gpu_internal.kde_merge_final(internal) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_merge_final' LANGUAGE C VOLATILE PARALLEL SAFE;

CREATE AGGREGATE kde_synopsis_agg(x float8[]) (
    SFUNC = approx_gpu_internal.kde_synopsis_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_synopsis_final,
    COMBINEFUNC = approx_gpu_internal.kde_synopsis_combine, SERIALFUNC = approx_gpu_internal.kde_synopsis_serial, DESERIALFUNC = approx_gpu_internal.kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[]) IS
    'KDE synopsis of the rows (each row one point x): sample of 10000, cdf bandwidths, auto smoothing; the sample is random, reproducible when approx_gpu.random_seed is set';
CREATE AGGREGATE kde_synopsis_agg(x float8[], sample_size int) (
    SFUNC = approx_gpu_internal.kde_synopsis_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_synopsis_final,
    COMBINEFUNC = approx_gpu_internal.kde_synopsis_combine, SERIALFUNC = approx_gpu_internal.kde_synopsis_serial, DESERIALFUNC = approx_gpu_internal.kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int) IS
    'KDE synopsis of the rows with a sample of sample_size rows (equal on every row)';
CREATE AGGREGATE kde_synopsis_agg(x float8[], sample_size int, bandwidth text) (
    SFUNC = approx_gpu_internal.kde_synopsis_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_synopsis_final,
    COMBINEFUNC = approx_gpu_internal.kde_synopsis_combine, SERIALFUNC = approx_gpu_internal.kde_synopsis_serial, DESERIALFUNC = approx_gpu_internal.kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int, text) IS
    'KDE synopsis of the rows; bandwidth cdf, plugin, lscv or scott (equal on every row)';
CREATE AGGREGATE kde_synopsis_agg(x float8[], sample_size int, bandwidth text, smoothing text) (
    SFUNC = approx_gpu_internal.kde_synopsis_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_synopsis_final,
    COMBINEFUNC = approx_gpu_internal.kde_synopsis_combine, SERIALFUNC = approx_gpu_internal.kde_synopsis_serial, DESERIALFUNC = approx_gpu_internal.kde_synopsis_deserial,
    PARALLEL = SAFE);
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int, text, text) IS
    'KDE synopsis of the rows; smoothing auto (each column exact or smoothed by cross-validation on the sample), always or never (equal on every row)';

CREATE FUNCTION kde_merge(a kde_synopsis, b kde_synopsis) RETURNS kde_synopsis
    AS 'MODULE_PATHNAME', 'approx_gpu_kde_merge' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION kde_merge(kde_synopsis, kde_synopsis) IS
    'Synopsis of the union of two relations (hypergeometric reservoir merge; bandwidths recomputed); random, reproducible when approx_gpu.random_seed is set';
CREATE AGGREGATE kde_merge_agg(kde_synopsis) (
    SFUNC = approx_gpu_internal.kde_merge_sfunc, STYPE = internal, FINALFUNC = approx_gpu_internal.kde_merge_final,
    COMBINEFUNC = approx_gpu_internal.kde_synopsis_combine, SERIALFUNC = approx_gpu_internal.kde_synopsis_serial, DESERIALFUNC = approx_gpu_internal.kde_synopsis_deserial,
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
COMMENT ON COLUMN synopses.relfilenode IS 'The table''s relfilenode when built (another one: truncated or rewritten since); for a partitioned table or inheritance parent a fingerprint of its members'' (OID, relfilenode) pairs (another one: a partition or child attached, detached, dropped, truncated or rewritten since)';

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
CREATE FUNCTION approx_gpu_internal.synopses_drop_relations() RETURNS event_trigger
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
END
$$;
COMMENT ON FUNCTION approx_gpu_internal.synopses_drop_relations() IS 'Event trigger: removes the synopses of dropped tables';
REVOKE ALL ON FUNCTION approx_gpu_internal.synopses_drop_relations() FROM PUBLIC;
CREATE EVENT TRIGGER approx_gpu_synopses_drop ON sql_drop EXECUTE FUNCTION approx_gpu_internal.synopses_drop_relations();

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
CREATE FUNCTION approx_gpu_internal.synopses_follow_renames() RETURNS event_trigger
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
    UPDATE @extschema@.synopses s
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
COMMENT ON FUNCTION approx_gpu_internal.synopses_follow_renames() IS 'Event trigger: a renamed column''s synopses store its new name';
REVOKE ALL ON FUNCTION approx_gpu_internal.synopses_follow_renames() FROM PUBLIC;
CREATE EVENT TRIGGER approx_gpu_synopses_rename ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'ALTER MATERIALIZED VIEW') EXECUTE FUNCTION approx_gpu_internal.synopses_follow_renames();

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

CREATE TABLE approx_gpu_internal.synopsis_values (
    owner    regrole NOT NULL,
    name     text NOT NULL,
    synopsis kde_synopsis NOT NULL,
    PRIMARY KEY (owner, name),
    FOREIGN KEY (owner, name) REFERENCES synopses (owner, name) ON DELETE CASCADE ON UPDATE CASCADE
);
COMMENT ON TABLE approx_gpu_internal.synopsis_values IS
    'The value (sampled rows, dictionaries, bandwidths) of each synopsis of synopses; visible to its owner (and roles with the owner''s privileges); not dumped by pg_dump';
INSERT INTO approx_gpu_internal.synopsis_values SELECT owner, name, synopsis FROM synopses;
ALTER TABLE approx_gpu_internal.synopsis_values ENABLE ROW LEVEL SECURITY;
CREATE POLICY synopsis_values_owner_reads ON approx_gpu_internal.synopsis_values FOR SELECT
    USING (pg_catalog.pg_has_role(owner::oid, 'USAGE'));
REVOKE ALL ON approx_gpu_internal.synopsis_values FROM PUBLIC;
GRANT SELECT ON approx_gpu_internal.synopsis_values TO PUBLIC;

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
CREATE FUNCTION approx_gpu_internal.synopses_check_insert() RETURNS trigger
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
COMMENT ON FUNCTION approx_gpu_internal.synopses_check_insert() IS 'Trigger: rows inserted by others than create/refresh_synopsis (restores) belong to roles the inserter has the privileges of and name no sample relation';
REVOKE ALL ON FUNCTION approx_gpu_internal.synopses_check_insert() FROM PUBLIC;
CREATE TRIGGER synopses_check_insert BEFORE INSERT ON synopses FOR EACH ROW EXECUTE FUNCTION approx_gpu_internal.synopses_check_insert();
GRANT INSERT ON synopses TO PUBLIC;

-- The sample relations of dropped tables (a DROP TABLE cannot cascade to
-- them: an extension member that depends on a table turns DROP TABLE into a
-- request to drop the extension).
CREATE FUNCTION approx_gpu_internal.synopses_drop_samples() RETURNS void
    AS 'MODULE_PATHNAME', 'approx_gpu_synopses_drop_samples' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION approx_gpu_internal.synopses_drop_samples() IS 'Drops the sample relations whose table no longer exists (the sql_drop event trigger)';
REVOKE ALL ON FUNCTION approx_gpu_internal.synopses_drop_samples() FROM PUBLIC;
CREATE OR REPLACE FUNCTION approx_gpu_internal.synopses_drop_relations() RETURNS event_trigger
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
