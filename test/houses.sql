-- The 'reg' fixture's rows as the table houses (id, then the model's features by
-- name), in the databases that test/upgrade_check.sh updates and test/dump_check.sh
-- dumps; run from the project root.
CREATE TABLE raw (id bigint, x float8[]);
\copy raw FROM 'test/fixtures/reg.data.csv' CSV
CREATE TABLE houses AS
SELECT id, x[1] AS "MedInc", x[2] AS "HouseAge", x[3] AS "AveRooms", x[4] AS "AveBedrms",
       x[5] AS "Population", x[6] AS "AveOccup", x[7] AS "Latitude", x[8] AS "Longitude"
  FROM raw;
ALTER TABLE houses ADD PRIMARY KEY (id);
