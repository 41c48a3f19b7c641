-- Cancel, statement_timeout and terminate inside a batch on the CPU path. The
-- model is generated here: 100 CatBoost oblivious trees of depth 12 (409,600
-- paths of 12 features; on one core of a 2-core machine about 0.01 s per
-- row's SHAP values, carried down each tree, and 1.5 s per block of 8 rows'
-- interaction values by quadrature), so a batch of 5,000 rows (2,000 for
-- interactions) runs for tens of seconds there, and seconds on a host with
-- faster cores, unless the loops inside it look for interrupts.
-- Every ERROR must arrive within 2 s of the timeout, the cancel or the
-- terminate, and the session goes on.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
SET treeshap.device = cpu;
SET treeshap.cpu_threads = 4;  -- the row pool stops too (2 threads would do on a 2-core machine)
SELECT treeshap.drop_model('t12_big', true) \g /dev/null
SELECT 1 FROM treeshap.load_model('t12_big', convert_to(jsonb_build_object(
  'features_info', jsonb_build_object('float_features',
    (SELECT jsonb_agg(jsonb_build_object('borders', '[-1, 0, 1]'::jsonb, 'feature_id', 'f' || j,
                                         'feature_index', j, 'flat_feature_index', j,
                                         'has_nans', false, 'nan_value_treatment', 'AsIs'))
       FROM generate_series(0, 15) j)),
  'oblivious_trees',
    (SELECT jsonb_agg(jsonb_build_object(
       'leaf_values', (SELECT jsonb_agg(round(sin(t * 4096 + l)::numeric, 6)) FROM generate_series(0, 4095) l),
       'leaf_weights', (SELECT jsonb_agg(1 + (t * 7 + l) % 50) FROM generate_series(0, 4095) l),
       'splits', (SELECT jsonb_agg(jsonb_build_object('border', ((t + d) % 5 - 2) * 0.5,
                                                      'float_feature_index', (t + d) % 16,
                                                      'split_index', 0, 'split_type', 'FloatFeature'))
                    FROM generate_series(0, 11) d)))
       FROM generate_series(0, 99) t),
  'model_info', '{"params": {"loss_function": {"type": "RMSE", "params": {}}}}'::jsonb,
  'scale_and_bias', '[1, [0.0]]'::jsonb)::text, 'UTF8')) \g /dev/null
DROP TABLE IF EXISTS t12_rows, t12_shap;
CREATE TABLE t12_rows AS
SELECT g AS id, sin(g)::real AS f0, cos(g)::real AS f1, sin(2 * g)::real AS f2, cos(2 * g)::real AS f3,
       sin(3 * g)::real AS f4, cos(3 * g)::real AS f5, sin(5 * g)::real AS f6, cos(5 * g)::real AS f7,
       sin(7 * g)::real AS f8, cos(7 * g)::real AS f9, sin(11 * g)::real AS f10, cos(11 * g)::real AS f11,
       sin(13 * g)::real AS f12, cos(13 * g)::real AS f13, sin(17 * g)::real AS f14, cos(17 * g)::real AS f15
  FROM generate_series(1, 5000) g;
ALTER TABLE t12_rows ADD PRIMARY KEY (id);
-- this backend parses the model once, before any timeout
SELECT count(*) FROM treeshap.explain_shap_wide('t12_big', 'SELECT * FROM t12_rows LIMIT 1') \g /dev/null

