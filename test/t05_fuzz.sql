-- 800 randomly mutated copies of XGBoost JSON fixtures, 600 of an XGBoost
-- UBJSON fixture, 600 of a LightGBM text fixture, 400 of a CatBoost JSON
-- fixture, 700 of models with category names and 400 of a Treelite checkpoint
-- go through load_model (and, when one loads, through explain and predict). Every failure must be
-- a clean ERROR of a documented class; afterwards the server is up, the
-- session usable and the catalog unchanged.
BEGIN;
\ir setup.sql
SELECT plan(13);
CREATE TEMP TABLE catalog_before AS SELECT name, version FROM treeshap.model_store;
CREATE TEMP TABLE outcome (kind int, sqlstate text);

CREATE FUNCTION pg_temp.mutate(b bytea, kind int) RETURNS bytea LANGUAGE plpgsql AS $$
DECLARE
    n int := octet_length(b);
    pos int := 1 + floor(random() * (n - 1))::int;
    j jsonb;
    keys text[] := ARRAY['left_children','right_children','split_indices','split_conditions',
                         'sum_hessian','default_left','split_type'];
    vals jsonb[] := ARRAY['-1','0','1','2','-7','99999','2147483648','1e308','-0.0','"x"','null',
                          '[]','{}','true','1.5','-2147483649']::jsonb[];
    params text[] := ARRAY['num_feature','num_class','base_score','num_target'];
    pvals jsonb[] := ARRAY['"-1"','"0"','"abc"','"1e400"','"[0.5,0.5]"','"99999999"','3','null',
                           '"[]"','"["','"0.5,"']::jsonb[];
    ntrees int;
