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

-- ---- column privileges (issue 37, item 1): a build reads only what its
-- builder may SELECT, and a synopsis whose census or strata follow a column
-- the querying role may not SELECT does not answer that role. salary and
-- grade are hidden from regress_bind_cols; salary has a tail (20 rows of
-- 10^7), so the default census of a build that may read it keeps those rows
-- whole (weight 1): a role that reads only id would learn who they are.
CREATE ROLE regress_bind_cols;
CREATE ROLE regress_bind_cols_member IN ROLE regress_bind_cols;  -- the builder's privileges and more
CREATE TABLE public.bind_pay AS
  SELECT g AS id, g % 5 AS dept, CASE WHEN g % 1000 = 0 THEN 1e7 ELSE g % 100 END::float8 AS salary,
         g % 4 AS grade
    FROM generate_series(1, 20000) g;
GRANT SELECT (id, dept) ON public.bind_pay TO regress_bind_cols;
GRANT SELECT ON public.bind_pay TO regress_bind_cols_member;
SELECT pg_stat_force_next_flush();
-- approx_count(*) over bind_pay (or a partitioned copy) with where it came from
CREATE FUNCTION pg_temp.pay_count(tab text, cond text, OUT answered_from text, OUT reason text)
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT approx_gpu.approx_count(*) FROM %s WHERE %s', tab, cond);
  answered_from := approx_gpu.last_run()->>'answered_from';
  reason := approx_gpu.last_run()->>'reason';
END $$;

-- its own build: the default census' candidates are id and dept only (no
-- tail: no census, no strata), and its sample relation holds id and dept
SET ROLE regress_bind_cols;
SELECT (approx_gpu.create_synopsis('cols_syn', 'public.bind_pay'::regclass, ARRAY['id', 'dept']::name[],
                                   1000)->>'strata')::int AS own_strata;
RESET ROLE;
SELECT array_agg(a.attname ORDER BY a.attnum) AS sample_columns
  FROM approx_gpu.synopses s JOIN pg_attribute a ON a.attrelid = s.sample_relid AND a.attnum > 0
 WHERE s.name = 'cols_syn';
-- a member with the table's every column: the builder's synopsis answers it,
-- but holds no salary (the exact path says why)
SET ROLE regress_bind_cols_member;
SET approx_gpu.box_path = off;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'salary > 50');
RESET approx_gpu.box_path;
-- a column it names explicitly that it may not SELECT: 42501 naming it
SET ROLE regress_bind_cols;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'public.bind_pay'::regclass,
                                                       ARRAY['id', 'salary']::name[], 1000, census => true)$$);
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'public.bind_pay'::regclass, ARRAY['id', 'grade']::name[],
                                                       1000, stratify => ARRAY['grade']::name[])$$);
SELECT approx_gpu.drop_synopsis('cols_syn');

-- the owner's synopses: the default census follows salary (a candidate),
-- census => true a synopsis column, stratify grade; none answers
-- regress_bind_cols (exact path, on the box path and on the sample path);
-- census => false on the same columns (a uniform sample) does
RESET ROLE;
SELECT (approx_gpu.create_synopsis('pay_auto', 'public.bind_pay'::regclass, ARRAY['id', 'dept']::name[],
                                   1000)->>'strata')::int AS owner_auto_strata;
SET ROLE regress_bind_cols;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
SET approx_gpu.box_path = off;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
RESET approx_gpu.box_path;
-- the owner itself is answered
RESET ROLE;
SELECT (pg_temp.pay_count('public.bind_pay', 'id < 5000')).answered_from AS owner_answered_from;
SELECT approx_gpu.drop_synopsis('pay_auto');
SELECT (approx_gpu.create_synopsis('pay_on', 'public.bind_pay'::regclass, ARRAY['id', 'dept', 'salary']::name[],
                                   1000, census => true)->>'strata')::int AS owner_on_strata;
SET ROLE regress_bind_cols;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
RESET ROLE;
SELECT approx_gpu.drop_synopsis('pay_on');
SELECT (approx_gpu.create_synopsis('pay_grade', 'public.bind_pay'::regclass, ARRAY['id', 'grade']::name[],
                                   1000, stratify => ARRAY['grade']::name[])->>'strata')::int AS owner_grade_strata;
