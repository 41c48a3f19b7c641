-- Tables in: every explain and predict function reading a table (regclass)
-- returns what it returns for the equivalent query, on every fixture, with
-- the key column named (anywhere in the table, features in any order,
-- columns dropped); the whole row passes through as the key when asked;
-- views, inheritance, partitions and materialized views read as SELECT
-- reads them; row-level security and (column) privileges hold as they hold
-- for SELECT; wrong arguments are clear errors.
BEGIN;
\ir setup.sql

SELECT plan(35);

-- The fixture's rows as a table: the features in reverse order (model order
-- when the model has no names, which are matched by position), a text column
-- that is not a feature, a dropped column, and the key last.
CREATE FUNCTION pg_temp.fx_table(f text) RETURNS regclass LANGUAGE plpgsql AS $$
DECLARE
    named boolean := (SELECT feature_names IS NOT NULL FROM treeshap.models WHERE name = f);
    cols text;
BEGIN
    SELECT string_agg(format('%I', coalesce(m.feature_names[i], 'f' || (i - 1))), ', '
                      ORDER BY CASE WHEN named THEN -i ELSE i END)
      INTO cols FROM treeshap.models m, generate_series(1, m.num_features) i WHERE m.name = f;
    EXECUTE format('CREATE TEMP TABLE %I AS SELECT 0 AS doomed, %s, %s id FROM (%s) q',
                   'tab_' || f, cols, CASE WHEN named THEN $n$'n' || id AS note,$n$ ELSE '' END,
                   pg_temp.fx_query(f));
    EXECUTE format('ALTER TABLE %I DROP COLUMN doomed', 'tab_' || f);
    RETURN ('pg_temp.' || quote_ident('tab_' || f))::regclass;
END
$$;
CREATE TEMP TABLE fx_tab AS SELECT fixture, pg_temp.fx_table(fixture) AS tab FROM fx_list;
-- models with feature names: their tables' key column is told apart by name even where no key is named
CREATE TEMP TABLE fx_named AS
SELECT t.* FROM fx_tab t JOIN treeshap.models m ON m.name = t.fixture WHERE m.feature_names IS NOT NULL;

-- fixtures where the table form's rows differ from the query form's
CREATE FUNCTION pg_temp.differing(table_form text, query_form text, fixtures text DEFAULT 'fx_tab')
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    result text[];
BEGIN
    EXECUTE format($f$
        SELECT array_agg(DISTINCT fixture) FROM (
            (SELECT t.fixture, r.* FROM %2$s t CROSS JOIN LATERAL %1$s r
             EXCEPT ALL
             SELECT t.fixture, r.* FROM %2$s t CROSS JOIN LATERAL %3$s r)
            UNION ALL
            (SELECT t.fixture, r.* FROM %2$s t CROSS JOIN LATERAL %3$s r
             EXCEPT ALL
             SELECT t.fixture, r.* FROM %2$s t CROSS JOIN LATERAL %1$s r)) d$f$,
        table_form, fixtures, query_form) INTO result;
    RETURN result;
END
$$;

