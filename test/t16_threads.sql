-- treeshap.cpu_threads: the CPU path computes rows on a pool of threads in
-- the backend. Every fixture's SHAP values, predictions, importance and
-- interaction values are the same bytes on 1 thread and on 3 (and with
-- batches of 7 rows, so runs end part way through the pool's chunks); the
-- backend really has those threads while it computes, and drops them when
-- the setting goes back to 1. Cancellation with threads: t12_cancel.sql.
BEGIN;
\ir setup.sql
SET treeshap.device = cpu;

SELECT plan(14);

-- one call per fixture and thread count, its rows as text (float8 out prints every bit)
CREATE FUNCTION pg_temp.run(kind text, f text, threads int, batch int DEFAULT 10000)
RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('treeshap.cpu_threads', threads::text, true);
  PERFORM set_config('treeshap.batch_rows', batch::text, true);
  PERFORM set_config('extra_float_digits', '3', true);
  IF kind = 'wide' THEN
    RETURN QUERY SELECT format('%s %s %s %s', row_key, output, base_value, shap_values)
      FROM treeshap.explain_shap_wide(f, pg_temp.fx_query(f));
  ELSIF kind = 'long' THEN
    RETURN QUERY SELECT format('%s %s %s %s', row_key, output, feature, shap_value)
      FROM treeshap.explain_shap(f, pg_temp.fx_query(f));
  ELSIF kind = 'predict' THEN
    RETURN QUERY SELECT format('%s %s %s %s', row_key, output, margin, prediction)
      FROM treeshap.predict(f, pg_temp.fx_query(f));
  ELSIF kind = 'importance' THEN
    RETURN QUERY SELECT format('%s %s %s %s %s', output, feature, mean_abs_shap, mean_shap, rows)
      FROM treeshap.feature_importance(f, pg_temp.fx_query(f));
  ELSE
    RETURN QUERY SELECT format('%s %s %s %s %s', row_key, output, feature_a, feature_b, interaction)
      FROM treeshap.explain_interactions(f, pg_temp.fx_query(f) || ' AND id <= 20', method => kind);
  END IF;
END $$;

-- fixtures whose rows differ between 1 and 3 threads (in value or in order)
CREATE FUNCTION pg_temp.differing(kind text, batch int DEFAULT 10000) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(fixture ORDER BY fixture) FROM fx_list
   WHERE (SELECT array_agg(r) FROM pg_temp.run(kind, fixture, 1, batch) r)
         IS DISTINCT FROM (SELECT array_agg(r) FROM pg_temp.run(kind, fixture, 3, batch) r)
$$;

SELECT is(pg_temp.differing('wide'), NULL, 'explain_shap_wide: every fixture bitwise equal on 1 and 3 threads');
SELECT is(pg_temp.differing('wide', 7), NULL, 'and so in batches of 7 rows');
SELECT is(pg_temp.differing('long'), NULL, 'explain_shap: every fixture bitwise equal on 1 and 3 threads');
SELECT is(pg_temp.differing('predict'), NULL, 'predict: every fixture bitwise equal on 1 and 3 threads');
SELECT is(pg_temp.differing('importance', 7), NULL,
          'feature_importance: every fixture bitwise equal on 1 and 3 threads (sums in row order)');
SELECT is(pg_temp.differing('shapley'), NULL, 'Shapley interactions: every fixture bitwise equal on 1 and 3 threads');

-- With threads, the backend fetches and emits while the other threads
-- compute: a treeshap call inside the user's query (here per row, in a
-- feature's expression) runs then, on the backend alone, and changes nothing.
CREATE FUNCTION pg_temp.nested_margin(key bigint) RETURNS float8 LANGUAGE sql AS $$
  SELECT margin FROM treeshap.predict('binary', pg_temp.fx_query('binary') || ' AND id = ' || key)
$$;
SET LOCAL treeshap.cpu_threads = 3;
SET LOCAL treeshap.batch_rows = 7;
SET LOCAL extra_float_digits = 3;
-- reg's predictions with a treeshap call in its query, against a call on 1 thread
CREATE FUNCTION pg_temp.nested_differs() RETURNS boolean LANGUAGE sql AS $$
  SELECT (SELECT array_agg(format('%s %s %s', row_key, margin, prediction) ORDER BY row_key)
            FROM treeshap.predict('reg', replace(pg_temp.fx_query('reg'), 'x[1] AS',
                                                 'x[1] + 0 * pg_temp.nested_margin(id) AS')))
         IS DISTINCT FROM
         (SELECT array_agg(r ORDER BY split_part(r, ' ', 1)::bigint)
            FROM (SELECT split_part(r, ' ', 1) || ' ' || split_part(r, ' ', 3) || ' ' || split_part(r, ' ', 4) AS r
                    FROM pg_temp.run('predict', 'reg', 1) r) s)
$$;
SELECT is(pg_temp.nested_differs(), false, 'a treeshap call nested in the query of a threaded call: the same predictions');
-- on the GPU too (the suites on emulated devices and on GPUs force it): the nested
-- call runs on the CPU, the session's one request with the service being the outer call's
SET LOCAL treeshap.device = DEFAULT;
SET LOCAL treeshap.batch_rows = 7;
SET LOCAL statement_timeout = '60s';
SELECT is(pg_temp.nested_differs(), false,
          'a treeshap call nested in the query of a call on the session''s default device: the same predictions');
RESET statement_timeout;
SET LOCAL treeshap.device = cpu;
RESET treeshap.batch_rows;

-- the threads of this backend, from /proc (Linux)
CREATE FUNCTION pg_temp.backend_threads() RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM pg_ls_dir(format('/proc/%s/task', pg_backend_pid()))
$$;
SET LOCAL treeshap.cpu_threads = 4;
SELECT count(*) FROM treeshap.predict('reg', pg_temp.fx_query('reg')) \g /dev/null
SELECT is(pg_temp.backend_threads(), 4::bigint, 'cpu_threads = 4: the backend computes on 4 threads, its own included');
SET LOCAL treeshap.cpu_threads = 1;
SELECT count(*) FROM treeshap.predict('reg', pg_temp.fx_query('reg')) \g /dev/null
SELECT is(pg_temp.backend_threads(), 1::bigint, 'cpu_threads = 1: the pool''s threads are gone');

SELECT throws_ok($$SET treeshap.cpu_threads = -1$$, '22023', NULL, 'a negative thread count is refused');

-- sessions computing at once share the cores (a Citus node's shards): each takes
-- its share, at least one thread, and fewer as more share them
SELECT is(treeshap._cpu_threads_shared(1000000), 1, 'a million sessions at once take one thread each');
SELECT ok(treeshap._cpu_threads_shared(1) >= treeshap._cpu_threads_shared(2)
          AND treeshap._cpu_threads_shared(2) >= treeshap._cpu_threads_shared(3),
          'more sessions at once take no more threads each');
SELECT is(treeshap._cpu_threads_shared(0), treeshap._cpu_threads_shared(1), 'no sessions counts as one');
SELECT * FROM finish();
ROLLBACK;
