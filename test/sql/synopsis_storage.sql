-- Storage of synopses (docs/synopsis.md "Storage"): metadata in
-- approx_gpu.synopses (no row-level security, readable by everyone, no
-- values), values in approx_gpu_internal.synopsis_values, and a table synopsis' sample
-- relation: its columns, rows and strata, persistence, owner, privileges and
-- lifecycle. Output: counts, names and booleans.
SET approx_gpu.random_seed = 7;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$;
CREATE FUNCTION pg_temp.nrows(r oid) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN EXECUTE format('SELECT count(*) FROM %s', r::regclass) INTO n; RETURN n; END $$;
CREATE FUNCTION pg_temp.sample_of(syn text) RETURNS oid LANGUAGE sql AS
  $$SELECT sample_relid FROM approx_gpu.synopses WHERE name = syn$$;
CREATE ROLE regress_store_owner;
CREATE ROLE regress_store_other;
-- a dropped column, a column added with a default (rows stored before it
-- read its missing value), typmods and a collation
CREATE TABLE sto_t (id int, gone int, price numeric(10,2), label varchar(8) COLLATE "C", grp text, day date);
INSERT INTO sto_t
  SELECT i, i, (i % 97)::numeric / 4, 'l' || (i % 5),
         CASE WHEN i <= 4000 THEN 'big' WHEN i <= 4900 THEN 'mid' WHEN i <= 4980 THEN 'small' ELSE 'tiny' END,
         date '2024-01-01' + i % 30
  FROM generate_series(1, 5000) i;
ALTER TABLE sto_t DROP COLUMN gone;
ALTER TABLE sto_t ADD COLUMN note text DEFAULT 'n';
GRANT SELECT ON sto_t TO regress_store_owner;
CREATE TEMP TABLE sto_oid AS SELECT 'sto_t'::regclass::oid AS t;
SELECT pg_stat_force_next_flush();

SET ROLE regress_store_owner;
SELECT (approx_gpu.create_synopsis('sto_u', 'sto_t'::regclass, ARRAY['price', 'grp']::name[], 1000, 'cdf', 'never')
        ->> 'm')::int AS m_uniform;
CREATE TEMP TABLE sto_info AS
SELECT approx_gpu.create_synopsis('sto_s', 'sto_t'::regclass, ARRAY['grp', 'price']::name[], 400, 'cdf', 'never',
                                  ARRAY['grp']::name[]) AS i;
SELECT (i->>'m')::int AS m_stratified, (i->>'strata')::int AS strata FROM sto_info;
RESET ROLE;

-- the metadata row names the sample relation and the build parameters
SELECT name, sample_size, bandwidth, smoothing, sample_attnums, sample_relid IS NOT NULL AS has_sample
FROM approx_gpu.synopses WHERE name LIKE 'sto%' ORDER BY name;
-- the relation: in approx_gpu_samples, named after the table's OID, UNLOGGED,
-- owned by the extension's owner, a member of the extension, no user text
SELECT s.name, n.nspname, c.relpersistence, c.relkind,
       c.relname ~ ('^s' || 'sto_t'::regclass::oid || '_[0-9]+$') AS named_after_table,
       c.relowner = (SELECT extowner FROM pg_extension WHERE extname = 'approx_gpu') AS owned_by_extension_owner,
       EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
                 AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'approx_gpu')) AS extension_member,
       c.reltuples = pg_temp.nrows(c.oid) AS analyzed
FROM approx_gpu.synopses s JOIN pg_class c ON c.oid = s.sample_relid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE s.name LIKE 'sto%' ORDER BY s.name;
-- its columns: every live column of the table (names, types, typmods,
-- collations), then the stratum number
SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || coalesce(' collate ' || co.collname, '')
                  || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END, ', ' ORDER BY a.attnum) AS sample_columns
FROM pg_attribute a LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 100
WHERE a.attrelid = pg_temp.sample_of('sto_u') AND a.attnum > 0 AND NOT a.attisdropped;
-- its rows: the model's sample (m rows, distinct rows of the table, the
-- added column's default included), stratum 1 for a uniform sample
DO $$ BEGIN
  EXECUTE format('CREATE TEMP TABLE sto_u_rows AS SELECT * FROM %s', pg_temp.sample_of('sto_u')::regclass);
  EXECUTE format('CREATE TEMP TABLE sto_s_rows AS SELECT * FROM %s', pg_temp.sample_of('sto_s')::regclass);
