-- Machine-dependent behaviour: which device is present. Three expected files:
-- gpu_runtime.out (no usable GPU), gpu_runtime_1.out (a GPU) and
-- gpu_runtime_2.out (no GPU, calls through the GPU service running the CPU
-- engines: test/run's second pass, where device = gpu runs on its CPU engines).
SELECT (approx_gpu.device_info()->>'gpu_available')::boolean AS gpu_available;
SELECT jsonb_typeof(approx_gpu.device_info()->'devices') AS devices_type;

-- device = 'gpu': an ERROR (55000) without a GPU, the GPU with one
SET approx_gpu.device = 'gpu';
DO $$
BEGIN
  PERFORM approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 1000) i));
  RAISE NOTICE 'ran on %', approx_gpu.last_run()->>'device';
EXCEPTION WHEN object_not_in_prerequisite_state THEN
  RAISE NOTICE 'no GPU: % (SQLSTATE %)', split_part(SQLERRM, ':', 2), SQLSTATE;
END $$;

-- device = 'auto': the GPU when there is one and the input is large enough, silently the CPU otherwise
SET approx_gpu.device = 'auto';
SET approx_gpu.gpu_min_rows = 0;
SELECT approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 1000) i)) > 0 AS ok;
SELECT approx_gpu.last_run()->>'device' = CASE WHEN (approx_gpu.device_info()->>'gpu_available')::boolean
                                               THEN 'gpu' ELSE 'cpu' END AS expected_device;
SET approx_gpu.gpu_min_rows = 1000000;
SELECT approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 1000) i)) > 0 AS ok;
SELECT approx_gpu.last_run()->>'device' AS small_input_device;
RESET approx_gpu.gpu_min_rows;

-- a GPU allocation over approx_gpu.gpu_memory_limit: auto falls back to the CPU
-- (NOTICE), gpu raises 53200
SET approx_gpu.gpu_min_rows = 0;
SET approx_gpu.gpu_memory_limit = '64kB';
SELECT approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 20000) i)) > 0 AS ok;
SELECT approx_gpu.last_run()->>'device' AS device_after_fallback;
SET approx_gpu.device = 'gpu';
DO $$
BEGIN
  PERFORM approx_gpu.kde_bandwidth(array(SELECT sin(i)::float8 FROM generate_series(1, 20000) i));
  RAISE NOTICE 'no error';
EXCEPTION WHEN out_of_memory THEN
  RAISE NOTICE 'out of GPU memory (SQLSTATE %)', SQLSTATE;
WHEN object_not_in_prerequisite_state THEN
  RAISE NOTICE 'no GPU (SQLSTATE %)', SQLSTATE;
END $$;
RESET approx_gpu.gpu_memory_limit;
RESET approx_gpu.gpu_min_rows;
RESET approx_gpu.device;
