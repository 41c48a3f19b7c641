-- GPU against CPU on every fixture (run by test/gpu-check.sh on a GPU
-- machine): worst deviation relative to max(1, |margin|) of both kernel
-- families (quadrature, the default, in both precisions; the seed's
-- EXTEND/UNWOUNDSUM DP in double), and whether two GPU runs of each family
-- are bitwise identical; the same for interaction values, predictions and
-- interventional values against a background.
\set QUIET on
\ir setup.sql
\set QUIET off
\pset footer off

CREATE FUNCTION pg_temp.explain_all() RETURNS TABLE (fixture text, id bigint, output int,
                                                    base_value float8, shap_values float8[])
LANGUAGE sql AS $$
    SELECT f.fixture, w.row_key, w.output, w.base_value, w.shap_values
      FROM fx_list f, treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w
$$;

SET treeshap.device = cpu;
CREATE TEMP TABLE on_cpu AS SELECT * FROM pg_temp.explain_all();
SET treeshap.device = gpu;
SET treeshap.algorithm = quadrature;	-- auto leaves models under 500 paths to the DP
CREATE TEMP TABLE on_gpu AS SELECT * FROM pg_temp.explain_all();
CREATE TEMP TABLE on_gpu_again AS SELECT * FROM pg_temp.explain_all();
SET treeshap.gpu_precision = single;
CREATE TEMP TABLE on_gpu_single AS SELECT * FROM pg_temp.explain_all();
RESET treeshap.gpu_precision;
SET treeshap.algorithm = treeshap;
CREATE TEMP TABLE on_gpu_dp AS SELECT * FROM pg_temp.explain_all();
CREATE TEMP TABLE on_gpu_dp_again AS SELECT * FROM pg_temp.explain_all();
RESET treeshap.algorithm;

