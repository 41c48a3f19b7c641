-- explain_into: a procedure that commits every batch, so this file runs
-- outside a transaction and cleans up after itself (schema t09). Each target
-- is compared with a one-shot explain_shap_wide / explain_shap of the same
-- rows, exactly. Errors raised after the procedure's first COMMIT cannot be
-- caught by throws_ok (which runs its SQL inside a function, where COMMIT is
-- refused), so those calls run plainly and psql's LAST_ERROR_SQLSTATE is
-- checked; the plain ERROR lines they print are expected.
\ir session.sql
-- runs in the calling session alone, batch by batch; runs with workers are tested at the end
SET treeshap.job_workers = 0;
CREATE EXTENSION IF NOT EXISTS dblink;
DROP SCHEMA IF EXISTS t09 CASCADE;
CREATE SCHEMA t09;
\set m_reg `cat test/fixtures/reg.json`
\set m_reg3 `cat test/fixtures/reg_v3.json`
\set m_multi `cat test/fixtures/multiclass.json`
\set m_dart `cat test/fixtures/dart.json`
SELECT 1 FROM treeshap.load_model('t09_reg', convert_to(:'m_reg', 'UTF8'), replace => true) \g /dev/null
SELECT 1 FROM treeshap.load_model('t09_multi', convert_to(:'m_multi', 'UTF8'), replace => true) \g /dev/null
SELECT 1 FROM treeshap.load_model('t09_dart', convert_to(:'m_dart', 'UTF8'), replace => true) \g /dev/null
DELETE FROM treeshap.job_store WHERE target LIKE 't09.%';

-- 3000 houses with keys 3, 6, ..., 9000 (gaps, so later keys can land in between)
CREATE TABLE t09.houses AS
SELECT 3 * g AS id,
       (g * 37 % 1500) / 100.0::float8 AS "MedInc", (g * 11 % 52)::float8 AS "HouseAge",
       2 + (g * 13 % 700) / 100.0::float8 AS "AveRooms", 1 + (g % 7) / 20.0::float8 AS "AveBedrms",
       (g * 101 % 5000)::float8 AS "Population", 1 + (g * 17 % 400) / 100.0::float8 AS "AveOccup",
       32.5 + (g * 29 % 900) / 100.0::float8 AS "Latitude",
       -124.3 + (g * 31 % 1000) / 100.0::float8 AS "Longitude",
       'note ' || g AS note
  FROM generate_series(1, 3000) g;
ALTER TABLE t09.houses ADD PRIMARY KEY (id);
UPDATE t09.houses SET "HouseAge" = NULL WHERE id % 11 = 0;
UPDATE t09.houses SET "MedInc" = 'NaN' WHERE id % 13 = 0;
CREATE VIEW t09.wide AS SELECT * FROM treeshap.explain_shap_wide('t09_reg', 'SELECT id, * FROM t09.houses');
CREATE FUNCTION t09.job(target text) RETURNS treeshap.jobs LANGUAGE sql AS
    $$ SELECT * FROM treeshap.jobs j WHERE j.target = job.target $$;
CREATE TEMP TABLE vers (k text, v bigint);
INSERT INTO vers SELECT 'v1', version FROM treeshap.models WHERE name = 't09_reg';
SELECT version AS v1 FROM treeshap.models WHERE name = 't09_reg' \gset
SELECT plan(102);

-- First run: creates the target, explains everything, one commit per batch
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap', batch_size => 500);
SELECT col_is_pk('t09', 'shap', ARRAY['row_key', 'output', 'model_version'],
                 'the target is created with its unique key');
SELECT col_type_is('t09', 'shap', 'row_key', 'integer', 'row_key has the source key''s type');
SELECT is((SELECT attcompression::text FROM pg_attribute WHERE attrelid = 't09.shap'::regclass AND attname = 'shap_values'),
          (SELECT CASE WHEN 'lz4' = ANY (enumvals) THEN 'l' ELSE '' END FROM pg_settings WHERE name = 'default_toast_compression'),
          'wide arrays are compressed with lz4 where the server has it');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.shap',
              'SELECT * FROM t09.wide', 'the target equals a one-shot explain_shap_wide, exactly');
SELECT is((SELECT count(*) FROM t09.shap WHERE model_version = :v1), 3000::bigint,
          'every row is stamped with the model version');
SELECT results_eq($$SELECT state, rows_done, rows_total, batches, runs, model_version, error FROM t09.job('t09.shap')$$,
                  $$VALUES ('done'::text, 3000::bigint, 3000::bigint, 7::bigint, 1::bigint, (SELECT v FROM vers WHERE k = 'v1'), NULL::text)$$,
                  'jobs: done, 3000 of 3000 rows in 6 full batches and a last empty one');
SELECT ok((SELECT rows_per_second > 0 AND last_batch_at >= started_at AND finished_at >= last_batch_at
             AND source = 't09.houses' FROM t09.job('t09.shap')), 'jobs: rate, times and source are filled in');

