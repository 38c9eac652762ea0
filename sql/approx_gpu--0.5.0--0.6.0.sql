-- approx_gpu 0.5.0 -> 0.6.0. Every change to sql/ext/*.sql after 0.5.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.6.0'" to load this file. \quit

-- issue 26 item 11: whose synopsis answers a query; the table's owner sees
-- and drops every synopsis of its table (sql/ext/20_synopsis.sql)
COMMENT ON TABLE synopses IS
    'Named KDE synopses, one namespace per owner: each row visible to its owner (and roles with the owner''s privileges), a table synopsis also to its table''s owner; written only by create/refresh/drop_synopsis';
COMMENT ON FUNCTION drop_synopsis(text) IS 'Removes a named synopsis (its owner, or the owner of its table)';
ALTER POLICY synopses_owner_reads ON synopses
    USING (pg_catalog.pg_has_role(owner::oid, 'USAGE')
           OR pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                      WHERE c.oid OPERATOR(pg_catalog.=) relation::oid), 'USAGE'));
CREATE FUNCTION drop_synopsis(name text, owner regrole) RETURNS void
    AS 'MODULE_PATHNAME', 'approx_gpu_drop_synopsis' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION drop_synopsis(text, regrole) IS
    'Removes the named synopsis of that owner (its owner, or the owner of its table)';

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
