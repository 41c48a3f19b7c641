-- Interventional SHAP against a background (issue 19): every fixture with a
-- reference (test/fixtures/make_interventional.py: shap's interventional
-- TreeExplainer, or brute force over all feature subsets where shap reads a
-- model wrongly or not at all) within 1e-6 relative, margins and, where the
-- link maps outputs one by one, probabilities; additivity against predict()
-- to 1e-9; every SHAP form agreeing; threads bitwise; the errors.
BEGIN;
\ir setup.sql

-- the background grouped per path on the CPU, whatever the rows (auto walks calls of
-- fewer rows than the grouping pays for: the walk is checked on its own below)
SET LOCAL treeshap.background_grouping = always;

CREATE TEMP TABLE iv_list (fixture text PRIMARY KEY);
INSERT INTO iv_list VALUES ('reg'), ('binary'), ('multiclass'), ('nan'), ('deep'), ('dart'),
    ('poisson'), ('reg_v3'), ('binary_v3'), ('multiclass_v3'), ('lgb_reg'), ('lgb_binary'),
    ('lgb_multiclass'), ('lgb_zero'), ('lgb_none'), ('xgb_reg_ubj'), ('xgb_cat_ubj'),
    ('xgb_cat_multi'), ('cb_reg'), ('cb_binary'), ('cb_multiclass'),
    ('tl_rf_reg'), ('tl_rf_binary'), ('tl_rf_multi'), ('tl_et_reg'), ('tl_et_binary'), ('tl_et_multi'),
    ('tl_gb_reg'), ('tl_gb_binary'), ('tl_hgb_reg'), ('tl_hgb_binary'), ('tl_deep'), ('tl_ops'), ('tl_nocover'),
    ('tl_hgb_cat');
CREATE TEMP TABLE iv_expected (fixture text, id bigint, output int, space text, base float8,
                               phi float8[]);
\set QUIET 1
\set f reg
\ir load_interventional.sql
\set f binary
\ir load_interventional.sql
\set f multiclass
\ir load_interventional.sql
\set f nan
\ir load_interventional.sql
\set f deep
\ir load_interventional.sql
\set f dart
\ir load_interventional.sql
\set f poisson
\ir load_interventional.sql
\set f reg_v3
\ir load_interventional.sql
\set f binary_v3
\ir load_interventional.sql
\set f multiclass_v3
\ir load_interventional.sql
\set f lgb_reg
\ir load_interventional.sql
\set f lgb_binary
\ir load_interventional.sql
\set f lgb_multiclass
\ir load_interventional.sql
\set f lgb_zero
\ir load_interventional.sql
\set f lgb_none
\ir load_interventional.sql
\set f xgb_reg_ubj
\ir load_interventional.sql
\set f xgb_cat_ubj
\ir load_interventional.sql
\set f xgb_cat_multi
\ir load_interventional.sql
\set f cb_reg
\ir load_interventional.sql
\set f cb_binary
\ir load_interventional.sql
\set f cb_multiclass
\ir load_interventional.sql
\set f tl_rf_reg
\ir load_interventional.sql
\set f tl_rf_binary
\ir load_interventional.sql
\set f tl_rf_multi
\ir load_interventional.sql
\set f tl_et_reg
\ir load_interventional.sql
\set f tl_et_binary
\ir load_interventional.sql
\set f tl_et_multi
\ir load_interventional.sql
\set f tl_gb_reg
\ir load_interventional.sql
\set f tl_gb_binary
\ir load_interventional.sql
\set f tl_hgb_reg
\ir load_interventional.sql
\set f tl_hgb_binary
\ir load_interventional.sql
\set f tl_deep
\ir load_interventional.sql
\set f tl_ops
\ir load_interventional.sql
\set f tl_nocover
\ir load_interventional.sql
\set f tl_hgb_cat
\ir load_interventional.sql
\set QUIET 0

-- the rows explained and the background, as make_interventional.py chose them (the
-- rows id <= 25, or the first 3 where a wide model has brute-force references only)
CREATE FUNCTION pg_temp.iv_rows(f text) RETURNS text LANGUAGE sql AS $$
    SELECT pg_temp.fx_query(f)
           || format(' AND id <= (SELECT max(id) FROM pg_temp.iv_expected WHERE fixture = %L) ORDER BY id', f)
$$;

