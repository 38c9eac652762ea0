-- Who binds a synopsis that answers other roles' queries (issue 26, item
-- 11): the synopses of the table's owner (and of roles with its privileges)
-- answer everyone; any other role's synopsis answers only that role. The
-- table's owner lists and drops every synopsis of its table; plans are
-- role-dependent; EXPLAIN and last_run() show only names the caller may
-- see. Roles are cluster-wide: every role here is named regress_bind_* and
-- dropped at the end. Outputs are engine-independent (booleans, names).
SET approx_gpu.random_seed = 17;
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error'; EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
-- approx_count(*) WHERE cond against count(*), with where the answer came from
CREATE FUNCTION pg_temp.check_count(cond text, OUT equals_exact bool, OUT answered_from text, OUT synopsis text)
LANGUAGE plpgsql AS $$
DECLARE a float8; e bigint; r jsonb;
BEGIN
  EXECUTE 'SELECT approx_gpu.approx_count(*) FROM public.bind_t WHERE ' || cond INTO a;
  r := approx_gpu.last_run();
  EXECUTE 'SELECT count(*) FROM public.bind_t WHERE ' || cond INTO e;
  equals_exact := abs(a - e) < 1e-6;
  answered_from := r->>'answered_from';
  synopsis := coalesce(r->>'synopsis', r->>'reason');
END $$;

CREATE ROLE regress_bind_owner;
CREATE ROLE regress_bind_deputy IN ROLE regress_bind_owner;  -- has the owner's privileges
CREATE ROLE regress_bind_reader;                             -- SELECT on the table only
CREATE ROLE regress_bind_other;                              -- SELECT on the table only
CREATE TABLE public.bind_t AS SELECT g AS id, (g % 100)::float8 AS x FROM generate_series(1, 10000) g;
ALTER TABLE public.bind_t OWNER TO regress_bind_owner;
GRANT SELECT ON public.bind_t TO regress_bind_reader, regress_bind_other;
SELECT pg_stat_force_next_flush();

-- the owner binds a synopsis of every row; later a SELECT-only role builds a
-- 2-row one of the same columns
SET ROLE regress_bind_owner;
SELECT (approx_gpu.create_synopsis('owner_syn', 'public.bind_t'::regclass, ARRAY['x']::name[],
                                   10000, 'cdf', 'never')->>'m')::int AS owner_m;
SET ROLE regress_bind_reader;
SELECT (approx_gpu.create_synopsis('tiny', 'public.bind_t'::regclass, ARRAY['x']::name[],
                                   2, 'cdf', 'never')->>'m')::int AS reader_m;

-- the owner's query still comes from the owner's synopsis, and is exact
SET ROLE regress_bind_owner;
SELECT * FROM pg_temp.check_count('x < 30');
-- so does a superuser's (superuser status does not make the reader's its own)
RESET ROLE;
SELECT * FROM pg_temp.check_count('x < 30');
-- and another SELECT-only role's, whose last_run() does not name it
SET ROLE regress_bind_other;
SELECT * FROM pg_temp.check_count('x < 30');
-- a role with the owner's privileges sees its name
SET ROLE regress_bind_deputy;
SELECT * FROM pg_temp.check_count('x < 30');
-- the reader's own query may use its own synopsis (the most recent)
SET ROLE regress_bind_reader;
SELECT approx_gpu.approx_count(*) = 10000 AS all_rows FROM public.bind_t;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, approx_gpu.last_run()->>'synopsis' AS synopsis;

