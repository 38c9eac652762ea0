-- approx_gpu 0.1.0 -> 0.2.0. Every change to sql/ext/*.sql after 0.1.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.2.0'" to load this file. \quit

-- synopsis accuracy: the cross-validated guard (issue 12) chooses each column's
-- mode; the stored format is version 2 (version 1 still read). Only comments change.
COMMENT ON TYPE kde_synopsis IS
    'KDE synopsis of a relation: N, a uniform sample, per-column statistics, density and box bandwidths, per-column mode (exact, kde, log_kde) with its cross-validated evidence (text form: JSON)';
COMMENT ON AGGREGATE kde_synopsis_agg(float8[], int, text, text) IS
    'KDE synopsis of the rows; smoothing auto (each column exact or smoothed by cross-validation on the sample), always or never (equal on every row)';
COMMENT ON FUNCTION kde_synopsis_info(kde_synopsis) IS
    'N, m, d, sample size, skipped rows, bandwidth method, smoothing, bytes, the guard''s joint CV errors, per column: name, both bandwidths, discrete, mode, log-scale shift and bandwidth, interval scale, cross-validated errors and coverage, step, statistics';
