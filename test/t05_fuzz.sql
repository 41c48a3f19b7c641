-- 800 randomly mutated copies of fixture models go through load_model (and,
-- when one loads, through explain and predict). Every failure must be a
-- clean ERROR of a documented class; afterwards the server is up, the
-- session usable and the catalog unchanged.
BEGIN;
\ir setup.sql
SELECT plan(5);
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
SELECT is((SELECT array_agg(DISTINCT sqlstate ORDER BY sqlstate) FROM outcome
            WHERE sqlstate NOT IN ('loaded', '22P02', '22023', '0A000', '54000', '42703', '42804', '22P05', '22021')),
          NULL, 'every refusal is a documented class of error');
SELECT set_eq('SELECT name, version FROM treeshap.model_store', 'SELECT * FROM catalog_before',
              'the catalog is unchanged');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('multiclass', pg_temp.fx_query('multiclass'))),
          800::bigint, 'the session and server still work');
SELECT diag(format('fuzz outcomes: %s', (SELECT string_agg(format('%s=%s', sqlstate, c), ', ' ORDER BY c DESC)
             FROM (SELECT sqlstate, count(*) c FROM outcome GROUP BY 1) q)));
SELECT * FROM finish();
ROLLBACK;
