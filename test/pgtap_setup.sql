-- Helpers for the pgTAP suites (test/pgtap/*.sql), loaded by test/run into the
-- test database after pgtap and approx_gpu.
CREATE SCHEMA tap;

CREATE FUNCTION tap.has_gpu() RETURNS boolean LANGUAGE sql AS
  $$ SELECT (approx_gpu.device_info()->>'gpu_available')::boolean $$;

-- Value of a one-column query run with approx_gpu.device = dev.
CREATE FUNCTION tap.scalar_on(dev text, query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE v float8; old text := current_setting('approx_gpu.device');
BEGIN
  PERFORM set_config('approx_gpu.device', dev, true);
  EXECUTE query INTO v;
  PERFORM set_config('approx_gpu.device', old, true);
  RETURN v;
END $$;

-- True when a query returns the same multiset of rows on both devices.
CREATE FUNCTION tap.same_rows_on_cpu_and_gpu(query text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE differ bigint; old text := current_setting('approx_gpu.device');
BEGIN
  PERFORM set_config('approx_gpu.device', 'gpu', true);
  EXECUTE 'CREATE TEMP TABLE tap_gpu_rows ON COMMIT DROP AS ' || query;
  PERFORM set_config('approx_gpu.device', 'cpu', true);
  EXECUTE 'CREATE TEMP TABLE tap_cpu_rows ON COMMIT DROP AS ' || query;
  PERFORM set_config('approx_gpu.device', old, true);
  SELECT count(*) INTO differ FROM ((TABLE tap_gpu_rows EXCEPT ALL TABLE tap_cpu_rows)
                                    UNION ALL (TABLE tap_cpu_rows EXCEPT ALL TABLE tap_gpu_rows)) d;
  DROP TABLE tap_gpu_rows, tap_cpu_rows;
  RETURN differ = 0;
END $$;

-- ok(check) when a GPU is present, else a skip that says where it is checked.
CREATE FUNCTION tap.gpu_ok(check_sql text, description text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE good boolean;
BEGIN
  IF NOT tap.has_gpu() THEN
    RETURN skip('no GPU on this machine: "' || description || '" runs on the GPU machine');
  END IF;
  EXECUTE check_sql INTO good;
  RETURN ok(coalesce(good, false), description);
END $$;

-- EXPLAIN (COSTS OFF) of a query as one line, to check plan shapes.
CREATE FUNCTION tap.plan_text(query text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; plan text := '';
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP plan := plan || line || ' '; END LOOP;
  RETURN plan;
END $$;