-- Re-running after success does nothing
CREATE TEMP TABLE before AS SELECT row_key, output, computed_at FROM t09.shap;
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap', batch_size => 500);
SELECT results_eq($$SELECT state, rows_done, rows_total, runs FROM t09.job('t09.shap')$$,
                  $$VALUES ('done'::text, 0::bigint, 0::bigint, 2::bigint)$$, 'a second run finds nothing to do');
SELECT bag_eq('SELECT row_key, output, computed_at FROM t09.shap', 'SELECT * FROM before',
              'and leaves every row untouched');

-- New rows, some between existing keys, are explained and nothing else
INSERT INTO t09.houses (id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude")
SELECT id, 8.3, 41, 6.9, 1.02, 322, 2.5, 37.88, -122.23 FROM (VALUES (1), (2), (4000), (9001), (9002)) v(id);
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap', batch_size => 500);
SELECT results_eq($$SELECT rows_done, rows_total FROM t09.job('t09.shap')$$,
                  $$VALUES (5::bigint, 5::bigint)$$, 'a run after inserts explains exactly the new rows');
SELECT bag_eq('SELECT row_key, output, computed_at FROM t09.shap WHERE row_key NOT IN (1, 2, 4000, 9001, 9002)',
              'SELECT * FROM before', 'the rows explained before are untouched');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.shap',
              'SELECT * FROM t09.wide', 'the target again equals explain_shap_wide over all rows');

-- Replacing the model explains everything again; the old version's rows go at the end
SELECT 1 FROM treeshap.load_model('t09_reg', convert_to(:'m_reg3', 'UTF8'), replace => true) \g /dev/null
INSERT INTO vers SELECT 'v2', version FROM treeshap.models WHERE name = 't09_reg';
SELECT version AS v2 FROM treeshap.models WHERE name = 't09_reg' \gset
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap', batch_size => 1000);
SELECT results_eq($$SELECT state, rows_done, model_version FROM t09.job('t09.shap')$$,
                  $$VALUES ('done'::text, 3005::bigint, (SELECT v FROM vers WHERE k = 'v2'))$$, 'a replaced model: every row again');
SELECT results_eq('SELECT DISTINCT model_version FROM t09.shap', ARRAY[:v2::bigint],
                  'the old version''s rows are removed once the run is done');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.shap',
              'SELECT * FROM t09.wide', 'the target equals explain_shap_wide with the new model');
SELECT isnt((SELECT count(*) FROM t09.shap s JOIN before b USING (row_key, output)
              WHERE s.computed_at = b.computed_at), 3000::bigint, 'rows were recomputed');
SELECT 1 FROM treeshap.load_model('t09_reg', convert_to(:'m_reg', 'UTF8'), replace => true) \g /dev/null
INSERT INTO vers SELECT 'v3', version FROM treeshap.models WHERE name = 't09_reg';
SELECT version AS v3 FROM treeshap.models WHERE name = 't09_reg' \gset
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap', keep_old_versions => true);
SELECT results_eq('SELECT model_version, count(*) FROM t09.shap GROUP BY 1 ORDER BY 1',
                  $$VALUES ((SELECT v FROM vers WHERE k = 'v2'), 3005::bigint), ((SELECT v FROM vers WHERE k = 'v3'), 3005::bigint)$$,
                  'keep_old_versions keeps the previous version''s rows');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.shap WHERE model_version = ' || :v3,
              'SELECT * FROM t09.wide', 'the newest version''s rows equal explain_shap_wide');

-- filter, long layout, schema-qualified and quoted names
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09."Even Rows"', filter => 'id % 2 = 0 AND "Latitude" > 36',
                           batch_size => 64);
SELECT bag_eq($$SELECT row_key, output, base_value, shap_values FROM t09."Even Rows"$$,
              $$SELECT * FROM treeshap.explain_shap_wide('t09_reg', 'SELECT id, * FROM t09.houses WHERE id % 2 = 0 AND "Latitude" > 36')$$,
              'filter explains exactly the rows it selects');
SELECT is((SELECT target FROM t09.job('t09."Even Rows"')), 't09."Even Rows"', 'the job names its target quoted');
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap_long', layout => 'long', batch_size => 700);
SELECT col_is_pk('t09', 'shap_long', ARRAY['row_key', 'output', 'feature', 'model_version'],
                 'a long target has one row per feature');
SELECT bag_eq('SELECT row_key, output, feature, shap_value FROM t09.shap_long',
              $$SELECT * FROM treeshap.explain_shap('t09_reg', 'SELECT id, * FROM t09.houses')$$,
              'the long target equals explain_shap');
SELECT is((SELECT rows_done FROM t09.job('t09.shap_long')), 3005::bigint, 'a long job counts source rows');

-- several outputs; text keys in key order across batches; a model without feature names
CREATE TABLE t09.points AS
SELECT 'k' || g AS name, sin(g)::float8 AS x0, cos(g)::float8 AS x1, sin(2 * g)::float8 AS x2,
       cos(3 * g)::float8 AS x3, (g % 5 - 2)::float8 AS x4, sin(5 * g)::float8 AS x5
  FROM generate_series(1, 900) g;