-- milliseconds until a statement ends with query_canceled; NULL when it finished
CREATE FUNCTION pg_temp.stopped_after(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz := clock_timestamp();
BEGIN
  EXECUTE q;
  RETURN NULL;
EXCEPTION WHEN query_canceled THEN
  RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;

-- another session, through dblink, running statements this one stops
SELECT dblink_connect('other', format('dbname=%s port=%s host=%s user=%s', current_database(),
       current_setting('port'), current_setting('unix_socket_directories'), current_user)) \g /dev/null
SELECT dblink_exec('other', 'SET treeshap.device = cpu; SET treeshap.cpu_threads = 4') \g /dev/null
CREATE TEMP TABLE other AS SELECT pid FROM dblink('other', 'SELECT pg_backend_pid()') AS t(pid int);
SELECT * FROM dblink('other', $$SELECT count(*) FROM treeshap.explain_shap_wide('t12_big',
                     'SELECT * FROM t12_rows LIMIT 1')$$) AS t(n bigint) \g /dev/null

-- send a statement to the other session, let it run 1 s, cancel or terminate
-- it: milliseconds until it stopped (NULL after 10 s) and, after a cancel, its error
CREATE FUNCTION pg_temp.stop_other(q text, terminate boolean, OUT ms float8, OUT error text)
LANGUAGE plpgsql AS $$
DECLARE
  t0 timestamptz;
  p int := (SELECT pid FROM other);
BEGIN
  IF dblink_send_query('other', q) <> 1 THEN
    RETURN;  -- the other session is still busy: NULL
  END IF;
  PERFORM pg_sleep(1);
  t0 := clock_timestamp();
  IF terminate THEN PERFORM pg_terminate_backend(p); ELSE PERFORM pg_cancel_backend(p); END IF;
  LOOP
    PERFORM pg_stat_clear_snapshot();
    EXIT WHEN clock_timestamp() - t0 > interval '10 s';
    IF terminate THEN
      EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = p);
    ELSE
      EXIT WHEN dblink_is_busy('other') = 0;
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
  IF clock_timestamp() - t0 <= interval '10 s' THEN
    ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
  END IF;
  IF NOT terminate THEN
    PERFORM * FROM dblink_get_result('other', false) AS t(n text);
    error := dblink_error_message('other');
    PERFORM * FROM dblink_get_result('other', false) AS t(n text);  -- the end of the results
  END IF;
END $$;
\set QUIET 0

SELECT plan(13);

SET statement_timeout = '1s';
SELECT cmp_ok(pg_temp.stopped_after($$SELECT count(*) FROM treeshap.explain_shap_wide('t12_big', 'SELECT * FROM t12_rows')$$),
              '<', 3000::float8, 'statement_timeout stops explain_shap_wide inside a batch of 5,000 rows, within 2 s');
SELECT cmp_ok(pg_temp.stopped_after($$SELECT count(*) FROM treeshap.explain_shap('t12_big', 'SELECT * FROM t12_rows')$$),
              '<', 3000::float8, 'statement_timeout stops explain_shap inside a batch, within 2 s');
SELECT cmp_ok(pg_temp.stopped_after($$SELECT count(*) FROM treeshap.feature_importance('t12_big', 'SELECT * FROM t12_rows')$$),
              '<', 3000::float8, 'statement_timeout stops feature_importance inside a batch, within 2 s');
SELECT cmp_ok(pg_temp.stopped_after($$SELECT count(*) FROM treeshap.explain_interactions('t12_big',
                                      'SELECT * FROM t12_rows WHERE id <= 2000')$$),
              '<', 3000::float8, 'statement_timeout stops explain_interactions inside a batch of 2,000 rows, within 2 s');
RESET statement_timeout;

SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('t12_big', 'SELECT * FROM t12_rows WHERE id <= 2')),
          2::bigint, 'the session goes on after its statements timed out');

SELECT ok((SELECT ms < 2000 AND error LIKE '%canceling statement due to user request%'
             FROM pg_temp.stop_other($$SELECT count(*) FROM treeshap.explain_shap_wide('t12_big', 'SELECT * FROM t12_rows')$$, false)),
          'pg_cancel_backend stops another session''s explain_shap_wide inside a batch, within 2 s');
SELECT ok((SELECT ms < 2000 AND error LIKE '%canceling statement due to user request%'
             FROM pg_temp.stop_other($$CALL treeshap.explain_into('t12_big', 't12_rows', 't12_shap', batch_size => 500)$$, false)),
          'pg_cancel_backend stops another session''s explain_into inside a batch, within 2 s');
