-- Treelite checkpoints (issue 39): scikit-learn's forests and boosted trees
-- and forests built through Treelite's model builder. t01, t08 and t20 check
-- every tl_ fixture with the others; this file pins what they do not: shap's
-- values of the scikit-learn models within 1e-6, additivity against the
-- models' own outputs within 1e-9, what the catalog says of them, the model
-- without node statistics, and the refusals.
BEGIN;
\ir setup.sql
SELECT plan(18);

CREATE TEMP TABLE tl AS SELECT fixture FROM fx_list WHERE fixture LIKE 'tl\_%';

CREATE TEMP TABLE tl_got AS
SELECT f.fixture, w.row_key AS id, w.output, w.base_value, w.shap_values
  FROM tl f, treeshap.explain_shap_wide(f.fixture, pg_temp.fx_query(f.fixture)) w;

-- fx_expected: shap.TreeExplainer on the scikit-learn model (brute force for tl_ops), and the
-- model's own predict, predict_proba or decision_function
SELECT is((SELECT string_agg(fixture, ',' ORDER BY fixture) FROM tl t
            WHERE (SELECT max((SELECT max(abs(a - b)) FROM unnest(g.shap_values || g.base_value, e.contribs) u(a, b))
                              / greatest(1, abs(e.margin)))
                     FROM tl_got g JOIN fx_expected e USING (fixture, id, output)
                    WHERE g.fixture = t.fixture) > 1e-6),
          NULL, 'every Treelite fixture matches shap on the scikit-learn model within 1e-6');

SELECT is((SELECT string_agg(fixture, ',' ORDER BY fixture) FROM tl t
            WHERE (SELECT max(abs((SELECT sum(a) FROM unnest(g.shap_values) a) + g.base_value - e.margin)
                              / greatest(1, abs(e.margin)))
                     FROM tl_got g JOIN fx_expected e USING (fixture, id, output)
                    WHERE g.fixture = t.fixture) > 1e-9),
          NULL, 'sum(phi) + base equals predict / predict_proba / decision_function within 1e-9');

SELECT is((SELECT count(*) FROM tl_got g JOIN fx_expected e USING (fixture, id, output)),
          (SELECT count(*) FROM fx_expected WHERE fixture IN (SELECT fixture FROM tl)),
          'a result for every (row, output) of every Treelite fixture');

SELECT results_eq(
    $$SELECT name, format, num_outputs, objective FROM treeshap.models
       WHERE name IN ('tl_rf_reg', 'tl_rf_multi', 'tl_gb_binary', 'tl_hgb_reg', 'tl_ops') ORDER BY name$$,
    $$VALUES ('tl_gb_binary', 'treelite', 1, 'sigmoid'), ('tl_hgb_reg', 'treelite', 1, 'identity'),
             ('tl_ops', 'treelite', 1, 'identity'), ('tl_rf_multi', 'treelite', 3, 'identity_multiclass'),
             ('tl_rf_reg', 'treelite', 1, 'identity')$$,
    'the catalog: format treelite, outputs per class, the postprocessor as objective');

-- a random forest's prediction is the mean of its trees: class probabilities summing to 1
SELECT is((SELECT count(*) FROM (SELECT row_key, sum(prediction) AS s
                                   FROM treeshap.predict('tl_rf_multi', pg_temp.fx_query('tl_rf_multi'))
                                  GROUP BY row_key) p WHERE abs(s - 1) > 1e-12),
          0::bigint, 'a forest classifier''s probabilities sum to 1 for every row');

SELECT is((SELECT count(*) FROM treeshap.predict('tl_gb_binary', pg_temp.fx_query('tl_gb_binary')) p
             JOIN fx_expected e ON e.fixture = 'tl_gb_binary' AND e.id = p.row_key
            WHERE abs(p.prediction - 1 / (1 + exp(-e.margin))) > 1e-12),
          0::bigint, 'a boosted classifier''s prediction is the logistic of its decision function');

-- tl_nocover: no data_count nor sum_hess
SELECT throws_ok($$SELECT * FROM treeshap.explain_shap_wide('tl_nocover', pg_temp.fx_query('tl_nocover'))$$,
                 '0A000', 'model "tl_nocover" has no node sample counts, which path-dependent SHAP needs',
                 'a model without node statistics is refused for path-dependent SHAP');
SELECT throws_ok($$SELECT * FROM treeshap.explain_interactions('tl_nocover', pg_temp.fx_query('tl_nocover'))$$,
                 '0A000', NULL, 'and for interactions');