CALL treeshap.explain_into('t09_multi', 't09.points', 't09.multi', key_column => 'name', batch_size => 128);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.multi',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_multi', 'SELECT name, * FROM t09.points', NULL::text)$$,
              'multiclass with text keys (keyset batches in text order) equals explain_shap_wide');
SELECT results_eq($$SELECT rows_done, batches FROM t09.job('t09.multi')$$, $$VALUES (900::bigint, 8::bigint)$$,
                  'rows_done counts rows, not (row, output) pairs');
SELECT is((SELECT count(*) FROM t09.multi), (SELECT 900 * num_outputs::bigint FROM treeshap.models WHERE name = 't09_multi'),
          'one target row per (row, output)');
CALL treeshap.explain_into('t09_dart', 't09.points', 't09.dart', key_column => 'name');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.dart',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_dart', 'SELECT name, x0, x1, x2, x3, x4, x5 FROM t09.points', NULL::text)$$,
              'without feature names the columns after the key are the features, in table order');
CALL treeshap.explain_into('t09_dart', 't09.points', 't09.dart_rev', key_column => 'name',
                           features => ARRAY['x5', 'x4', 'x3', 'x2', 'x1', 'x0']);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.dart_rev',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_dart', 'SELECT name, x5, x4, x3, x2, x1, x0 FROM t09.points', NULL::text)$$,
              'features names the columns, in the model''s order');

-- Argument errors, before anything is written (throws_ok: an atomic context)
SELECT throws_ok($$CALL treeshap.explain_into('t09_nope', 't09.houses', 't09.x')$$, '42704',
                 'model "t09_nope" does not exist', 'unknown model');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.x', key_column => 'key')$$, '42703',
                 'column "key" of t09.houses does not exist', 'unknown key column');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.x', layout => 'tall')$$, '22023',
                 'unknown layout "tall"', 'unknown layout');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.x', batch_size => 0)$$, '22023',
                 'batch_size must be at least 1', 'batch_size below 1');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', NULL)$$, '22004', NULL, 'NULL target');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.nosuch', 't09.x')$$, '42P01', NULL, 'unknown source');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap_long')$$, '42P16',
                 'target t09.shap_long has no column base_value, shap_values', 'a target of the other layout');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.points', 't09.shap', key_column => 'name')$$, '42P16',
                 'column row_key of target t09.shap is not of the source key''s type text', 'a key of another type');
SELECT throws_ok($$CALL treeshap.explain_into('t09_multi', 't09.houses', 't09.shap')$$, '22023',
                 'target "t09.shap" holds explanations of model "t09_reg"', 'a target holds one model');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap')$$, '2D000',
                 'invalid transaction termination', 'inside a transaction block the call is refused');
SELECT is((SELECT to_regclass('t09.x')), NULL, 'refused calls create no target');
CREATE TABLE t09.no_key (row_key integer, output integer, base_value float8, shap_values float8[],
                         model_version bigint, computed_at timestamptz);
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.no_key')$$, '42P16',
                 'target t09.no_key has no unique key on (model_version, output, row_key)',
                 'a target without the unique key that backs exactly-once');
-- every column in the type explain_into writes: no silent rounding or conversion
CREATE FUNCTION pg_temp.wide_target(name text, base_value text, shap_values text, computed_at text)
RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
    EXECUTE format('CREATE TABLE t09.%I (row_key integer, output int, base_value %s, shap_values %s, '
                   'model_version bigint, computed_at %s, PRIMARY KEY (row_key, output, model_version))',
                   name, base_value, shap_values, computed_at);
END
$f$;
SELECT pg_temp.wide_target('out_int', 'int', 'int[]', 'timestamptz');
SELECT pg_temp.wide_target('out_text', 'text', 'float8[]', 'timestamptz');
SELECT pg_temp.wide_target('out_scalar', 'float8', 'float8', 'timestamptz');
SELECT pg_temp.wide_target('out_timestamp', 'float8', 'float8[]', 'timestamp');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.out_int')$$, '42P16',
                 'column base_value of target t09.out_int has type integer, but explain_into writes double precision',
                 'a target of integer values is refused, naming the column and the type expected');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.out_text')$$, '42P16',
                 'column base_value of target t09.out_text has type text, but explain_into writes double precision',
                 'a text base_value is refused');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.out_scalar')$$, '42P16',
                 'column shap_values of target t09.out_scalar has type double precision, but explain_into writes double precision[]',
                 'a value where an array belongs is refused');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.out_timestamp')$$, '42P16',
                 'column computed_at of target t09.out_timestamp has type timestamp without time zone, but explain_into writes timestamp with time zone',
                 'a timestamp without time zone is refused');
CREATE TABLE t09.long_num (row_key integer, output int, feature varchar, shap_value float8,
                           model_version bigint, computed_at timestamptz,
                           PRIMARY KEY (row_key, output, feature, model_version));
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.long_num', layout => 'long')$$, '42P16',
                 'column feature of target t09.long_num has type character varying, but explain_into writes text',
                 'a long target''s feature column must be text');
