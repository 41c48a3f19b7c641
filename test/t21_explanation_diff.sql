-- explanation_diff (issue 20): two models' contributions over the same rows per
-- (output, feature), against the same numbers computed here from explain_shap;
-- a model against itself; features one model lacks; a repeated key; and the
-- README's regression test for a candidate model.
BEGIN;
\ir setup.sql

SELECT plan(10);

CREATE TEMP TABLE d_rows AS SELECT * FROM fx_houses;

-- the same numbers from explain_shap, by hand: a feature one model lacks counts as 0
CREATE FUNCTION pg_temp.by_hand(a text, b text) RETURNS TABLE (output int, feature text,
    mean_abs_diff float8, max_abs_diff float8, rank_a int, rank_b int, rows bigint)
LANGUAGE sql AS $$
    WITH d AS (SELECT coalesce(x.output, y.output) AS output, coalesce(x.feature, y.feature) AS feature,
                      coalesce(x.shap_value, 0) AS va, coalesce(y.shap_value, 0) AS vb
                 FROM treeshap.explain_shap(a, 'SELECT * FROM d_rows') x
                 FULL JOIN treeshap.explain_shap(b, 'SELECT * FROM d_rows') y
                   ON x.row_key = y.row_key AND x.output = y.output AND x.feature = y.feature),
         s AS (SELECT d.output, d.feature, avg(abs(vb - va)) AS mean_abs_diff, max(abs(vb - va)) AS max_abs_diff,
                      avg(abs(va)) AS ma, avg(abs(vb)) AS mb, count(*) AS rows
                 FROM d GROUP BY 1, 2)
    SELECT s.output, s.feature, s.mean_abs_diff, s.max_abs_diff,
           (rank() OVER (PARTITION BY s.output ORDER BY s.ma DESC, s.feature))::int,
           (rank() OVER (PARTITION BY s.output ORDER BY s.mb DESC, s.feature))::int, s.rows
      FROM s
$$;

SELECT is((SELECT count(*) FILTER (WHERE mean_abs_diff = 0 AND max_abs_diff = 0 AND rank_change = 0
                                         AND rank_a = rank_b AND rows = 200)
             FROM treeshap.explanation_diff('reg', 'reg', 'SELECT * FROM d_rows')),
          8::bigint, 'a model against itself: 8 features, nothing moved, ranks kept, 200 rows each');

CREATE TEMP TABLE d_got AS SELECT * FROM treeshap.explanation_diff('reg', 'reg_v3', 'SELECT * FROM d_rows');
CREATE TEMP TABLE d_want AS SELECT * FROM pg_temp.by_hand('reg', 'reg_v3');
SELECT is((SELECT count(*) FROM d_got), 8::bigint, 'reg against reg_v3: one row per feature');
SELECT cmp_ok((SELECT max(greatest(abs(g.mean_abs_diff - w.mean_abs_diff), abs(g.max_abs_diff - w.max_abs_diff)))
                 FROM d_got g JOIN d_want w USING (output, feature)),
              '<=', 1e-12::float8, 'mean and max |phi_b - phi_a| equal the difference of explain_shap''s values');
SELECT ok((SELECT bool_and(g.max_abs_diff > 0) FROM d_got g), 'the two models differ on every feature');
SELECT is((SELECT count(*) FROM d_got g JOIN d_want w USING (output, feature)
            WHERE g.rank_a = w.rank_a AND g.rank_b = w.rank_b AND g.rank_change = w.rank_b - w.rank_a
              AND g.rows = w.rows),
          8::bigint, 'ranks by mean |phi| in each model, and their change, as computed from explain_shap');

-- reg with MedInc renamed MedIncome: the two models share 7 of 9 feature names
SELECT 1 FROM treeshap.model_store m,
              LATERAL treeshap.load_model('d_renamed', convert_to(replace(convert_from(m.model, 'UTF8'),
                                                                          '"MedInc"', '"MedIncome"'), 'UTF8'))
 WHERE m.name = 'reg' \g /dev/null
CREATE TEMP TABLE d_renamed AS
SELECT * FROM treeshap.explanation_diff('reg', 'd_renamed', 'SELECT *, "MedInc" AS "MedIncome" FROM d_rows');
SELECT is((SELECT count(*) FILTER (WHERE (feature IN ('MedInc', 'MedIncome')) = (mean_abs_diff > 0))
                    || ' of ' || count(*) FROM d_renamed),
          '9 of 9', 'one feature renamed: 9 rows, and only the two unshared ones moved');
SELECT is((SELECT array_agg(ROW(feature, rank_a, rank_b, abs(mean_abs_diff - (
                     SELECT avg(abs(e.shap_value)) FROM treeshap.explain_shap('reg', 'SELECT * FROM d_rows') e
                      WHERE e.feature = 'MedInc')) <= 1e-12)::text ORDER BY feature)
             FROM d_renamed WHERE feature IN ('MedInc', 'MedIncome')),
          ARRAY[ROW('MedInc', (SELECT rank_a FROM d_renamed WHERE feature = 'MedInc'), 9, true)::text,
                ROW('MedIncome', 9, (SELECT rank_a FROM d_renamed WHERE feature = 'MedInc'), true)::text],
          'a feature one model lacks counts as 0 there: it ranks last, and moved by its mean |phi|');

SELECT throws_ok($$SELECT * FROM treeshap.explanation_diff('reg', 'reg_v3',
                     'SELECT * FROM d_rows UNION ALL SELECT * FROM d_rows WHERE id = 5')$$,
                 '21000', 'explanation_diff needs a unique row key', 'a repeated row key is refused');

-- the README's regression test of a candidate model: no feature's contribution moves by
-- more than 0.5 on any row, and no feature moves more than two places in the ranking
SELECT is_empty($$SELECT output, feature FROM treeshap.explanation_diff('reg', 'reg', 'SELECT * FROM d_rows')
                   WHERE max_abs_diff > 0.5 OR abs(rank_change) > 2$$,
                'README example: a candidate equal to production passes');
SELECT isnt_empty($$SELECT output, feature FROM treeshap.explanation_diff('reg', 'reg_v3', 'SELECT * FROM d_rows')
                     WHERE max_abs_diff > 0.001 OR abs(rank_change) > 0$$,
                  'README example with a tight tolerance: reg_v3 as the candidate fails it');

SELECT * FROM finish();
ROLLBACK;