-- rows in one of two row sources and not the other, counting duplicates
CREATE FUNCTION pg_temp.diff_count(a text, b text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    result bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM ((SELECT * FROM %s EXCEPT ALL SELECT * FROM %s)
                    UNION ALL (SELECT * FROM %s EXCEPT ALL SELECT * FROM %s)) d', a, b, b, a) INTO result;
    RETURN result;
END
$$;

SELECT is(pg_temp.differing($$treeshap.explain_shap_wide(t.fixture, t.tab, 'id')$$,
                            $$treeshap.explain_shap_wide(t.fixture, pg_temp.fx_query(t.fixture))$$),
          NULL, 'explain_shap_wide: a table gives what its query gives, on every fixture');
SELECT is(pg_temp.differing($$treeshap.explain_shap(t.fixture, t.tab, 'id')$$,
                            $$treeshap.explain_shap(t.fixture, pg_temp.fx_query(t.fixture))$$),
          NULL, 'explain_shap: the same');
SELECT is(pg_temp.differing($$treeshap.predict(t.fixture, t.tab, 'id')$$,
                            $$treeshap.predict(t.fixture, pg_temp.fx_query(t.fixture))$$),
          NULL, 'predict: the same');
SELECT is(pg_temp.differing($$treeshap.explain_top_features(t.fixture, t.tab, 'id', k => 3)$$,
                            $$treeshap.explain_top_features(t.fixture, pg_temp.fx_query(t.fixture), k => 3)$$),
          NULL, 'explain_top_features: the same');
SELECT is(pg_temp.differing($$treeshap.explain_top_features_wide(t.fixture, t.tab, 'id', k => 3)$$,
                            $$treeshap.explain_top_features_wide(t.fixture, pg_temp.fx_query(t.fixture), k => 3)$$),
          NULL, 'explain_top_features_wide: the same');
SELECT is(pg_temp.diff_count($$treeshap.explain_top_features_wide('reg', 'tab_reg'::regclass, 'id', NULL::bigint, 2)$$,
                             $$treeshap.explain_top_features_wide('reg', pg_temp.fx_query('reg'), NULL::bigint, 2)$$),
          0::bigint, 'explain_top_features_wide: a table with a key_type gives what its query gives');
-- feature_importance takes no key: every column of the table may be a feature
SELECT is(pg_temp.differing($$treeshap.feature_importance(t.fixture, t.tab)$$,
                            $$treeshap.feature_importance(t.fixture, pg_temp.fx_query(t.fixture))$$, 'fx_named'),
          NULL, 'feature_importance: the same, on every fixture with feature names');
CREATE TEMP VIEW nonames_features AS SELECT f0, f1, f2, f3, f4, f5, f6, f7 FROM tab_lgb_nonames;
SELECT is(pg_temp.diff_count($$treeshap.feature_importance('lgb_nonames', 'nonames_features'::regclass)$$,
                             format('treeshap.feature_importance(%L, %L)', 'lgb_nonames', pg_temp.fx_query('lgb_nonames'))),
          0::bigint, 'feature_importance without feature names: every column by position');
-- batches that end exactly at the table's end, and a last short one
SET LOCAL treeshap.batch_rows = 8;
SELECT is(pg_temp.diff_count($$treeshap.predict('reg', 'tab_reg'::regclass, 'id')$$,
                             format('treeshap.predict(%L, %L)', 'reg', pg_temp.fx_query('reg'))),
          0::bigint, 'batches of 8 rows, the last ending at the table''s end (200 rows): every row once');
SET LOCAL treeshap.batch_rows = 7;
SELECT is(pg_temp.diff_count($$treeshap.predict('reg', 'tab_reg'::regclass, 'id')$$,
                             format('treeshap.predict(%L, %L)', 'reg', pg_temp.fx_query('reg'))),
          0::bigint, 'batches of 7 rows, the last one short: every row once');
RESET treeshap.batch_rows;
SELECT ok((SELECT count(*) FROM treeshap.predict('multiclass', 'tab_multiclass'::regclass, 'id')) =
          (SELECT m.num_outputs * count(*) FROM tab_multiclass, treeshap.models m WHERE m.name = 'multiclass' GROUP BY m.num_outputs) AND (SELECT count(*) FROM tab_multiclass) > 0,
          'predict over a table: one row per (row, output)');

-- interactions over a view of five rows (read through a generated SELECT)
CREATE TEMP VIEW few_multiclass AS SELECT * FROM tab_multiclass WHERE id <= 5;
SELECT is(pg_temp.diff_count($$treeshap.explain_interactions('multiclass', 'few_multiclass'::regclass, 'id')$$,
                            format('treeshap.explain_interactions(%L, %L)', 'multiclass',
                                   pg_temp.fx_query('multiclass') || ' AND id <= 5')),
          0::bigint, 'explain_interactions over a view equals the query with the view''s filter');
SELECT is((SELECT count(DISTINCT row_key) FROM treeshap.predict('multiclass', 'few_multiclass'::regclass, 'id')),
          (SELECT count(*) FROM tab_multiclass WHERE id <= 5), 'a view reads only its rows');

-- segments: a grouping column of the table
CREATE TEMP TABLE seg_reg AS SELECT id % 3 AS grp, * FROM tab_reg;
SELECT is(pg_temp.diff_count($$treeshap.feature_importance('reg', 'seg_reg'::regclass, 'grp', NULL::int)$$,
                            format('treeshap.feature_importance(%L, %L, NULL::int)', 'reg',
                                   replace(pg_temp.fx_query('reg'), 'SELECT id,', 'SELECT (id % 3)::int AS grp,'))),
          0::bigint, 'segmented importance over a table equals it over the query');

-- keys: integer types convert to bigint, other types come back typed, NULL keys stay NULL
CREATE TEMP TABLE keyed AS SELECT id::int AS small_id, 'k' || id AS name,
       CASE WHEN id % 5 = 0 THEN NULL ELSE id END AS sparse, t.* FROM tab_reg t;
SELECT is((SELECT array_agg(row_key ORDER BY row_key) FROM treeshap.predict('reg', 'keyed'::regclass, 'small_id')),
          (SELECT array_agg(id ORDER BY id) FROM tab_reg), 'an integer key column comes back as bigint');
SELECT is((SELECT array_agg(row_key ORDER BY row_key) FROM treeshap.predict('reg', 'keyed'::regclass, 'name', NULL::text)),
          (SELECT array_agg('k' || id ORDER BY 'k' || id) FROM tab_reg), 'a text key column comes back as text');
SELECT is((SELECT count(*) FROM treeshap.predict('reg', 'keyed'::regclass, 'sparse') WHERE row_key IS NULL),
          (SELECT count(*) FROM tab_reg WHERE id % 5 = 0), 'NULL keys stay NULL');
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'keyed'::regclass, 'name')$$, '42804', NULL,
                 'a text key column without a key type is refused');