SELECT is((SELECT count(*) FROM t09.out_int) + (SELECT count(*) FROM t09.out_text) + (SELECT count(*) FROM t09.out_scalar)
          + (SELECT count(*) FROM t09.out_timestamp) + (SELECT count(*) FROM t09.long_num), 0::bigint,
          'refused targets are left without a row');

-- A second run into the same target while one holds its lock: refused, job untouched
SELECT dblink_connect('t09_other', format('dbname=%s port=%s host=%s user=%s', current_database(),
       current_setting('port'), current_setting('unix_socket_directories'), current_user)) \g /dev/null
SELECT * FROM dblink('t09_other', $$SELECT pg_advisory_lock(1953720432, hashtext('t09.shap'))::text$$) AS t(x text) \g /dev/null
\set ON_ERROR_STOP 0
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.shap');
\set ON_ERROR_STOP 1
SELECT is(:'LAST_ERROR_SQLSTATE'::text, '55P03', 'a concurrent run into the same target is refused (55P03)');
SELECT is((SELECT runs FROM t09.job('t09.shap')), 5::bigint, 'and does not touch the running job');
SELECT * FROM dblink('t09_other', $$SELECT pg_advisory_unlock(1953720432, hashtext('t09.shap'))::text$$) AS t(x text) \g /dev/null

-- A run marked running whose backend does not hold the lock shows as failed
UPDATE treeshap.job_store SET state = 'running', pid = pg_backend_pid() WHERE target = 't09.shap';
SELECT results_eq($$SELECT state, error FROM t09.job('t09.shap')$$,
                  $$VALUES ('failed'::text, 'interrupted: the backend running the job ended before it finished'::text)$$,
                  'an interrupted run is reported as failed');
SELECT * FROM dblink('t09_other', $$SELECT pg_advisory_lock(1953720432, hashtext('t09.shap'))::text$$) AS t(x text) \g /dev/null
UPDATE treeshap.job_store SET pid = (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = hashtext('t09.shap')::oid)
 WHERE target = 't09.shap';
SELECT is((SELECT state FROM t09.job('t09.shap')), 'running', 'a run whose backend holds the lock is running');
SELECT dblink_disconnect('t09_other') \g /dev/null

-- The run lock survives commits but not an abort: a cancel that lands between the
-- procedure's statements escapes its exception block, and must not leave the lock held
CREATE VIEW t09.lock_held AS SELECT count(*) AS n FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 1953720432::oid AND objid = hashtext('t09.lock')::oid AND pid = pg_backend_pid();
SELECT ok(treeshap._job_lock(hashtext('t09.lock')), 'the run lock is taken');
SELECT is((SELECT n FROM t09.lock_held), 1::bigint, 'and outlives the transaction that took it');
BEGIN;
SELECT is((SELECT n FROM t09.lock_held), 1::bigint, 'a later transaction still holds it');
ROLLBACK;
SELECT is((SELECT n FROM t09.lock_held), 0::bigint, 'an abort releases it');
SELECT ok(treeshap._job_lock(hashtext('t09.lock')), 'so the next run can take it');
SELECT treeshap._job_unlock() \g /dev/null
SELECT is((SELECT n FROM t09.lock_held), 0::bigint, 'the end of a run releases it');

-- An error inside a batch: recorded, the lock released, the committed batches kept
CREATE TABLE t09.bad AS SELECT id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude",
       CASE WHEN id < 4500 THEN "Longitude"::text ELSE 'east' END AS "Longitude" FROM t09.houses;
\set ON_ERROR_STOP 0
CALL treeshap.explain_into('t09_reg', 't09.bad', 't09.bad_shap', batch_size => 500);
\set ON_ERROR_STOP 1
SELECT is(:'LAST_ERROR_SQLSTATE'::text, '42804', 'a text feature column fails in the first batch (42804)');
SELECT results_eq($$SELECT state, rows_done, error LIKE '%type text%' FROM t09.job('t09.bad_shap')$$,
                  $$VALUES ('failed'::text, 0::bigint, true)$$, 'the job is failed, with the error');
ALTER TABLE t09.bad ALTER COLUMN "Longitude" TYPE float8 USING CASE WHEN "Longitude" = 'east' THEN 'NaN' ELSE "Longitude"::float8 END;
CALL treeshap.explain_into('t09_reg', 't09.bad', 't09.bad_shap', batch_size => 500);
SELECT results_eq($$SELECT state, rows_done, error FROM t09.job('t09.bad_shap')$$,
                  $$VALUES ('done'::text, 3005::bigint, NULL::text)$$, 'after the fix the next run finishes');