SELECT plan((SELECT 4 * count(*)::int FROM iv_list)
            + (SELECT 2 * count(DISTINCT fixture)::int FROM iv_expected WHERE space = 'probability')
            + 24);

CREATE TEMP TABLE iv_got AS
SELECT f.fixture, s.space, w.row_key AS id, w.output, w.base_value, w.shap_values
  FROM iv_list f, (VALUES ('margin'), ('probability')) s(space),
       LATERAL treeshap.explain_shap_wide(f.fixture, pg_temp.iv_rows(f.fixture), NULL::bigint,
                                          model_output => s.space::treeshap.shap_output,
                                          background => pg_temp.fx_background(f.fixture)) w
 WHERE s.space = 'margin' OR EXISTS (SELECT 1 FROM iv_expected e
                                      WHERE e.fixture = f.fixture AND e.space = 'probability');

CREATE TEMP TABLE iv_err AS
SELECT g.fixture, g.space, g.id, g.output,
       (SELECT max(abs(a - b)) FROM unnest(g.shap_values || g.base_value, e.phi || e.base) AS u(a, b))
         / greatest(1, abs(e.base + (SELECT sum(v) FROM unnest(e.phi) v))) AS rel_err,
       abs((SELECT sum(a) FROM unnest(g.shap_values) a) + g.base_value
           - CASE g.space WHEN 'margin' THEN p.margin ELSE p.prediction END)
         / greatest(1, abs(p.margin)) AS additivity_err
  FROM iv_got g
  JOIN iv_expected e USING (fixture, space, id, output)
  JOIN LATERAL treeshap.predict(g.fixture, pg_temp.iv_rows(g.fixture)) p
    ON p.row_key = g.id AND p.output = g.output;

SELECT is((SELECT count(*) FROM iv_got g WHERE g.fixture = f.fixture AND g.space = 'margin'),
          (SELECT count(*) FROM iv_expected e WHERE e.fixture = f.fixture AND e.space = 'margin'),
          f.fixture || ': one wide row per (row, output) against the background')
  FROM iv_list f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(rel_err) FROM iv_err e WHERE e.fixture = f.fixture AND e.space = 'margin'),
              '<=', 1e-6::float8, f.fixture || ': margins match the reference within 1e-6 relative')
  FROM iv_list f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(additivity_err) FROM iv_err e WHERE e.fixture = f.fixture AND e.space = 'margin'),
              '<=', 1e-9::float8, f.fixture || ': sum(phi) + base equals predict()''s margin within 1e-9')
  FROM iv_list f ORDER BY f.fixture;

-- the base value is the background's mean margin, whatever row is explained
SELECT is((SELECT count(DISTINCT (g.output, g.base_value)) FROM iv_got g
            WHERE g.fixture = f.fixture AND g.space = 'margin'),
          (SELECT count(DISTINCT e.output) FROM iv_expected e WHERE e.fixture = f.fixture),
          f.fixture || ': one base value per output')
  FROM iv_list f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(rel_err) FROM iv_err e WHERE e.fixture = f.fixture AND e.space = 'probability'),
              '<=', 1e-6::float8, f.fixture || ': probabilities match the reference within 1e-6 relative')
  FROM (SELECT DISTINCT fixture FROM iv_expected WHERE space = 'probability') f ORDER BY f.fixture;

SELECT cmp_ok((SELECT max(additivity_err) FROM iv_err e WHERE e.fixture = f.fixture AND e.space = 'probability'),
              '<=', 1e-9::float8, f.fixture || ': sum(phi) + base equals predict()''s prediction within 1e-9')
  FROM (SELECT DISTINCT fixture FROM iv_expected WHERE space = 'probability') f ORDER BY f.fixture;

-- the other forms against the wide one
SELECT is((SELECT count(*) FROM treeshap.explain_shap('binary', pg_temp.iv_rows('binary'), NULL::bigint,
                                                      model_output => 'probability',
                                                      background => pg_temp.fx_background('binary')) l
             JOIN iv_got g ON g.fixture = 'binary' AND g.space = 'probability' AND g.id = l.row_key
             JOIN treeshap.models m ON m.name = 'binary'
            WHERE l.shap_value IS DISTINCT FROM g.shap_values[array_position(m.feature_names, l.feature)]),
          0::bigint, 'long form equals the wide form, in probability space');

