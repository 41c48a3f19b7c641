-- Model catalog through pg_regress: load, inspect, replace, drop.
\set model `cat test/fixtures/multiclass.json`
SELECT name, format, num_trees, num_features, num_outputs, max_depth, num_leaves,
       feature_names, objective, base_score, size
  FROM treeshap.load_model('mc', convert_to(:'model', 'UTF8'));
SELECT treeshap.model_bytes('mc') = convert_to(:'model', 'UTF8') AS bytes_unchanged;
SELECT treeshap.load_model('mc', convert_to(:'model', 'UTF8'));
\set model2 `cat test/fixtures/poisson.json`
SELECT name, num_trees, num_features, objective, round(base_score[1]::numeric, 6) AS base_margin
  FROM treeshap.load_model('mc', convert_to(:'model2', 'UTF8'), replace => true);
SELECT count(*) FROM treeshap.models;
SELECT treeshap.drop_model('mc');
SELECT treeshap.drop_model('mc');
SELECT treeshap.drop_model('mc', if_exists => true);
SELECT count(*) FROM treeshap.models;
