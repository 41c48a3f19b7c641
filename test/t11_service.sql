-- The GPU service: with pg_treeshap in shared_preload_libraries (test/run.sh
-- preloads it) a background worker owns the GPUs and treeshap.gpu_status
-- shows it; terminated, it is started again within seconds with the same
-- devices; requests reach its executor, models are shipped to it once per
-- version. Without preloading, the view says so and requests are refused.
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

-- the devices the service lists, as text
CREATE FUNCTION pg_temp.devices() RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(ROW(device, name, total_memory, compute_capability, multiprocessors)::text ORDER BY device)
    FROM treeshap.gpu_status WHERE device IS NOT NULL
$$;

CREATE TEMP TABLE before AS
SELECT CASE WHEN pg_temp.preloaded() THEN pg_temp.service_other_than(NULL) END AS pid,
       (SELECT service_starts FROM treeshap.gpu_status LIMIT 1) AS starts,
       pg_temp.devices() AS devices;
\set QUIET 0
SELECT plan(27);

SELECT ok((SELECT array_agg(DISTINCT service) FROM treeshap.gpu_status)
            <@ CASE WHEN pg_temp.preloaded() THEN ARRAY['ready', 'no device'] ELSE ARRAY['not loaded'] END,
          'the service runs when preloaded (ready, or no device); not loaded otherwise');

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
                            ORDER BY device) FROM treeshap.gpu_info()),
          (SELECT devices FROM before),
          'treeshap.gpu_info() lists the devices the service found (backends never touch CUDA)');

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
  is(pg_temp.devices(), (SELECT devices FROM before), 'the restarted service found the same devices again')
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

-- models shipped to the service: read by its executor once per version
CREATE FUNCTION pg_temp.load_answer() RETURNS text LANGUAGE sql AS $$
  SELECT ROW(paths, loaded)::text FROM treeshap._service_load('t11_model')
$$;
-- what the executor should answer: a path per leaf of the stored model
CREATE FUNCTION pg_temp.load_expected(loaded boolean) RETURNS text LANGUAGE sql AS $$
  SELECT ROW(num_leaves, loaded)::text FROM treeshap.models WHERE name = 't11_model'
$$;
\set reg `cat test/fixtures/reg.json`
\set deep `cat test/fixtures/deep.json`
SELECT treeshap.load_model('t11_model', convert_to(:'reg', 'UTF8')) \g /dev/null
SELECT CASE WHEN pg_temp.preloaded() THEN
  is(pg_temp.load_answer(), pg_temp.load_expected(true),
     'a model shipped to the service is read by its executor: a path per leaf, loaded by this call')
  ELSE throws_ok($$SELECT treeshap._service_load('t11_model')$$, '55000', 'the GPU service is not running',
                 'without preloading a model cannot be shipped') END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is(pg_temp.load_answer(), pg_temp.load_expected(false), 'the second call finds it resident')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT ROW(model_bytes, paths, hits, last_used > now() - interval '1 minute')::text
        FROM treeshap.gpu_models WHERE model = 't11_model'),
     (SELECT ROW(size, num_leaves, 1, true)::text FROM treeshap.models WHERE name = 't11_model'),
     'gpu_models shows it: its size and paths, one hit (the second call), used just now')
  ELSE is((SELECT count(*) FROM treeshap.gpu_models), 0::bigint, 'without the service no model is resident') END;

CREATE TEMP TABLE replaced AS SELECT version FROM treeshap.models WHERE name = 't11_model';
SELECT treeshap.load_model('t11_model', convert_to(:'deep', 'UTF8'), replace => true) \g /dev/null
SELECT CASE WHEN pg_temp.preloaded() THEN
  is(pg_temp.load_answer(), pg_temp.load_expected(true),
     'a replaced model is a new version: shipped and read again, never served stale')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT array_agg(ROW(model, hits)::text ORDER BY version) FROM treeshap.gpu_models
       WHERE version >= (SELECT version FROM replaced) AND database = current_database()),
     ARRAY[ROW(NULL, 1)::text, ROW('t11_model', 0)::text],
     'the old version stays resident under no name until evicted; the new one is its own entry')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

-- a GPU call reads the model's interface from the service instead of parsing
-- the model: shape, names, base score, categories and dictionaries must be what
-- this backend's own parse stored in the catalog at load time
\set text_cats `cat test/fixtures/xgb_text_cats.json`
\set lgb_cats `cat test/fixtures/lgb_text_cats.txt`
\set multiclass `cat test/fixtures/multiclass.json`
\set onehot `cat test/fixtures/cb_onehot.json`
\set long `cat test/fixtures/long.json`
\set long24 `cat test/fixtures/long24.json`
SELECT treeshap.load_model(n, convert_to(b, 'UTF8')) FROM (VALUES
  ('t11_text_cats', :'text_cats'), ('t11_lgb_cats', :'lgb_cats'), ('t11_multiclass', :'multiclass'),
  ('t11_onehot', :'onehot'), ('t11_long', :'long'), ('t11_long24', :'long24')) v(n, b) \g /dev/null
CREATE FUNCTION pg_temp.interface(name text) RETURNS text LANGUAGE sql AS $$
  SELECT ROW(num_features, num_outputs, feature_names, base_score, categorical_features,
             num_categories)::text FROM treeshap._service_load(name)