SELECT is((SELECT n FROM dblink('other', $$SELECT count(*) FROM treeshap.explain_shap_wide('t12_big',
                                 'SELECT * FROM t12_rows WHERE id <= 2')$$) AS t(n bigint)),
          2::bigint, 'the cancelled session goes on');
SELECT ok((SELECT ms < 2000 FROM pg_temp.stop_other($$SELECT count(*) FROM treeshap.explain_interactions('t12_big',
                                     'SELECT * FROM t12_rows WHERE id <= 2000')$$, true)),
          'pg_terminate_backend ends another session inside explain_interactions'' first batch, within 2 s');

-- On the GPU (through the service, where one is ready, or its emulated devices):
-- a batch of 200,000 rows of this model is more than a second of an H100's work
-- (minutes of an emulated device's); statement_timeout ends the call within 2 s
-- of the timeout, after the batch reached the device, and the service answers
-- the next request within 1 s, because it runs the batch in bounded launches
-- and stops between them. The model is made resident first, so that the
-- timeout falls on the batch, not on the load.
\set QUIET 1
CREATE FUNCTION pg_temp.gpu_ready() RETURNS boolean LANGUAGE sql AS $$
  SELECT coalesce(bool_or(service = 'ready' AND device IS NOT NULL), false) FROM treeshap.gpu_status
$$;
CREATE FUNCTION pg_temp.launches() RETURNS bigint LANGUAGE sql AS $$
  SELECT coalesce(max(launches), 0) FROM treeshap.gpu_status
$$;
CREATE TEMP TABLE t12_many AS
SELECT g AS id, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15
  FROM t12_rows, generate_series(1, CASE WHEN pg_temp.gpu_ready() THEN 40 ELSE 0 END) g;
SELECT CASE WHEN pg_temp.gpu_ready() THEN (treeshap._service_load('t12_big')).paths END \g /dev/null
CREATE TEMP TABLE launches_before AS SELECT pg_temp.launches() AS n;
\set QUIET 0
SET treeshap.device = auto;
SET treeshap.batch_rows = 200000;
SET statement_timeout = '1s';
SELECT CASE WHEN pg_temp.gpu_ready() THEN
  cmp_ok(pg_temp.stopped_after($$SELECT count(*) FROM treeshap.explain_shap_wide('t12_big', 'SELECT * FROM t12_many')$$),
         '<', 3000::float8, 'statement_timeout stops a 200,000-row batch on the GPU within 2 s')
  ELSE skip('no GPU service ready', 1) END;
RESET statement_timeout;
SELECT CASE WHEN pg_temp.gpu_ready() THEN
  cmp_ok(treeshap._service_ping(0), '<', 1000::float8,
         'and the service answers the next request within 1 s (bounded launches)')
  ELSE skip('no GPU service ready', 1) END;
SELECT CASE WHEN pg_temp.gpu_ready() THEN
  cmp_ok(pg_temp.launches(), '>', (SELECT n FROM launches_before),
         'the batch had reached the device when the timeout stopped it')
  ELSE skip('no GPU service ready', 1) END;
CREATE FUNCTION pg_temp.launches_in(seconds float8) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE before bigint := pg_temp.launches();
BEGIN
  PERFORM pg_sleep(seconds);
  RETURN pg_temp.launches() - before;
END $$;
SELECT CASE WHEN pg_temp.gpu_ready() THEN
  is(pg_temp.launches_in(0.5), 0::bigint, 'and the service stopped working on it: no launch in the next 0.5 s')
  ELSE skip('no GPU service ready', 1) END;
RESET treeshap.batch_rows;
SET treeshap.device = cpu;

\set QUIET 1
SELECT * FROM finish();
DROP TABLE IF EXISTS t12_rows, t12_shap;
SELECT treeshap.drop_model('t12_big') \g /dev/null