CREATE TABLE t09.dup AS SELECT * FROM t09.houses UNION ALL SELECT * FROM t09.houses WHERE id = 4000;
\set ON_ERROR_STOP 0
CALL treeshap.explain_into('t09_reg', 't09.dup', 't09.dup_shap', batch_size => 1000);
\set ON_ERROR_STOP 1
SELECT is(:'LAST_ERROR_SQLSTATE'::text, '23505', 'a duplicate source key violates the unique key (23505)');
SELECT results_eq($$SELECT state, rows_done FROM t09.job('t09.dup_shap')$$,
                  $$VALUES ('failed'::text, 1000::bigint)$$, 'the batches before the duplicate stay committed');
SELECT is((SELECT count(*) FROM t09.dup_shap), 1000::bigint, 'the failed batch left nothing behind');

-- Runs with workers: background workers acting as the caller claim key ranges of
-- batch_size rows; each range's rows are written and the range marked done at once
RESET treeshap.job_workers;
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.par', batch_size => 500, workers => 2);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.par',
              'SELECT * FROM t09.wide', 'with workers: the target equals a one-shot explain_shap_wide, exactly');
SELECT results_eq($$SELECT state, rows_done, rows_total, batches, workers, ranges_done, ranges_total, error FROM t09.job('t09.par')$$,
                  $$VALUES ('done'::text, 3005::bigint, 3005::bigint, 7::bigint, 2, 7::bigint, 7::bigint, NULL::text)$$,
                  'jobs: done, 3005 rows in 7 ranges of at most 500 keys, by 2 workers');
SELECT ok((SELECT bool_and(r.done_by <> pg_backend_pid() AND r.rows_done <= 500) AND sum(r.rows_done) = 3005
             FROM treeshap.job_range r JOIN t09.job('t09.par') j USING (job)),
          'every range was written by a worker, not by the calling session');
SELECT results_eq($$SELECT r.lo, r.hi, r.rows_planned FROM treeshap.job_range r JOIN t09.job('t09.par') j USING (job)
                    ORDER BY r.range_no$$,
                  $$SELECT CASE WHEN n > 1 THEN k::text END, lead(k::text) OVER (ORDER BY n),
                           least(500, 3005 - (n - 1))::bigint
                      FROM (SELECT id AS k, row_number() OVER (ORDER BY id) AS n FROM t09.houses) x
                     WHERE (n - 1) % 500 = 0 ORDER BY n$$,
                  'the workers drew the ranges as they went: each the next 500 keys after the last');
SELECT is((SELECT j.old_versions FROM treeshap.job_store j WHERE j.target = 't09.par'), false,
          'a target the job created holds no other version: the run does not look for one');
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.par', batch_size => 500, workers => 2);
SELECT results_eq($$SELECT state, rows_done, rows_total FROM t09.job('t09.par')$$,
                  $$VALUES ('done'::text, 0::bigint, 0::bigint)$$, 'with workers: a second run finds nothing to do');
INSERT INTO t09.houses (id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude")
SELECT id, 8.3, 41, 6.9, 1.02, 322, 2.5, 37.88, -122.23 FROM (VALUES (0), (4001)) v(id);
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.par', batch_size => 500, workers => 2);
SELECT results_eq($$SELECT rows_done, rows_total FROM t09.job('t09.par')$$,
                  $$VALUES (2::bigint, 2::bigint)$$, 'with workers: a run after inserts explains exactly the new rows');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.par',
              'SELECT * FROM t09.wide', 'and the target equals explain_shap_wide again');
-- a target made by hand may hold any version: the first run deletes the others at its end
SELECT treeshap._target_ddl('t09.adopted', 'wide', 'integer', '') AS ddl \gset
:ddl;
INSERT INTO t09.adopted (row_key, output, base_value, shap_values, model_version) VALUES (3, 0, 0, '{0}', -1);
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.adopted', batch_size => 500, workers => 2);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.adopted',
              'SELECT * FROM t09.wide', 'an adopted target: another version''s rows are gone at the run''s end');
SELECT is((SELECT j.old_versions FROM treeshap.job_store j WHERE j.target = 't09.adopted'), false,
          'and the job knows the target holds one version now');
DROP TABLE t09.adopted;
:ddl;
INSERT INTO t09.adopted (row_key, output, base_value, shap_values, model_version) VALUES (3, 0, 0, '{0}', -1);
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.adopted', batch_size => 500, workers => 2);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.adopted',
              'SELECT * FROM t09.wide', 'a target dropped and made again by hand is searched for other versions again');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.x', workers => -1)$$, '22023',
                 'workers must be between 0 and 64, not -1', 'negative workers are refused');
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.dup', 't09.x', workers => 2)$$, '42P10',
                 'column "id" of t09.dup is not a unique key', 'workers on a source whose key is not unique are refused');
CREATE TABLE t09.dup_invalid AS SELECT * FROM t09.dup;
\set ON_ERROR_STOP 0
CREATE UNIQUE INDEX CONCURRENTLY dup_invalid_id ON t09.dup_invalid (id);
\set ON_ERROR_STOP 1
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 't09.dup_invalid', 't09.x', workers => 2)$$, '42P10',
                 'column "id" of t09.dup_invalid is not a unique key',
                 'the invalid unique index a failed CREATE INDEX CONCURRENTLY leaves does not split a source');