SELECT is((SELECT count(*) FROM treeshap.explain_top_features('multiclass', pg_temp.iv_rows('multiclass'),
                                                              NULL::bigint, 3,
                                                              background => pg_temp.fx_background('multiclass')) t
             JOIN iv_got g ON g.fixture = 'multiclass' AND g.space = 'margin' AND g.id = t.row_key
                          AND g.output = t.output
            WHERE t.shap_value IS DISTINCT FROM
                  (SELECT v FROM unnest(g.shap_values) WITH ORDINALITY u(v, i)
                    ORDER BY abs(v) DESC, i LIMIT 1 OFFSET t.rank - 1)
               OR t.base_value IS DISTINCT FROM g.base_value),
          0::bigint, 'top features against the background are the largest of the wide form''s');
SELECT is((SELECT count(*) FROM (
             (SELECT row_key, output, prediction, base_value, array_agg(feature ORDER BY rank) AS features,
                     array_agg(shap_value ORDER BY rank) AS shap_values
                FROM treeshap.explain_top_features('multiclass', pg_temp.iv_rows('multiclass'), NULL::bigint, 3,
                                                   background => pg_temp.fx_background('multiclass'))
               GROUP BY 1, 2, 3, 4)
             EXCEPT ALL
             SELECT * FROM treeshap.explain_top_features_wide('multiclass', pg_temp.iv_rows('multiclass'),
                                                              NULL::bigint, 3,
                                                              background => pg_temp.fx_background('multiclass'))) d),
          0::bigint, 'top features in one row against the background: the long form''s, by rank');

SELECT is((SELECT count(*) FROM treeshap.explain_top_features('binary', pg_temp.iv_rows('binary'),
                                                              NULL::bigint, 2, 'probability',
                                                              pg_temp.fx_background('binary')) t
             JOIN treeshap.predict('binary', pg_temp.iv_rows('binary')) p ON p.row_key = t.row_key
            WHERE abs(t.prediction - p.prediction) > 1e-12),
          0::bigint, 'top features in probability space: the prediction is the probability');

SELECT is((SELECT count(*) FROM treeshap.feature_importance('lgb_reg', pg_temp.iv_rows('lgb_reg'),
                                                            background => pg_temp.fx_background('lgb_reg')) i
             JOIN treeshap.models m ON m.name = 'lgb_reg'
             JOIN (SELECT g.output, u.i, avg(abs(u.v)) AS mean_abs, avg(u.v) AS mean
                     FROM iv_got g, unnest(g.shap_values) WITH ORDINALITY u(v, i)
                    WHERE g.fixture = 'lgb_reg' AND g.space = 'margin' GROUP BY 1, 2) a
               ON a.output = i.output AND m.feature_names[a.i] = i.feature
            WHERE abs(i.mean_abs_shap - a.mean_abs) > 1e-12 OR abs(i.mean_shap - a.mean) > 1e-12
               OR i.rows <> 25),
          0::bigint, 'importance against the background is the mean of the wide form''s');

CREATE TEMP TABLE iv_table AS SELECT * FROM fx_houses WHERE id <= 25;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'iv_table'::regclass, 'id', NULL::bigint,
                                                           background => pg_temp.fx_background('reg')) t
             JOIN iv_got g ON g.fixture = 'reg' AND g.space = 'margin' AND g.id = t.row_key
            WHERE t.shap_values IS DISTINCT FROM g.shap_values OR t.base_value IS DISTINCT FROM g.base_value),
          0::bigint, 'table input against the background equals query input');

-- a row against itself: nothing to attribute, and the base is its own margin
SELECT is((SELECT bool_and(w.shap_values = array_fill(0::float8, ARRAY[8])
                           AND w.base_value = p.margin)
             FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM iv_table WHERE id = 7', NULL::bigint,
                                             background => 'SELECT * FROM iv_table WHERE id = 7') w,
                  treeshap.predict('reg', 'SELECT * FROM iv_table WHERE id = 7') p),
          true, 'a row explained against itself has zero values and its own margin as base');

-- threads: the bytes one thread gives
SET LOCAL treeshap.cpu_threads = 3;
SET LOCAL treeshap.batch_rows = 4;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('deep', pg_temp.iv_rows('deep'), NULL::bigint,
                                                           background => pg_temp.fx_background('deep')) t
             JOIN iv_got g ON g.fixture = 'deep' AND g.space = 'margin' AND g.id = t.row_key
                          AND g.output = t.output
            WHERE t.shap_values IS DISTINCT FROM g.shap_values),
          0::bigint, 'three threads, batches of 4 rows: bitwise the values of the default run');