SET ROLE regress_bind_cols;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
SET approx_gpu.box_path = off;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
RESET approx_gpu.box_path;
RESET ROLE;
SELECT approx_gpu.drop_synopsis('pay_grade');
SELECT (approx_gpu.create_synopsis('pay_uniform', 'public.bind_pay'::regclass, ARRAY['id', 'dept', 'salary']::name[],
                                   1000, census => false)->>'strata')::int AS owner_uniform_strata;
SET ROLE regress_bind_cols;
SELECT * FROM pg_temp.pay_count('public.bind_pay', 'id < 5000');
RESET ROLE;
SELECT approx_gpu.drop_synopsis('pay_uniform');

-- a partitioned table keyed by the hidden grade: each partition is a
-- stratum, so its rows' weights tell their grade. The role's build is
-- refused; the owner's synopsis does not answer it
CREATE TABLE public.bind_ppay (id int, dept int, salary float8, grade int) PARTITION BY LIST (grade);
CREATE TABLE public.bind_ppay_01 PARTITION OF public.bind_ppay FOR VALUES IN (0, 1);
CREATE TABLE public.bind_ppay_23 PARTITION OF public.bind_ppay FOR VALUES IN (2, 3);
INSERT INTO public.bind_ppay SELECT id, dept, salary, grade FROM public.bind_pay;
GRANT SELECT (id, dept) ON public.bind_ppay TO regress_bind_cols;
SELECT pg_stat_force_next_flush();
SET ROLE regress_bind_cols;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'public.bind_ppay'::regclass, ARRAY['id', 'dept']::name[],
                                                       1000, census => false)$$);
RESET ROLE;
SELECT (approx_gpu.create_synopsis('ppay', 'public.bind_ppay'::regclass, ARRAY['id', 'dept']::name[], 1000,
                                   census => false)->>'strata')::int AS owner_partition_strata;
SET ROLE regress_bind_cols;
SELECT * FROM pg_temp.pay_count('public.bind_ppay', 'id < 5000');
-- granted the key, it is answered
RESET ROLE;
GRANT SELECT (grade) ON public.bind_ppay TO regress_bind_cols;
SET ROLE regress_bind_cols;
SELECT (pg_temp.pay_count('public.bind_ppay', 'id < 5000')).answered_from AS with_key_answered_from;
RESET ROLE;
SELECT approx_gpu.drop_synopsis('ppay');
-- an inheritance parent: each child is a stratum, which tableoid tells
CREATE TABLE public.bind_ipay (id int, dept int);
CREATE TABLE public.bind_ipay_c () INHERITS (public.bind_ipay);
INSERT INTO public.bind_ipay SELECT id, dept FROM public.bind_pay WHERE id <= 10000;
INSERT INTO public.bind_ipay_c SELECT id, dept FROM public.bind_pay WHERE id > 10000;
GRANT SELECT (id, dept) ON public.bind_ipay TO regress_bind_cols;
SELECT pg_stat_force_next_flush();
SET ROLE regress_bind_cols;
SELECT pg_temp.err($$SELECT approx_gpu.create_synopsis('e', 'public.bind_ipay'::regclass, ARRAY['id', 'dept']::name[],
                                                       1000, census => false)$$);
RESET ROLE;
SELECT (approx_gpu.create_synopsis('ipay', 'public.bind_ipay'::regclass, ARRAY['id', 'dept']::name[], 1000,
                                   census => false)->>'strata')::int AS owner_child_strata;
SET ROLE regress_bind_cols;
SELECT * FROM pg_temp.pay_count('public.bind_ipay', 'id < 5000');
RESET ROLE;
GRANT SELECT (tableoid) ON public.bind_ipay TO regress_bind_cols;
SET ROLE regress_bind_cols;
SELECT (pg_temp.pay_count('public.bind_ipay', 'id < 5000')).answered_from AS with_tableoid_answered_from;
RESET ROLE;
SELECT approx_gpu.drop_synopsis('ipay');
DROP TABLE public.bind_ipay_c, public.bind_ipay;
DROP TABLE public.bind_ppay, public.bind_pay;
DROP ROLE regress_bind_cols_member, regress_bind_cols;
