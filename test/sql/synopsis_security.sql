-- Named synopses under hostile roles:
-- the stored query's names are pinned to its creation-time search_path,
-- names are per owner and invisible rows look missing, a dropped owner's
-- synopsis is never run, merged counts never wrap, a create that loses the
-- race for its name says so, and ordinary roles may use the schema. Roles
-- are cluster-wide: every role here is named regress_synsec_* and dropped at
-- the end.
SET approx_gpu.random_seed = 11;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- the error of q with the synopsis name replaced by X (to compare two errors)
CREATE FUNCTION pg_temp.err_as(q text, name text) RETURNS text LANGUAGE sql AS $$
SELECT replace(pg_temp.err(q), name, 'X') $$;

CREATE ROLE regress_synsec_alice;
CREATE ROLE regress_synsec_bob;
CREATE ROLE regress_synsec_carol IN ROLE regress_synsec_alice, regress_synsec_bob;
CREATE ROLE regress_synsec_eve;
CREATE ROLE regress_synsec_dave;

-- row 14: an ordinary role, granted nothing, can call the extension's
-- functions (USAGE on the schema is PUBLIC's)
SET ROLE regress_synsec_eve;
SELECT approx_gpu.kde_bandwidth(ARRAY[1, 2, 3, 5, 8]::float8[], 'scott') > 0 AS eve_calls;
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('nothing_here', '{}')$$);
RESET ROLE;
SELECT has_schema_privilege('public', 'approx_gpu', 'USAGE') AS public_has_usage,
       has_schema_privilege('public', 'approx_gpu', 'CREATE') AS public_has_create;

-- row 3: alice's query names `secret` under her search_path; bob plants a
-- view public.secret whose function copies what it can read into his table;
-- a superuser whose search_path is public refreshes alice's synopsis. The
-- query must resolve to alice's table, as when it was created.
CREATE SCHEMA regress_synsec_alice AUTHORIZATION regress_synsec_alice;
GRANT CREATE ON SCHEMA public TO regress_synsec_bob;
SET ROLE regress_synsec_alice;
CREATE TABLE regress_synsec_alice.secret AS SELECT (1000 + g)::float8 AS salary FROM generate_series(1, 300) g;
SET search_path = regress_synsec_alice;
SELECT (approx_gpu.create_synopsis('s', 'SELECT salary FROM secret', 100)->>'N')::int AS alice_n;
SELECT search_path FROM approx_gpu.synopses WHERE name = 's';
RESET search_path;
SET ROLE regress_synsec_bob;
CREATE TABLE public.regress_synsec_loot (salary float8);
GRANT INSERT, SELECT ON public.regress_synsec_loot TO PUBLIC;
SET check_function_bodies = off;  -- bob cannot see alice's schema; alice can
CREATE FUNCTION public.regress_synsec_steal() RETURNS TABLE (salary float8) LANGUAGE sql AS $$
  INSERT INTO public.regress_synsec_loot SELECT salary FROM regress_synsec_alice.secret RETURNING salary $$;
RESET check_function_bodies;
CREATE VIEW public.secret AS SELECT salary FROM public.regress_synsec_steal();
GRANT SELECT ON public.secret TO PUBLIC;
RESET ROLE;
SET search_path = public;
SELECT (approx_gpu.refresh_synopsis('s')->>'N')::int AS refreshed_n;
RESET search_path;
SELECT count(*) AS rows_bob_got FROM public.regress_synsec_loot;
-- the same for a query run at creation: the path pinned then is used
SET ROLE regress_synsec_alice;
SET search_path = regress_synsec_alice, public;
SELECT (approx_gpu.create_synopsis('s2', 'SELECT salary FROM secret', 100)->>'N')::int AS alice_n2;
RESET search_path;
RESET ROLE;
SET search_path = public, regress_synsec_alice;
SELECT (approx_gpu.refresh_synopsis('s2')->>'N')::int AS refreshed_n2;
RESET search_path;
SELECT count(*) AS rows_bob_got FROM public.regress_synsec_loot;
-- pg_temp comes last in a pinned path: the refresher's temporary table of
-- the same name is not read
CREATE TEMP TABLE secret AS SELECT 1::float8 AS salary;
SELECT (approx_gpu.refresh_synopsis('s')->>'N')::int AS refreshed_n_with_temp;
DROP TABLE pg_temp.secret;