BEGIN
    CASE kind
    WHEN 0 THEN  -- overwrite 1..8 random bytes
        FOR i IN 1 .. 1 + floor(random() * 8)::int LOOP
            b := set_byte(b, floor(random() * n)::int, floor(random() * 256)::int);
        END LOOP;
        RETURN b;
    WHEN 1 THEN RETURN substring(b FROM 1 FOR pos);                       -- truncate
    WHEN 2 THEN RETURN substring(b FROM 1 FOR pos) || substring(b FROM pos + 1 + floor(random() * 200)::int);  -- delete a span
    WHEN 3 THEN RETURN substring(b FROM 1 FOR pos) || substring(b FROM pos FOR floor(random() * 100)::int) || substring(b FROM pos + 1);  -- duplicate a span
    WHEN 4 THEN  -- one hostile value in a tree array
        j := convert_from(b, 'UTF8')::jsonb;
        ntrees := jsonb_array_length(j #> '{learner,gradient_booster,model,trees}');
        RETURN convert_to(jsonb_set(j, ARRAY['learner','gradient_booster','model','trees',
                   floor(random() * ntrees)::text, keys[1 + floor(random() * 7)::int],
                   floor(random() * 12)::text], vals[1 + floor(random() * 16)::int])::text, 'UTF8');
    WHEN 5 THEN  -- a hostile learner parameter
        j := convert_from(b, 'UTF8')::jsonb;
        RETURN convert_to(jsonb_set(j, ARRAY['learner','learner_model_param', params[1 + floor(random() * 4)::int]],
                                    pvals[1 + floor(random() * 11)::int])::text, 'UTF8');
    ELSE         -- swap a digit for a JSON metacharacter
        RETURN overlay(b PLACING convert_to(substr('[]{}",:-.eE0 ', 1 + floor(random() * 13)::int, 1), 'UTF8')
                       FROM pos FOR 1);
    END CASE;
END $$;

-- LightGBM text: one hostile token in a random "key=values" line, or a line dropped or doubled
CREATE FUNCTION pg_temp.mutate_lines(b bytea) RETURNS bytea LANGUAGE plpgsql AS $$
DECLARE
    lines text[] := string_to_array(convert_from(b, 'UTF8'), E'\n');
    i int := 1 + floor(random() * array_length(lines, 1))::int;
    toks text[];
    hostile text[] := ARRAY['-1','0','1','7','-7','1e308','nan','inf','-inf','2147483648','-2147483649',
                            '99999999','','x','1.5','-0','4294967296','15','8','1e-45'];
BEGIN
    CASE floor(random() * 4)::int
    WHEN 0 THEN lines := lines[1:i - 1] || lines[i + 1:];
    WHEN 1 THEN lines := lines[1:i] || lines[i:];
    ELSE
        IF position('=' IN lines[i]) > 0 THEN
            toks := string_to_array(split_part(lines[i], '=', 2), ' ');
            toks[1 + floor(random() * coalesce(array_length(toks, 1), 1))::int] :=
                hostile[1 + floor(random() * array_length(hostile, 1))::int];
            lines[i] := split_part(lines[i], '=', 1) || '=' || array_to_string(toks, ' ');
        END IF;
    END CASE;
    RETURN convert_to(array_to_string(lines, E'\n'), 'UTF8');
END $$;

-- Treelite: a hostile little-endian word (a count, a node type, a child, a threshold) anywhere
CREATE FUNCTION pg_temp.mutate_words(b bytea) RETURNS bytea LANGUAGE sql VOLATILE AS $$
    SELECT overlay(b PLACING w FROM 1 + floor(random() * (octet_length(b) - 8))::int)
      FROM (SELECT (ARRAY['\xffffffff', '\x00000000', '\x7fffffff', '\x00000080', '\x03000000',
                          '\x05000000', '\x0100000000000000', '\xffffffffffffffff', '\x0000c07f',
                          '\x000000000000f07f', '\x0000000000000080']::bytea[])[1 + floor(random() * 11)::int] AS w) h
$$;

-- one mutant of a UBJSON, LightGBM, CatBoost or Treelite fixture through load, explain and predict
CREATE FUNCTION pg_temp.try_mutant(src text, k int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    m bytea := treeshap.model_bytes(src);
BEGIN
    m := CASE WHEN k = 7 THEN pg_temp.mutate_words(m)
              WHEN k < 4 OR k >= 6 THEN pg_temp.mutate(m, k) ELSE pg_temp.mutate_lines(m) END;
    BEGIN
        PERFORM treeshap.load_model('fuzz_target', m, replace => true);
        PERFORM count(*) FROM treeshap.explain_shap_wide('fuzz_target',
                    pg_temp.fx_query(src) || ' AND id <= 20');
        PERFORM count(*) FROM treeshap.predict('fuzz_target', pg_temp.fx_query(src) || ' AND id <= 20');
        INSERT INTO outcome VALUES (100 + k, 'loaded');
    EXCEPTION WHEN OTHERS THEN
        INSERT INTO outcome VALUES (100 + k, SQLSTATE);
    END;
END $$;

CREATE FUNCTION pg_temp.fuzz(rounds int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    src text;
    m bytea;
    k int;
BEGIN
    PERFORM setseed(0.20261121);
    FOR i IN 1 .. rounds LOOP
        src := (ARRAY['dart','poisson','multiclass_v3'])[1 + i % 3];
        k := floor(random() * 7)::int;
        m := pg_temp.mutate(treeshap.model_bytes(src), k);
        BEGIN
            PERFORM treeshap.load_model('fuzz_target', m, replace => true);
            PERFORM count(*) FROM treeshap.explain_shap_wide('fuzz_target',
                        pg_temp.fx_query(src) || ' AND id <= 20');
            PERFORM count(*) FROM treeshap.predict('fuzz_target', pg_temp.fx_query(src) || ' AND id <= 20');
            INSERT INTO outcome VALUES (k, 'loaded');
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO outcome VALUES (k, SQLSTATE);
        END;
    END LOOP;
    PERFORM treeshap.drop_model('fuzz_target', if_exists => true);
END $$;

SELECT lives_ok('SELECT pg_temp.fuzz(800)', '800 mutated models went through load_model');
SELECT cmp_ok((SELECT count(*) FROM outcome), '>=', 500::bigint, 'at least 500 mutants were tried');
SELECT lives_ok($$SELECT pg_temp.try_mutant('xgb_cat_ubj', floor(random() * 4)::int)
                    FROM generate_series(1, 600)$$, '600 mutated UBJSON models went through load_model');
SELECT lives_ok($$SELECT pg_temp.try_mutant('lgb_multiclass', floor(random() * 6)::int)
                    FROM generate_series(1, 600)$$, '600 mutated LightGBM models went through load_model');
SELECT lives_ok($$SELECT pg_temp.try_mutant('cb_multiclass', (ARRAY[0, 1, 2, 3, 6, 6])[1 + floor(random() * 6)::int])
                    FROM generate_series(1, 400)$$, '400 mutated CatBoost JSON models went through load_model');
SELECT lives_ok($$SELECT pg_temp.try_mutant('xgb_text_cats', (ARRAY[0, 1, 2, 3, 6])[1 + floor(random() * 5)::int])
                    FROM generate_series(1, 400)$$, '400 mutated XGBoost models with category names went through load_model');
SELECT lives_ok($$SELECT pg_temp.try_mutant('lgb_text_cats', floor(random() * 6)::int)
                    FROM generate_series(1, 300)$$, '300 mutated LightGBM models with pandas_categorical went through load_model');
SELECT lives_ok($$SELECT pg_temp.try_mutant('tl_ops', (ARRAY[0, 1, 2, 3, 7, 7])[1 + floor(random() * 6)::int])
                    FROM generate_series(1, 400)$$, '400 mutated Treelite checkpoints went through load_model');
SELECT cmp_ok((SELECT count(*) FROM outcome WHERE kind >= 100), '=', 2700::bigint,
              'every UBJSON, LightGBM, CatBoost and Treelite mutant was tried');
SELECT lives_ok($$SELECT treeshap.drop_model('fuzz_target', if_exists => true)$$, 'the fuzz target drops');
SELECT is((SELECT array_agg(DISTINCT sqlstate ORDER BY sqlstate) FROM outcome
            WHERE sqlstate NOT IN ('loaded', '22P02', '22023', '0A000', '54000', '42703', '42804', '22P05', '22021')),
          NULL, 'every refusal is a documented class of error');
SELECT set_eq('SELECT name, version FROM treeshap.model_store', 'SELECT * FROM catalog_before',
              'the catalog is unchanged');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('multiclass', pg_temp.fx_query('multiclass'))),
          800::bigint, 'the session and server still work');
SELECT diag(format('fuzz outcomes (%s): %s', fmt, string_agg(format('%s=%s', sqlstate, c), ', ' ORDER BY c DESC)))
  FROM (SELECT CASE WHEN kind < 100 THEN 'json' ELSE 'ubj+lightgbm+catboost+treelite' END AS fmt, sqlstate, count(*) c
          FROM outcome GROUP BY 1, 2) q GROUP BY fmt;
SELECT * FROM finish();
ROLLBACK;