RESET treeshap.cpu_threads;
RESET treeshap.batch_rows;

-- the walk down every tree per background row (background_grouping = never): the
-- reference's values, and the grouped background's
SET LOCAL treeshap.device = cpu;
SET LOCAL treeshap.background_grouping = never;
CREATE TEMP TABLE iv_walk AS
SELECT g.fixture, g.space, w.row_key AS id, w.output, w.base_value, w.shap_values
  FROM (SELECT DISTINCT fixture, space FROM iv_got) g,
       LATERAL treeshap.explain_shap_wide(g.fixture, pg_temp.iv_rows(g.fixture), NULL::bigint,
                                          model_output => g.space::treeshap.shap_output,
                                          background => pg_temp.fx_background(g.fixture)) w;
CREATE TEMP TABLE iv_long_walk AS
SELECT row_key, base_value, shap_values
  FROM treeshap.explain_shap_wide('long', pg_temp.fx_query('long') || ' AND id <= 10', NULL::bigint,
                                  background => pg_temp.fx_background('long'));
-- where grouping would take more than background_plan_memory, and under auto for a
-- call of one row of a deep model, the CPU walks: the walk's bytes
SET LOCAL treeshap.background_grouping = always;
SET LOCAL treeshap.background_plan_memory = 0;
CREATE TEMP TABLE iv_no_memory AS
SELECT row_key, output, shap_values
  FROM treeshap.explain_shap_wide('deep', pg_temp.iv_rows('deep'), NULL::bigint,
                                  background => pg_temp.fx_background('deep'));
RESET treeshap.background_plan_memory;
SET LOCAL treeshap.background_grouping = auto;
CREATE TEMP TABLE iv_one_row AS
SELECT row_key, output, shap_values
  FROM treeshap.explain_shap_wide('deep', pg_temp.fx_query('deep') || ' AND id = 3', NULL::bigint,
                                  background => pg_temp.fx_background('deep'));
SET LOCAL treeshap.background_grouping = always;
RESET treeshap.device;
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(w.shap_values || w.base_value,
                                                              e.phi || e.base) AS u(a, b))
                          / greatest(1, abs(e.base + (SELECT sum(v) FROM unnest(e.phi) v))))
                 FROM iv_walk w JOIN iv_expected e USING (fixture, space, id, output)),
              '<=', 1e-6::float8, 'the walk (background_grouping = never): every fixture''s reference within 1e-6');
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(w.shap_values, g.shap_values) AS u(a, b))
                          / greatest(1, abs(g.base_value)))
                 FROM iv_walk w JOIN iv_got g USING (fixture, space, id, output)),
              '<=', 1e-12::float8, 'the walk and the background grouped per path agree within 1e-12');
SELECT is((SELECT count(*) FROM iv_no_memory n
             JOIN iv_walk w ON w.fixture = 'deep' AND w.space = 'margin' AND w.id = n.row_key
                           AND w.output = n.output
            WHERE n.shap_values IS DISTINCT FROM w.shap_values),
          0::bigint, 'background_plan_memory = 0: the walk''s values, bit for bit');
SELECT is((SELECT count(*) FROM iv_one_row n
             JOIN iv_walk w ON w.fixture = 'deep' AND w.space = 'margin' AND w.id = n.row_key
                           AND w.output = n.output
            WHERE n.shap_values IS DISTINCT FROM w.shap_values),
          0::bigint, 'auto, one row of a deep model: walked, the walk''s values bit for bit');

-- in probability space the grouped background lists each path's rows by group, in 16
-- bits up to 65,536 rows and in 32 beyond: both against the walk
SET LOCAL treeshap.device = cpu;
SELECT format('CREATE TEMP TABLE iv_big AS SELECT q.* FROM (%s) q, generate_series(1, 328)',
              pg_temp.fx_query('binary')) \gexec
CREATE TEMP TABLE iv_wide_lists (background_rows int, grouping text, row_key bigint, shap_values float8[]);
CREATE FUNCTION pg_temp.iv_wide_list(n int) RETURNS void LANGUAGE sql AS $$
    INSERT INTO iv_wide_lists
    SELECT n, current_setting('treeshap.background_grouping'), e.row_key, e.shap_values
      FROM treeshap.explain_shap_wide('binary', pg_temp.fx_query('binary') || ' AND id <= 2', NULL::bigint,
                                      model_output => 'probability',
                                      background => format('SELECT * FROM iv_big LIMIT %s', n)) e