-- the whole row as the key: every column passes through, typed
SELECT is((SELECT count(*) FROM treeshap.predict('multiclass', 'tab_multiclass'::regclass, NULL, NULL::tab_multiclass) p
             JOIN tab_multiclass t ON p.row_key = t),
          (SELECT m.num_outputs * count(*) FROM tab_multiclass, treeshap.models m WHERE m.name = 'multiclass' GROUP BY m.num_outputs), 'the whole row as the key: each source row, once per output');
SELECT is((SELECT count(*) FROM treeshap.predict('reg', 'tab_reg'::regclass, NULL, NULL::tab_reg) p
             JOIN treeshap.predict('reg', 'tab_reg'::regclass, 'id') q
               ON q.row_key = (p.row_key).id AND q.margin = p.margin AND (p.row_key).note = 'n' || q.row_key),
          (SELECT count(*) FROM tab_reg), 'passed-through columns are the source row''s, next to its prediction');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'SELECT t AS source, t.* FROM tab_reg t', NULL::tab_reg) w
             JOIN tab_reg t ON w.row_key = t),
          (SELECT count(*) FROM tab_reg), 'a query passes the whole row through the same way');
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'tab_reg'::regclass, NULL)$$, '22004', NULL,
                 'a NULL key column needs the table''s row type as the key type');

-- inheritance, partitions and materialized views read as SELECT reads them
CREATE TEMP TABLE parent_reg AS SELECT * FROM tab_reg WHERE id % 2 = 0;
CREATE TEMP TABLE child_reg () INHERITS (parent_reg);
INSERT INTO child_reg SELECT * FROM tab_reg WHERE id % 2 = 1;
SELECT is(pg_temp.diff_count($$treeshap.predict('reg', 'parent_reg'::regclass, 'id')$$,
                             $$treeshap.predict('reg', 'tab_reg'::regclass, 'id')$$),
          0::bigint, 'a parent table is read with its children');
