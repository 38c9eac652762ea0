-- approx_gpu 0.6.0 -> 0.7.0. Every change to sql/ext/*.sql after 0.6.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.7.0'" to load this file. \quit
