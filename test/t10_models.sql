-- Models as users bring them (issue 15): +-inf thresholds, binary:logitraw's
-- base score, LightGBM's generated names, names longer than an identifier,
-- matching by position. (Their contributions are checked against the
-- libraries, or the brute-force Shapley oracle, in t01_oracle.sql.)
BEGIN;
\ir setup.sql
SELECT plan(42);

-- +-inf thresholds: the trees of inf_json/inf_ubj split on them, and the
-- margins walk them as XGBoost does
SELECT is((SELECT count(*) FROM regexp_matches(convert_from(treeshap.model_bytes('inf_json'), 'UTF8'),
                                                 '"split_conditions":\[[^,]+,-Infinity,Infinity,', 'g')),
          8::bigint, 'inf_json: every tree splits on -inf at node 1 and +inf at node 2');
SELECT is((SELECT count(*) FROM treeshap.predict('inf_ubj', pg_temp.fx_query('inf_ubj')) p
             JOIN fx_expected e ON e.fixture = 'inf_ubj' AND e.id = p.row_key
            WHERE abs(p.margin - e.margin) > 1e-5 * greatest(1, abs(e.margin))),
          0::bigint, 'inf_ubj: predict() margins equal XGBoost''s');
SELECT throws_like($$SELECT treeshap.load_model('nan_thr', convert_to(regexp_replace(
                       convert_from(treeshap.model_bytes('inf_json'), 'UTF8'), '-Infinity', 'NaN'), 'UTF8'))$$,
                   '%NaN%', 'a NaN threshold is refused');

-- binary:logitraw adds its base score to the margin unchanged (not its logit)
SELECT is((SELECT base_score FROM treeshap.models WHERE name = f), ARRAY[b]::float8[],
          f || ': base_score is XGBoost''s, unchanged')
  FROM (VALUES ('logitraw_02', 0.2::float8), ('logitraw_05', 0.5), ('logitraw_m075', -0.75)) v(f, b);
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide(f, pg_temp.fx_query(f)) w
             JOIN fx_expected e ON e.fixture = f AND e.id = w.row_key
            WHERE abs(w.base_value - e.contribs[cardinality(e.contribs)]) > 1e-5),
          0::bigint, f || ': bias equals pred_contribs''s')
  FROM (VALUES ('logitraw_02'), ('logitraw_m075')) v(f);

-- vector leaves: one tree per round for all three targets
SELECT results_eq($$SELECT num_trees, num_outputs FROM treeshap.models WHERE name = 'vector_leaf'$$,
                  $$VALUES (8, 3)$$, 'vector_leaf: 8 trees of 3-value leaves give 3 outputs');
SELECT throws_like($$SELECT treeshap.load_model('bad_vector', convert_to(regexp_replace(
                       convert_from(treeshap.model_bytes('vector_leaf'), 'UTF8'),
                       '"size_leaf_vector":"3"', '"size_leaf_vector":"2"'), 'UTF8'))$$,
                   '%leaves have 2 values but the model has 3 outputs%', 'a leaf size other than the targets'' is refused');

-- LightGBM's Column_<j> names are no names: columns match by position
SELECT is((SELECT feature_names FROM treeshap.models WHERE name = 'lgb_nonames'), NULL::text[],
          'lgb_nonames: LightGBM''s generated Column_<j> names count as none');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('lgb_nonames',
              'SELECT id, x[1] AS a, x[2] AS b, x[3] AS c, x[4] AS d, x[5] AS e, x[6] AS f, x[7] AS g, x[8] AS h
                 FROM fx_data WHERE fixture = ''lgb_nonames''')),
          200::bigint, 'lgb_nonames: any column names, matched by position');
-- ... unless the query has every Column_<j> (a table built from the same DataFrame): then
-- by name, in any order and among other columns, as a named model's (issue 35)
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('lgb_nonames',
              'SELECT id, x[8] AS "Column_7", 0 AS other, x[3] AS "Column_2", x[1] AS "Column_0", x[2] AS "Column_1",
                      x[4] AS "Column_3", x[6] AS "Column_5", x[5] AS "Column_4", x[7] AS "Column_6"
                 FROM fx_data WHERE fixture = ''lgb_nonames''') w
             JOIN treeshap.explain_shap_wide('lgb_nonames',
              'SELECT id, x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8] FROM fx_data WHERE fixture = ''lgb_nonames''') p
               USING (row_key)
            WHERE w.shap_values = p.shap_values AND w.base_value = p.base_value),
          200::bigint, 'lgb_nonames: Column_<j> columns reordered, with another among them, match by name');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('lgb_nonames',
              'SELECT id, x[1] AS "Column_0", x[2] AS "Column_1", 0 AS other, x[3], x[4], x[5], x[6], x[7], x[8]
                 FROM fx_data WHERE fixture = ''lgb_nonames''')$$, '42804',
                 'query returns 9 feature columns, but the model has 8 features',
                 'lgb_nonames: with some Column_<j> missing, by position as before (an extra column is then an error)');

-- a 70-byte name matches the column PostgreSQL truncated it to
SELECT is((SELECT octet_length(feature_names[1]) FROM treeshap.models WHERE name = 'long_name'), 70,
          'long_name keeps its whole 70-byte name');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('long_name',
              'SELECT id, x[1] AS median_income_of_the_households_in_the_block_group_in_tens_of_ku,
                      x[2] AS "HouseAge", x[3] AS "AveRooms", x[4] AS "AveBedrms", x[5] AS "Population",
                      x[6] AS "AveOccup", x[7] AS "Latitude", x[8] AS "Longitude"
                 FROM fx_data WHERE fixture = ''long_name''')),
          200::bigint, 'long_name: the feature matches its first 63 bytes');
