-- approx_gpu 0.4.0 -> 0.5.0. Every change to sql/ext/*.sql after 0.4.0 is
-- repeated here so that ALTER EXTENSION approx_gpu UPDATE gives the same
-- objects as a fresh CREATE EXTENSION (test/upgrade/run.sh checks it).

\echo Use "ALTER EXTENSION approx_gpu UPDATE TO '0.5.0'" to load this file. \quit

-- ---- the GPU service (0.5.0) -------------------------------------------------------------
CREATE FUNCTION gpu_service_info() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_service_info' LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION gpu_service_info() IS
    'The GPU service (shared_preload_libraries): whether it runs, its CUDA contexts, memory pool, queue, request counts and resident cache';
