-- approx_gpu 0.1.0 -> 0.2.0. Every change to sql/ext/*.sql after 0.1.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.2.0'" to load this file. \quit

-- ---- named synopses: schema usage for PUBLIC, names per owner, pinned search_path

-- 0.1.0 left the schema to its owner alone: every call by an ordinary role
-- failed with "permission denied for schema approx_gpu".
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-- Names become per owner (key (owner, name)); 0.1.0's names were global, so
-- every existing row keeps its name and owner.
ALTER TABLE synopses DROP CONSTRAINT synopses_pkey;
ALTER TABLE synopses ADD PRIMARY KEY (owner, name);
-- The stored query runs with the search_path captured at creation. The path
-- a 0.1.0 row was created with is unknown, and guessing one (the refresher's,
-- or pg_catalog plus the owner's schema) could resolve its names to objects
-- other roles control. Such rows get NULL: they keep answering, and only their
-- owner itself may refresh them; that refresh captures the owner's path.
ALTER TABLE synopses ADD COLUMN search_path text;
COMMENT ON TABLE synopses IS
    'Named KDE synopses, one namespace per owner: each row visible to its owner (and roles with the owner''s privileges); written only by create/refresh/drop_synopsis';
COMMENT ON COLUMN synopses.search_path IS
    'The search_path the query runs with (the owner''s effective path at creation, pg_temp last); NULL: unknown (stored by 0.1.0), only the owner may refresh';
-- DROP ROLE refuses a role that owns synopses: every owner holds SELECT on
-- the table (redundant with PUBLIC's; PostgreSQL records it in pg_shdepend).
-- create_synopsis grants it with a role's first synopsis and drop_synopsis
-- revokes it with its last; here the owners of existing rows get it (not the
-- table's owner, who holds every privilege, nor roles already dropped).
DO $$
DECLARE
    r regrole;
BEGIN
    FOR r IN SELECT DISTINCT s.owner FROM synopses s
             WHERE EXISTS (SELECT FROM pg_catalog.pg_roles g WHERE g.oid = s.owner::oid)
               AND s.owner::oid <> (SELECT relowner FROM pg_catalog.pg_class WHERE oid = 'synopses'::regclass) LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON synopses TO %s', r);
    END LOOP;
END $$;
