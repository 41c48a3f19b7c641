-- Interaction values and global importance on every fixture. Shapley
-- interactions against XGBoost's pred_interactions (LightGBM: brute force over
-- all feature subsets; 'long': quadrature), Shapley-Taylor against brute force
-- (fixtures with <= 8 features); rows sum to the SHAP values, a feature subset
-- gives exactly the full result's entries, feature_importance equals the
-- aggregates of explain_shap. References: test/fixtures/make_interactions.py.
BEGIN;
\ir setup.sql

CREATE TEMP TABLE fx_ref (fixture text, kind text, id bigint, output int, matrix float8[]);
\set refs `cd test/fixtures && awk '{ split(FILENAME, p, "."); print p[1] "," p[2] "," $0 }' *.interactions.csv *.taylor.csv`
INSERT INTO fx_ref
SELECT p[1], p[2], p[3]::bigint, p[4]::int, p[5]::float8[]
  FROM (SELECT regexp_match(l, '^([^,]+),([^,]+),(\d+),(\d+),"?([^"]*)"?$') AS p
          FROM regexp_split_to_table(:'refs', '\r?\n') AS l) s
 WHERE p IS NOT NULL;
SELECT plan((SELECT 5 * count(*)::int FROM fx_list)
            + (SELECT 2 * count(DISTINCT fixture)::int FROM fx_ref WHERE kind = 'taylor') + 8);

-- feature name -> 0-based model index
CREATE TEMP TABLE fx_feature AS
SELECT m.name AS fixture, i - 1 AS j, coalesce(m.feature_names[i], 'f' || (i - 1)) AS feature,
       m.num_features AS nf
  FROM treeshap.models m, generate_series(1, m.num_features) i
 WHERE m.name IN (SELECT fixture FROM fx_list);

CREATE FUNCTION pg_temp.rows20(f text) RETURNS text LANGUAGE sql AS $$
    SELECT pg_temp.fx_query(f) || ' AND id <= 20'
$$;

-- got: every emitted entry; reference entries not emitted must be zero
CREATE TEMP TABLE got AS
SELECT f.fixture, k.kind, i.row_key AS id, i.output, a.j AS ja, b.j AS jb, i.interaction
  FROM fx_list f
 CROSS JOIN (VALUES ('interactions', 'shapley'), ('taylor', 'taylor')) k(kind, method)
 CROSS JOIN LATERAL treeshap.explain_interactions(f.fixture, pg_temp.rows20(f.fixture),
                                                 method => k.method) i
  JOIN fx_feature a ON a.fixture = f.fixture AND a.feature = i.feature_a
  JOIN fx_feature b ON b.fixture = f.fixture AND b.feature = i.feature_b
 WHERE k.kind = 'interactions' OR f.fixture IN (SELECT fixture FROM fx_ref WHERE kind = 'taylor');

CREATE TEMP TABLE cmp AS
SELECT r.fixture, r.kind, r.id, r.output, e.ord, e.v AS want, coalesce(g.interaction, 0) AS have,
       x.margin
  FROM fx_ref r
 CROSS JOIN LATERAL unnest(r.matrix) WITH ORDINALITY e(v, ord)
  JOIN fx_expected x ON x.fixture = r.fixture AND x.id = r.id AND x.output = r.output
  JOIN (SELECT DISTINCT fixture, nf FROM fx_feature) n ON n.fixture = r.fixture
  LEFT JOIN got g ON g.fixture = r.fixture AND g.kind = r.kind AND g.id = r.id
       AND g.output = r.output AND g.ja = (e.ord - 1) / n.nf AND g.jb = (e.ord - 1) % n.nf;

