-- The model catalog: metadata read from the model, bytes kept unchanged,
-- replace/drop semantics, and cache invalidation across backends.
BEGIN;
\ir setup.sql
SELECT plan(23);

SELECT is((SELECT row(format, num_trees, num_features, num_outputs, objective)::text
             FROM treeshap.models WHERE name = 'multiclass'),
          row('xgboost-json', 60, 5, 4, 'multi:softprob')::text, 'multiclass metadata');
SELECT is((SELECT feature_names FROM treeshap.models WHERE name = 'reg'),
          ARRAY['MedInc','HouseAge','AveRooms','AveBedrms','Population','AveOccup','Latitude','Longitude'],
          'feature names come from the model');
SELECT is((SELECT feature_names FROM treeshap.models WHERE name = 'nan'), NULL::text[],
          'a model without feature names has NULL feature_names');

-- counts cross-checked against the JSON itself
SELECT is((SELECT num_trees FROM treeshap.models WHERE name = 'reg'),
          (SELECT jsonb_array_length(convert_from(model, 'UTF8')::jsonb
                    #> '{learner,gradient_booster,model,trees}') FROM treeshap.model_store WHERE name = 'reg'),
          'num_trees equals the trees stored');
SELECT is((SELECT num_leaves FROM treeshap.models WHERE name = 'reg'),
          (SELECT sum((SELECT count(*) FROM jsonb_array_elements(t -> 'left_children') c WHERE c::int = -1))
             FROM treeshap.model_store s,
                  jsonb_array_elements(convert_from(s.model, 'UTF8')::jsonb
                    #> '{learner,gradient_booster,model,trees}') t WHERE s.name = 'reg')::bigint,
          'num_leaves equals the leaves stored');
SELECT cmp_ok((SELECT max_depth FROM treeshap.models WHERE name = 'deep'), '>=', 10,
              'the deep fixture is deep');
-- the split features along every root-to-leaf path of a stored model's first tree
CREATE FUNCTION pg_temp.path_features(model_name text) RETURNS SETOF int[] LANGUAGE sql AS $$
    WITH RECURSIVE tree AS (
        SELECT t AS tree FROM treeshap.model_store s,
               jsonb_array_elements(convert_from(s.model, 'UTF8')::jsonb
                 #> '{learner,gradient_booster,model,trees}') t WHERE s.name = model_name LIMIT 1),
    walk(node, feats) AS (
        SELECT 0, ARRAY[]::int[] FROM tree
        UNION ALL
        SELECT c.child, w.feats || ((tree.tree -> 'split_indices' ->> w.node)::int)
          FROM walk w, tree,
               LATERAL (VALUES ((tree.tree -> 'left_children' ->> w.node)::int),
                               ((tree.tree -> 'right_children' ->> w.node)::int)) c(child)
         WHERE (tree.tree -> 'left_children' ->> w.node)::int <> -1)
    SELECT feats FROM walk
$$;
SELECT ok(EXISTS (SELECT 1 FROM pg_temp.path_features('deep') f
                   WHERE cardinality(f) - cardinality(ARRAY(SELECT DISTINCT unnest(f))) >= 5),
          'the deep fixture has paths splitting one feature many times');
SELECT ok(EXISTS (SELECT 1 FROM pg_temp.path_features('long') f
                   WHERE cardinality(ARRAY(SELECT DISTINCT unnest(f))) > 31),
          'the long fixture has paths of more than 31 distinct features (wider than a warp)');
SELECT is((SELECT base_score FROM treeshap.models WHERE name = 'binary'), ARRAY[0::float8],
          'binary base_score 0.5 is stored as margin 0');
SELECT cmp_ok((SELECT abs(base_score[1] - ln(0.5)) FROM treeshap.models WHERE name = 'poisson'),
              '<', 1e-12::float8, 'poisson base_score 0.5 is stored as margin ln(0.5)');

\set model `cat test/fixtures/reg.json`
SELECT is(treeshap.model_bytes('reg'), convert_to(:'model', 'UTF8'), 'model bytes read back unchanged');
SELECT is((SELECT size FROM treeshap.models WHERE name = 'reg'),
          octet_length(convert_to(:'model', 'UTF8'))::bigint, 'size is the byte length');

SELECT throws_ok($$SELECT treeshap.load_model('reg', treeshap.model_bytes('nan'))$$,
                 '42710', 'model "reg" already exists', 'loading over a name needs replace');

-- replace: new version, new metadata, new results in this backend
CREATE TEMP TABLE before AS SELECT version FROM treeshap.models WHERE name = 'reg';
SELECT lives_ok($$SELECT treeshap.load_model('reg', treeshap.model_bytes('reg_v3'), replace => true)$$,
                'replace => true overwrites');
SELECT cmp_ok((SELECT version FROM treeshap.models WHERE name = 'reg'), '>',
              (SELECT version FROM before), 'replace assigns a new version');
SELECT is((SELECT shap_values FROM treeshap.explain_shap_wide('reg', pg_temp.fx_query('reg')) WHERE row_key = 3),
          (SELECT shap_values FROM treeshap.explain_shap_wide('reg_v3', pg_temp.fx_query('reg_v3')) WHERE row_key = 3),
          'explaining after replace uses the new model');

SELECT is(treeshap.drop_model('reg'), true, 'drop_model returns true');
SELECT is((SELECT count(*) FROM treeshap.models WHERE name = 'reg'), 0::bigint, 'dropped model is gone');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT 1, 2')$$, '42704',
                 'model "reg" does not exist', 'explaining a dropped model is an error');
SELECT throws_ok($$SELECT treeshap.drop_model('reg')$$, '42704', NULL, 'dropping twice is an error');
SELECT is(treeshap.drop_model('reg', if_exists => true), false, 'if_exists makes it a no-op');

-- sharing models across a Citus cluster needs Citus, and is the extension owner's to do
SELECT throws_ok($$SELECT treeshap.citus_share_models()$$, '55000',
                 'citus is not installed in this database', 'sharing models without Citus is an error');
SELECT ok(NOT has_function_privilege('public', 'treeshap.citus_share_models()', 'EXECUTE'),
          'roles at large may not share the models');
SELECT * FROM finish();
ROLLBACK;

