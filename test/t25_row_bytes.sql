-- Rows read from their bytes: where every column read has a fixed width and
-- a row has no NULL, its features are taken straight from the tuple's bytes
-- (float4 runs copied at once) instead of deforming it. Such rows must give
-- bitwise what the deformed rows give: rows with a NULL elsewhere, a NULL
-- key, or stored before a column was added with a default are deformed.
BEGIN;
\ir setup.sql

SELECT plan(9);
SET LOCAL treeshap.batch_rows = 7;		-- keys must outlive the row they came from

-- reg's rows in columns of every fixed-width feature type; each row twice:
-- id k with tag NULL (deformed), id k + 1000 with a tag (read from its bytes)
CREATE TEMP TABLE mixed (id int2, "MedInc" real, "HouseAge" int2, "AveRooms" float8,
                         "AveBedrms" int4, "Population" int8, "AveOccup" real, "Latitude" float8,
                         "Longitude" real, tag int);
INSERT INTO mixed
SELECT id + shift, x[1], round(x[2]), x[3], round(x[4]), round(x[5]), x[6], x[7], x[8], tag
  FROM fx_data, (VALUES (0, NULL), (1000, 7)) s(shift, tag)
 WHERE fixture = 'reg';
-- missing and infinite values, both ways
INSERT INTO mixed VALUES (900, 'NaN', 3, 'Infinity', 1, 2, '-Infinity', 'NaN', 'Infinity', NULL),
                         (1900, 'NaN', 3, 'Infinity', 1, 2, '-Infinity', 'NaN', 'Infinity', 7);

CREATE FUNCTION pg_temp.pairs_differing(src text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    EXECUTE format($q$
        SELECT count(*) FROM %1$s a JOIN %1$s b ON b.row_key = a.row_key + 1000 AND b.output = a.output
         WHERE a.row_key < 1000
           AND (a.shap_values IS DISTINCT FROM b.shap_values OR a.base_value IS DISTINCT FROM b.base_value)$q$,
        src) INTO n;
    RETURN n;
END
$$;

SELECT is((SELECT count(*) FROM mixed WHERE tag IS NULL), (SELECT count(*) FROM mixed WHERE tag IS NOT NULL),
          'every row twice, with and without a NULL');
SELECT is(pg_temp.pairs_differing($$treeshap.explain_shap_wide('reg', 'mixed'::regclass, 'id', NULL::int2)$$),
          0::bigint, 'a table of int2, int4, int8, float4 and float8 features: rows read from their bytes equal rows deformed, NaN and infinities included');
SELECT is(pg_temp.pairs_differing($$treeshap.explain_shap_wide('reg', 'SELECT * FROM mixed', NULL::int2)$$),
          0::bigint, 'the same rows through a query');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('reg', 'mixed'::regclass, 'id', NULL::int2)),
          (SELECT count(*) FROM mixed), 'every row explained once');
SELECT is((SELECT array_agg(row_key ORDER BY row_key) FROM treeshap.predict('reg', 'mixed'::regclass, 'id')),
          (SELECT array_agg(id::bigint ORDER BY id) FROM mixed),
          'int2 keys come back as the bigint keys they are');

-- a float4 run (every feature real, in model order, side by side): the same as float8 columns of the same values
CREATE TEMP TABLE run4 AS
SELECT id, x[1]::real AS f0, x[2]::real AS f1, x[3]::real AS f2, x[4]::real AS f3, x[5]::real AS f4,
       x[6]::real AS f5, x[7]::real AS f6, x[8]::real AS f7
  FROM fx_data WHERE fixture = 'lgb_nonames';
UPDATE run4 SET f3 = 'Infinity', f5 = 'NaN' WHERE id = (SELECT min(id) FROM run4);
CREATE TEMP TABLE run8 AS
SELECT id, f0::float8 AS f0, f1::float8 AS f1, f2::float8 AS f2, f3::float8 AS f3, f4::float8 AS f4,
       f5::float8 AS f5, f6::float8 AS f6, f7::float8 AS f7 FROM run4;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('lgb_nonames', 'run4'::regclass, 'id') a
             FULL JOIN treeshap.explain_shap_wide('lgb_nonames', 'run8'::regclass, 'id') b USING (row_key, output)
            WHERE a.shap_values IS DISTINCT FROM b.shap_values),
          0::bigint, 'a run of float4 features equals the same values as float8, +inf and NaN included');
SELECT is((SELECT count(*) FROM run4 r,
                  treeshap.explain_shap_wide('lgb_nonames', format('SELECT NULL::bigint, f0, f1, f2, f3, f4, f5, f6, f7 FROM run4 WHERE id = %s', r.id)) a,
                  treeshap.explain_shap_wide('lgb_nonames', format('SELECT id, f0, f1, f2, f3, f4, f5, f6, f7 FROM run4 WHERE id = %s', r.id)) b
            WHERE a.output = b.output AND a.shap_values IS DISTINCT FROM b.shap_values),
          0::bigint, 'and equals the row deformed (a NULL key)');

-- a feature column added with a default: rows stored before it are deformed (the default filled in)
CREATE TEMP TABLE added AS
SELECT id, x[1]::real AS "MedInc", x[2]::real AS "HouseAge", x[3]::real AS "AveRooms", x[4]::real AS "AveBedrms",
       x[5]::real AS "Population", x[6]::real AS "AveOccup", x[7]::real AS "Latitude"
  FROM fx_data WHERE fixture = 'reg';
ALTER TABLE added ADD COLUMN "Longitude" real DEFAULT -121.5;
INSERT INTO added SELECT id + 1000, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup",
                         "Latitude", -121.5 FROM added;
SELECT is(pg_temp.pairs_differing($$treeshap.explain_shap_wide('reg', 'added'::regclass, 'id')$$),
          0::bigint, 'rows stored before a column was added read its default, as rows stored after it');

-- a key of a fixed width passed by reference (uuid), kept past its row and its batch
CREATE TEMP TABLE keyed_uuid AS
SELECT md5(id::text)::uuid AS id, x[1]::real AS "MedInc", x[2]::real AS "HouseAge", x[3]::real AS "AveRooms",
       x[4]::real AS "AveBedrms", x[5]::real AS "Population", x[6]::real AS "AveOccup", x[7]::real AS "Latitude",
       x[8]::real AS "Longitude"
  FROM fx_data WHERE fixture = 'reg';
SELECT is((SELECT array_agg(row_key ORDER BY row_key) FROM treeshap.predict('reg', 'keyed_uuid'::regclass, 'id', NULL::uuid)),
          (SELECT array_agg(id ORDER BY id) FROM keyed_uuid), 'uuid keys read from the bytes are the table''s');

SELECT * FROM finish();
ROLLBACK;