SELECT is((SELECT count(*) FROM cmp WHERE cmp.fixture = f.fixture AND kind = 'interactions'),
          (SELECT sum(cardinality(matrix)) FROM fx_ref r WHERE r.fixture = f.fixture AND kind = 'interactions'),
          f.fixture || ': a reference for every (row, output, a, b)')
  FROM fx_list f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(abs(have - want) / greatest(1, abs(margin))) FROM cmp
                WHERE cmp.fixture = f.fixture AND kind = 'interactions'),
              '<=', 1e-5::float8,
              f.fixture || ': Shapley interactions match the reference within 1e-5')
  FROM fx_list f ORDER BY f.fixture;

-- rows of the matrix sum to the SHAP values (explain_shap's quadrature and the
-- interactions' EXTEND/UNWOUNDSUM, which the GPU uses, differ by 7e-9 on the
-- 41-element paths of 'long'; the CPU computes both by quadrature)
SELECT cmp_ok((SELECT max(abs(s.total - e.shap_value) / greatest(1, abs(e.shap_value)))
                 FROM (SELECT id, output, ja, sum(interaction) AS total FROM got
                        WHERE got.fixture = f.fixture AND kind = 'interactions' GROUP BY 1, 2, 3) s
                 JOIN fx_feature a ON a.fixture = f.fixture AND a.j = s.ja
                 JOIN treeshap.explain_shap(f.fixture, pg_temp.rows20(f.fixture)) e
                   ON e.row_key = s.id AND e.output = s.output AND e.feature = a.feature),
              '<=', CASE f.fixture WHEN 'long' THEN 1e-7 ELSE 1e-9 END::float8,
              f.fixture || ': each row of interactions sums to its SHAP value')
  FROM fx_list f ORDER BY f.fixture;

-- a subset (first and last feature) returns exactly the full result's rows for them
CREATE TEMP TABLE sub AS
SELECT f.fixture, i.row_key AS id, i.output, i.feature_a, i.feature_b, i.interaction
  FROM fx_list f
 CROSS JOIN LATERAL treeshap.explain_interactions(f.fixture, pg_temp.rows20(f.fixture),
                    (SELECT array_agg(feature) FROM fx_feature a
                      WHERE a.fixture = f.fixture AND a.j IN (0, a.nf - 1))) i;

SELECT is((SELECT count(*) FROM (
             (SELECT id, output, feature_a, feature_b, interaction FROM sub
               WHERE sub.fixture = f.fixture
              EXCEPT ALL
              SELECT g.id, g.output, a.feature, b.feature, g.interaction FROM got g
                JOIN fx_feature a ON a.fixture = g.fixture AND a.j = g.ja
                JOIN fx_feature b ON b.fixture = g.fixture AND b.j = g.jb
               WHERE g.fixture = f.fixture AND g.kind = 'interactions' AND g.ja IN (0, a.nf - 1))
             UNION ALL
             (SELECT g.id, g.output, a.feature, b.feature, g.interaction FROM got g
                JOIN fx_feature a ON a.fixture = g.fixture AND a.j = g.ja
                JOIN fx_feature b ON b.fixture = g.fixture AND b.j = g.jb
               WHERE g.fixture = f.fixture AND g.kind = 'interactions' AND g.ja IN (0, a.nf - 1)
              EXCEPT ALL
              SELECT id, output, feature_a, feature_b, interaction FROM sub
               WHERE sub.fixture = f.fixture)) d),
          0::bigint, f.fixture || ': a feature subset returns exactly the full result''s entries')
  FROM fx_list f ORDER BY f.fixture;

-- feature_importance equals the aggregates of explain_shap over the same rows
SELECT is((SELECT count(*) FROM treeshap.feature_importance(f.fixture, pg_temp.fx_query(f.fixture)) i
             JOIN (SELECT output, feature, avg(abs(shap_value)) AS mean_abs, avg(shap_value) AS mean,
                          count(*) AS n
                     FROM treeshap.explain_shap(f.fixture, pg_temp.fx_query(f.fixture)) GROUP BY 1, 2) e
               USING (output, feature)
            WHERE i.rows = e.n AND abs(i.mean_abs_shap - e.mean_abs) <= 1e-9 * greatest(1, e.mean_abs)
              AND abs(i.mean_shap - e.mean) <= 1e-9 * greatest(1, abs(e.mean))),
          (SELECT count(*) FROM treeshap.explain_shap(f.fixture, pg_temp.fx_query(f.fixture) || ' AND id = 1')),
          f.fixture || ': feature_importance equals mean |SHAP| and mean SHAP of explain_shap')
  FROM fx_list f ORDER BY f.fixture;