SELECT throws_like($$SELECT * FROM treeshap.explain_shap_wide('long_name',
                       'SELECT 1 AS id, 1 AS "HouseAge", 1 AS "AveRooms", 1 AS "AveBedrms", 1 AS "Population",
                               1 AS "AveOccup", 1 AS "Latitude", 1 AS "Longitude"')$$,
                   '%no column for feature "median_income_of_the_households%',
                   'a missing long-named feature is named in the error');

-- treeshap.match_columns = position: a named model's columns by position
SET LOCAL treeshap.match_columns = position;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg',
              'SELECT id, x[1] AS a, x[2] AS b, x[3] AS c, x[4] AS d, x[5] AS e, x[6] AS f, x[7] AS g, x[8] AS h
                 FROM fx_data WHERE fixture = ''reg''') w
             JOIN treeshap.explain_shap_wide('reg', pg_temp.fx_query('reg')) n USING (row_key, output)
            WHERE w.shap_values = n.shap_values),
          200::bigint, 'match_columns = position: unnamed columns give the named result');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT 1 AS id, 2 AS a')$$,
                 '42804', NULL, 'match_columns = position: the column count must match');
RESET treeshap.match_columns;

-- text categories: the models carry their category names, so a table's text
-- (or enum) columns are mapped to codes; names never seen in training are
-- missing values. Each row's names come from pandas (NAME.text.csv), its
-- integer codes from NAME.data.csv.
CREATE TEMP TABLE fx_text_raw (id bigint, t text[]);
CREATE TEMP TABLE fx_text (fixture text, id bigint, t text[]);
\copy fx_text_raw FROM 'test/fixtures/xgb_text_cats.text.csv' WITH (FORMAT csv)
INSERT INTO fx_text SELECT 'xgb_text_cats', * FROM fx_text_raw;
INSERT INTO fx_text SELECT 'xgb_text_onehot', * FROM fx_text_raw;
TRUNCATE fx_text_raw;
\copy fx_text_raw FROM 'test/fixtures/lgb_text_cats.text.csv' WITH (FORMAT csv)
INSERT INTO fx_text SELECT 'lgb_text_cats', * FROM fx_text_raw;

-- SELECT id, x[1] AS age, ..., t[7] AS workclass, ...: text for the categorical features
CREATE FUNCTION pg_temp.text_query(f text, cast_to text DEFAULT 'text') RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT d.id, %s FROM pg_temp.fx_data d JOIN pg_temp.fx_text t USING (fixture, id) WHERE d.fixture = %L',
                  string_agg(CASE WHEN m.feature_names[i] = ANY (m.categorical_features)
                                  THEN format('t.t[%s]::%s AS %I', i, cast_to, m.feature_names[i])
                                  ELSE format('d.x[%s] AS %I', i, m.feature_names[i]) END,
                             ', ' ORDER BY i), f)
      FROM treeshap.models m, generate_series(1, m.num_features) AS i
     WHERE m.name = f
$$;

SELECT results_eq(format($$SELECT categorical_features, num_categories FROM treeshap.models WHERE name = %L$$, f),
                  $$VALUES (ARRAY['workclass', 'education', 'marital_status', 'occupation', 'relationship',
                                  'race', 'sex', 'native_country'], ARRAY[8, 16, 7, 14, 6, 5, 2, 41])$$,
                  f || ': treeshap.models lists the categorical features and their category counts')
  FROM (VALUES ('xgb_text_cats'), ('lgb_text_cats')) v(f);
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide(f, pg_temp.text_query(f)) a
             JOIN treeshap.explain_shap_wide(f, pg_temp.fx_query(f)) b USING (row_key, output)
            WHERE a.shap_values = b.shap_values AND a.base_value = b.base_value),
          200::bigint, f || ': text columns give exactly the integer-code results')
  FROM (VALUES ('xgb_text_cats'), ('xgb_text_onehot'), ('lgb_text_cats')) v(f);
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(w.shap_values || w.base_value, e.contribs) u(a, b))
                          / greatest(1, abs(e.margin)))
                 FROM treeshap.explain_shap_wide(f, pg_temp.text_query(f, 'varchar(40)')) w
                 JOIN fx_expected e ON e.fixture = f AND e.id = w.row_key AND e.output = w.output),
              '<=', 1e-5::float8, f || ': varchar columns match the library''s contributions on its DataFrame')
  FROM (VALUES ('xgb_text_cats'), ('xgb_text_onehot'), ('lgb_text_cats')) v(f);
SELECT is((SELECT count(*) FROM treeshap.predict('xgb_text_cats', pg_temp.text_query('xgb_text_cats', 'char(30)')) a
             JOIN treeshap.predict('xgb_text_cats', pg_temp.fx_query('xgb_text_cats')) b USING (row_key, output)
            WHERE a.margin = b.margin),
          200::bigint, 'char(n) columns (blank-padded) give the integer-code margins');
CREATE TYPE pg_temp.workclass AS ENUM ('Federal-gov', 'Local-gov', 'Never-worked', 'Private',
    'Self-emp-inc', 'Self-emp-not-inc', 'State-gov', 'Without-pay', 'Martian', 'private', 'Private ');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('lgb_text_cats',
              replace(pg_temp.text_query('lgb_text_cats'), 't.t[7]::text',
                      $q$nullif(t.t[7], '')::pg_temp.workclass$q$)) a
             JOIN treeshap.explain_shap_wide('lgb_text_cats', pg_temp.fx_query('lgb_text_cats')) b USING (row_key, output)
            WHERE a.shap_values = b.shap_values),
          200::bigint, 'an enum column maps by its labels');
SELECT throws_like($$SELECT * FROM treeshap.explain_shap_wide('xgb_cat_ubj',
                       'SELECT 1 AS id, 1 AS age, 1 AS fnlwgt, 1 AS education_num, 1 AS capital_gain, 1 AS capital_loss,
                               1 AS hours_per_week, ''Private''::text AS workclass, 1 AS education, 1 AS marital_status,
                               1 AS occupation, 1 AS relationship, 1 AS race, 1 AS sex, 1 AS native_country')$$,
                   '%model has no category names for feature "workclass"%',
                   'a text column for a model without category names is refused, saying why');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('xgb_text_cats',
                     replace(pg_temp.text_query('xgb_text_cats'), 'd.x[1] AS age', $q$'x'::text AS age$q$))$$,
                 '42804', NULL, 'a text column for a numeric feature is refused');

-- CatBoost JSON: oblivious trees of float features; CTR and one-hot splits refused
SELECT results_eq($$SELECT name, format, objective, num_outputs FROM treeshap.models WHERE name LIKE 'cb\_%' ORDER BY name$$,
                  $$VALUES ('cb_binary', 'catboost-json', 'Logloss', 1), ('cb_multiclass', 'catboost-json', 'MultiClass', 3),
                           ('cb_reg', 'catboost-json', 'RMSE', 1), ('cb_uncertainty', 'catboost-json', 'RMSEWithUncertainty', 2)$$,
                  'CatBoost models: format, loss function and outputs');
SELECT is((SELECT count(*) FROM treeshap.predict('cb_binary', pg_temp.fx_query('cb_binary')) p
             JOIN fx_expected e ON e.fixture = 'cb_binary' AND e.id = p.row_key
            WHERE abs(p.prediction - 1 / (1 + exp(-e.margin))) > 1e-9),
          0::bigint, 'cb_binary: prediction is the sigmoid of CatBoost''s raw formula value');
SELECT is((SELECT feature_names FROM treeshap.models WHERE name = 'cb_reg'),
          ARRAY['MedInc', 'HouseAge', 'AveRooms', 'AveBedrms', 'Population', 'AveOccup', 'Latitude', 'Longitude'],
          'cb_reg: feature names are CatBoost''s feature_id');
\set ctr `base64 -w0 test/fixtures/cb_ctr.cbj`
SELECT throws_ok(format($$SELECT treeshap.load_model('cb_ctr', decode(%L, 'base64'))$$, :'ctr'),
                 '0A000', NULL, 'a CatBoost model with CTR splits is refused (0A000)');
SELECT throws_like(format($$SELECT treeshap.load_model('cb_ctr', decode(%L, 'base64'))$$, :'ctr'),
                   '%OnlineCtr splits are not supported (feature colour)%', 'the refusal names the feature');

-- CatBoost one-hot splits compare the CatBoost hash (CityHash64) of a category's name
\set f cb_onehot
\ir load_fixture.sql
TRUNCATE fx_text_raw;
\copy fx_text_raw FROM 'test/fixtures/cb_onehot.text.csv' WITH (FORMAT csv)
INSERT INTO fx_text SELECT 'cb_onehot', * FROM fx_text_raw;
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(w.shap_values || w.base_value, e.contribs) u(a, b))
                          / greatest(1, abs(e.margin)))
                 FROM treeshap.explain_shap_wide('cb_onehot', pg_temp.text_query('cb_onehot')) w
                 JOIN fx_expected e ON e.fixture = 'cb_onehot' AND e.id = w.row_key AND e.output = w.output),
              '<=', 1e-5::float8, 'cb_onehot: text columns match CatBoost''s ShapValues on its DataFrame');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('cb_onehot', pg_temp.text_query('cb_onehot'))),
          200::bigint, 'cb_onehot: one row per input row');
SELECT throws_like($$SELECT * FROM treeshap.explain_shap_wide('cb_onehot',
                       replace(pg_temp.text_query('cb_onehot'), 't.t[7]::text', 'd.x[7]'))$$,
                   '%CatBoost categorical feature "workclass" takes text%', 'cb_onehot: a numeric column for a categorical feature is refused');

-- Path counts (issue 43): a chain over features 0, 1, 0 whose leaves hold 0.1, 0 (a
-- leaf of zeros adds no path), 0.3 and -0.2: paths {f0}, {f0, f1} twice (f0 merged),
-- so 3 paths of 2 + 3 + 3 elements, the root element included
SELECT 1 FROM treeshap.load_model('t10_chain', convert_to($${"learner":{"attributes":{},"feature_names":[],"feature_types":[],"gradient_booster":{"model":{"gbtree_model_param":{"num_parallel_tree":"1","num_trees":"1"},"iteration_indptr":[0,1],"tree_info":[0],"trees":[{"base_weights":[0.5,0.1,0.5,0.0,0.8,0.3,-0.2],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],"default_left":[1,0,0,0,1,0,0],"id":0,"left_children":[1,-1,3,-1,5,-1,-1],"loss_changes":[0.0,0.0,0.0,0.0,0.0,0.0,0.0],"parents":[2147483647,0,0,2,2,4,4],"right_children":[2,-1,4,-1,6,-1,-1],"split_conditions":[0.5,0.1,0.5,0.0,0.8,0.3,-0.2],"split_indices":[0,0,1,0,0,0,0],"split_type":[0,0,0,0,0,0,0],"sum_hessian":[10,4,6,2,4,3,1],"tree_param":{"num_deleted":"0","num_feature":"2","num_nodes":"7","size_leaf_vector":"1"}}],"cats":{}},"name":"gbtree"},"learner_model_param":{"base_score":"[5E-1]","boost_from_average":"1","num_class":"0","num_feature":"2","num_target":"1"},"objective":{"name":"reg:squarederror","reg_loss_param":{"scale_pos_weight":"1"}}},"version":[3,0,0]}$$, 'UTF8'), replace => true) \g /dev/null
SELECT is((SELECT (num_leaves, num_paths, path_elements)::text FROM treeshap.models WHERE name = 't10_chain'),
          '(4,3,8)', 'treeshap.models counts the paths and their merged elements, zero leaves left out');
SELECT is((SELECT count(*) FROM treeshap.models
            WHERE num_paths IS NULL OR num_paths > num_leaves OR path_elements < 2 * num_paths
               OR path_elements > num_paths * (least(max_depth, num_features) + 1)),
          0::bigint, 'every model''s path counts lie within what its leaves, depth and features allow');
UPDATE treeshap.model_store SET model = convert_to(replace(convert_from(model, 'UTF8'),
       '"split_indices":[0,0,1,0,0,0,0]', '"split_indices":[0,0,0,0,0,0,0]'), 'UTF8')
 WHERE name = 't10_chain';
SELECT is((SELECT (num_paths, path_elements)::text FROM treeshap.models WHERE name = 't10_chain'),
          '(3,6)', 'new bytes recount: with every split on f0, 3 paths of 2 elements');

SELECT * FROM finish();
ROLLBACK;
