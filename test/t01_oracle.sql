-- Every fixture against its library's own contributions (XGBoost pred_contribs,
-- LightGBM pred_contrib) and margins: each value
-- within 1e-5 relative to max(1, |margin|), additivity, and the three ways
-- of asking (wide, long, single row) agreeing exactly.
BEGIN;
\ir setup.sql
SELECT plan((SELECT 8 * count(*)::int FROM fx_list));

CREATE TEMP TABLE got AS
SELECT f.fixture, w.row_key AS id, w.output, w.base_value, w.shap_values
  FROM fx_list f, treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w;

CREATE TEMP TABLE err AS
SELECT g.fixture, g.id, g.output,
       (SELECT max(abs(a - b)) FROM unnest(g.shap_values || g.base_value, e.contribs) AS u(a, b))
         / greatest(1, abs(e.margin)) AS rel_err,
       abs((SELECT sum(a) FROM unnest(g.shap_values) a) + g.base_value - e.margin)
         / greatest(1, abs(e.margin)) AS additivity_err
  FROM got g JOIN fx_expected e USING (fixture, id, output);

SELECT is((SELECT count(*) FROM got g WHERE g.fixture = f.fixture),
          (SELECT count(*) FROM fx_expected e WHERE e.fixture = f.fixture),
          f.fixture || ': one wide row per (row, output)')
  FROM fx_list f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(rel_err) FROM err WHERE err.fixture = f.fixture), '<=', 1e-5::float8,
              f.fixture || ': every contribution matches the library''s own within 1e-5')
  FROM fx_list f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(additivity_err) FROM err WHERE err.fixture = f.fixture), '<=', 1e-5::float8,
              f.fixture || ': sum(phi) + bias equals the library''s margin')
  FROM fx_list f ORDER BY f.fixture;

-- predict() walks the trees, independently of the SHAP path code; the DP
-- loses digits on the 41-element paths of 'long', hence its looser bound
SELECT cmp_ok((SELECT max(abs(p.margin - (SELECT sum(a) FROM unnest(g.shap_values) a) - g.base_value)
                          / greatest(1, abs(p.margin)))
                 FROM treeshap.predict(f.fixture, pg_temp.fx_query(f.fixture)) p
                 JOIN got g ON g.fixture = f.fixture AND g.id = p.row_key AND g.output = p.output),
              '<=', CASE f.fixture WHEN 'long' THEN 1e-6 ELSE 1e-9 END::float8,
              f.fixture || ': additivity against predict() margins within '
                        || CASE f.fixture WHEN 'long' THEN '1e-6' ELSE '1e-9' END)
  FROM fx_list f ORDER BY f.fixture;

SELECT is((SELECT count(*) FROM treeshap.explain_shap(f.fixture, pg_temp.fx_query(f.fixture)) l
             JOIN got g ON g.fixture = f.fixture AND g.id = l.row_key AND g.output = l.output
             JOIN treeshap.models m ON m.name = f.fixture
            WHERE l.shap_value IS DISTINCT FROM
                  g.shap_values[array_position(coalesce(m.feature_names,
                      (SELECT array_agg('f' || i ORDER BY i) FROM generate_series(0, m.num_features - 1) i)),
                      l.feature)]),
          0::bigint, f.fixture || ': long form equals wide form')
  FROM fx_list f ORDER BY f.fixture;

SELECT is((SELECT count(*) FROM fx_data d JOIN got g ON g.fixture = d.fixture AND g.id = d.id
            WHERE d.fixture = f.fixture AND d.id <= 5
              AND pg_temp.close((SELECT array_agg(v) FROM unnest(treeshap.shap_values(f.fixture, d.x)) WITH ORDINALITY u(v, i)
                                  WHERE (i - 1) / (array_length(d.x, 1) + 1) = g.output),
                                g.shap_values || g.base_value) IS NOT TRUE),
          0::bigint, f.fixture || ': shap_values() equals the wide form')
  FROM fx_list f ORDER BY f.fixture;

-- Both CPU algorithms (treeshap.algorithm): each against the library, and
-- against each other to near machine precision
SET LOCAL treeshap.device = cpu;
SET LOCAL treeshap.algorithm = quadrature;
CREATE TEMP TABLE got_quadrature AS
SELECT f.fixture, w.row_key AS id, w.output, w.shap_values || w.base_value AS phi
  FROM fx_list f, treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w;
SET LOCAL treeshap.algorithm = treeshap;
CREATE TEMP TABLE got_treeshap AS
SELECT f.fixture, w.row_key AS id, w.output, w.shap_values || w.base_value AS phi
  FROM fx_list f, treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w;
RESET treeshap.algorithm;
RESET treeshap.device;

SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(t.phi, e.contribs) AS u(a, b))
                          / greatest(1, abs(e.margin)))
                 FROM got_treeshap t JOIN fx_expected e USING (fixture, id, output)
                WHERE t.fixture = f.fixture), '<=', 1e-5::float8,
              f.fixture || ': treeshap.algorithm = treeshap matches the library within 1e-5')
  FROM fx_list f ORDER BY f.fixture;

-- (the DP loses digits on the 41-element paths of 'long': 7e-9 there; 3e-12 on tl_deep's 31)
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b) / greatest(1, abs(b))) FROM unnest(q.phi, t.phi) AS u(a, b)))
                 FROM got_quadrature q JOIN got_treeshap t USING (fixture, id, output)
                WHERE q.fixture = f.fixture),
              '<=', CASE f.fixture WHEN 'long' THEN 1e-7 WHEN 'tl_deep' THEN 1e-10 ELSE 1e-12 END::float8,
              f.fixture || ': quadrature and treeshap agree within '
                        || CASE f.fixture WHEN 'long' THEN '1e-7' WHEN 'tl_deep' THEN '1e-10' ELSE '1e-12' END)
  FROM fx_list f ORDER BY f.fixture;

SELECT diag(format('%s: max relative error %s, max additivity error %s', fixture,
                   to_char(max(rel_err), '9.99EEEE'), to_char(max(additivity_err), '9.99EEEE')))
  FROM err GROUP BY fixture ORDER BY fixture;

SELECT * FROM finish();
ROLLBACK;
