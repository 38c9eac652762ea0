-- Every object of the extension approx_gpu with what defines it: functions
-- (full definition: arguments, result, volatility, strictness, parallel
-- safety, settings, symbol), aggregates (their support functions), types,
-- tables and their columns, policies, comments and ACLs. Two databases whose
-- outputs are equal hold the same extension objects.
\pset format unaligned
\pset tuples_only on
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = 'approx_gpu'),
members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
  WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
)
SELECT pg_describe_object(m.classid, m.objid, 0) || E'\n' ||
  coalesce(CASE
    WHEN m.classid = 'pg_proc'::regclass AND p.prokind <> 'a' THEN pg_get_functiondef(p.oid)
    WHEN m.classid = 'pg_proc'::regclass THEN format('aggregate(%s) -> %s strict=%s parallel=%s sfunc=%s stype=%s final=%s combine=%s serial=%s deserial=%s init=%s',
        pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid), p.proisstrict, p.proparallel,
        a.aggtransfn::regprocedure, a.aggtranstype::regtype, a.aggfinalfn, a.aggcombinefn, a.aggserialfn,
        a.aggdeserialfn, a.agginitval)
    WHEN m.classid = 'pg_type'::regclass THEN (SELECT format('type len=%s type=%s in=%s out=%s recv=%s send=%s align=%s storage=%s cols=%s',
        t.typlen, t.typtype, t.typinput, t.typoutput, t.typreceive, t.typsend, t.typalign, t.typstorage,
        (SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
           FROM pg_attribute WHERE attrelid = t.typrelid AND attnum > 0 AND NOT attisdropped))
        FROM pg_type t WHERE t.oid = m.objid)
    WHEN m.classid = 'pg_class'::regclass THEN (SELECT format('relation kind=%s rls=%s acl=%s cols=%s', c.relkind, c.relrowsecurity, c.relacl,
        (SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END
                           || coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), ''), ', ' ORDER BY attnum)
           FROM pg_attribute LEFT JOIN pg_attrdef ad ON ad.adrelid = attrelid AND ad.adnum = attnum
          WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped)
        || coalesce(' policies=' || (SELECT string_agg(polname || ':' || polcmd::text || ':' || pg_get_expr(polqual, polrelid), '; ' ORDER BY polname)
           FROM pg_policy WHERE polrelid = c.oid), '')
        || coalesce(' indexes=' || (SELECT string_agg(pg_get_indexdef(indexrelid), '; ' ORDER BY indexrelid::regclass::text)
           FROM pg_index WHERE indrelid = c.oid), ''))
        FROM pg_class c WHERE c.oid = m.objid)
    ELSE '' END, '') || E'\n' ||
  coalesce('comment: ' || obj_description(m.objid, m.classid::regclass::name), 'no comment') || E'\n' ||
  coalesce('acl: ' || (SELECT p2.proacl::text FROM pg_proc p2 WHERE m.classid = 'pg_proc'::regclass AND p2.oid = m.objid), '')
FROM members m
LEFT JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
ORDER BY 1;
SELECT 'schema ' || nspname || ' acl: ' || coalesce(nspacl::text, 'default') FROM pg_namespace
 WHERE nspname IN ('approx_gpu', 'approx_gpu_internal', 'approx_gpu_samples') ORDER BY nspname;
SELECT 'config dump: ' || array_to_string(extconfig::regclass[], ',') || ' ' || array_to_string(extcondition, ',')
  FROM pg_extension WHERE extname = 'approx_gpu';
