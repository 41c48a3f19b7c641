-- Explanations through pg_regress, rounded so the output is stable.
\set model `cat test/fixtures/reg.json`
SELECT 1 AS loaded FROM treeshap.load_model('houses', convert_to(:'model', 'UTF8'));
CREATE TABLE houses (id bigint, "MedInc" float8, "HouseAge" float8, "AveRooms" float8,
                     "AveBedrms" float8, "Population" float8, "AveOccup" float8,
                     "Latitude" float8, "Longitude" float8);
INSERT INTO houses VALUES
    (1, 8.3252, 41, 6.98, 1.02, 322, 2.56, 37.88, -122.23),
    (2, 2.5, 15, 5.0, 1.1, 1500, 3.0, 34.05, -118.25),
    (3, NULL, 30, NULL, 1.0, 800, NULL, 36.7, -119.8);
SELECT row_key, output, round(base_value::numeric, 5) AS base,
       (SELECT array_agg(round(v::numeric, 5)) FROM unnest(shap_values) v) AS shap
  FROM treeshap.explain_shap_wide('houses', 'SELECT * FROM houses') ORDER BY row_key;
SELECT row_key, feature, round(shap_value::numeric, 5) AS shap
  FROM treeshap.explain_shap('houses', 'SELECT * FROM houses WHERE id = 1') ORDER BY feature;
SELECT row_key, output, round(margin::numeric, 5) AS margin, round(prediction::numeric, 5) AS prediction
  FROM treeshap.predict('houses', 'SELECT id::text, * FROM houses', NULL::text) ORDER BY row_key;
-- additivity: base + sum(shap) = predicted margin
SELECT w.row_key, abs(w.base_value + (SELECT sum(v) FROM unnest(w.shap_values) v) - p.margin) < 1e-9 AS additive
  FROM treeshap.explain_shap_wide('houses', 'SELECT * FROM houses') w
  JOIN treeshap.predict('houses', 'SELECT * FROM houses') p USING (row_key, output) ORDER BY 1;
SELECT (SELECT array_agg(round(v::numeric, 5)) FROM unnest(treeshap.shap_values('houses',
        ARRAY[8.3252, 41, 6.98, 1.02, 322, 2.56, 37.88, -122.23])) v) AS one_row;
SET treeshap.batch_rows = 1;
SELECT count(*) FROM treeshap.explain_shap_wide('houses', 'SELECT * FROM houses');
RESET treeshap.batch_rows;
-- the built-in default (a server may override it, as test/gpu-check.sh does)
SELECT name, boot_val FROM pg_settings
 WHERE name LIKE 'treeshap.%' AND context <> 'postmaster' ORDER BY name;
-- the one server-start setting exists exactly when the library is preloaded
-- (this file runs on clusters of both kinds: test/run.sh, unpreloaded_check.sh)
SELECT count(*) FILTER (WHERE boot_val = '0')
       = (current_setting('shared_preload_libraries') ~ 'pg_treeshap')::int AS postmaster_setting_iff_preloaded
  FROM pg_settings WHERE context = 'postmaster' AND name LIKE 'treeshap.%';
-- every GPU row (if any) names a device with memory and a compute capability
SELECT bool_and(name <> '' AND total_memory > 0 AND compute_capability ~ '^[0-9]+\.[0-9]+$') IS NOT FALSE AS gpu_rows_valid
  FROM treeshap.gpu_info();
-- a table whose features are computed (PostgreSQL 18's virtual generated columns, not
-- stored in the heap) gives what its query gives; on older servers, a stored column
CREATE FUNCTION pg_temp.generated_kind() RETURNS text LANGUAGE sql AS
$$ SELECT CASE WHEN current_setting('server_version_num')::int >= 180000 THEN 'VIRTUAL' ELSE 'STORED' END $$;
DO $$ BEGIN
  EXECUTE format('CREATE TABLE computed AS SELECT * FROM houses');
  EXECUTE format('ALTER TABLE computed DROP COLUMN "Longitude"');
  EXECUTE format('ALTER TABLE computed ADD COLUMN "Longitude" float8 GENERATED ALWAYS AS ("Latitude" - 160) %s',
                 pg_temp.generated_kind());
END $$;
SELECT count(*) AS computed_rows,
       bool_and(t.margin = q.margin) AS table_equals_query,
       bool_and(t.margin = h.margin) AS equals_stored_values
  FROM treeshap.predict('houses', 'computed'::regclass, 'id') t
  JOIN treeshap.predict('houses', 'SELECT * FROM computed') q USING (row_key, output)
  JOIN treeshap.predict('houses', 'SELECT id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population",
                                          "AveOccup", "Latitude", "Latitude" - 160 AS "Longitude" FROM houses') h
       USING (row_key, output);
DROP TABLE computed;
DROP TABLE houses;
SELECT treeshap.drop_model('houses');
