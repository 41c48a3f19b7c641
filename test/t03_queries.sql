-- The query contract: row keys, feature matching by name or position,
-- accepted column types, missing values, batching, privileges, errors.
BEGIN;
\ir setup.sql
SELECT plan(38);

CREATE TEMP TABLE ref AS
SELECT row_key, output, base_value, shap_values
  FROM treeshap.explain_shap_wide('reg', pg_temp.fx_query('reg'));
CREATE TEMP TABLE houses AS
SELECT id, x[1] AS medinc, x[2] AS "HouseAge", x[3] AS averooms, x[4] AS avebedrms,
       x[5] AS population, x[6] AS aveoccup, x[7] AS latitude, x[8] AS longitude,
       'noise'::text AS comment
  FROM fx_data WHERE fixture = 'reg';

-- keys
SELECT is(pg_typeof((SELECT row_key FROM treeshap.explain_shap_wide('reg', 'SELECT id::int, * FROM houses') LIMIT 1))::text,
          'bigint', 'integer keys come back as bigint');
SELECT is((SELECT array_agg(row_key::text ORDER BY row_key::text)
             FROM treeshap.explain_shap_wide('reg', 'SELECT ''k'' || id, medinc, "HouseAge", averooms, avebedrms, population, aveoccup, latitude, longitude FROM houses', NULL::text)),
          (SELECT array_agg('k' || id ORDER BY 'k' || id) FROM houses), 'text keys with NULL::text');
SELECT is(pg_typeof((SELECT row_key FROM treeshap.explain_shap('reg', 'SELECT md5(id::text)::uuid, * FROM houses', NULL::uuid) LIMIT 1))::text,
          'uuid', 'uuid keys with NULL::uuid');
SELECT is(pg_typeof((SELECT row_key FROM treeshap.predict('reg', 'SELECT id, * FROM houses', NULL::int) LIMIT 1))::text,
          'integer', 'bigint keys convert to a requested integer type');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'SELECT NULL::int, * FROM houses') WHERE row_key IS NULL),
          200::bigint, 'NULL keys are passed through');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT id::text, * FROM houses')$$,
                 '42804', NULL, 'text keys without a key type are an error');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT 100000, * FROM houses', NULL::smallint)$$,
                 '22003', NULL, 'a key out of range for the requested type is an error');

-- matching by name: order, case, extra columns
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg',
             'SELECT id, comment, longitude, latitude, aveoccup, population, avebedrms, averooms, "HouseAge", medinc FROM houses') w
             JOIN ref USING (row_key, output) WHERE w.shap_values = ref.shap_values AND w.base_value = ref.base_value),
          200::bigint, 'columns match features by name, in any order and any case, extras ignored');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT id, medinc FROM houses')$$,
                 '42703', 'query has no column for feature "HouseAge"', 'a missing feature is named');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT id, comment AS medinc, "HouseAge", averooms, avebedrms, population, aveoccup, latitude, longitude FROM houses')$$,
                 '42804', 'column "medinc" has type text, which is not a numeric type', 'non-numeric feature columns are an error');

-- matching by position (the nan model has no names)
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('nan', 'SELECT 1, 2.0, 3.0')$$,
                 '42804', 'query returns 2 feature columns, but the model has 6 features', 'positional models need every column');
SELECT is((SELECT shap_values FROM treeshap.explain_shap_wide('nan', 'SELECT 1, 0.5::numeric, 1::int2, 2::int4, 3::int8, 1.5::real, true')),
          (SELECT shap_values FROM treeshap.explain_shap_wide('nan', 'SELECT 1, 0.5::float8, 1::float8, 2::float8, 3::float8, 1.5::float8, 1::float8')),
          'numeric, smallint, integer, bigint, real and boolean columns are accepted');

-- missing values: NULL, NaN (float and numeric) and an array NULL are the same
SELECT ok(pg_temp.close((SELECT array_agg(shap_values) FROM treeshap.explain_shap_wide('nan', $$
             SELECT 1, NULL::float8, 'NaN'::float8, 'NaN'::numeric, 1, 2, 3$$)),
          ARRAY[(treeshap.shap_values('nan', ARRAY[NULL, NULL, NULL, 1, 2, 3]))[1:6]]),
          'NULL and NaN are missing values');
