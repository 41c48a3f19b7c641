-- A model and a keyed source of its eight features for the service checks
-- (test/service_check.sh, test/service_load_check.sh), from the repository's root:
--     psql -v model=NAME -v source=TABLE -v rows=N -f test/service_source.sql
\set m `cat test/fixtures/reg.json`
SELECT 1 FROM treeshap.load_model(:'model', convert_to(:'m', 'UTF8'), replace => true) \g /dev/null
DROP TABLE IF EXISTS :source;
CREATE TABLE :source AS
SELECT g AS id, (g * 37 % 1500) / 100.0::float8 AS "MedInc", (g * 11 % 52)::float8 AS "HouseAge",
       2 + (g * 13 % 700) / 100.0::float8 AS "AveRooms", 1 + (g % 7) / 20.0::float8 AS "AveBedrms",
       (g * 101 % 5000)::float8 AS "Population", 1 + (g * 17 % 400) / 100.0::float8 AS "AveOccup",
       32.5 + (g * 29 % 900) / 100.0::float8 AS "Latitude", -124.3 + (g * 31 % 1000) / 100.0::float8 AS "Longitude"
  FROM generate_series(0, :rows - 1) g;
ALTER TABLE :source ADD PRIMARY KEY (id);
ANALYZE :source;