CREATE FUNCTION pg_temp.deviation(g float8[], gb float8, c float8[], cb float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(abs(gb - cb), (SELECT max(abs(x - y)) FROM unnest(g, c) AS u(x, y)))
           / greatest(1, abs(cb + (SELECT sum(x) FROM unnest(c) AS x)))
$$;

CREATE TEMP TABLE per_fixture AS
SELECT c.fixture,
       count(*) AS rows,
       count(*) FILTER (WHERE g.fixture IS NULL) AS missing,
       max(pg_temp.deviation(g.shap_values, g.base_value, c.shap_values, c.base_value)) AS dev_double,
       max(pg_temp.deviation(s.shap_values, s.base_value, c.shap_values, c.base_value)) AS dev_single,
       max(pg_temp.deviation(d.shap_values, d.base_value, c.shap_values, c.base_value)) AS dev_dp,
       bool_and(array_send(g.shap_values) = array_send(a.shap_values)
                AND float8send(g.base_value) = float8send(a.base_value)
                AND array_send(d.shap_values) = array_send(da.shap_values)) AS bitwise_identical
  FROM on_cpu c
  LEFT JOIN on_gpu g USING (fixture, id, output)
  LEFT JOIN on_gpu_again a USING (fixture, id, output)
  LEFT JOIN on_gpu_single s USING (fixture, id, output)
  LEFT JOIN on_gpu_dp d USING (fixture, id, output)
  LEFT JOIN on_gpu_dp_again da USING (fixture, id, output)
 GROUP BY c.fixture ORDER BY c.fixture;

SELECT fixture, rows, missing, to_char(dev_double, '9.99EEEE') AS dev_double,
       to_char(dev_single, '9.99EEEE') AS dev_single, to_char(dev_dp, '9.99EEEE') AS dev_dp,
       bitwise_identical
  FROM per_fixture;

SELECT format('gpu-compare: %s fixtures, %s rows; worst deviation %s (quadrature kernel, double, %s), %s (quadrature, single, %s), %s (DP kernel, double, %s); two runs bitwise identical: %s; %s',
              count(*), sum(rows),
              to_char(max(dev_double), '9.99EEEE'),
              (SELECT fixture FROM per_fixture ORDER BY dev_double DESC LIMIT 1),
              to_char(max(dev_single), '9.99EEEE'),
              (SELECT fixture FROM per_fixture ORDER BY dev_single DESC LIMIT 1),
              to_char(max(dev_dp), '9.99EEEE'),
              (SELECT fixture FROM per_fixture ORDER BY dev_dp DESC LIMIT 1),
              CASE WHEN bool_and(bitwise_identical) THEN 'yes' ELSE 'NO' END,
              CASE WHEN sum(missing) = 0 AND max(dev_double) <= 1e-5 AND max(dev_dp) <= 1e-5
                        AND bool_and(bitwise_identical)
                   THEN 'PASS' ELSE 'FAIL' END) AS summary
  FROM per_fixture;

-- interaction values (rows 1-20, both methods, all features): GPU against CPU, both by
-- the dynamic programme (the GPU's only one; the CPU's quadrature for Shapley values is
-- checked against it and against closed-form references in test/core/lanes_check.py)
CREATE FUNCTION pg_temp.interactions_all() RETURNS TABLE (fixture text, method text, id bigint,
                                                         output int, a text, b text, v float8)
LANGUAGE sql AS $$
    SELECT f.fixture, m.method, i.row_key, i.output, i.feature_a, i.feature_b, i.interaction
      FROM fx_list f CROSS JOIN (VALUES ('shapley'), ('taylor')) m(method)
     CROSS JOIN LATERAL treeshap.explain_interactions(f.fixture,
                pg_temp.fx_query(f.fixture) || ' AND id <= 20', method => m.method) i
$$;
SET treeshap.device = cpu;
SET treeshap.algorithm = treeshap;
CREATE TEMP TABLE inter_cpu AS SELECT * FROM pg_temp.interactions_all();
RESET treeshap.algorithm;
SET treeshap.device = gpu;
CREATE TEMP TABLE inter_gpu AS SELECT * FROM pg_temp.interactions_all();
CREATE TEMP TABLE inter_gpu_again AS SELECT * FROM pg_temp.interactions_all();

CREATE TEMP TABLE inter_fixture AS
SELECT coalesce(c.fixture, g.fixture) AS fixture, coalesce(c.method, g.method) AS method,
       count(*) AS entries,
       max(abs(coalesce(g.v, 0) - coalesce(c.v, 0)) / greatest(1, abs(c.v))) AS dev,
       bool_and(float8send(g.v) IS NOT DISTINCT FROM float8send(a.v)) AS bitwise_identical
  FROM inter_cpu c
  FULL JOIN inter_gpu g USING (fixture, method, id, output, a, b)
  LEFT JOIN inter_gpu_again a ON a.fixture = g.fixture AND a.method = g.method AND a.id = g.id
        AND a.output = g.output AND a.a = g.a AND a.b = g.b
 GROUP BY 1, 2;

SELECT format('gpu-compare interactions: %s fixtures x 2 methods, %s entries; worst deviation %s (%s); two runs bitwise identical: %s; %s',
              count(DISTINCT fixture), sum(entries), to_char(max(dev), '9.99EEEE'),
              (SELECT fixture || '/' || method FROM inter_fixture ORDER BY dev DESC LIMIT 1),
              CASE WHEN bool_and(bitwise_identical) THEN 'yes' ELSE 'NO' END,
              CASE WHEN max(dev) <= 1e-9 AND bool_and(bitwise_identical) THEN 'PASS' ELSE 'FAIL' END)
       AS summary
  FROM inter_fixture;

-- predictions: the GPU walks the trees and adds leaf values in the host's
-- order, so its margins and predictions equal the CPU's bit for bit; both
-- against the library's own margins too
CREATE FUNCTION pg_temp.predict_all() RETURNS TABLE (fixture text, id bigint, output int,
                                                    margin float8, prediction float8)
LANGUAGE sql AS $$
    SELECT f.fixture, p.row_key, p.output, p.margin, p.prediction
      FROM fx_list f, treeshap.predict(f.fixture, pg_temp.fx_query(f.fixture)) p
$$;
SET treeshap.device = cpu;
CREATE TEMP TABLE pred_cpu AS SELECT * FROM pg_temp.predict_all();
SET treeshap.device = gpu;
CREATE TEMP TABLE pred_gpu AS SELECT * FROM pg_temp.predict_all();

CREATE TEMP TABLE pred_fixture AS
SELECT c.fixture, count(*) AS rows,
       count(*) FILTER (WHERE g.fixture IS NULL
                           OR float8send(g.margin) <> float8send(c.margin)
                           OR float8send(g.prediction) <> float8send(c.prediction)) AS differing,
       max(abs(g.margin - e.margin) / greatest(1, abs(e.margin))) AS dev_library
  FROM pred_cpu c
  LEFT JOIN pred_gpu g USING (fixture, id, output)
  LEFT JOIN fx_expected e USING (fixture, id, output)
 GROUP BY c.fixture;

SELECT format('gpu-compare predict: %s fixtures, %s (row, output) pairs; %s differ from the CPU in any bit; worst deviation from the library''s margins %s (%s); %s',
              count(*), sum(rows), sum(differing), to_char(max(dev_library), '9.99EEEE'),
              (SELECT fixture FROM pred_fixture ORDER BY dev_library DESC NULLS LAST LIMIT 1),
              CASE WHEN sum(differing) = 0 AND max(dev_library) <= 1e-5 THEN 'PASS' ELSE 'FAIL' END)
       AS summary
  FROM pred_fixture;

-- interventional values against a background (rows 1-40, the background every
-- tenth row), margins and, where the link allows, probabilities: GPU against CPU,
-- two GPU runs bitwise, and the GPU's other routes against the CPU too: every
-- path's background grouped (background_grouping = always; auto groups only
-- where that halves the visits) and every background row visited (never)
CREATE FUNCTION pg_temp.interventional_all() RETURNS TABLE (fixture text, space text, id bigint,
                                                           output int, base_value float8,
                                                           shap_values float8[])
