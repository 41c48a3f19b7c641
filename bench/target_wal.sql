-- What the target's unique key costs in WAL (issue 45): 200,000 explained rows of
-- the wide layout written by COPY (the heap's multi-insert, as explain_into's
-- bulk writes) into a table without the key, then into one with explain_into's
-- key, and pg_stat_wal's records and bytes for each. An 8-feature XGBoost model
-- in MODEL_FILE (readable by the server):
--   psql -X -v model_file=/abs/path/model.json -f bench/target_wal.sql
\set ON_ERROR_STOP 1
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
SET treeshap.device = cpu;
SET treeshap.match_columns = position;
SELECT 1 FROM treeshap.load_model('target_wal', pg_read_binary_file(:'model_file'));
DROP TABLE IF EXISTS target_wal_src, target_wal_key, target_wal_nokey, target_wal_rows;
CREATE TABLE target_wal_src AS
SELECT g AS id, (g % 97)::real f0, (g % 89)::real f1, (g % 83)::real f2, (g % 79)::real f3,
       (g % 73)::real f4, (g % 71)::real f5, (g % 67)::real f6, (g % 61)::real f7
  FROM generate_series(1, 200000) g;
CREATE TABLE target_wal_key (row_key bigint NOT NULL, output integer NOT NULL, base_value double precision NOT NULL,
    shap_values double precision[] NOT NULL, model_version bigint NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (row_key, output, model_version));
CREATE TABLE target_wal_nokey (LIKE target_wal_key INCLUDING DEFAULTS);
CREATE TEMP TABLE target_wal_rows AS
SELECT row_key, output, base_value, shap_values, 1::bigint AS model_version, now() AS computed_at
  FROM treeshap.explain_shap_wide('target_wal', 'SELECT * FROM target_wal_src');
CHECKPOINT;
SELECT pg_stat_force_next_flush();
SELECT wal_records AS r0, wal_bytes AS b0 FROM pg_stat_wal \gset
\copy (SELECT * FROM target_wal_rows) TO '/tmp/target_wal.copy'
\copy target_wal_nokey FROM '/tmp/target_wal.copy'
SELECT pg_stat_force_next_flush();
SELECT wal_records AS r1, wal_bytes AS b1 FROM pg_stat_wal \gset
\copy target_wal_key FROM '/tmp/target_wal.copy'
SELECT pg_stat_force_next_flush();
SELECT wal_records AS r2, wal_bytes AS b2 FROM pg_stat_wal \gset
SELECT :r1 - :r0 AS records_without_key, :b1 - :b0 AS bytes_without_key,
       :r2 - :r1 AS records_with_key, :b2 - :b1 AS bytes_with_key;
DROP TABLE target_wal_src, target_wal_key, target_wal_nokey, target_wal_rows;
SELECT treeshap.drop_model('target_wal');