CREATE TEMP TABLE parts_reg (LIKE tab_reg) PARTITION BY LIST ((id % 2));
CREATE TEMP TABLE parts_reg_0 PARTITION OF parts_reg FOR VALUES IN (0);
CREATE TEMP TABLE parts_reg_1 PARTITION OF parts_reg FOR VALUES IN (1);
INSERT INTO parts_reg SELECT * FROM tab_reg;
SELECT is(pg_temp.diff_count($$treeshap.explain_shap_wide('reg', 'parts_reg'::regclass, 'id')$$,
                             $$treeshap.explain_shap_wide('reg', 'tab_reg'::regclass, 'id')$$),
          0::bigint, 'a partitioned table is read with its partitions');
-- (a materialized view cannot be temporary; the transaction is rolled back)
CREATE TABLE public.t19_base AS SELECT * FROM tab_reg;
CREATE MATERIALIZED VIEW public.t19_mv AS SELECT * FROM public.t19_base;
SELECT is(pg_temp.diff_count($$treeshap.predict('reg', 'public.t19_mv'::regclass, 'id')$$,
                             $$treeshap.predict('reg', 'tab_reg'::regclass, 'id')$$),
          0::bigint, 'a materialized view is read like a table');
CREATE MATERIALIZED VIEW public.t19_mv_empty AS SELECT * FROM public.t19_base WITH NO DATA;
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'public.t19_mv_empty'::regclass, 'id')$$, '55000', NULL,
                 'an unpopulated materialized view is refused as SELECT refuses it');

-- row-level security and privileges, for a role that is not the owner
CREATE TEMP TABLE secured AS SELECT * FROM tab_reg;
ALTER TABLE secured ENABLE ROW LEVEL SECURITY;
CREATE ROLE t19_reader;
CREATE POLICY even_rows ON secured FOR SELECT TO t19_reader USING (id % 2 = 0);
GRANT SELECT ON secured TO t19_reader;
CREATE TEMP TABLE columns_only AS SELECT * FROM tab_reg;
GRANT SELECT (id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude",
              "Longitude") ON columns_only TO t19_reader;
CREATE TEMP TABLE columns_short AS SELECT * FROM tab_reg;
GRANT SELECT (id, "MedInc") ON columns_short TO t19_reader;
SET ROLE t19_reader;
SELECT is((SELECT array_agg(DISTINCT row_key ORDER BY row_key) FROM treeshap.predict('reg', 'secured'::regclass, 'id')),
          (SELECT array_agg(id ORDER BY id) FROM secured), 'row-level security: only the rows the policy shows');
SELECT ok((SELECT bool_and(row_key % 2 = 0) AND count(*) > 0 FROM treeshap.predict('reg', 'secured'::regclass, 'id')),
          'those are the even rows');
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'tab_reg'::regclass, 'id')$$, '42501', NULL,
                 'no SELECT privilege, no rows');
SELECT is((SELECT count(*) FROM treeshap.predict('reg', 'columns_only'::regclass, 'id')),
          (SELECT count(*) FROM columns_only), 'SELECT on the key and feature columns is enough');
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'columns_short'::regclass, 'id')$$, '42501', NULL,
                 'a feature column the role may not read is refused');
RESET ROLE;

-- arguments
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'tab_reg'::regclass, 'no_such')$$, '42703',
                 'column "no_such" of relation "tab_reg" does not exist', 'an unknown key column');
ALTER TABLE seg_reg DROP COLUMN "Latitude";
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', 'seg_reg'::regclass, 'id')$$, '42703',
                 'table has no column for feature "Latitude"', 'a table without a feature''s column');
SELECT throws_ok($$SELECT * FROM treeshap.predict('reg', NULL::regclass, 'id')$$, '22004', NULL,
                 'a NULL table is an error');
SELECT is((SELECT count(*) FROM treeshap.predict('reg', source => 'tab_reg', key_column => 'id')),
          (SELECT count(*) FROM tab_reg), 'named arguments pick the table form without a cast');

SELECT * FROM finish();
ROLLBACK;