SELECT is((SELECT shap_values FROM treeshap.explain_shap_wide('nan', $$SELECT 1, 'Infinity'::float8, '-Infinity'::float8, 1e300::float8, 1, 2, 3$$)),
          (SELECT shap_values FROM treeshap.explain_shap_wide('nan', $$SELECT 1, 3e38::float8, -3e38::float8, 3e38::float8, 1, 2, 3$$)),
          'infinities compare like values beyond every threshold');

-- batching does not change results
SET treeshap.batch_rows = 7;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM houses') w
             JOIN ref USING (row_key, output) WHERE w.shap_values = ref.shap_values),
          200::bigint, 'batches of 7 rows give identical results');
RESET treeshap.batch_rows;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM houses WHERE false')),
          0::bigint, 'an empty query gives no rows');
SELECT is((SELECT count(*) FROM treeshap.explain_shap('multiclass', pg_temp.fx_query('multiclass'))),
          200 * 4 * 5::bigint, 'long form: one row per (row, output, feature)');
SELECT is((SELECT count(*) FROM treeshap.predict('multiclass', pg_temp.fx_query('multiclass'))),
          800::bigint, 'predict: one row per (row, output)');
SELECT cmp_ok((SELECT max(abs(s - 1)) FROM (SELECT sum(prediction) s FROM treeshap.predict('multiclass', pg_temp.fx_query('multiclass')) GROUP BY row_key) q),
              '<', 1e-12::float8, 'softprob predictions sum to 1 per row');
SELECT cmp_ok((SELECT max(abs(prediction - 1 / (1 + exp(-margin)))) FROM treeshap.predict('binary', pg_temp.fx_query('binary'))),
              '<', 1e-15::float8, 'binary:logistic predictions are the sigmoid of the margin');
SELECT is(array_dims(treeshap.shap_values('multiclass', ARRAY[0.1, 0.2, 0.3, 0.4, 0.5])), '[1:4][1:6]',
          'shap_values is outputs x (features + 1) for several outputs');

-- arguments and settings
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide(NULL, 'SELECT 1')$$, '22004', NULL,
                 'a NULL model name is an error');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'DELETE FROM houses RETURNING *')$$, '42P11',
                 NULL, 'a query that is not a SELECT is refused');
SELECT throws_ok($$SELECT treeshap.shap_values('reg', ARRAY[1, 2])$$, '22023',
                 'features has 2 elements, but the model has 8 features', 'shap_values checks the length');
SET treeshap.device = gpu;
SELECT CASE WHEN EXISTS (SELECT FROM treeshap.gpu_info())
  THEN lives_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM houses')$$,
                'treeshap.device = gpu runs on the GPU this server has')
  ELSE throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM houses')$$,
                 '0A000', 'treeshap.device is gpu, but no GPU can be used',
                 'treeshap.device = gpu without a GPU is a clear error') END;
RESET treeshap.device;

-- an ERROR or a cancel in the middle of a pipelined run frees it; the session goes on
SET treeshap.batch_rows = 7;
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg',
                   'SELECT id, medinc / (CASE WHEN id > 150 THEN 0 ELSE 1 END) AS medinc, "HouseAge", averooms,
                           avebedrms, population, aveoccup, latitude, longitude FROM houses')$$,
                 '22012', NULL, 'an error in a later batch of the query is reported');
-- (throws_ok cannot catch a cancel: WHEN OTHERS excludes query_canceled)
CREATE FUNCTION pg_temp.outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'completed';
EXCEPTION WHEN query_canceled THEN
    RETURN 'cancelled';