-- the key is never a feature, also where columns are matched by position
CREATE TABLE t09.houses_pos AS
SELECT id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude"
  FROM t09.houses;
SET treeshap.match_columns = position;
CALL treeshap.explain_into('t09_reg', 't09.houses_pos', 't09.pos', batch_size => 500, workers => 0);
RESET treeshap.match_columns;
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.pos',
              'SELECT * FROM t09.wide', 'match_columns = position: the columns after the key are the features');
SET treeshap.job_workers = 2;
CALL treeshap.explain_into('t09_reg', 't09.bad', 't09.bad_default', batch_size => 500);
SELECT results_eq($$SELECT state, rows_done, workers FROM t09.job('t09.bad_default')$$,
                  $$VALUES ('done'::text, 3005::bigint, 0)$$,
                  'the default runs a source without a unique key in the calling session');
CREATE TABLE t09.bad_keyed AS SELECT * FROM t09.houses;
ALTER TABLE t09.bad_keyed ADD PRIMARY KEY (id), ALTER COLUMN "Longitude" TYPE text;
UPDATE t09.bad_keyed SET "Longitude" = 'east' WHERE id > 4500;
\set ON_ERROR_STOP 0
CALL treeshap.explain_into('t09_reg', 't09.bad_keyed', 't09.bad_keyed_shap', batch_size => 500);
\set ON_ERROR_STOP 1
SELECT is(:'LAST_ERROR_SQLSTATE'::text, '42804', 'a worker''s error fails the run with its SQLSTATE');
SELECT results_eq($$SELECT state, error LIKE '%type text%', workers FROM t09.job('t09.bad_keyed_shap')$$,
                  $$VALUES ('failed'::text, true, 2)$$, 'and the job records the worker''s message');
SELECT is((SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_treeshap job worker'), 0::bigint,
          'no worker is left after the failure');
-- text keys by reference, written in bulk across batches smaller than the writer's buffer
CREATE TABLE t09.named AS SELECT 'house ' || id AS name, "MedInc", "HouseAge", "AveRooms", "AveBedrms",
       "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses;
ALTER TABLE t09.named ADD PRIMARY KEY (name);
SET treeshap.batch_rows = 300;
CALL treeshap.explain_into('t09_reg', 't09.named', 't09.named_shap', key_column => 'name', batch_size => 1300, workers => 2);
RESET treeshap.batch_rows;
SELECT ok(treeshap._bulk_target_ok('t09.named_shap'), 'a target explain_into created is written in bulk');
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.named_shap',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_reg', 'SELECT * FROM t09.named', NULL::text)$$,
              'with workers: text keys written in bulk equal explain_shap_wide, exactly');
-- a target with a trigger is written by INSERT, which fires it
CREATE TABLE t09.audited (LIKE t09.named_shap INCLUDING ALL);
CREATE TABLE t09.audit (n bigint);
INSERT INTO t09.audit VALUES (0);
CREATE FUNCTION t09.count_row() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN UPDATE t09.audit SET n = n + 1; RETURN NEW; END $$;
CREATE TRIGGER audited AFTER INSERT ON t09.audited FOR EACH ROW EXECUTE FUNCTION t09.count_row();
CALL treeshap.explain_into('t09_reg', 't09.named', 't09.audited', key_column => 'name', batch_size => 1300, workers => 2);
SELECT results_eq($$SELECT treeshap._bulk_target_ok('t09.audited'), (SELECT n FROM t09.audit), (SELECT count(*) FROM t09.audited)$$,
                  $$VALUES (false, 3007::bigint, 3007::bigint)$$,
                  'a target with a trigger is written by INSERT, and the trigger fires for every row');
-- the same in the calling session alone: keys read first, the rows then written in bulk
CALL treeshap.explain_into('t09_reg', 't09.named', 't09.named_alone', key_column => 'name', batch_size => 1300, workers => 0);
SELECT bag_eq($$SELECT row_key, output, base_value, shap_values, (SELECT rows_done FROM t09.job('t09.named_alone')) FROM t09.named_alone$$,
              $$SELECT *, 3007::bigint FROM treeshap.explain_shap_wide('t09_reg', 'SELECT * FROM t09.named', NULL::text)$$,
              'in the calling session: text keys written in bulk, batch after batch, equal explain_shap_wide, exactly');
TRUNCATE t09.audited;
UPDATE t09.audit SET n = 0;
CALL treeshap.explain_into('t09_reg', 't09.named', 't09.audited', key_column => 'name', batch_size => 1300, workers => 0);
SELECT results_eq($$SELECT (SELECT n FROM t09.audit), (SELECT count(*) FROM t09.audited)$$,
                  $$VALUES (3007::bigint, 3007::bigint)$$,
                  'in the calling session too, a target with a trigger is written by INSERT, which fires it for every row');