END $$;
SELECT count(*) AS rows_u, count(DISTINCT id) AS distinct_ids,
       count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM sto_t t WHERE t.id = r.id AND t.price = r.price AND t.label = r.label
                                            AND t.grp = r.grp AND t.day = r.day AND t.note = r.note)) AS not_table_rows,
       count(*) FILTER (WHERE approx_stratum <> 1) AS not_stratum_1
FROM sto_u_rows r;
-- stratified: one stratum number per stratum key (the model's stratum order;
-- its strata g + 1), small strata whole, m rows in all
SELECT approx_stratum, min(grp) AS grp, count(DISTINCT grp) AS keys, count(*) AS rows,
       count(*) = (SELECT count(*) FROM sto_t t WHERE t.grp = min(r.grp)) AS whole
FROM sto_s_rows r GROUP BY approx_stratum ORDER BY approx_stratum;
SELECT count(*) = (SELECT (i->>'m')::int FROM sto_info) AS all_m_rows,
       count(DISTINCT approx_stratum) = (SELECT (i->>'strata')::int FROM sto_info) AS all_strata
FROM sto_s_rows;

-- the same rows as the value's sample (so that the box path and the sample
-- path agree): with smoothing off, the box estimate of SUM(price) over
-- everything is the Horvitz-Thompson sum over the relation's rows, uniform
-- (N/m) and per stratum (N_g/m_g)
SELECT abs(approx_gpu.approx_sum(v.synopsis, 1, ARRAY[NULL, NULL]::float8[], ARRAY[NULL, NULL]::float8[])
           - (SELECT 5000.0 / count(*) * sum(price) FROM sto_u_rows)::float8)
       <= 1e-6 * (SELECT sum(price) FROM sto_t)::float8 AS uniform_sum_agrees
FROM approx_gpu_internal.synopsis_values v WHERE v.name = 'sto_u';
SELECT abs(approx_gpu.approx_sum(v.synopsis, 2, ARRAY[NULL, NULL]::float8[], ARRAY[NULL, NULL]::float8[])
           - (SELECT sum(n_g::numeric / m_g * s_g)
                FROM (SELECT count(*) AS m_g, sum(price) AS s_g,
                             (SELECT count(*) FROM sto_t t WHERE t.grp = min(r.grp)) AS n_g
                        FROM sto_s_rows r GROUP BY approx_stratum) g)::float8)
       <= 1e-6 * (SELECT sum(price) FROM sto_t)::float8 AS stratified_sum_agrees
FROM approx_gpu_internal.synopsis_values v WHERE v.name = 'sto_s';

-- nobody reads or drops it directly
SET ROLE regress_store_other;
SELECT pg_temp.err(format('SELECT count(*) FROM %s', pg_temp.sample_of('sto_u')::regclass)) AS other_reads;
RESET ROLE;
SET ROLE regress_store_owner;
SELECT pg_temp.err(format('SELECT count(*) FROM %s', pg_temp.sample_of('sto_u')::regclass)) AS synopsis_owner_reads;
RESET ROLE;
SELECT pg_temp.err(format('DROP TABLE %s', pg_temp.sample_of('sto_u')::regclass)) AS drop_table;
-- publications FOR ALL TABLES skip it (unlogged)
SET client_min_messages = error;
CREATE PUBLICATION sto_pub FOR ALL TABLES;
RESET client_min_messages;
SELECT count(*) FILTER (WHERE schemaname = 'approx_gpu_samples') AS samples_published,
       count(*) FILTER (WHERE tablename = 'sto_t') AS table_published
FROM pg_publication_tables WHERE pubname = 'sto_pub';
DROP PUBLICATION sto_pub;

