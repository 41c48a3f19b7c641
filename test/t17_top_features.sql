-- explain_top_features: per (row, output) the k features of largest |SHAP
-- value|, ties to the feature the model lists first (BigQuery's
-- top_k_features). On every fixture, for k = 1, 3 and more than the model's
-- features, the rows equal the k largest entries of explain_shap (ranked in
-- SQL); the prediction is predict's, the base value explain_shap_wide's.
-- explain_top_features_wide holds the same records as arrays in rank order,
-- one row per (row, output).
BEGIN;
\ir setup.sql

SELECT plan(18);

-- feature name -> 0-based model index
CREATE TEMP TABLE fx_feature AS
SELECT m.name AS fixture, i - 1 AS j, coalesce(m.feature_names[i], 'f' || (i - 1)) AS feature,
       m.num_features AS nf
  FROM treeshap.models m, generate_series(1, m.num_features) i
 WHERE m.name IN (SELECT fixture FROM fx_list);

-- explain_shap ranked in SQL: |value| descending, then model order
CREATE TEMP TABLE ranked AS
SELECT f.fixture, s.row_key, s.output, s.feature, s.shap_value,
       row_number() OVER (PARTITION BY f.fixture, s.row_key, s.output
                          ORDER BY abs(s.shap_value) DESC, x.j)::int AS rank
  FROM fx_list f
 CROSS JOIN LATERAL treeshap.explain_shap(f.fixture, pg_temp.fx_query(f.fixture)) s
  JOIN fx_feature x ON x.fixture = f.fixture AND x.feature = s.feature;

CREATE TEMP TABLE top AS
SELECT f.fixture, k.k, t.*
  FROM fx_list f
 CROSS JOIN (VALUES (1), (3), (100000)) k(k)
 CROSS JOIN LATERAL treeshap.explain_top_features(f.fixture, pg_temp.fx_query(f.fixture), k => k.k) t;

-- fixtures where top-k differs from the k best of explain_shap, in either direction
CREATE FUNCTION pg_temp.differing(k int) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(DISTINCT fixture ORDER BY fixture) FROM (
    (SELECT fixture, row_key, output, rank, feature, shap_value FROM ranked WHERE rank <= k
     EXCEPT ALL
     SELECT fixture, row_key, output, rank, feature, shap_value FROM top WHERE top.k = $1)
    UNION ALL
    (SELECT fixture, row_key, output, rank, feature, shap_value FROM top WHERE top.k = $1
     EXCEPT ALL
     SELECT fixture, row_key, output, rank, feature, shap_value FROM ranked WHERE rank <= k)) d
$$;

SELECT is(pg_temp.differing(1), NULL, 'k = 1: every fixture''s top feature is explain_shap''s largest |value|');
SELECT is(pg_temp.differing(3), NULL, 'k = 3: the three largest, by rank, on every fixture');
SELECT is(pg_temp.differing(100000), NULL,
          'k above the feature count: every feature, ranked, ties (zeros) in model order');
SELECT is((SELECT count(*) FROM top WHERE k = 3 AND rank > 3), 0::bigint, 'no rank beyond k');
SELECT ok((SELECT count(*) > 0 FROM ranked r1 JOIN ranked r2 USING (fixture, row_key, output)
            WHERE r1.rank < r2.rank AND abs(r1.shap_value) = abs(r2.shap_value)),
          'the fixtures have ties for the tie rule to decide');

SELECT is((SELECT array_agg(DISTINCT t.fixture) FROM top t
             JOIN (SELECT f.fixture, p.* FROM fx_list f
                    CROSS JOIN LATERAL treeshap.predict(f.fixture, pg_temp.fx_query(f.fixture)) p) p
               ON p.fixture = t.fixture AND p.row_key = t.row_key AND p.output = t.output
            WHERE t.k = 1 AND abs(t.prediction - p.prediction) > 1e-9 * greatest(1, abs(p.prediction))),
          NULL, 'prediction is predict''s prediction on every fixture, softmax and links included (to 1e-9: on the GPU, the dynamic programme of the 24- and 41-feature paths is 2e-11 off)');
SELECT is((SELECT array_agg(DISTINCT t.fixture) FROM top t
             JOIN (SELECT f.fixture, w.* FROM fx_list f
                    CROSS JOIN LATERAL treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w) w
               ON w.fixture = t.fixture AND w.row_key = t.row_key AND w.output = t.output
            WHERE t.k = 1 AND t.base_value IS DISTINCT FROM w.base_value),
          NULL, 'base_value is explain_shap_wide''s');

