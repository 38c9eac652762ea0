-- Settings and introspection that do not depend on the machine.
LOAD 'approx_gpu';  -- settings appear once the library is loaded in the backend
-- (the GPU service's own settings exist only with the library preloaded: gpu_service)
SELECT name, vartype, min_val, max_val, enumvals
FROM pg_settings WHERE name LIKE 'approx_gpu.%' AND context <> 'postmaster' ORDER BY name;
-- the prefix is reserved: a misspelt setting is an error, not a silent placeholder
SET approx_gpu.devise = 'cpu';
SET approx_gpu.device = 'fpga';
SET approx_gpu.cpu_threads = 65;
SET approx_gpu.gpu_memory_limit = -1;
SET approx_gpu.random_seed = -2;
-- last_run() after a call: the function, rows, and non-negative timings
SELECT approx_gpu.kde_bandwidth(ARRAY[1, 2, 4, 8, 16]::float8[], 'scott') > 0 AS ok;
SELECT r->>'function' AS function, (r->>'rows')::int AS rows, (r->>'ms_read')::float8 >= 0 AS read_ms,
       (r->>'ms_compute')::float8 >= 0 AS compute_ms, r ? 'device' AS has_device
FROM approx_gpu.last_run() r;
-- cpu_threads changes nothing but speed
SET approx_gpu.cpu_threads = 1;
SELECT approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 3000) i)) AS h1 \gset
SET approx_gpu.cpu_threads = 4;
SELECT abs(approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 3000) i)) / :h1 - 1) < 1e-9 AS same_h;
RESET approx_gpu.cpu_threads;
-- every object has a comment
SELECT p.oid::regprocedure AS undocumented
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'approx_gpu' AND obj_description(p.oid, 'pg_proc') IS NULL
  AND p.proname NOT LIKE '%\_sfunc' AND p.proname NOT LIKE '%\_final' AND p.proname NOT LIKE '%\_combine'
  AND p.proname NOT LIKE '%\_serial' AND p.proname NOT LIKE '%\_deserial'
  AND p.proname NOT LIKE '%\_in' AND p.proname NOT LIKE '%\_out' AND p.proname NOT LIKE '%\_recv'
  AND p.proname NOT LIKE '%\_send'
ORDER BY 1;
