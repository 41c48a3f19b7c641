-- Model formats beyond XGBoost JSON: UBJSON and LightGBM text, categorical
-- splits, LightGBM's links and random-forest averaging, and the refusals.
-- (Every format's contributions are checked against its library in
-- t01_oracle.sql; these tests pin what the oracle test does not.)
BEGIN;
\ir setup.sql
SELECT plan(12);

SELECT results_eq(
    $$SELECT name, format FROM treeshap.models
       WHERE name IN ('lgb_reg', 'xgb_reg_ubj', 'xgb_cat_multi', 'reg') ORDER BY name$$,
    $$VALUES ('lgb_reg', 'lightgbm'), ('reg', 'xgboost-json'), ('xgb_cat_multi', 'xgboost-json'),
             ('xgb_reg_ubj', 'xgboost-ubj')$$,
    'the format is detected from the bytes');

SELECT is((SELECT feature_names[1:3] FROM treeshap.models WHERE name = 'lgb_binary'),
          ARRAY['age', 'fnlwgt', 'education_num'], 'LightGBM feature names are read');

-- category codes as bigint columns (features 7..14 of the adult fixtures are
-- categorical) give the same contributions as the float8 columns; rows 41..80
-- hold fractional and out-of-range codes, so they are left out here
CREATE FUNCTION pg_temp.int_query(f text) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT id, %s FROM pg_temp.fx_data WHERE fixture = %L AND id > 80',
                  string_agg(format(CASE WHEN i >= 7 THEN 'x[%s]::bigint AS %I' ELSE 'x[%s] AS %I' END,
                                    i, m.feature_names[i]), ', ' ORDER BY i), f)
      FROM treeshap.models m, generate_series(1, m.num_features) AS i
     WHERE m.name = f
$$;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide(f, pg_temp.int_query(f)) a
             JOIN treeshap.explain_shap_wide(f, pg_temp.fx_query(f)) b USING (row_key, output)
            WHERE a.shap_values = b.shap_values AND a.base_value = b.base_value),
          120::bigint, f || ': integer category columns equal float8 ones')
  FROM (VALUES ('lgb_binary'), ('xgb_cat_ubj')) v(f);

SELECT is((SELECT count(*) FROM treeshap.predict('lgb_binary', pg_temp.fx_query('lgb_binary')) p
             JOIN fx_expected e ON e.fixture = 'lgb_binary' AND e.id = p.row_key
            WHERE abs(p.prediction - 1 / (1 + exp(-0.8 * e.margin))) > 1e-12),
          0::bigint, 'LightGBM binary: prediction is the sigmoid of 0.8 x margin (sigmoid:0.8)');

SELECT is((SELECT count(*) FROM treeshap.predict('lgb_multiclass', pg_temp.fx_query('lgb_multiclass')) p
             JOIN fx_expected e ON e.fixture = 'lgb_multiclass' AND e.id = p.row_key AND e.output = p.output
            WHERE abs(p.prediction - exp(e.margin) / (SELECT sum(exp(o.margin)) FROM fx_expected o
                                                      WHERE o.fixture = e.fixture AND o.id = e.id)) > 1e-12),
          0::bigint, 'LightGBM multiclass: prediction is the softmax of the margins');

SELECT is((SELECT count(*) FROM treeshap.predict('lgb_rf', pg_temp.fx_query('lgb_rf')) p
             JOIN fx_expected e ON e.fixture = 'lgb_rf' AND e.id = p.row_key
            WHERE abs(p.margin - e.margin) > 1e-9 OR p.prediction <> p.margin),
          0::bigint, 'LightGBM random forest: the margin is the mean over the trees');

\set linear `base64 -w0 test/fixtures/lgb_linear_tree.lgb`
SELECT throws_ok(format('SELECT treeshap.load_model(%L, decode(%L, %L))', 'linear', :'linear', 'base64'),
                 '0A000', NULL, 'LightGBM linear trees are refused as not supported');

SELECT throws_like(
    format('SELECT treeshap.load_model(%L, %L::bytea)', 'mixed',
           convert_to(regexp_replace(convert_from(treeshap.model_bytes('lgb_none'), 'UTF8'),
                                     'decision_type=\d+', 'decision_type=8'), 'UTF8')),
    '%different missing-value types%',
    'a feature split with two missing-value types is refused');

SELECT throws_ok(format('SELECT treeshap.load_model(%L, %L::bytea)', 'cut',
                        substring(treeshap.model_bytes('xgb_cat_ubj') FROM 1 FOR 5000)),
                 '22P02', NULL, 'truncated UBJSON is a syntax error');

SELECT throws_like(format('SELECT treeshap.load_model(%L, %L::bytea)', 'cut',
                          substring(treeshap.model_bytes('lgb_reg') FROM 1 FOR 5000)),
                   '%end of trees%', 'a truncated LightGBM model is refused');

-- a num_leaves past its tree's leaf_value list, as large as the limit allows: refused
-- before anything is sized from it (test/fuzz/regressions/lightgbm/declared_leaves_past_text)
SELECT throws_ok(format('SELECT treeshap.load_model(%L, %L::bytea)', 'declared',
                        convert_to(regexp_replace(convert_from(treeshap.model_bytes('lgb_reg'), 'UTF8'),
                                                  'num_leaves=31', 'num_leaves=300000000'), 'UTF8')),
                 '22023', 'could not read model "declared": tree 0: num_leaves is 300000000 but leaf_value has 31 values',
                 'a num_leaves that its leaf_value list does not hold is refused (22023)');

SELECT * FROM finish();
ROLLBACK;
