-- Pictures from SQL (issue 20): each plot is a well-formed SVG document whose
-- marks carry exactly the values explain_shap, feature_importance and predict
-- give; the beeswarm's rows are sampled to about 1,000; the errors.
-- test/plots_check.sh renders the same plots in headless Chromium.
BEGIN;
\ir setup.sql

SELECT plan(18);

CREATE TEMP TABLE p_rows AS SELECT * FROM fx_houses;
CREATE TEMP TABLE p_svg AS
SELECT treeshap.plot_summary('reg', 'SELECT * FROM p_rows')::xml AS summary,
       treeshap.plot_summary('reg', 'SELECT * FROM p_rows', 3)::xml AS summary3,
       treeshap.plot_waterfall('reg', 'SELECT * FROM p_rows WHERE id = 5')::xml AS waterfall,
       treeshap.plot_waterfall('reg', 'SELECT * FROM p_rows WHERE id = 5', 3)::xml AS waterfall3,
       treeshap.plot_dependence('reg', 'SELECT * FROM p_rows', 'MedInc')::xml AS dependence;
-- the marks of a plot: (class, feature, row, shap, x) per element that has a class
CREATE FUNCTION pg_temp.marks(svg xml) RETURNS TABLE (class text, feature text, row_key bigint,
                                                      shap float8, x float8, body text)