LANGUAGE plpgsql AS $$
DECLARE
    f text;
    s text;
BEGIN
    FOR f, s IN SELECT l.fixture, v.space FROM fx_list l, (VALUES ('margin'), ('probability')) v(space)
                 ORDER BY 1, 2 LOOP
        BEGIN
            RETURN QUERY
            SELECT f, s, w.row_key, w.output, w.base_value, w.shap_values
              FROM treeshap.explain_shap_wide(f, pg_temp.fx_query(f) || ' AND id <= 40', NULL::bigint,
                                              model_output => s::treeshap.shap_output,
                                              background => pg_temp.fx_background(f)) w;
        EXCEPTION WHEN feature_not_supported THEN
            NULL;	-- softmax probabilities: refused on every device alike
        END;
    END LOOP;
END
$$;
SET treeshap.device = cpu;
CREATE TEMP TABLE iv_cpu AS SELECT * FROM pg_temp.interventional_all();
SET treeshap.device = gpu;
CREATE TEMP TABLE iv_gpu AS SELECT * FROM pg_temp.interventional_all();
CREATE TEMP TABLE iv_gpu_again AS SELECT * FROM pg_temp.interventional_all();
SET treeshap.background_grouping = always;
CREATE TEMP TABLE iv_gpu_groups AS SELECT * FROM pg_temp.interventional_all();
SET treeshap.background_grouping = never;
CREATE TEMP TABLE iv_gpu_rows AS SELECT * FROM pg_temp.interventional_all();
RESET treeshap.background_grouping;

CREATE TEMP TABLE iv_fixture AS
SELECT c.fixture, c.space, count(*) AS rows,
       count(*) FILTER (WHERE g.fixture IS NULL) AS missing,
       count(*) FILTER (WHERE r.fixture IS NULL OR x.fixture IS NULL) AS missing_rows,
       max(pg_temp.deviation(g.shap_values, g.base_value, c.shap_values, c.base_value)) AS dev,
       max(pg_temp.deviation(r.shap_values, r.base_value, c.shap_values, c.base_value)) AS dev_rows,
       max(pg_temp.deviation(x.shap_values, x.base_value, c.shap_values, c.base_value)) AS dev_groups,
       bool_and(array_send(g.shap_values) = array_send(a.shap_values)
                AND float8send(g.base_value) = float8send(a.base_value)) AS bitwise_identical
  FROM iv_cpu c
  LEFT JOIN iv_gpu g USING (fixture, space, id, output)
  LEFT JOIN iv_gpu_again a USING (fixture, space, id, output)
  LEFT JOIN iv_gpu_rows r USING (fixture, space, id, output)
  LEFT JOIN iv_gpu_groups x USING (fixture, space, id, output)
 GROUP BY c.fixture, c.space;

SELECT format('gpu-compare interventional: %s fixtures, %s in probability space, %s rows; worst deviation %s (%s); grouping always %s, never %s; two runs bitwise identical: %s; %s',
              count(DISTINCT fixture), count(*) FILTER (WHERE space = 'probability'), sum(rows),
              to_char(max(dev), '9.99EEEE'),
              (SELECT fixture || '/' || space FROM iv_fixture ORDER BY dev DESC NULLS FIRST LIMIT 1),
              to_char(max(dev_groups), '9.99EEEE'), to_char(max(dev_rows), '9.99EEEE'),
              CASE WHEN bool_and(bitwise_identical) THEN 'yes' ELSE 'NO' END,
              CASE WHEN sum(missing) + sum(missing_rows) = 0 AND max(dev) <= 1e-9 AND max(dev_rows) <= 1e-9 AND max(dev_groups) <= 1e-9
                        AND bool_and(bitwise_identical)
                        AND count(DISTINCT fixture) = (SELECT count(*) FROM fx_list)
                   THEN 'PASS' ELSE 'FAIL' END) AS summary
  FROM iv_fixture;