-- EXPLAIN names only a synopsis the caller may see
SET ROLE regress_bind_owner;
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM public.bind_t WHERE x < 30;
SET ROLE regress_bind_other;
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM public.bind_t WHERE x < 30;
SET ROLE regress_bind_reader;
EXPLAIN (COSTS OFF) SELECT approx_gpu.approx_count(*) FROM public.bind_t WHERE x < 30;
-- a reason naming a synopsis the caller may not see does not name it either
-- (the owner's synopsis is the only one that may answer `other`; it lacks id)
SET ROLE regress_bind_other;
SELECT approx_gpu.approx_count(*) = 50 AS equals_exact FROM public.bind_t WHERE id <= 50;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, approx_gpu.last_run()->>'reason' AS reason;

-- a plan cached under one role is not reused under another: prepared by
-- the reader (its own synopsis), executed by the owner and by `other`
SET plan_cache_mode = force_generic_plan;
SET ROLE regress_bind_reader;
PREPARE bind_q AS SELECT round(approx_gpu.approx_count(*)) AS c FROM public.bind_t WHERE x < 30;
EXECUTE bind_q;
SELECT approx_gpu.last_run()->>'synopsis' AS synopsis;
SET ROLE regress_bind_owner;
EXECUTE bind_q;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from,
       coalesce(approx_gpu.last_run()->>'synopsis', approx_gpu.last_run()->>'reason') AS synopsis_or_reason;
SET ROLE regress_bind_other;
EXECUTE bind_q;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from,
       coalesce(approx_gpu.last_run()->>'synopsis', approx_gpu.last_run()->>'reason') AS synopsis_or_reason;
DEALLOCATE bind_q;
RESET plan_cache_mode;

-- listing: the metadata is readable by everyone (0.7.0, docs/synopsis.md
-- "Storage"); the values stay with their owners
SET ROLE regress_bind_owner;
SELECT owner::text, name FROM approx_gpu.synopses WHERE relation = 'public.bind_t'::regclass ORDER BY 1, 2;
SELECT s->>'owner' AS owner, s->>'status' AS status FROM approx_gpu.synopsis_status('tiny') s;
-- ... but neither estimates from it by name nor refreshes it (that stays
-- with the reader's privileges): the same error as a missing one
SELECT pg_temp.err($$SELECT approx_gpu.approx_count('tiny', '{}')$$);
SELECT pg_temp.err($$SELECT approx_gpu.refresh_synopsis('tiny')$$);
SET ROLE regress_bind_deputy;
SELECT owner::text, name FROM approx_gpu.synopses WHERE relation = 'public.bind_t'::regclass ORDER BY 1, 2;
SET ROLE regress_bind_reader;
SELECT owner::text, name FROM approx_gpu.synopses WHERE relation = 'public.bind_t'::regclass ORDER BY 1, 2;
SET ROLE regress_bind_other;
SELECT owner::text, name FROM approx_gpu.synopses WHERE relation = 'public.bind_t'::regclass ORDER BY 1, 2;

-- dropping: the owner drops the reader's synopsis by name; when two roles
-- use one name, by name and owner; nobody else drops the owner's
SELECT (approx_gpu.create_synopsis('tiny', 'public.bind_t'::regclass, ARRAY['x']::name[],
                                   2, 'cdf', 'never')->>'m')::int AS other_m;
SET ROLE regress_bind_owner;
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('tiny')$$);
SELECT approx_gpu.drop_synopsis('tiny', 'regress_bind_other');
SELECT approx_gpu.drop_synopsis('tiny');
SELECT owner::text, name FROM approx_gpu.synopses WHERE relation = 'public.bind_t'::regclass ORDER BY 1, 2;
SET ROLE regress_bind_reader;
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('owner_syn', 'regress_bind_owner')$$);
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('owner_syn')$$);
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('tiny', 'regress_bind_reader')$$);
SELECT pg_temp.err($$SELECT approx_gpu.drop_synopsis('tiny', 0::oid::regrole)$$);

-- a change of role membership after planning: the deputy binds a synopsis
-- (it has the owner's privileges; 5000 sample rows), `other` caches a plan
-- over it, the deputy leaves the owner role; `other`'s next execution no
-- longer uses the deputy's synopsis (the plan is made again here; had it
-- been reused, the executor checks again and takes the exact path).
RESET ROLE;
GRANT SELECT ON public.bind_t TO regress_bind_deputy;
SET ROLE regress_bind_deputy;
SELECT (approx_gpu.create_synopsis('deputy_syn', 'public.bind_t'::regclass, ARRAY['x']::name[],
                                   5000, 'cdf', 'never')->>'m')::int AS deputy_m;
SET plan_cache_mode = force_generic_plan;
SET ROLE regress_bind_other;
PREPARE bind_r AS SELECT round(approx_gpu.approx_count(*)) AS c FROM public.bind_t WHERE x < 30;
EXECUTE bind_r;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, approx_gpu.last_run()->>'synopsis' AS synopsis,
       approx_gpu.last_run()->>'sample_rows' AS sample_rows;
RESET ROLE;
REVOKE regress_bind_owner FROM regress_bind_deputy;
SET ROLE regress_bind_other;
EXECUTE bind_r;
SELECT approx_gpu.last_run()->>'answered_from' AS answered_from, approx_gpu.last_run()->>'reason' AS reason,
       approx_gpu.last_run()->>'sample_rows' AS sample_rows;
DEALLOCATE bind_r;
-- planned afresh: the deputy's synopsis no longer answers `other`
SELECT * FROM pg_temp.check_count('x < 30');
SELECT approx_gpu.last_run()->>'sample_rows' AS sample_rows;
RESET plan_cache_mode;
SET ROLE regress_bind_owner;
SELECT approx_gpu.drop_synopsis('deputy_syn');

-- clean up
SET ROLE regress_bind_owner;
SELECT approx_gpu.drop_synopsis('owner_syn');
RESET ROLE;
SELECT count(*) AS synopses_left FROM approx_gpu.synopses WHERE owner::text LIKE 'regress_bind%';
DROP TABLE public.bind_t;
DROP ROLE regress_bind_deputy, regress_bind_owner, regress_bind_reader, regress_bind_other;