$$;
SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT array_agg(pg_temp.interface(name) ORDER BY name) FROM treeshap.models
       WHERE name LIKE 't11\_%' AND name <> 't11_model'),
     (SELECT array_agg(ROW(num_features, num_outputs, feature_names, base_score, categorical_features,
                           num_categories)::text ORDER BY name) FROM treeshap.models
       WHERE name LIKE 't11\_%' AND name <> 't11_model'),
     'the interface from the service matches the catalog on six models (categories, dictionaries, multiclass, LightGBM, CatBoost)')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT array_agg(ROW(name, (SELECT long_paths > 0 FROM treeshap._service_load(name)))::text ORDER BY name)
        FROM treeshap.models WHERE name IN ('t11_long', 't11_long24')),
     ARRAY[ROW('t11_long', true)::text, ROW('t11_long24', false)::text],
     'the interface carries the paths too long for a warp (of up to 40 features), and none of a 24-feature model')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

-- the service's load: requests answered, requests waiting
CREATE TEMP TABLE served AS SELECT requests_served FROM treeshap.gpu_status LIMIT 1;
SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT sum(treeshap._service_ping(0) * 0 + 1) FROM generate_series(1, 3))::bigint
       + (SELECT requests_served FROM served),
     (SELECT requests_served FROM treeshap.gpu_status LIMIT 1),
     'each answered request counts once in requests_served')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT CASE WHEN pg_temp.preloaded() THEN
  is((SELECT queue_depth FROM treeshap.gpu_status LIMIT 1), 0,
     'no request waits while no session asks (queue_depth)')
  ELSE skip('pg_treeshap is not preloaded', 1) END;

SELECT is(has_function_privilege('public', 'treeshap._service_load(text)', 'EXECUTE'), false,
          'only roles granted it may make models resident with _service_load');
-- treeshap.device = gpu needs the service and a GPU; auto falls back to the CPU
SET treeshap.device = gpu;
SELECT CASE
  WHEN NOT pg_temp.preloaded() THEN
    throws_ok($$SELECT treeshap.shap_values('t11_model', ARRAY[0.1, 0.2, 0.3])$$, '55000',
              'treeshap.device is gpu, but the GPU service is not running',
              'without preloading, treeshap.device = gpu is refused with 55000')
  WHEN NOT EXISTS (SELECT FROM treeshap.gpu_info()) THEN
    throws_ok($$SELECT treeshap.shap_values('t11_model', ARRAY[0.1, 0.2, 0.3])$$, '0A000',
              'treeshap.device is gpu, but no GPU can be used',
              'a service without a GPU refuses treeshap.device = gpu with 0A000')
  ELSE lives_ok($$SELECT treeshap.shap_values('t11_model', ARRAY[0.1, 0.2, 0.3])$$,
                'with the service and a GPU, treeshap.device = gpu computes') END;
SET treeshap.device = cpu;
CREATE TEMP TABLE auto_run AS
SELECT NULL::float8[] AS auto, w.shap_values AS cpu
  FROM treeshap.explain_shap_wide('t11_model', 'SELECT 1::bigint, 0.1, 0.2, 0.3') w;
SET treeshap.device = auto;
UPDATE auto_run SET auto = (SELECT w.shap_values FROM treeshap.explain_shap_wide('t11_model', 'SELECT 1::bigint, 0.1, 0.2, 0.3') w);
SELECT CASE WHEN NOT EXISTS (SELECT FROM treeshap.gpu_info()) THEN
  is((SELECT auto FROM auto_run), (SELECT cpu FROM auto_run),
     'without a GPU in the service (or without the service) auto computes on the CPU: the CPU''s very values')
  ELSE ok((SELECT max(abs(a - c)) < 1e-12 FROM auto_run, unnest(auto, cpu) u(a, c)),
          'with a GPU, auto computes on it what the CPU computes (to 1e-12)') END;
-- a GPU run's first batch is a quarter of treeshap.batch_rows, so that the device starts
-- sooner: 1,000 rows in batches of 100 go as 25, nine of 100, then 75: 11 requests
SELECT set_config('treeshap.device', CASE WHEN EXISTS (SELECT FROM treeshap.gpu_info()) THEN 'gpu' ELSE 'cpu' END, false)
  \g /dev/null
SET treeshap.batch_rows = 100;
SELECT count(*) FROM treeshap.explain_shap_wide('t11_model', 'SELECT g::bigint, g / 1000.0, 0.2, 0.3 FROM generate_series(1, 1000) g')
  \g /dev/null
CREATE TEMP TABLE served_before AS SELECT requests_served FROM treeshap.gpu_status LIMIT 1;
CREATE TEMP TABLE quarter_run AS
SELECT count(*) AS n FROM treeshap.explain_shap_wide('t11_model', 'SELECT g::bigint, g / 1000.0, 0.2, 0.3 FROM generate_series(1, 1000) g');
SELECT CASE WHEN EXISTS (SELECT FROM treeshap.gpu_info()) THEN
  is((SELECT requests_served FROM treeshap.gpu_status LIMIT 1) - (SELECT requests_served FROM served_before), 11::bigint,
     'a GPU run of 1,000 rows in batches of 100 starts with a batch of 25: 11 requests')
  ELSE skip('no GPU in the service', 1) END;
RESET treeshap.batch_rows;
RESET treeshap.device;
SELECT treeshap.drop_model('t11_model') \g /dev/null

SELECT * FROM finish();