END $$;
SET statement_timeout = '300ms';
SELECT is(pg_temp.outcome($$SELECT count(*) FROM treeshap.explain_shap_wide('reg',
                   'SELECT * FROM houses WHERE pg_sleep(0.01)::text = ''''')$$),
          'cancelled', 'statement_timeout cancels a call between batches');
RESET statement_timeout;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM houses') w
             JOIN ref USING (row_key, output) WHERE pg_temp.close(w.shap_values, ref.shap_values)),
          200::bigint, 'after both, the next call in the session is complete and correct');
RESET treeshap.batch_rows;

-- GPU memory exhausted: a batch of 1,000,000 rows of a 50,000-output model needs
-- 2.4 TB of results (runs only where a GPU is in use)
SELECT treeshap.load_model('many_outputs',
         convert_to(replace(convert_from(treeshap.model_bytes('multiclass'), 'UTF8'),
                            '"num_class":"4"', '"num_class":"50000"'), 'UTF8')) IS NOT NULL AS loaded;
SET treeshap.batch_rows = 1000000;
SELECT CASE WHEN EXISTS (SELECT FROM treeshap.gpu_info()) AND current_setting('treeshap.device') <> 'cpu'
  THEN throws_ok($$SELECT count(*) FROM treeshap.explain_shap_wide('many_outputs',
                   'SELECT g, 0.1 AS x0, 0.2 AS x1, 0.3 AS x2, 0.4 AS x3, 0.5 AS x4 FROM generate_series(1, 1000000) g')$$,
                 '53200', NULL, 'running out of GPU memory is an ERROR (53200)')
  ELSE skip('no GPU in use here', 1) END;
RESET treeshap.batch_rows;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM houses')),
          200::bigint, 'the session goes on after running out of GPU memory');

-- the query runs with the caller's privileges
CREATE ROLE treeshap_reader;
GRANT USAGE ON SCHEMA treeshap TO treeshap_reader;
CREATE TABLE private_rows AS SELECT * FROM houses;
SET ROLE treeshap_reader;
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT id, * FROM private_rows')$$,
                 '42501', NULL, 'the query runs with the caller''s privileges');
SELECT is((treeshap.load_model('sneaky', treeshap.model_bytes('reg'))).owner, 'treeshap_reader'::name,
          'a role loads its own models without any grant on the catalog (t13_privileges.sql: the rules)');
RESET ROLE;

-- domains over the supported types, as keys (query and table forms, segments) and features
CREATE DOMAIN t03_dkey AS text;
CREATE DOMAIN t03_dint AS bigint CHECK (VALUE > 0);
CREATE DOMAIN t03_dfloat AS float8;
CREATE TEMP TABLE dk AS
SELECT ('k' || id)::t03_dkey AS k, id::t03_dint AS n, medinc::t03_dfloat AS medinc, "HouseAge", averooms,
       avebedrms, population, aveoccup, latitude, longitude
  FROM houses;
CREATE TEMP TABLE by_text AS
SELECT row_key, base_value, shap_values
  FROM treeshap.explain_shap_wide('reg', 'SELECT k::text, medinc::float8, "HouseAge", averooms, avebedrms, population,
                                          aveoccup, latitude, longitude FROM dk', NULL::text);
SELECT set_eq($$SELECT row_key::text, base_value, shap_values
                  FROM treeshap.explain_shap_wide('reg', 'SELECT k, medinc, "HouseAge", averooms, avebedrms, population,
                                                          aveoccup, latitude, longitude FROM dk', NULL::t03_dkey)$$,
              'SELECT * FROM by_text', 'a text domain as the key and a float8 domain as a feature (query form)');
SELECT is(pg_typeof((SELECT row_key FROM treeshap.explain_shap_wide('reg', 'SELECT k, medinc, "HouseAge", averooms, avebedrms,
                                                                    population, aveoccup, latitude, longitude FROM dk',
                                                                    NULL::t03_dkey) LIMIT 1))::text,
          't03_dkey', 'keys come back in the domain asked for');
SELECT set_eq($$SELECT row_key::text, base_value, shap_values
                  FROM treeshap.explain_shap_wide('reg', 'dk'::regclass, 'k', NULL::t03_dkey)$$,
              'SELECT * FROM by_text', 'a domain key column of a table (table form)');
SELECT set_eq($$SELECT 'k' || row_key::bigint, base_value, shap_values
                  FROM treeshap.explain_shap_wide('reg', 'SELECT n, medinc, "HouseAge", averooms, avebedrms, population,
                                                          aveoccup, latitude, longitude FROM dk', NULL::t03_dint)$$,
              'SELECT * FROM by_text', 'a bigint domain with a check as the key');
SELECT is((SELECT sum(rows) FROM treeshap.feature_importance('reg', 'SELECT k, medinc, "HouseAge", averooms, avebedrms,
                                                                     population, aveoccup, latitude, longitude FROM dk',
                                                              NULL::t03_dkey) WHERE feature = 'MedInc'),
          (SELECT count(*)::numeric FROM dk), 'a domain as the segment type (one segment per row here)');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT n::bigint, medinc, "HouseAge", averooms, avebedrms,
                                                             population, aveoccup, latitude, longitude FROM dk', NULL::t03_dint)$$,
                 '42804', 'row key column "n" has type bigint, but keys of type t03_dint were requested',
                 'a plain column is not taken for a domain''s keys, whose constraints it never met');

SELECT * FROM finish();
ROLLBACK;
