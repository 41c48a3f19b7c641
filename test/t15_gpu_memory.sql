-- treeshap.gpu_memory_limit bounds what the GPU service keeps on each device
-- (models' layouts and batch buffers, treeshap.gpu_status.memory_used): under a
-- 3 MB limit, explaining four models one after another evicts the least
-- recently used from the devices (they stay readable, and come back when
-- used), every call still gives the CPU path's values, and a model that
-- cannot fit under the limit is an ERROR 53200 naming the setting, after
-- which the session goes on. Runs where the service has a device (a GPU, or
-- the emulated devices of test/emulated_check.sh); skipped otherwise.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
CREATE FUNCTION pg_temp.has_device() RETURNS boolean LANGUAGE sql AS $$
  SELECT coalesce(bool_or(service = 'ready' AND device IS NOT NULL), false) FROM treeshap.gpu_status
$$;
\set deep `cat test/fixtures/deep.json`
\set multiclass `cat test/fixtures/multiclass.json`
\set reg `cat test/fixtures/reg.json`
\set binary `cat test/fixtures/binary.json`
SELECT treeshap.load_model('t15_deep', convert_to(:'deep', 'UTF8'), true),
       treeshap.load_model('t15_multiclass', convert_to(:'multiclass', 'UTF8'), true),
       treeshap.load_model('t15_reg', convert_to(:'reg', 'UTF8'), true),
       treeshap.load_model('t15_binary', convert_to(:'binary', 'UTF8'), true) \g /dev/null
CREATE TEMP TABLE t15_rows AS
SELECT g AS id, sin(g)::real AS a, cos(g * 0.7)::real AS b, sin(g * 1.3)::real AS c, cos(g * 2.1)::real AS d,
       sin(g * 0.3)::real AS e, cos(g * 0.9)::real AS f, sin(g * 1.7)::real AS g2, cos(g * 0.4)::real AS h
  FROM generate_series(1, 300) g;
CREATE FUNCTION pg_temp.explain(model text, device text) RETURNS TABLE (id bigint, output int, v float8[])
LANGUAGE plpgsql AS $$
DECLARE n int := (SELECT num_features FROM treeshap.models WHERE name = model);
BEGIN
  PERFORM set_config('treeshap.device', device, true);
  RETURN QUERY SELECT row_key, w.output, w.shap_values
    FROM treeshap.explain_shap_wide(model, format('SELECT id, %s FROM t15_rows',
         (SELECT string_agg(c, ', ') FROM unnest(ARRAY['a','b','c','d','e','f','g2','h']) WITH ORDINALITY u(c, k) WHERE k <= n))) w;
END $$;
CREATE FUNCTION pg_temp.worst(model text) RETURNS float8 LANGUAGE sql AS $$
  SELECT max(abs(x - y)) FROM pg_temp.explain(model, 'gpu') g JOIN pg_temp.explain(model, 'cpu') c USING (id, output),
         unnest(g.v, c.v) AS u(x, y)
$$;
SET treeshap.match_columns = position;
SET treeshap.batch_rows = 100;
SELECT pg_temp.has_device() AS has_device \gset
\set QUIET 0

SELECT plan(6);
-- (the service's worker reads the setting on SIGHUP)
\if :has_device
ALTER SYSTEM SET treeshap.gpu_memory_limit = '3MB';
SELECT pg_reload_conf(), pg_sleep(0.5) \g /dev/null
\endif
SELECT CASE WHEN pg_temp.has_device() THEN
  cmp_ok((SELECT max(pg_temp.worst(m)) FROM unnest(ARRAY['t15_deep', 't15_multiclass', 't15_reg', 't15_binary', 't15_deep']) m),
         '<', 1e-9::float8, 'under a 3 MB limit, four models explained one after another give the CPU path''s values')
  ELSE skip('the GPU service has no device', 1) END;
SELECT CASE WHEN pg_temp.has_device() THEN
  ok((SELECT bool_and(memory_used <= 3 * 1024 * 1024) FROM treeshap.gpu_status),
     'no device holds more than the limit (gpu_status.memory_used)')
  ELSE skip('the GPU service has no device', 1) END;
SELECT CASE WHEN pg_temp.has_device() THEN
  ok((SELECT bool_or(devices < (SELECT count(device) FROM treeshap.gpu_status))
        FROM treeshap.gpu_models WHERE model LIKE 't15_%'),
     'models were evicted from devices to stay under it, and stay listed (gpu_models.devices)')
  ELSE skip('the GPU service has no device', 1) END;
\if :has_device
ALTER SYSTEM SET treeshap.gpu_memory_limit = '64kB';
SELECT pg_reload_conf(), pg_sleep(0.5) \g /dev/null
\endif
SELECT CASE WHEN pg_temp.has_device() THEN
  throws_like($$SELECT count(*) FROM pg_temp.explain('t15_multiclass', 'gpu')$$,
              '%treeshap.gpu_memory_limit%', 'a model that cannot fit under a 64 kB limit is an error naming the setting')
  ELSE skip('the GPU service has no device', 1) END;
SELECT CASE WHEN pg_temp.has_device() THEN
  throws_ok($$SELECT count(*) FROM pg_temp.explain('t15_multiclass', 'gpu')$$,
            '53200', NULL, 'with SQLSTATE 53200 (out of memory)')
  ELSE skip('the GPU service has no device', 1) END;
\if :has_device
ALTER SYSTEM RESET treeshap.gpu_memory_limit;
SELECT pg_reload_conf(), pg_sleep(0.5) \g /dev/null
\endif
SELECT CASE WHEN pg_temp.has_device() THEN
  cmp_ok(pg_temp.worst('t15_multiclass'), '<', 1e-9::float8, 'the session goes on: without the limit the same call runs')
  ELSE skip('the GPU service has no device', 1) END;

\set QUIET 1
SELECT * FROM finish();
SELECT treeshap.drop_model(m) FROM unnest(ARRAY['t15_deep', 't15_multiclass', 't15_reg', 't15_binary']) m \g /dev/null