SELECT is((SELECT count(*) FROM treeshap.explain_top_features('multiclass', pg_temp.fx_query('multiclass'))),
          (SELECT least(5, (SELECT num_features FROM treeshap.models WHERE name = 'multiclass')) * count(*)
             FROM treeshap.explain_shap_wide('multiclass', pg_temp.fx_query('multiclass'))),
          'k defaults to 5: five rows per (row, output) (fewer features: all of them)');
SELECT is((SELECT array_agg(row_key || ':' || feature ORDER BY row_key, rank)
             FROM treeshap.explain_top_features('reg', replace(pg_temp.fx_query('reg'), 'SELECT id,',
                                                'SELECT ''#'' || id AS id,') || ' AND id < 3', NULL::text, 2)),
          (SELECT array_agg(key || ':' || feature ORDER BY key, rank)
             FROM treeshap.explain_top_features('reg', pg_temp.fx_query('reg') || ' AND id < 3', k => 2)
              CROSS JOIN LATERAL (SELECT '#' || row_key AS key) k),
          'a key_type gives the same features, keys in that type');
SELECT throws_ok($$SELECT * FROM treeshap.explain_top_features('reg', 'SELECT 1', k => 0)$$, '22023',
                 'k must be a positive number of features', 'k = 0 is refused');
SELECT throws_ok($$SELECT * FROM treeshap.explain_top_features('reg', 'SELECT 1', k => NULL)$$, '22023',
                 'k must be a positive number of features', 'k NULL is refused');

-- explain_top_features_wide: the long form's rows folded into arrays by rank
CREATE TEMP TABLE top_wide AS
SELECT f.fixture, k.k, t.*
  FROM fx_list f
 CROSS JOIN (VALUES (1), (3), (100000)) k(k)
 CROSS JOIN LATERAL treeshap.explain_top_features_wide(f.fixture, pg_temp.fx_query(f.fixture), k => k.k) t;
CREATE TEMP TABLE top_folded AS
SELECT fixture, k, row_key, output, prediction, base_value,
       array_agg(feature ORDER BY rank) AS features, array_agg(shap_value ORDER BY rank) AS shap_values
  FROM top GROUP BY fixture, k, row_key, output, prediction, base_value;
SELECT is((SELECT array_agg(DISTINCT fixture || ' k=' || k) FROM (
             (SELECT * FROM top_wide EXCEPT ALL SELECT * FROM top_folded)
             UNION ALL
             (SELECT * FROM top_folded EXCEPT ALL SELECT * FROM top_wide)) d),
          NULL, 'explain_top_features_wide: the long form''s features and values by rank, prediction and base value, on every fixture for k = 1, 3 and every feature');
SELECT is((SELECT count(*) FROM top_wide WHERE k = 3),
          (SELECT count(*) FROM fx_list f
            CROSS JOIN LATERAL treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w),
          'one row per (row, output)');
SELECT is((SELECT array_agg(DISTINCT t.fixture) FROM top_wide t JOIN treeshap.models m ON m.name = t.fixture
            WHERE cardinality(t.features) <> least(t.k, m.num_features)
               OR cardinality(t.shap_values) <> least(t.k, m.num_features)
               OR array_position(t.features, NULL) IS NOT NULL),
          NULL, 'k names and k values (every feature when k is larger), no NULL among them');
SELECT is((SELECT array_agg(row_key || ':' || features::text ORDER BY row_key)
             FROM treeshap.explain_top_features_wide('reg', replace(pg_temp.fx_query('reg'), 'SELECT id,',
                                                     'SELECT ''#'' || id AS id,') || ' AND id < 3', NULL::text, 2)),
          (SELECT array_agg(key || ':' || features::text ORDER BY key)
             FROM treeshap.explain_top_features_wide('reg', pg_temp.fx_query('reg') || ' AND id < 3', k => 2)
              CROSS JOIN LATERAL (SELECT '#' || row_key AS key) k),
          'explain_top_features_wide: a key_type gives the same features, keys in that type');
SELECT is((SELECT sum(cardinality(features)) FROM treeshap.explain_top_features_wide('multiclass', pg_temp.fx_query('multiclass'))),
          (SELECT count(*) FROM treeshap.explain_top_features('multiclass', pg_temp.fx_query('multiclass'))),
          'explain_top_features_wide: k defaults to 5 as the long form''s does');
SELECT is((SELECT count(*) FROM treeshap.explain_top_features_wide('multiclass', pg_temp.fx_query('multiclass'), k => 3)
            WHERE pg_column_size(shap_values) <> 24 + 8 * cardinality(shap_values)),
          0::bigint, 'the arrays come unpacked (a 4-byte header), read where they lie');
SELECT throws_ok($$SELECT * FROM treeshap.explain_top_features_wide('reg', 'SELECT 1', k => 0)$$, '22023',
                 'k must be a positive number of features', 'explain_top_features_wide: k = 0 is refused');

SELECT * FROM finish();
ROLLBACK;
