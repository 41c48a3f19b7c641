-- feature_importance per segment (the query's first column, of segment_type):
-- on every fixture, mean |SHAP|, mean SHAP and rows per (segment, output,
-- feature) equal GROUP BY over explain_shap, for integer segments and for
-- text segments with a NULL segment; segments are equal as GROUP BY finds
-- them equal (numeric 1.0 and 1.00 are one); the segments add up to the
-- unsegmented importance.
BEGIN;
\ir setup.sql

SELECT plan(9);

-- the fixture's query with its key replaced by a segment expression of id
CREATE FUNCTION pg_temp.segment_query(f text, segment text) RETURNS text LANGUAGE sql AS $$
    SELECT replace(pg_temp.fx_query(f), 'SELECT id,', 'SELECT ' || segment || ' AS segment,')
$$;

CREATE TEMP TABLE shap AS
SELECT f.fixture, s.row_key AS id, s.output, s.feature, s.shap_value
  FROM fx_list f CROSS JOIN LATERAL treeshap.explain_shap(f.fixture, pg_temp.fx_query(f.fixture)) s;

CREATE TEMP TABLE by_int AS
SELECT f.fixture, i.*
  FROM fx_list f
 CROSS JOIN LATERAL treeshap.feature_importance(f.fixture, pg_temp.segment_query(f.fixture, 'id % 3'),
                                                NULL::int) i;
CREATE TEMP TABLE by_text AS
SELECT f.fixture, i.*
  FROM fx_list f
 CROSS JOIN LATERAL treeshap.feature_importance(f.fixture,
                pg_temp.segment_query(f.fixture, $q$CASE WHEN id % 4 = 0 THEN NULL ELSE 'g' || id % 2 END$q$),
                NULL::text) i;

-- fixtures where a (segment, output, feature) differs from GROUP BY over explain_shap
CREATE FUNCTION pg_temp.differing(segments text, expr text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    result text[];
BEGIN
    EXECUTE format($f$
        SELECT array_agg(DISTINCT coalesce(g.fixture, s.fixture))
          FROM (SELECT fixture, (%s)::text AS segment, output, feature,
                       avg(abs(shap_value)) AS mean_abs, avg(shap_value) AS mean, count(*) AS rows
                  FROM shap GROUP BY 1, 2, 3, 4) g
          FULL JOIN (SELECT fixture, segment::text AS segment, output, feature,
                            mean_abs_shap, mean_shap, rows FROM %I) s
            ON s.fixture = g.fixture AND s.segment IS NOT DISTINCT FROM g.segment
           AND s.output = g.output AND s.feature = g.feature
         WHERE s.fixture IS NULL OR g.fixture IS NULL OR s.rows <> g.rows
            OR abs(s.mean_abs_shap - g.mean_abs) > 1e-12 * greatest(1, abs(g.mean_abs))
            OR abs(s.mean_shap - g.mean) > 1e-12 * greatest(1, abs(g.mean))$f$, expr, segments)
      INTO result;
    RETURN result;
END
$$;

SELECT is(pg_temp.differing('by_int', 'id % 3'), NULL,
          'integer segments: every (segment, output, feature) equals GROUP BY over explain_shap, on every fixture');
SELECT is(pg_temp.differing('by_text', $q$CASE WHEN id % 4 = 0 THEN NULL ELSE 'g' || id % 2 END$q$), NULL,
          'text segments with NULLs: the same, the NULL rows one segment');
SELECT is((SELECT count(DISTINCT segment) FROM by_int WHERE fixture = 'reg'), 3::bigint,
          'three integer segments');
SELECT is((SELECT array_agg(DISTINCT coalesce(segment, '(null)') COLLATE "C" ORDER BY coalesce(segment, '(null)') COLLATE "C")
             FROM by_text WHERE fixture = 'multiclass'),
          ARRAY['(null)', 'g0', 'g1'], 'text segments: two values and NULL');
SELECT is((SELECT pg_typeof(segment)::text FROM by_text LIMIT 1), 'text', 'segments come back in segment_type');

SELECT is((SELECT array_agg(DISTINCT fixture) FROM (
             SELECT b.fixture, b.output, b.feature, sum(b.mean_abs_shap * b.rows) / sum(b.rows) AS mean_abs,
                    sum(b.rows) AS rows
               FROM by_int b GROUP BY 1, 2, 3) s
             JOIN (SELECT f.fixture, i.* FROM fx_list f
                    CROSS JOIN LATERAL treeshap.feature_importance(f.fixture, pg_temp.fx_query(f.fixture)) i) a
               USING (fixture, output, feature)
            WHERE s.rows <> a.rows OR abs(s.mean_abs - a.mean_abs_shap) > 1e-12 * greatest(1, a.mean_abs_shap)),
          NULL, 'the segments add up to feature_importance without segments');

SELECT is((SELECT count(DISTINCT segment) FROM treeshap.feature_importance('reg',
             pg_temp.segment_query('reg', 'CASE WHEN id % 2 = 0 THEN 1.0 ELSE 1.00 END'), NULL::numeric)),
          1::bigint, 'numeric 1.0 and 1.00 are one segment, as GROUP BY has them');
SELECT is((SELECT count(*) FROM treeshap.feature_importance('reg', pg_temp.fx_query('reg') || ' AND false',
                                                            NULL::bigint)),
          0::bigint, 'no rows, no segments');
SELECT throws_ok($$SELECT * FROM treeshap.feature_importance('reg',
                     replace(pg_temp.fx_query('reg'), 'SELECT id,', 'SELECT point(id, id),'), NULL::point)$$,
                 '42883', NULL, 'a segment type without a hash function is refused');

SELECT * FROM finish();
ROLLBACK;
