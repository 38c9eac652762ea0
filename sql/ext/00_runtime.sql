-- approx_gpu: approximate and GPU-accelerated analytics.
-- This script is generated from sql/ext/*.sql (one fragment per feature).

\echo Use "CREATE EXTENSION approx_gpu" to load this file. \quit

-- Every function of the extension is meant for every role (named synopses
-- guard themselves by their owner, row-level security and their own checks).
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-- ---- runtime: introspection --------------------------------------------------

CREATE FUNCTION device_info() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_device_info' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION device_info() IS
    'GPUs visible to this backend (name, memory, compute capability) or why there are none';

CREATE FUNCTION last_run() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_last_run' LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION last_run() IS
    'What the last approx_gpu call in this backend did: device, rows read and skipped, milliseconds';

CREATE FUNCTION gpu_service_info() RETURNS jsonb
    AS 'MODULE_PATHNAME', 'approx_gpu_service_info' LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION gpu_service_info() IS
    'The GPU service (shared_preload_libraries): whether it runs, its CUDA contexts, memory pool, queue, request counts and resident cache';
