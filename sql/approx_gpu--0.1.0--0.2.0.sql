-- approx_gpu 0.1.0 -> 0.2.0. Every change to sql/ext/*.sql after 0.1.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.2.0'" to load this file. \quit

-- moving: mo_info reports the index's bytes and the session's total (issue #11)
COMMENT ON FUNCTION mo_info(text) IS
    'A moving-object index: device, objects, cells, buckets, memory (its bytes, the session''s total and approx_gpu.moving_session_memory), and the last update and query batches (counts, milliseconds)';