-- keys whose text depends on the session's settings: a batch ends at its last key as
-- that key reads back, whatever extra_float_digits, DateStyle and TimeZone print (a
-- bound read back too low would repeat a batch, or loop: the timeout ends that)
SET statement_timeout = '60s';
CREATE TABLE t09.thirds AS SELECT id / 3.0::float8 AS k, "MedInc", "HouseAge", "AveRooms", "AveBedrms",
       "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses;
ALTER TABLE t09.thirds ADD PRIMARY KEY (k);
SET extra_float_digits = 0;
CALL treeshap.explain_into('t09_reg', 't09.thirds', 't09.thirds_long', key_column => 'k', layout => 'long',
                           batch_size => 500, workers => 0);
RESET extra_float_digits;
SELECT bag_eq($$SELECT row_key, output, feature, shap_value, (SELECT rows_done FROM t09.job('t09.thirds_long')) FROM t09.thirds_long$$,
              $$SELECT *, 3007::bigint FROM treeshap.explain_shap('t09_reg', 'SELECT * FROM t09.thirds', NULL::float8)$$,
              'float keys printed with 15 digits, in the calling session, by INSERT: every row once, exactly');
CREATE TABLE t09.stamped AS SELECT timestamptz '2024-06-01 00:00:00+00' + id * interval '1 second' AS at, "MedInc",
       "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses;
ALTER TABLE t09.stamped ADD PRIMARY KEY (at);
SET DateStyle = 'Postgres';
SET TimeZone = 'Europe/Dublin';
CALL treeshap.explain_into('t09_reg', 't09.stamped', 't09.stamped_shap', key_column => 'at', batch_size => 100, workers => 0);
RESET DateStyle;
RESET TimeZone;
SELECT bag_eq($$SELECT row_key, output, base_value, shap_values, (SELECT rows_done FROM t09.job('t09.stamped_shap')) FROM t09.stamped_shap$$,
              $$SELECT *, 3007::bigint FROM treeshap.explain_shap_wide('t09_reg', 'SELECT * FROM t09.stamped', NULL::timestamptz)$$,
              'timestamps printed in a zone whose abbreviation names another (IST), in bulk: every row once, exactly');
CREATE TABLE t09.uuids AS SELECT md5(id::text)::uuid AS u, "MedInc", "HouseAge", "AveRooms", "AveBedrms",
       "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses;
ALTER TABLE t09.uuids ADD PRIMARY KEY (u);
CALL treeshap.explain_into('t09_reg', 't09.uuids', 't09.uuids_shap', key_column => 'u', batch_size => 700, workers => 0);
SELECT bag_eq($$SELECT row_key, output, base_value, shap_values, (SELECT rows_done FROM t09.job('t09.uuids_shap')) FROM t09.uuids_shap$$,
              $$SELECT *, 3007::bigint FROM treeshap.explain_shap_wide('t09_reg', 'SELECT * FROM t09.uuids', NULL::uuid)$$,
              'uuid keys (no max() for them) in the calling session: every row once, exactly');
CALL treeshap.explain_into('t09_reg', 't09.uuids', 't09.uuids_long', key_column => 'u', layout => 'long',
                           batch_size => 700, workers => 0);
SELECT bag_eq($$SELECT row_key, output, feature, shap_value, (SELECT rows_done FROM t09.job('t09.uuids_long')) FROM t09.uuids_long$$,
              $$SELECT *, 3007::bigint FROM treeshap.explain_shap('t09_reg', 'SELECT * FROM t09.uuids', NULL::uuid)$$,
              'and written by INSERT (the long layout): every row once, exactly');
CALL treeshap.explain_into('t09_reg', 't09.uuids', 't09.uuids_long_par', key_column => 'u', layout => 'long',
                           batch_size => 700, workers => 2);
SELECT bag_eq($$SELECT row_key, output, feature, shap_value, (SELECT rows_done FROM t09.job('t09.uuids_long_par')) FROM t09.uuids_long_par$$,
              $$SELECT *, 3007::bigint FROM treeshap.explain_shap('t09_reg', 'SELECT * FROM t09.uuids', NULL::uuid)$$,
              'and so by workers: every row once, exactly');
-- a filter is read in the caller's settings, the batch's end among them
SET DateStyle = 'SQL, DMY';
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.dmy_shap', filter => $$id < extract(day from '03/04/2024'::date) * 100$$,
                           batch_size => 40, workers => 0);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.dmy_shap',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_reg', 'SELECT id, * FROM t09.houses WHERE id < 300')$$,
              'a filter on a date written day first, in the calling session: its rows, every one once');
RESET DateStyle;
RESET statement_timeout;
-- workers run with the session's settings (a custom one read by the filter, DateStyle for date keys)
SET app.min_id = '4500';
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.par_setting', batch_size => 500, workers => 2,
                           filter => 'id >= current_setting(''app.min_id'')::int');
RESET app.min_id;
SELECT results_eq($$SELECT state, rows_done FROM t09.job('t09.par_setting')$$,
                  $$SELECT 'done'::text, count(*) FROM t09.houses WHERE id >= 4500$$,
                  'workers read the session''s own settings (a filter on a custom setting)');