LANGUAGE sql AS $$
    SELECT (xpath('/*/@class', m))[1]::text, (xpath('/*/@data-feature', m))[1]::text,
           (xpath('/*/@data-row', m))[1]::text::bigint, (xpath('/*/@data-shap', m))[1]::text::float8,
           (xpath('/*/@data-x', m))[1]::text::float8, (xpath('/*/text()', m))[1]::text
      FROM unnest(xpath('//s:*[@class]', svg, ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']])) m
$$;

SELECT ok((SELECT bool_and(xml_is_well_formed_document(s::text)
                           AND (xpath('name(/*)', s))[1]::text = 'svg')
             FROM p_svg, unnest(ARRAY[summary, summary3, waterfall, waterfall3, dependence]) s),
          'each plot is a well-formed SVG document');

-- summary (beeswarm)
SELECT is((SELECT array_agg(body ORDER BY ord) FROM p_svg,
                  LATERAL pg_temp.marks(summary) WITH ORDINALITY m(class, feature, row_key, shap, x, body, ord)
            WHERE class = 'feature'),
          (SELECT array_agg(feature ORDER BY mean_abs_shap DESC, feature)
             FROM treeshap.feature_importance('reg', 'SELECT * FROM p_rows')),
          'summary: one lane per feature, top to bottom by mean |SHAP| as feature_importance ranks them');
SELECT is((SELECT count(*) FROM p_svg, LATERAL pg_temp.marks(summary3) m WHERE class = 'feature'),
          3::bigint, 'summary, max_features 3: three lanes');
SELECT is((SELECT count(*) FROM p_svg, LATERAL pg_temp.marks(summary) m
             JOIN treeshap.explain_shap('reg', 'SELECT * FROM p_rows') e
               ON e.row_key = m.row_key AND e.feature = m.feature AND e.shap_value = m.shap
            WHERE m.class = 'dot'),
          1600::bigint, 'summary: a dot per (row, feature), 200 x 8, each at explain_shap''s value exactly');
SELECT is((SELECT count(*) FROM p_svg, LATERAL pg_temp.marks(summary) m WHERE class = 'colour-bar'),
          1::bigint, 'summary: a colour scale for the feature values');

CREATE TEMP TABLE p_many AS SELECT r.id * 100 + g AS id, r."MedInc", r."HouseAge", r."AveRooms", r."AveBedrms",
       r."Population", r."AveOccup", r."Latitude", r."Longitude" FROM p_rows r, generate_series(1, 15) g;
SELECT is((SELECT count(DISTINCT m.row_key) FROM pg_temp.marks(treeshap.plot_summary('reg', 'SELECT * FROM p_many')::xml) m
            WHERE m.class = 'dot'),
          1000::bigint, 'summary of 3,000 rows: every third row by key, 1,000 rows');

-- waterfall
SELECT is((SELECT count(*) FROM p_svg, LATERAL pg_temp.marks(waterfall) m
             JOIN treeshap.explain_shap('reg', 'SELECT * FROM p_rows WHERE id = 5') e
               ON e.feature = m.feature AND e.shap_value = m.shap
            WHERE m.class = 'bar'),
          8::bigint, 'waterfall: a bar per feature at explain_shap''s value exactly');
SELECT is((SELECT array_agg(m.feature ORDER BY ord) FROM p_svg,
                  LATERAL pg_temp.marks(waterfall) WITH ORDINALITY m(class, feature, row_key, shap, x, body, ord)
            WHERE class = 'bar'),
          (SELECT array_agg(feature ORDER BY abs(shap_value) DESC, feature)
             FROM treeshap.explain_shap('reg', 'SELECT * FROM p_rows WHERE id = 5')),
          'waterfall: bars top to bottom by |SHAP value|');
SELECT cmp_ok((SELECT abs((xpath('//s:*[@class="output"]/@data-value', waterfall,
                                  ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text::float8 - p.margin)
                 FROM p_svg, treeshap.predict('reg', 'SELECT * FROM p_rows WHERE id = 5') p),
              '<=', 1e-12::float8, 'waterfall: f(x) is the row''s margin');
SELECT is((SELECT (xpath('//s:*[@class="base"]/@data-value', waterfall,
                         ARRAY[ARRAY['s', 'http://www.w3.org/2000/svg']]))[1]::text::float8 FROM p_svg),
          (SELECT base_value FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM p_rows WHERE id = 5')),
          'waterfall: E[f(X)] is the base value');
SELECT cmp_ok((SELECT abs(m.shap - (SELECT sum(shap_value) FROM (
                     SELECT shap_value FROM treeshap.explain_shap('reg', 'SELECT * FROM p_rows WHERE id = 5')
                      ORDER BY abs(shap_value) DESC, feature OFFSET 3) r))
                 FROM p_svg, LATERAL pg_temp.marks(waterfall3) m
                WHERE m.class = 'bar' AND m.feature = 'other features'),
              '<=', 1e-12::float8, 'waterfall, max_features 3: the other 5 features as one bar, their sum');
SELECT is((SELECT count(*) FROM p_svg, LATERAL pg_temp.marks(waterfall3) m WHERE class = 'bar'),
          4::bigint, 'waterfall, max_features 3: four bars');

-- dependence
SELECT is((SELECT count(*) FROM p_svg, LATERAL pg_temp.marks(dependence) m
             JOIN treeshap.explain_shap('reg', 'SELECT * FROM p_rows') e
               ON e.row_key = m.row_key AND e.feature = 'MedInc' AND e.shap_value = m.shap
             JOIN p_rows r ON r.id = m.row_key AND r."MedInc" = m.x
            WHERE m.class = 'point'),
          (SELECT count(*) FROM p_rows WHERE "MedInc" IS NOT NULL AND "MedInc" <> 'NaN'),
          'dependence: a point per row with a value, at (its MedInc, explain_shap''s value) exactly');

-- errors
SELECT throws_ok($$SELECT treeshap.plot_waterfall('reg', 'SELECT * FROM p_rows WHERE id < 3')$$,
                 '22023', 'plot_waterfall explains one row; the query returned 2',
                 'waterfall of two rows is refused');
SELECT throws_ok($$SELECT treeshap.plot_dependence('reg', 'SELECT * FROM p_rows', 'Rooms')$$,
                 '22023', 'model "reg" has no feature "Rooms"', 'dependence on an unknown feature is refused');
SELECT throws_ok($$SELECT treeshap.plot_dependence('reg', 'SELECT * FROM p_rows', NULL)$$,
                 '22004', 'feature must not be NULL', 'dependence on a NULL feature is refused as NULL');
SELECT throws_ok($$SELECT treeshap.plot_summary('reg', 'SELECT * FROM p_rows WHERE false')$$,
                 '22023', 'query returned no rows to plot', 'a summary of no rows is refused');
SELECT throws_ok($$SELECT treeshap.plot_summary('reg', 'SELECT * FROM p_rows', 0)$$,
                 '22023', 'max_features must be at least 1', 'max_features 0 is refused');

SELECT * FROM finish();
ROLLBACK;