-- row 4: names are per owner; a synopsis the caller may not see behaves
-- exactly as a missing one, for every named function
SET ROLE regress_synsec_alice;
SELECT (approx_gpu.create_synopsis('alice_only', 'SELECT salary FROM regress_synsec_alice.secret', 50)->>'N')::int AS n;
SELECT (approx_gpu.create_synopsis('shared', 'SELECT salary FROM regress_synsec_alice.secret', 50)->>'N')::int AS n;
SET ROLE regress_synsec_bob;
SELECT (approx_gpu.create_synopsis('alice_only', 'SELECT g::float8 AS x FROM generate_series(1, 7) g', 50)->>'N')::int AS bob_takes_the_name;
SELECT approx_gpu.drop_synopsis('alice_only');
SELECT (approx_gpu.create_synopsis('shared', 'SELECT g::float8 AS x FROM generate_series(1, 7) g', 50)->>'N')::int AS n;
SELECT approx_gpu.approx_count('shared', '{}') AS bob_reads_his_own;
SELECT pg_temp.err_as($$SELECT approx_gpu.drop_synopsis('alice_only')$$, 'alice_only')
       = pg_temp.err_as($$SELECT approx_gpu.drop_synopsis('no_such')$$, 'no_such') AS drop_same_error,
       pg_temp.err_as($$SELECT approx_gpu.refresh_synopsis('alice_only')$$, 'alice_only')
       = pg_temp.err_as($$SELECT approx_gpu.refresh_synopsis('no_such')$$, 'no_such') AS refresh_same_error,
       pg_temp.err_as($$SELECT approx_gpu.approx_count('alice_only', '{}')$$, 'alice_only')
       = pg_temp.err_as($$SELECT approx_gpu.approx_count('no_such', '{}')$$, 'no_such') AS count_same_error,
       pg_temp.err_as($$SELECT approx_gpu.approx_sum('alice_only', 'salary', '{}')$$, 'alice_only')
       = pg_temp.err_as($$SELECT approx_gpu.approx_sum('no_such', 'salary', '{}')$$, 'no_such') AS sum_same_error,
       pg_temp.err_as($$SELECT approx_gpu.approx_avg('alice_only', 'salary', '{}')$$, 'alice_only')
       = pg_temp.err_as($$SELECT approx_gpu.approx_avg('no_such', 'salary', '{}')$$, 'no_such') AS avg_same_error;
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('alice_only')$$);
SELECT name FROM approx_gpu.synopses ORDER BY name;
-- carol has the privileges of alice and of bob: a name both own is
-- ambiguous for her, until she owns one herself or sets the role
SET ROLE regress_synsec_carol;
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('shared', '{}')$$);
SELECT approx_gpu.approx_count('alice_only', '{}') AS carol_reads_alices;
SET ROLE regress_synsec_alice;
SELECT approx_gpu.approx_count('shared', '{}') AS alice_reads_her_own;
SET ROLE regress_synsec_carol;
SELECT (approx_gpu.create_synopsis('shared', 'SELECT g::float8 AS x FROM generate_series(1, 3) g', 50)->>'N')::int AS n;
SELECT approx_gpu.approx_count('shared', '{}') AS carol_reads_her_own;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('shared', 'SELECT 1::float8 AS x')$$);
SELECT approx_gpu.drop_synopsis('shared');
RESET ROLE;
SELECT owner::text, name FROM approx_gpu.synopses ORDER BY 1, 2;

-- a role's first synopsis grants, its last revokes
SELECT r.rolname, has_table_privilege(r.oid, 'approx_gpu.synopses', 'SELECT') AS can_select,
       EXISTS (SELECT FROM pg_class c, aclexplode(c.relacl) a
               WHERE c.oid = 'approx_gpu.synopses'::regclass AND a.grantee = r.oid) AS holds_grant
FROM pg_roles r WHERE r.rolname LIKE 'regress_synsec_%' ORDER BY 1;

-- row 13b: the insert itself finds the name taken (here by the query, which
-- creates the same name while it runs; two sessions racing hit the same
-- path): the error speaks of the call, not of the table's key
SET ROLE regress_synsec_alice;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('raced',
  'SELECT (approx_gpu.create_synopsis(''raced'', ''SELECT 1::float8 AS x'')->>''N'')::float8 AS x')$$);
RESET ROLE;