SELECT throws_ok($$SELECT treeshap.shap_values('tl_nocover', ARRAY[0, 0, 0, 0, 1, 2]::float8[])$$,
                 '0A000', NULL, 'and for one row''s values');
SELECT is((SELECT count(*) FROM treeshap.predict('tl_nocover', pg_temp.fx_query('tl_nocover'))),
          200::bigint, 'it predicts');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('tl_nocover', pg_temp.fx_query('tl_nocover'),
                                                           background => pg_temp.fx_background('tl_nocover'))),
          200::bigint, 'and explains against a background (t20 checks the values)');

-- the refusals
CREATE FUNCTION pg_temp.try_load(m bytea) RETURNS void LANGUAGE sql AS $$
    SELECT treeshap._store_model('hostile', m, true)
$$;
\set two `base64 -w0 test/fixtures/tl_two_targets.tlx`
\set iforest `base64 -w0 test/fixtures/tl_iforest.tlx`
SELECT throws_ok(format('SELECT pg_temp.try_load(decode(%L, ''base64''))', :'two'), '0A000',
                 'could not read model "hostile": Treelite model has 2 targets; models of one target are supported',
                 'a model of two targets is refused');
SELECT throws_ok(format('SELECT pg_temp.try_load(decode(%L, ''base64''))', :'iforest'), '0A000',
                 'could not read model "hostile": isolation forests are not supported',
                 'an isolation forest is refused');
SELECT throws_like($$SELECT pg_temp.try_load(substring(treeshap.model_bytes('tl_gb_reg') FROM 1 FOR 5000))$$,
                   '%Treelite checkpoint is truncated%', 'a truncated checkpoint is refused');
SELECT throws_ok($$SELECT pg_temp.try_load(treeshap.model_bytes('tl_gb_reg') || '\x00'::bytea)$$, '22P02',
                 'could not read model "hostile": Treelite checkpoint has 1 bytes after its last tree',
                 'and one with bytes after its last tree');
SELECT throws_ok($$SELECT pg_temp.try_load(overlay(treeshap.model_bytes('tl_gb_reg') PLACING '\x0300000009000000'::bytea FROM 1))$$,
                 '0A000',
                 'could not read model "hostile": Treelite checkpoint version 3.9 is not supported: load it with Treelite 4 and serialize it again',
                 'a version 3 checkpoint is refused, saying what to do');
-- fixtures edited into hostile checkpoints (make_treelite.py's hostile_fixtures)
CREATE TEMP TABLE tl_bad (file text, state text, message text);
INSERT INTO tl_bad VALUES
    ('tl_bad_node_type', '22023', 'tree 0 node 0: its node type 0 does not match its children (1, 8)'),
    ('tl_bad_leaf_vectors', '22023', 'tree 0 has 26 leaves but 3 leaf vector values'),
    ('tl_bad_categories', '54000', 'tree 1 model''s category sets are too large for its size'),
    ('tl_bad_sigmoid', '0A000', 'Treelite postprocessor "sigmoid" transforms one output; the model has 2');
\set bad_node_type `base64 -w0 test/fixtures/tl_bad_node_type.tlx`
\set bad_leaf_vectors `base64 -w0 test/fixtures/tl_bad_leaf_vectors.tlx`
\set bad_categories `base64 -w0 test/fixtures/tl_bad_categories.tlx`
\set bad_sigmoid `base64 -w0 test/fixtures/tl_bad_sigmoid.tlx`
CREATE TEMP TABLE tl_bad_bytes (file text, b bytea);
INSERT INTO tl_bad_bytes VALUES ('tl_bad_node_type', decode(:'bad_node_type', 'base64')),
    ('tl_bad_leaf_vectors', decode(:'bad_leaf_vectors', 'base64')),
    ('tl_bad_categories', decode(:'bad_categories', 'base64')), ('tl_bad_sigmoid', decode(:'bad_sigmoid', 'base64'));
CREATE FUNCTION pg_temp.refusal(f text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_temp.try_load((SELECT b FROM tl_bad_bytes WHERE file = f));
    RETURN 'loaded';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SELECT is((SELECT string_agg(file || ' ' || pg_temp.refusal(file), '; ' ORDER BY file) FROM tl_bad
            WHERE pg_temp.refusal(file) <> state || ': could not read model "hostile": ' || message),
          NULL, 'a leaf with children, leaves sharing one leaf vector, a huge category in every list and sigmoid over two classes are refused, each saying why');
SELECT is((SELECT count(*) FROM treeshap.models WHERE name = 'hostile'), 0::bigint, 'and none is stored');

SELECT * FROM finish();
ROLLBACK;
