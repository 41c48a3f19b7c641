-- Hostile and broken models: each is refused with its SQLSTATE and a message
-- naming the problem, nothing is stored, and the session stays usable.
BEGIN;
\ir setup.sql
SELECT plan(33);

CREATE TEMP TABLE catalog_before AS SELECT name, version FROM treeshap.model_store;
CREATE TEMP TABLE base AS SELECT convert_from(model, 'UTF8')::jsonb AS j, model AS b
  FROM treeshap.model_store WHERE name = 'reg';
-- the reg model with one value replaced
CREATE FUNCTION pg_temp.mut(path text[], val jsonb) RETURNS bytea LANGUAGE sql AS $$
    SELECT convert_to(jsonb_set(j, path, val)::text, 'UTF8') FROM pg_temp.base
$$;
CREATE FUNCTION pg_temp.tree_mut(key text, idx int, val jsonb) RETURNS bytea LANGUAGE sql AS $$
    SELECT pg_temp.mut(ARRAY['learner','gradient_booster','model','trees','0', key, idx::text], val)
$$;
CREATE FUNCTION pg_temp.try_load(m bytea) RETURNS void LANGUAGE sql AS $$
    SELECT treeshap._store_model('hostile', m, true)
$$;

SELECT throws_like($$SELECT pg_temp.try_load(substring((SELECT b FROM pg_temp.base) FROM 1 FOR 5000))$$,
                   '%invalid JSON%', 'a truncated model is refused');
SELECT throws_ok($$SELECT pg_temp.try_load(substring((SELECT b FROM pg_temp.base) FROM 1 FOR 5000))$$,
                 '22P02', NULL, 'truncation is 22P02');
SELECT throws_ok($$SELECT pg_temp.try_load(''::bytea)$$, '22P02', 'could not read model "hostile": model is empty', 'empty bytes');
SELECT throws_like($$SELECT pg_temp.try_load('\x00ff10fe'::bytea)$$, '%unrecognised model format%', 'binary garbage');
SELECT throws_ok($$SELECT pg_temp.try_load(convert_to('{}', 'UTF8'))$$, '22P02', NULL, 'JSON that is not a model');
SELECT throws_like($$SELECT pg_temp.try_load(convert_to(repeat('{"a":', 1000), 'UTF8'))$$,
                   '%nesting too deep%', 'deep nesting is refused without recursion overflow');
SELECT throws_ok($$SELECT pg_temp.try_load(pg_temp.mut('{learner,gradient_booster,model,trees}', '"x"'))$$,
                 '22023', NULL, 'wrong JSON type for trees');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('left_children', 1, '99999'))$$,
                   '%child index out of range%', 'child index out of range');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('left_children', 1, '0'))$$,
                   '%reaches a node twice%', 'a cycle back to the root');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('right_children', 0, '1'))$$,
                   '%reaches a node twice%', 'two edges to one node');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('left_children', 0, '"1"'))$$,
                   '%is not a 32-bit integer%', 'a string child index');
SELECT throws_ok($$SELECT pg_temp.try_load(pg_temp.mut('{learner,learner_model_param,num_feature}', '"99999999999"'))$$,
                 '54000', NULL, 'absurd feature count');
SELECT throws_ok($$SELECT pg_temp.try_load(pg_temp.mut('{learner,learner_model_param,num_class}', '"70000"'))$$,
                 '54000', NULL, 'absurd class count');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('split_indices', 0, '100'))$$,
                   '%splits on feature 100%', 'split feature out of range');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('sum_hessian', 0, '-1'))$$,
                   '%invalid cover%', 'negative cover');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('split_conditions', 0, '1e300'))$$,
                   '%outside float range%', 'threshold outside float range');
SELECT throws_like($$SELECT pg_temp.try_load(convert_to(replace(convert_from((SELECT b FROM pg_temp.base), 'UTF8'),
                       '"split_conditions":[', '"split_conditions":[NaN,'), 'UTF8'))$$,
                   '%elements, expected%', 'an extra array element');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.mut('{learner,gradient_booster,model,gbtree_model_param,num_trees}', '"31"'))$$,
                   '%num_trees is 31 but 30 trees%', 'tree count mismatch');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.mut('{learner,gradient_booster,model,tree_info,0}', '7'))$$,
                   '%is not an output index%', 'tree_info out of range');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.mut('{learner,learner_model_param,base_score}', '"abc"'))$$,
                   '%base_score is not a number%', 'base_score not a number');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.mut('{learner,feature_names,1}', '"MedInc"'))$$,
                   '%appears twice%', 'duplicate feature names');
SELECT throws_ok($$SELECT pg_temp.try_load(pg_temp.mut('{learner,gradient_booster,name}', '"gblinear"'))$$,
                 '0A000', NULL, 'gblinear is not supported');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.tree_mut('split_type', 0, '1'))$$,
                   '%split_type and the category lists disagree%',
                   'a categorical split without its category list is refused, not misread');
SELECT throws_like($$SELECT pg_temp.try_load(pg_temp.mut('{learner,learner_model_param,num_feature}', '"4194305"'))$$,
                   '%"num_feature" = 4194305 is out of range 1..4194304%', 'an integer out of range is printed as an integer');
-- the query must be read-only: a data-modifying WITH or a row lock is named as such
CREATE TEMP TABLE houses AS SELECT * FROM fx_houses;
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'WITH d AS (DELETE FROM houses RETURNING *) SELECT * FROM d')$$,
                 '42P11', 'query must be read-only', 'a DELETE in WITH is refused as a write');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses FOR UPDATE')$$,
                 '42P11', 'query must be read-only', 'FOR UPDATE is refused as a write');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap('reg', 'SELECT * FROM houses LIMIT 1', background => '')$$,
                 '42P11', 'background query must be a single SELECT or VALUES that returns rows',
                 'an empty background query is named as the background');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap('reg', 'SELECT * FROM houses LIMIT 1',
                                                       background => 'SELECT 1 AS nothing')$$,
                 '42703', 'background query has no column for feature "MedInc"',
                 'a background without a feature''s column is named as the background');
SELECT is((SELECT count(*) FROM houses), (SELECT count(*) FROM fx_houses), 'the refused DELETE deleted nothing');
SELECT throws_ok($$SELECT treeshap.load_model('x', NULL)$$, '22004', NULL, 'NULL bytes');
SELECT throws_ok($$SELECT treeshap.load_model('', (SELECT b FROM pg_temp.base))$$, '22023', NULL, 'empty name');

SELECT set_eq('SELECT name, version FROM treeshap.model_store', 'SELECT * FROM catalog_before',
              'nothing was written to the catalog');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', pg_temp.fx_query('reg'))), 200::bigint,
          'the session still explains after all these errors');
SELECT * FROM finish();
ROLLBACK;
