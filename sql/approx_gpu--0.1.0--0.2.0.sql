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
-- the table (redundant with PUBLIC's; PostgreSQL records it in pg_shdepend),
-- granted by create_synopsis with a role's first synopsis and revoked by
-- drop_synopsis with its last. It is not granted here: a GRANT run by this
-- script would be recorded as an initial privilege of the extension
-- (pg_init_privs, which PostgreSQL 15 does not tie to the role), so pg_dump
-- would not keep it, and once the role is gone pg_dump would name a dangling
-- OID. The owner of a 0.1.0 row gets it at its next refresh (which 0.1.0
-- rows need anyway: only their owner may refresh them, see above); until
-- then, if the role is dropped, its rows are orphans that are never run.

-- moving: mo_info reports the index's bytes and the session's total (issue #11)
COMMENT ON FUNCTION mo_info(text) IS
    'A moving-object index: device, objects, cells, buckets, memory (its bytes, the session''s total and approx_gpu.moving_session_memory), and the last update and query batches (counts, milliseconds)';

-- volatility: results that depend on approx_gpu.device are STABLE (issue #16)
ALTER FUNCTION kde_bandwidth(float8[], text) STABLE;
ALTER FUNCTION kde_lscv(float8[], int, text) STABLE;
ALTER FUNCTION kde_bandwidth_final(internal) STABLE;
ALTER FUNCTION kde_lscv_final(internal) STABLE;

-- synopsis accuracy: the cross-validated guard (issue 12) chooses each column's
-- mode; the stored format is version 2 (version 1 still read). Only comments change.
COMMENT ON TYPE kde_synopsis IS
    'KDE synopsis of a relation: N, a uniform sample, per-column statistics, density and box bandwidths, per-column mode (exact, kde, log_kde) with its cross-validated evidence (text form: JSON)';
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int, text, text) IS
    'KDE synopsis of the rows; smoothing auto (each column exact or smoothed by cross-validation on the sample), always or never (equal on every row)';
COMMENT ON FUNCTION kde_synopsis_info(kde_synopsis) IS
    'N, m, d, sample size, skipped rows, bandwidth method, smoothing, bytes, the guard''s joint CV errors, per column: name, both bandwidths, discrete, mode, log-scale shift and bandwidth, interval scale, cross-validated errors and coverage, step, statistics';
ALTER FUNCTION approx_count(kde_synopsis, float8[], float8[]) STABLE;
ALTER FUNCTION approx_sum(kde_synopsis, int, float8[], float8[]) STABLE;
ALTER FUNCTION approx_avg(kde_synopsis, int, float8[], float8[]) STABLE;
ALTER FUNCTION approx_count_ci(kde_synopsis, float8[], float8[], float8) STABLE;
ALTER FUNCTION approx_sum_ci(kde_synopsis, int, float8[], float8[], float8) STABLE;
ALTER FUNCTION approx_avg_ci(kde_synopsis, int, float8[], float8[], float8) STABLE;
ALTER FUNCTION approx_count_many(kde_synopsis, float8[], float8[]) STABLE;
ALTER FUNCTION approx_sum_many(kde_synopsis, int, float8[], float8[]) STABLE;
ALTER FUNCTION approx_avg_many(kde_synopsis, int, float8[], float8[]) STABLE;
ALTER FUNCTION kde_density(kde_synopsis, float8[]) STABLE;
COMMENT ON AGGREGATE kde_synopsis_agg(float8[]) IS
    'KDE synopsis of the rows (each row one point x): sample of 10000, cdf bandwidths, auto smoothing; the sample is random, reproducible when approx_gpu.random_seed is set';
COMMENT ON FUNCTION kde_merge(kde_synopsis, kde_synopsis) IS
    'Synopsis of the union of two relations (hypergeometric reservoir merge; bandwidths recomputed); random, reproducible when approx_gpu.random_seed is set';