CREATE TABLE t09.dated AS SELECT date '2020-01-01' + id AS day, "MedInc", "HouseAge", "AveRooms", "AveBedrms",
       "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses;
ALTER TABLE t09.dated ADD PRIMARY KEY (day);
SET DateStyle = 'SQL, DMY';
CALL treeshap.explain_into('t09_reg', 't09.dated', 't09.dated_shap', key_column => 'day', batch_size => 400, workers => 2);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.dated_shap',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_reg', 'SELECT * FROM t09.dated', NULL::date)$$,
              'date keys split into ranges under DateStyle SQL, DMY: every row once, exactly');
RESET DateStyle;
-- ranges drawn from other rows (another filter) are not taken up: the run plans anew
INSERT INTO treeshap.job_range (job, range_no, model_version, lo, hi, pending_only, rows_planned, plan)
SELECT job, 1000, model_version, '0', '10', false, 3, 'another source' FROM t09.job('t09.par');
CALL treeshap.explain_into('t09_reg', 't09.houses', 't09.par', batch_size => 500, workers => 2);
SELECT results_eq($$SELECT state, rows_done, ranges_total FROM t09.job('t09.par')$$,
                  $$VALUES ('done'::text, 0::bigint, 0::bigint)$$,
                  'a stopped run''s ranges of other rows are dropped, and the run plans anew');
-- temporary tables stay in the calling session
CREATE TEMP TABLE tmp_houses AS SELECT * FROM t09.houses;
ALTER TABLE tmp_houses ADD PRIMARY KEY (id);
SET treeshap.job_workers = 2;
CALL treeshap.explain_into('t09_reg', 'tmp_houses', 't09.tmp_shap', batch_size => 1000);
SELECT results_eq($$SELECT state, rows_done, workers FROM t09.job('t09.tmp_shap')$$,
                  $$VALUES ('done'::text, 3007::bigint, 0)$$, 'the default runs a temporary source in the calling session');
RESET treeshap.job_workers;
SELECT throws_ok($$CALL treeshap.explain_into('t09_reg', 'tmp_houses', 't09.tmp_shap2', workers => 2)$$, '0A000',
                 'explain_into cannot run in workers with a temporary source or target',
                 'workers with a temporary source are refused');
SELECT throws_ok($$SELECT treeshap._job_workers(2, 1, 'm', 'wide', 's', 'k', 'c', NULL, 't', 1, 'bigint', '', true, 500, 'p')$$,
                 '55000', 'explain_into''s workers start only inside explain_into', 'workers start only inside explain_into');
-- the bulk writer takes only what INSERT would take the same way
CREATE TABLE t09.text_base (row_key integer NOT NULL, output integer NOT NULL, base_value text NOT NULL,
                            shap_values double precision[] NOT NULL, model_version bigint NOT NULL,
                            computed_at timestamptz NOT NULL);
SELECT throws_ok($$SELECT treeshap._explain_write('t09_reg', 'SELECT * FROM t09.houses', 't09.text_base', 1, 'integer')$$,
                 '42809', NULL, 'the bulk writer refuses a target of other column types');
SELECT throws_ok($$SELECT treeshap._explain_write('t09_reg', 'SELECT NULL::integer, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses', 't09.named_shap', 1, 'integer')$$,
                 '42809', NULL, 'and a key of another type than the target''s');
SELECT throws_ok($$SELECT treeshap._explain_write('t09_reg', 'SELECT NULL::text, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses', 't09.named_shap', 1, 'text')$$,
                 '23502', NULL, 'and a NULL key');
RESET treeshap.job_workers;

-- a scikit-learn forest classifier from a Treelite checkpoint (no feature names: matched by
-- position), in two workers: the job equals a one-shot explain_shap_wide, three outputs a row
\set m_forest `base64 -w0 test/fixtures/tl_rf_multi.tl`
SELECT 1 FROM treeshap.load_model('t09_forest', decode(:'m_forest', 'base64'), replace => true) \g /dev/null
CALL treeshap.explain_into('t09_forest', 't09.houses', 't09.forest', batch_size => 700, workers => 2,
                           features => ARRAY['MedInc', 'HouseAge', 'AveRooms', 'AveBedrms', 'Population',
                                             'AveOccup', 'Latitude', 'Longitude']);
SELECT bag_eq('SELECT row_key, output, base_value, shap_values FROM t09.forest',
              $$SELECT * FROM treeshap.explain_shap_wide('t09_forest',
                  'SELECT id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude" FROM t09.houses')$$,
              'a Treelite forest''s job in two workers equals a one-shot explain_shap_wide, exactly');

SELECT * FROM finish();
\set QUIET 1
DROP SCHEMA t09 CASCADE;
DELETE FROM treeshap.job_store WHERE target LIKE 't09.%';
SELECT treeshap.drop_model(m) FROM unnest(ARRAY['t09_reg', 't09_multi', 't09_dart', 't09_forest']) m \g /dev/null