-- the catalog: no row-level security, readable by everyone, no value in it;
-- values apart, each role seeing its own
SELECT c.relname, c.relrowsecurity, has_table_privilege('regress_store_other', c.oid, 'SELECT') AS other_may_select,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND NOT a.attisdropped
                 AND a.atttypid = 'approx_gpu.kde_synopsis'::regtype) AS holds_values,
       c.oid = ANY ((SELECT extconfig FROM pg_extension WHERE extname = 'approx_gpu')::oid[]) AS dumped
FROM pg_class c WHERE c.oid IN ('approx_gpu.synopses'::regclass, 'approx_gpu_internal.synopsis_values'::regclass) ORDER BY 1;
SET ROLE regress_store_other;
SELECT (SELECT count(*) FROM approx_gpu.synopses WHERE name LIKE 'sto%') AS other_sees_metadata,
       (SELECT count(*) FROM approx_gpu_internal.synopsis_values WHERE name LIKE 'sto%') AS other_sees_values;
-- a restore inserts metadata rows: only its own roles', never naming a sample
SELECT pg_temp.err($$INSERT INTO approx_gpu.synopses (name, owner, query) VALUES ('sto_x', 'regress_store_owner', 'SELECT 1')$$) AS insert_for_another;
INSERT INTO approx_gpu.synopses (name, owner, relation, attnums, atttypes, collations, rows_built, changes_built,
                                 pending_inserts, relfilenode, sample_relid, sample_attnums)
  SELECT 'sto_forged', 'regress_store_other', 'sto_t'::regclass, ARRAY[3]::int2[], ARRAY['numeric']::regtype[],
         ARRAY[0]::oid[], 1, 0, 0, 0, sample_relid, sample_attnums FROM approx_gpu.synopses WHERE name = 'sto_u';
SELECT sample_relid IS NULL AS no_sample, approx_gpu.synopsis_status('sto_forged')->>'status' AS status
FROM approx_gpu.synopses WHERE name = 'sto_forged';
SELECT approx_gpu.drop_synopsis('sto_forged');
RESET ROLE;

-- refresh replaces the relation in its transaction; the old one is gone
CREATE TEMP TABLE sto_old AS SELECT pg_temp.sample_of('sto_u') AS old;
SET ROLE regress_store_owner;
SELECT (approx_gpu.refresh_synopsis('sto_u')->>'m')::int AS m_refreshed;
RESET ROLE;
SELECT pg_temp.sample_of('sto_u') <> old AS replaced, NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = old) AS old_dropped,
       pg_temp.nrows(pg_temp.sample_of('sto_u')) AS rows
FROM sto_old;
-- REASSIGN OWNED / DROP OWNED of the synopsis owner leave it alone
REASSIGN OWNED BY regress_store_owner TO regress_store_other;
SELECT count(*) AS samples_after_reassign FROM pg_class c JOIN approx_gpu.synopses s ON s.sample_relid = c.oid WHERE s.name LIKE 'sto%';
DROP OWNED BY regress_store_other;
DROP OWNED BY regress_store_owner;
SELECT count(*) AS samples_after_drop_owned FROM pg_class c JOIN approx_gpu.synopses s ON s.sample_relid = c.oid WHERE s.name LIKE 'sto%';
GRANT SELECT ON sto_t TO regress_store_owner;
-- drop_synopsis drops it; DROP TABLE drops the others (the event trigger)
TRUNCATE sto_old;
INSERT INTO sto_old SELECT pg_temp.sample_of('sto_u');
SELECT approx_gpu.drop_synopsis('sto_u', 'regress_store_owner');
SELECT NOT EXISTS (SELECT 1 FROM pg_class WHERE oid = old) AS dropped_with_synopsis FROM sto_old;
SELECT count(*) AS samples_of_sto_t FROM pg_class
WHERE relnamespace = 'approx_gpu_samples'::regnamespace AND relname LIKE 's' || 'sto_t'::regclass::oid || '\_%';
DROP TABLE sto_t;
SELECT count(*) AS samples_left FROM pg_class, sto_oid
WHERE relnamespace = 'approx_gpu_samples'::regnamespace AND relname LIKE 's' || t || '\_%';
SELECT count(*) AS synopses_left FROM approx_gpu.synopses WHERE name LIKE 'sto%';
DROP ROLE regress_store_owner;
DROP ROLE regress_store_other;