-- row 5: DROP ROLE refuses a role that owns synopses (it holds SELECT on the
-- table, recorded in pg_shdepend, from its first synopsis to its last)
SET ROLE regress_synsec_dave;
SELECT (approx_gpu.create_synopsis('orphan', 'SELECT g::float8 AS x FROM generate_series(1, 9) g', 50)->>'N')::int AS n;
RESET ROLE;
DROP ROLE regress_synsec_dave;
-- DROP OWNED revokes that privilege, and then the role can be dropped; its
-- synopsis is never run nor read, even by a superuser, who can list and
-- drop it
DROP OWNED BY regress_synsec_dave;
DROP ROLE regress_synsec_dave;
SELECT name, NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = owner) AS owner_dropped
FROM approx_gpu.synopses WHERE name = 'orphan';
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('orphan')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('orphan', '{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.approx_avg('orphan', 'x', '{}')$$);
SET ROLE regress_synsec_eve;
SELECT pg_temp.err_as($$SELECT approx_gpu.drop_synopsis('orphan')$$, 'orphan')
       = pg_temp.err_as($$SELECT approx_gpu.drop_synopsis('no_such')$$, 'no_such') AS orphan_invisible;
RESET ROLE;
SELECT approx_gpu.drop_synopsis('orphan');
SELECT count(*) AS orphans_left FROM approx_gpu.synopses WHERE name = 'orphan';

-- a row stored by 0.1.0 has no search_path: only its owner refreshes it
-- (which pins the owner's path); anyone else gets an error
UPDATE approx_gpu.synopses SET search_path = NULL WHERE name = 's';
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('s')$$);
SET ROLE regress_synsec_alice;
SET search_path = regress_synsec_alice;
SELECT (approx_gpu.refresh_synopsis('s')->>'N')::int AS owner_refreshed;
RESET search_path;
SELECT search_path FROM approx_gpu.synopses WHERE name = 's';
RESET ROLE;

-- row 6: counts of merged synopses never wrap: skipped = 2^63 - 1 twice,
-- N = 2^62 twice and N = 2^63 - 1 twice are ERROR 22003 (kde_merge and
-- kde_merge_agg); the binary form: N at bytes 9-16, skipped at 33-40
CREATE TABLE syn_base AS
  SELECT approx_gpu.kde_synopsis_agg(ARRAY[g::float8, (g % 7)::float8], 100, 'scott') AS s FROM generate_series(1, 500) g;
CREATE TABLE syn_big AS SELECT
  overlay(s::bytea PLACING '\xffffffffffffff7f'::bytea FROM 33 FOR 8)::approx_gpu.kde_synopsis AS skipped_max,
  overlay(s::bytea PLACING '\x0000000000000040'::bytea FROM 9 FOR 8)::approx_gpu.kde_synopsis AS n_2_62,
  overlay(s::bytea PLACING '\xffffffffffffff7f'::bytea FROM 9 FOR 8)::approx_gpu.kde_synopsis AS n_max
FROM syn_base;
SELECT (approx_gpu.kde_synopsis_info(skipped_max)->>'skipped')::int8 AS skipped,
       (approx_gpu.kde_synopsis_info(n_2_62)->>'N')::int8 AS n_2_62,
       (approx_gpu.kde_synopsis_info(n_max)->>'N')::int8 AS n_max FROM syn_big;
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(skipped_max, skipped_max) FROM syn_big$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(n_2_62, n_2_62) FROM syn_big$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge(n_max, n_max) FROM syn_big$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge_agg(x) FROM syn_big, LATERAL (VALUES (skipped_max), (skipped_max)) v(x)$$);
SELECT pg_temp.err($$SELECT approx_gpu.kde_merge_agg(x) FROM syn_big, LATERAL (VALUES (n_2_62), (n_2_62)) v(x)$$);
-- what does fit is merged, and the result reads back
SELECT (approx_gpu.kde_synopsis_info(approx_gpu.kde_merge(n_2_62, s))->>'N')::int8 AS n_merged,
       (approx_gpu.kde_synopsis_info(approx_gpu.kde_merge(skipped_max, s))->>'skipped')::int8 AS skipped_merged,
       approx_gpu.kde_merge(n_2_62, s)::bytea::approx_gpu.kde_synopsis IS NOT NULL AS reads_back
FROM syn_big, syn_base;
-- counts past 2^53 survive the text form exactly (what pg_dump writes)
SELECT (approx_gpu.kde_synopsis_info(approx_gpu.kde_merge(n_2_62, s)::text::approx_gpu.kde_synopsis)->>'N')::int8 AS n_via_text,
       (approx_gpu.kde_synopsis_info(skipped_max::text::approx_gpu.kde_synopsis)->>'skipped')::int8 AS skipped_via_text,
       (approx_gpu.kde_synopsis_info(n_max::text::approx_gpu.kde_synopsis)->>'N')::int8 AS n_max_via_text
FROM syn_big, syn_base;
SELECT pg_temp.err($$SELECT replace(n_max::text, '"N": 9223372036854775807', '"N": 9223372036854775808')::approx_gpu.kde_synopsis FROM syn_big$$);
SELECT pg_temp.err($$SELECT replace(n_max::text, '"N": 9223372036854775807', '"N": 92233720368547758.5')::approx_gpu.kde_synopsis FROM syn_big$$);
DROP TABLE syn_base, syn_big;

-- clean up: every synopsis and role of this file
SET ROLE regress_synsec_alice;
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE owner = 'regress_synsec_alice'::regrole ORDER BY name;
SET ROLE regress_synsec_bob;
SELECT approx_gpu.drop_synopsis(name) FROM approx_gpu.synopses WHERE owner = 'regress_synsec_bob'::regrole ORDER BY name;
RESET ROLE;
SELECT count(*) AS synopses_left FROM approx_gpu.synopses WHERE owner::text LIKE 'regress_synsec%';
DROP VIEW public.secret;
DROP FUNCTION public.regress_synsec_steal();
DROP TABLE public.regress_synsec_loot;
DROP TABLE regress_synsec_alice.secret;
DROP SCHEMA regress_synsec_alice;
REVOKE CREATE ON SCHEMA public FROM regress_synsec_bob;
DROP ROLE regress_synsec_carol, regress_synsec_bob, regress_synsec_alice, regress_synsec_eve;
