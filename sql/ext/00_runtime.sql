-- approx_gpu: approximate and GPU-accelerated analytics.
-- This script is generated from sql/ext/*.sql (one fragment per feature).

\echo Use "CREATE EXTENSION approx_gpu" to load this file. \quit

-- Every function of the extension is meant for every role (named synopses
-- guard themselves by their owner, row-level security and their own checks).
GRANT USAGE ON SCHEMA @extschema@ TO PUBLIC;

-- What users call lands in the schema the extension is installed into
-- (CREATE EXTENSION ... [SCHEMA s]); what only the extension itself uses (the
-- aggregates' support functions, the sample path's weighted aggregates, the
-- triggers, the synopses' values) lives in a schema of its own, a member of
-- the extension (DROP EXTENSION drops it). USAGE for everyone: the library
-- reads synopsis_values as the caller (its rows guard themselves); nobody but
-- the extension's owner may CREATE there. README "Schemas" lists the objects.
CREATE SCHEMA approx_gpu_internal;
COMMENT ON SCHEMA approx_gpu_internal IS
    'Internal objects of approx_gpu (support functions, weighted sample aggregates, triggers, synopsis values): not for direct use';
GRANT USAGE ON SCHEMA approx_gpu_internal TO PUBLIC;

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