$$;
DO $$ BEGIN PERFORM pg_temp.iv_wide_list(65536); PERFORM pg_temp.iv_wide_list(65537); END $$;
SET LOCAL treeshap.background_grouping = never;
DO $$ BEGIN PERFORM pg_temp.iv_wide_list(65536); PERFORM pg_temp.iv_wide_list(65537); END $$;
SET LOCAL treeshap.background_grouping = always;
RESET treeshap.device;
SELECT is((SELECT count(DISTINCT (background_rows, grouping)) FROM iv_wide_lists), 4::bigint,
          'binary in probability space against 65,536 and 65,537 background rows, grouped and walked');
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(g.shap_values, w.shap_values) AS u(a, b)))
                 FROM iv_wide_lists g JOIN iv_wide_lists w USING (background_rows, row_key)
                WHERE g.grouping = 'always' AND w.grouping = 'never'),
              '<=', 1e-12::float8, 'rows listed in 16 bits (65,536) and 32 (65,537): the walk''s values within 1e-12');

-- 'long' has paths of 40 features, past a mask of 32: they take the path form
CREATE TEMP TABLE iv_long AS
SELECT row_key, base_value, shap_values
  FROM treeshap.explain_shap_wide('long', pg_temp.fx_query('long') || ' AND id <= 10', NULL::bigint,
                                  background => pg_temp.fx_background('long'));
SELECT cmp_ok((SELECT max((SELECT max(abs(a - b)) FROM unnest(l.shap_values, w.shap_values) AS u(a, b))
                          / greatest(1, abs(w.base_value)))
                 FROM iv_long l JOIN iv_long_walk w USING (row_key)),
              '<=', 1e-9::float8, 'long: paths of 40 features, grouped and walked, agree within 1e-9');
SELECT cmp_ok((SELECT max(abs((SELECT sum(v) FROM unnest(l.shap_values) v) + l.base_value - p.margin)
                          / greatest(1, abs(p.margin)))
                 FROM iv_long l JOIN treeshap.predict('long', pg_temp.fx_query('long') || ' AND id <= 10') p
                   ON p.row_key = l.row_key),
              '<=', 1e-9::float8, 'long: sum(phi) + base equals predict()''s margin within 1e-9');

-- errors
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap('binary', 'SELECT * FROM iv_table', NULL::bigint,
                                                        model_output => 'probability')$$,
                 '0A000', 'model_output => ''probability'' needs a background',
                 'probability space without a background is refused');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM iv_table', NULL::bigint,
                                                             background => 'SELECT * FROM iv_table WHERE false')$$,
                 '22023', 'background query returned no rows', 'an empty background is refused');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('multiclass', pg_temp.iv_rows('multiclass'), NULL::bigint,
                                                             model_output => 'probability',
                                                             background => pg_temp.fx_background('multiclass'))$$,
                 '0A000', 'model_output => ''probability'' is not available for softmax models yet',
                 'softmax probabilities are refused, not approximated');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM iv_table', NULL::bigint,
                                                             background => 'SELECT 1 AS "MedInc"')$$,
                 '42703', NULL, 'a background without a feature''s column is refused');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM iv_table', NULL::bigint,
                                                             model_output => NULL,
                                                             background => 'SELECT * FROM iv_table')$$,
                 '22004', 'model_output must not be null', 'a NULL model_output is refused');
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM iv_table', NULL::bigint,
                                                             background => 'DELETE FROM iv_table RETURNING *')$$,
                 '42P11', NULL, 'a background that is not a SELECT is refused');

-- the path-dependent default is untouched by the new arguments
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', pg_temp.iv_rows('reg'), NULL::bigint) a
             JOIN treeshap.explain_shap_wide('reg', pg_temp.iv_rows('reg')) b USING (row_key, output)
            WHERE a.shap_values IS DISTINCT FROM b.shap_values),
          0::bigint, 'without a background the values are the path-dependent ones');
SELECT isnt((SELECT w.shap_values FROM treeshap.explain_shap_wide('reg', pg_temp.iv_rows('reg')) w
              WHERE w.row_key = 1),
            (SELECT g.shap_values FROM iv_got g WHERE g.fixture = 'reg' AND g.space = 'margin' AND g.id = 1),
            'interventional values differ from the path-dependent ones');

SELECT * FROM finish();
ROLLBACK;
