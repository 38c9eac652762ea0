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