-- Shapley-Taylor: brute force, and the whole matrix sums to margin - bias
SELECT cmp_ok((SELECT max(abs(have - want) / greatest(1, abs(margin))) FROM cmp
                WHERE cmp.fixture = f.fixture AND kind = 'taylor'),
              '<=', 1e-6::float8,
              f.fixture || ': Shapley-Taylor interactions match the brute-force definition')
  FROM (SELECT DISTINCT fixture FROM fx_ref WHERE kind = 'taylor') f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(abs(t.total - s.total) / greatest(1, abs(s.total)))
                 FROM (SELECT id, output, sum(interaction) AS total FROM got
                        WHERE got.fixture = f.fixture AND kind = 'taylor' GROUP BY 1, 2) t
                 JOIN (SELECT id, output, sum(interaction) AS total FROM got
                        WHERE got.fixture = f.fixture AND kind = 'interactions' GROUP BY 1, 2) s
                   USING (id, output)),
              '<=', 1e-9::float8,
              f.fixture || ': Shapley-Taylor matrix sums to the SHAP values'' sum (margin minus bias)')
  FROM (SELECT DISTINCT fixture FROM fx_ref WHERE kind = 'taylor') f ORDER BY f.fixture;

-- arguments
SELECT throws_ok($$SELECT * FROM treeshap.explain_interactions('reg', pg_temp.rows20('reg'), ARRAY['nope'])$$,
                 '22023', 'model has no feature "nope"', 'an unknown feature is an error');
SELECT throws_ok($$SELECT * FROM treeshap.explain_interactions('reg', pg_temp.rows20('reg'), ARRAY['MedInc', NULL])$$,
                 '22004', 'features must not contain nulls', 'a NULL feature is an error');
SELECT throws_ok($$SELECT * FROM treeshap.explain_interactions('reg', pg_temp.rows20('reg'), method => 'banzhaf')$$,
                 '22023', 'unknown interaction method "banzhaf"', 'an unknown method is an error');
SELECT is((SELECT count(*) FROM treeshap.explain_interactions('reg', pg_temp.rows20('reg'), ARRAY[]::text[])),
          0::bigint, 'an empty feature list gives no rows');
SELECT is((SELECT count(*) FROM treeshap.explain_interactions('reg', pg_temp.rows20('reg'),
                                                             ARRAY['MedInc', 'MedInc', 'Latitude'])),
          (SELECT count(*) FROM got WHERE fixture = 'reg' AND kind = 'interactions' AND ja IN (0, 6)),
          'repeated names count once');
SELECT is((SELECT array_agg(DISTINCT pg_typeof(row_key)::text)
             FROM treeshap.explain_interactions('reg', pg_temp.rows20('reg'), NULL::int, ARRAY['MedInc'])),
          ARRAY['integer'], 'key_type gives keys in that type');
SELECT is((SELECT count(*) FILTER (WHERE mean_abs_shap IS NULL AND mean_shap IS NULL AND rows = 0)
             FROM treeshap.feature_importance('reg', pg_temp.fx_query('reg') || ' AND false')),
          8::bigint, 'feature_importance over no rows: rows 0, means NULL');
SELECT is((SELECT count(*) FROM got WHERE kind = 'interactions' AND ja <> jb AND interaction = 0),
          0::bigint, 'zero off-diagonal entries are left out');

SELECT * FROM finish();
ROLLBACK;
