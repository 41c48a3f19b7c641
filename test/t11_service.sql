-- The GPU service: with pg_treeshap in shared_preload_libraries (test/run.sh
-- preloads it) a background worker owns the GPUs and treeshap.gpu_status
-- shows it; it finds the same devices a backend finds; terminated, it is
-- started again within seconds. Without preloading, the view says so.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;

CREATE FUNCTION pg_temp.preloaded() RETURNS boolean LANGUAGE sql AS $$
  SELECT 'pg_treeshap' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))
$$;

-- the service's pid once it is running with another pid than old (NULL after 10 s)
CREATE FUNCTION pg_temp.service_other_than(old integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  p integer;
BEGIN
  FOR i IN 1..100 LOOP
    SELECT service_pid INTO p FROM treeshap.gpu_status
     WHERE service IN ('ready', 'no device') LIMIT 1;
    IF p IS NOT NULL AND p IS DISTINCT FROM old THEN
      RETURN p;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN NULL;
END $$;

-- milliseconds until a request of wait_ms is canceled (pgTAP's throws_ok cannot catch 57014)
CREATE FUNCTION pg_temp.canceled_after(wait_ms integer) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
BEGIN
  PERFORM treeshap._service_ping(wait_ms);
  RETURN NULL;
EXCEPTION WHEN query_canceled THEN
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;

CREATE TEMP TABLE before AS
SELECT CASE WHEN pg_temp.preloaded() THEN pg_temp.service_other_than(NULL) END AS pid,
       (SELECT service_starts FROM treeshap.gpu_status LIMIT 1) AS starts;
\set QUIET 0
SELECT plan(14);

SELECT is((SELECT array_agg(DISTINCT service) FROM treeshap.gpu_status),
          CASE WHEN pg_temp.preloaded()
               THEN ARRAY[CASE WHEN EXISTS (SELECT 1 FROM treeshap.gpu_info()) THEN 'ready' ELSE 'no device' END]
               ELSE ARRAY['not loaded'] END,
          'the service runs when preloaded: ready with the GPUs a backend sees, else no device; not loaded otherwise');

SELECT is((SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'pg_treeshap gpu service'),
          CASE WHEN pg_temp.preloaded() THEN 1 ELSE 0 END,
          'one service process when preloaded, none otherwise');

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_treeshap gpu service'),
     (SELECT pid FROM before), 'gpu_status names the service process')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  ok((SELECT executor_pid IS NOT NULL AND executor_pid <> service_pid
             AND executor_pid NOT IN (SELECT pid FROM pg_stat_activity)
        FROM treeshap.gpu_status LIMIT 1),
     'the GPUs belong to an executor process of the service, not to a server process')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT is((SELECT array_agg(ROW(device, name, total_memory, compute_capability, multiprocessors)::text
                            ORDER BY device) FILTER (WHERE device IS NOT NULL)
             FROM treeshap.gpu_status),
          CASE WHEN pg_temp.preloaded()
               THEN (SELECT array_agg(ROW(device, name, total_memory, compute_capability, multiprocessors)::text
                                      ORDER BY device) FROM treeshap.gpu_info())
          END,
          'the service lists exactly the devices treeshap.gpu_info() finds in a backend');

SELECT ok(coalesce((SELECT bool_and(message IS NOT NULL AND message <> '') FROM treeshap.gpu_status
                     WHERE device IS NULL), true),
          'a status without a device says why');

SELECT CASE WHEN pg_temp.preloaded() THEN
  ok(pg_terminate_backend((SELECT pid FROM before)), 'the service can be terminated')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  isnt(pg_temp.service_other_than((SELECT pid FROM before)), NULL,
       'a terminated service is running again, under a new pid, within 10 s')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT service_starts FROM treeshap.gpu_status LIMIT 1), (SELECT starts + 1 FROM before),
     'the restart counts as one more start')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT array_agg(DISTINCT service) FROM treeshap.gpu_status),
     ARRAY[CASE WHEN EXISTS (SELECT 1 FROM treeshap.gpu_info()) THEN 'ready' ELSE 'no device' END],
     'the restarted service found its devices again')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

-- requests through the service (treeshap._service_ping: the executor waits, then answers)
SELECT CASE WHEN pg_temp.preloaded() THEN
  cmp_ok(treeshap._service_ping(50), '>=', 50::float8, 'a request reaches the executor and comes back')
  ELSE throws_ok('SELECT treeshap._service_ping(0)', '55000', 'the GPU service is not running',
                 'without preloading a request is refused with 55000') END;

SET statement_timeout = '200ms';
SELECT CASE WHEN pg_temp.preloaded() THEN
  cmp_ok(pg_temp.canceled_after(5000), '<', 1000::float8,
         'statement_timeout (200 ms) ends a request of 5 s that waits on the service within a second')
  ELSE skip('pg_treeshap is not preloaded', 1) END;
RESET statement_timeout;

SELECT CASE WHEN pg_temp.preloaded() THEN
  cmp_ok(treeshap._service_ping(0), '<', 100::float8,
         'the abandoned request was stopped: the next one is answered at once')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT is(has_function_privilege('public', 'treeshap._service_ping(integer)', 'EXECUTE'), false,
          'only roles granted it may hold the executor with _service_ping');

SELECT * FROM finish();
