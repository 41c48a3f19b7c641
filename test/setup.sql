-- Shared setup of the pgTAP files: extensions, every fixture loaded, and a
-- helper that writes the query selecting a fixture's rows with one float8
-- column per model feature (named as the model names it).
\ir session.sql

CREATE TEMP TABLE fx_data (fixture text, id bigint, x float8[]);
CREATE TEMP TABLE fx_expected (fixture text, id bigint, output int, margin float8,
                               contribs float8[]);
CREATE TEMP TABLE fx_list (fixture text PRIMARY KEY);
INSERT INTO fx_list VALUES ('reg'), ('binary'), ('multiclass'), ('nan'), ('deep'), ('dart'),
    ('poisson'), ('long'), ('long24'), ('reg_v3'), ('binary_v3'), ('multiclass_v3'), ('dart_v3'),
    ('lgb_reg'), ('lgb_binary'), ('lgb_multiclass'), ('lgb_zero'), ('lgb_none'), ('lgb_rf'),
    ('xgb_reg_ubj'), ('xgb_cat_ubj'), ('xgb_cat_multi'), ('inf_json'), ('inf_ubj'),
    ('logitraw_02'), ('logitraw_05'), ('logitraw_m075'), ('lgb_nonames'), ('long_name'),
    ('vector_leaf'), ('xgb_text_cats'), ('xgb_text_onehot'), ('lgb_text_cats'),
    ('cb_reg'), ('cb_binary'), ('cb_multiclass'), ('cb_uncertainty'),
    ('tl_rf_reg'), ('tl_rf_binary'), ('tl_rf_multi'), ('tl_et_reg'), ('tl_et_binary'), ('tl_et_multi'),
    ('tl_gb_reg'), ('tl_gb_binary'), ('tl_hgb_reg'), ('tl_hgb_binary'), ('tl_deep'), ('tl_ops'),
    ('tl_hgb_cat');

\set f reg
\ir load_fixture.sql
\set f binary
\ir load_fixture.sql
\set f multiclass
\ir load_fixture.sql
\set f nan
\ir load_fixture.sql
\set f deep
\ir load_fixture.sql
\set f dart
\ir load_fixture.sql
\set f poisson
\ir load_fixture.sql
\set f long
\ir load_fixture.sql
\set f long24
\ir load_fixture.sql
\set f reg_v3
\ir load_fixture.sql
\set f binary_v3
\ir load_fixture.sql
\set f multiclass_v3
\ir load_fixture.sql
\set f dart_v3
\ir load_fixture.sql
\set f lgb_reg
\ir load_fixture.sql
\set f lgb_binary
\ir load_fixture.sql
\set f lgb_multiclass
\ir load_fixture.sql
\set f lgb_zero
\ir load_fixture.sql
\set f lgb_none
\ir load_fixture.sql
\set f lgb_rf
\ir load_fixture.sql
\set f xgb_reg_ubj
\ir load_fixture.sql
\set f xgb_cat_ubj
\ir load_fixture.sql
\set f xgb_cat_multi
\ir load_fixture.sql
\set f inf_json
\ir load_fixture.sql
\set f inf_ubj
\ir load_fixture.sql
\set f logitraw_02
\ir load_fixture.sql
\set f logitraw_05
\ir load_fixture.sql
\set f logitraw_m075
\ir load_fixture.sql
\set f lgb_nonames
\ir load_fixture.sql
\set f long_name
\ir load_fixture.sql
\set f vector_leaf
\ir load_fixture.sql
\set f xgb_text_cats
\ir load_fixture.sql
\set f xgb_text_onehot
\ir load_fixture.sql
\set f lgb_text_cats
\ir load_fixture.sql
\set f cb_reg
\ir load_fixture.sql
\set f cb_binary
\ir load_fixture.sql
\set f cb_multiclass
\ir load_fixture.sql
\set f cb_uncertainty
\ir load_fixture.sql
\set f tl_rf_reg
\ir load_fixture.sql
\set f tl_rf_binary
\ir load_fixture.sql
\set f tl_rf_multi
\ir load_fixture.sql
\set f tl_et_reg
\ir load_fixture.sql
\set f tl_et_binary
\ir load_fixture.sql
\set f tl_et_multi
\ir load_fixture.sql
\set f tl_gb_reg
\ir load_fixture.sql
\set f tl_gb_binary
\ir load_fixture.sql
\set f tl_hgb_reg
\ir load_fixture.sql
\set f tl_hgb_binary
\ir load_fixture.sql
\set f tl_deep
\ir load_fixture.sql
\set f tl_ops
\ir load_fixture.sql
\set f tl_hgb_cat
\ir load_fixture.sql
-- a Treelite model without node statistics: not in fx_list (no path-dependent SHAP)
\set f tl_nocover
\ir load_fixture.sql

-- equal up to the last digits, where the CPU and GPU engines may differ
CREATE FUNCTION pg_temp.close(a float8[], b float8[]) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT cardinality(a) = cardinality(b)
       AND (SELECT bool_and(abs(x - y) <= 1e-9 * greatest(1, abs(x))) FROM unnest(a, b) AS u(x, y))
$$;

-- SELECT id, x[1] AS "<feature 1>", ... FROM fx_data WHERE fixture = f
CREATE FUNCTION pg_temp.fx_query(f text) RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT id, %s FROM pg_temp.fx_data WHERE fixture = %L',
                  string_agg(format('x[%s] AS %I', i,
                                    coalesce(m.feature_names[i], 'f' || (i - 1))),
                             ', ' ORDER BY i), f)
      FROM treeshap.models m, generate_series(1, m.num_features) AS i
     WHERE m.name = f
$$;
-- the 'reg' fixture's rows with the California-housing model's column names
CREATE TEMP VIEW fx_houses AS
SELECT id, x[1] AS "MedInc", x[2] AS "HouseAge", x[3] AS "AveRooms", x[4] AS "AveBedrms",
       x[5] AS "Population", x[6] AS "AveOccup", x[7] AS "Latitude", x[8] AS "Longitude"
  FROM fx_data WHERE fixture = 'reg';
-- the background of the interventional tests: every tenth row, its feature columns only
CREATE FUNCTION pg_temp.fx_background(f text) RETURNS text LANGUAGE sql AS $$
    SELECT regexp_replace(pg_temp.fx_query(f), '^SELECT id, ', 'SELECT ') || ' AND id % 10 = 0'
$$;
\set QUIET 0
