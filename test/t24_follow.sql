-- explain_into(..., follow => true): the target follows the source's inserts, updates
-- (of features and of keys), deletes and truncates. After every run the target must
-- equal a one-shot explain_shap_wide of the source as it is, bitwise.
-- Rounds of random changes (setseed) between runs, in the calling session and with
-- workers, and a pass that fails half way (a poisoned filter) finished by the next run;
-- runs killed mid-way are test/jobs_check.py's.
-- Runs outside a transaction (explain_into commits); schema t24.
\ir session.sql
DROP SCHEMA IF EXISTS t24 CASCADE;
CREATE SCHEMA t24;
\set m_reg `cat test/fixtures/reg.json`
SELECT 1 FROM treeshap.load_model('t24_reg', convert_to(:'m_reg', 'UTF8'), replace => true) \g /dev/null
DELETE FROM treeshap.job_store WHERE target LIKE 't24.%';

CREATE TABLE t24.src AS
SELECT 3 * g AS id,
       (g * 37 % 1500) / 100.0::float8 AS "MedInc", (g * 11 % 52)::float8 AS "HouseAge",
       2 + (g * 13 % 700) / 100.0::float8 AS "AveRooms", 1 + (g % 7) / 20.0::float8 AS "AveBedrms",
       (g * 101 % 5000)::float8 AS "Population", 1 + (g * 17 % 400) / 100.0::float8 AS "AveOccup",
       32.5 + (g * 29 % 900) / 100.0::float8 AS "Latitude",
       -124.3 + (g * 31 % 1000) / 100.0::float8 AS "Longitude"
  FROM generate_series(1, 2000) g;
ALTER TABLE t24.src ADD PRIMARY KEY (id);

-- how a target differs from what a fresh run over the source as it is now would write
CREATE FUNCTION t24.in_step(target regclass, source text DEFAULT 't24.src', layout text DEFAULT 'wide')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    fresh   text := format('SELECT * FROM treeshap.%s(''t24_reg'', %L)',
                           CASE layout WHEN 'wide' THEN 'explain_shap_wide' ELSE 'explain_shap' END,
                           'SELECT id, * FROM ' || source);
    cols    text := CASE layout WHEN 'wide' THEN 'row_key, output, base_value, shap_values'
                                ELSE 'row_key, output, feature, shap_value' END;
    missing bigint;
    extra   bigint;
BEGIN
    EXECUTE format('SELECT (SELECT count(*) FROM (%1$s EXCEPT ALL SELECT %3$s FROM %2$s) m), '
                   '       (SELECT count(*) FROM (SELECT %3$s FROM %2$s EXCEPT ALL %1$s) x)', fresh, target, cols)
       INTO missing, extra;
    RETURN format('missing %s, extra or different %s', missing, extra);
END
$$;
-- one round of random changes: feature updates, key updates, deletes, inserts
CREATE FUNCTION t24.mutate(seed float8) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM setseed(seed);
    UPDATE t24.src SET "MedInc" = "MedInc" + 1 + random() * 3, "Latitude" = "Latitude" - random()
     WHERE random() < 0.05;
    UPDATE t24.src SET id = id + 1 WHERE id % 3 = 0 AND random() < 0.01;
    DELETE FROM t24.src WHERE random() < 0.02;
    INSERT INTO t24.src
    SELECT 100000 + (random() * 1000000)::int, random() * 15, 30, 5, 1, 1000, 3, 35, -120
      FROM generate_series(1, 20)
    ON CONFLICT (id) DO NOTHING;
END
$$;
CREATE FUNCTION t24.job(target text) RETURNS treeshap.jobs LANGUAGE sql AS
    $$ SELECT * FROM treeshap.jobs j WHERE j.target = job.target $$;

SELECT plan(41);

-- a first run puts the triggers on the source and explains every row
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'first run: the target is the source''s explanation');
SELECT results_eq($$SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 't24.src'::regclass AND tgname LIKE 'treeshap_job_%'$$,
                  ARRAY[4], 'follow => true puts four triggers on the source (insert, update, delete, truncate)');
SELECT results_eq($$SELECT follow, rows_done FROM t24.job('t24.tgt')$$, $$VALUES (true, 2000::bigint)$$,
                  'jobs: the job follows its source');

-- features updated, a key updated, a row deleted, a row inserted
UPDATE t24.src SET "MedInc" = "MedInc" + 5, "Latitude" = "Latitude" - 3 WHERE id IN (3, 6);
UPDATE t24.src SET id = 10 WHERE id = 9;
DELETE FROM t24.src WHERE id = 12;
INSERT INTO t24.src VALUES (1, 8.3, 41, 6.9, 1.02, 322, 2.5, 37.88, -122.23);
SELECT results_eq($$SELECT count(DISTINCT c.seq), count(DISTINCT k) FROM treeshap.job_change c JOIN t24.job('t24.tgt') j USING (job),
                           unnest(c.keys) k$$,
                  $$VALUES (4::bigint, 6::bigint)$$,
                  'the change log holds the six keys touched (3, 6, 9, 10, 12, 1), a row per statement');
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0',
          'after updates of features and keys, a delete and an insert: the target is the source''s again');
SELECT results_eq($$SELECT rows_done, rows_changed, rows_removed, batches FROM t24.job('t24.tgt')$$,
                  $$VALUES (4::bigint, 4::bigint, 2::bigint, 1::bigint)$$,
                  'the run explained the four rows changed or added, removed the two keys gone, and read nothing else');
SELECT is((SELECT count(*) FROM treeshap.job_change c JOIN t24.job('t24.tgt') j USING (job)), 0::bigint,
          'the log is consumed');
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT results_eq($$SELECT state, rows_done, rows_changed, rows_removed FROM t24.job('t24.tgt')$$,
                  $$VALUES ('done'::text, 0::bigint, 0::bigint, 0::bigint)$$, 'nothing changed: nothing to do');

-- rounds of random changes, in the calling session and with workers
SELECT t24.mutate(0.11);
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'random round 1');
SELECT t24.mutate(0.22);
SELECT t24.mutate(0.33);
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 50, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'random rounds 2 and 3, batches of 50 keys');
SELECT t24.mutate(0.44);
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 2, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'random round 4, with workers');
SELECT t24.mutate(0.55);
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 2, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'random round 5, with workers');

-- a new model version: every row again under it, then the log
SELECT 1 FROM treeshap.load_model('t24_reg', convert_to(:'m_reg', 'UTF8') || ' ', replace => true) \g /dev/null
SELECT t24.mutate(0.66);
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 2, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'a new version and a random round');
SELECT is((SELECT count(DISTINCT model_version) FROM t24.tgt), 1::bigint, 'one version left');

-- TRUNCATE: nothing of the old rows is left
TRUNCATE t24.src;
INSERT INTO t24.src SELECT g, g % 15, 20, 5, 1, 900, 3, 36, -121 FROM generate_series(1, 30) g;
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'after a TRUNCATE and inserts');

-- the target emptied behind the job's back (a TRUNCATE here; a crash empties an unlogged
-- one): the next run explains every row again, not only the keys the log holds
TRUNCATE t24.tgt;
UPDATE t24.src SET "MedInc" = "MedInc" + 1 WHERE id = 5;
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'after a TRUNCATE of the target');
SELECT results_eq($$SELECT rows_done, rows_total FROM t24.job('t24.tgt')$$, $$VALUES (30::bigint, 30::bigint)$$,
                  'a target found empty is explained whole again');

-- a role that may change the source but owns no job: its changes are logged, and it reads no log
DROP ROLE IF EXISTS t24_writer;
CREATE ROLE t24_writer;
GRANT USAGE ON SCHEMA t24 TO t24_writer;
GRANT SELECT, INSERT, UPDATE, DELETE ON t24.src TO t24_writer;
SET ROLE t24_writer;
UPDATE t24.src SET "HouseAge" = 1 WHERE id <= 5;
DELETE FROM t24.src WHERE id = 30;
SELECT is((SELECT count(*) FROM treeshap.job_change), 0::bigint, 'a role that owns no job reads no change log');
RESET ROLE;
DROP ROLE IF EXISTS t24_reader;
CREATE ROLE t24_reader;
GRANT USAGE ON SCHEMA t24 TO t24_reader;
GRANT SELECT ON t24.src TO t24_reader;
SELECT job AS t24_job FROM treeshap.job_store WHERE target = 't24.tgt' \gset
SET ROLE t24_reader;
SELECT throws_ok(format($$INSERT INTO treeshap.job_change (job, keys) VALUES (%s, '{x}')$$, :t24_job), '42501',
                 NULL, 'a role that may not write the source may not write its log');
RESET ROLE;
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'another role''s changes are followed');

-- follow => false: the triggers go, the target appends (rows changed meanwhile stay as they were)
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0);
SELECT results_eq($$SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 't24.src'::regclass AND tgname LIKE 'treeshap_job_%'$$,
                  ARRAY[0], 'a run without follow takes the triggers off');
UPDATE t24.src SET "MedInc" = 14 WHERE id = 1;
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0);
SELECT is(t24.in_step('t24.tgt'), 'missing 1, extra or different 1', 'append-only: the updated row keeps its explanation');
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'following again explains the target anew');

-- a renamed key column: the source's writers go on, and so does the job
ALTER TABLE t24.src RENAME COLUMN id TO ident;
UPDATE t24.src SET "MedInc" = 2 WHERE ident = 2;
ALTER TABLE t24.src RENAME COLUMN ident TO id;
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt'), 'missing 0, extra or different 0', 'a change made while the key had another name');
-- a target dropped: its next job's triggers replace the old job's, which log for no one
DROP TABLE t24.tgt;
CALL treeshap.explain_into('t24_reg', 't24.src', 't24.tgt', batch_size => 300, workers => 0, follow => true);
SELECT results_eq($$SELECT count(*)::int FROM pg_trigger WHERE tgrelid = 't24.src'::regclass AND tgname LIKE 'treeshap_job_%'$$,
                  ARRAY[4], 'a dropped target''s old job leaves no trigger behind');
-- a followed target is one source's
CREATE TABLE t24.src2 AS SELECT * FROM t24.src;
ALTER TABLE t24.src2 ADD PRIMARY KEY (id);
SELECT throws_ok($$CALL treeshap.explain_into('t24_reg', 't24.src2', 't24.tgt', follow => true)$$, '55000',
                 NULL, 'a second source into a followed target is refused (55000)');
SELECT throws_ok($$CALL treeshap.explain_into('t24_reg', 't24.src2', 't24.tgt')$$, '55000',
                 NULL, 'also without follow');

-- a pass under a new version that fails half way: the next run finishes it
CREATE TABLE t24.poison (on_ boolean);
CREATE FUNCTION t24.gate(k int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF k > 3000 AND EXISTS (SELECT FROM t24.poison) THEN
        RAISE EXCEPTION 'poisoned key %', k;
    END IF;
    RETURN true;
END
$$;
CALL treeshap.explain_into('t24_reg', 't24.src2', 't24.tgt2', batch_size => 300, workers => 0, filter => 't24.gate(id)',
                           follow => true);
SELECT 1 FROM treeshap.load_model('t24_reg', convert_to(:'m_reg', 'UTF8') || '  ', replace => true) \g /dev/null
INSERT INTO t24.poison VALUES (true);
\set ON_ERROR_STOP 0
CALL treeshap.explain_into('t24_reg', 't24.src2', 't24.tgt2', batch_size => 300, workers => 0, filter => 't24.gate(id)',
                           follow => true);
\set ON_ERROR_STOP 1
DELETE FROM t24.poison;
CALL treeshap.explain_into('t24_reg', 't24.src2', 't24.tgt2', batch_size => 300, workers => 0, filter => 't24.gate(id)',
                           follow => true);
SELECT is(t24.in_step('t24.tgt2', 't24.src2'), 'missing 0, extra or different 0', 'a new version''s pass that failed half way is finished by the next run');

-- what cannot carry triggers, or would not fire them for every change, is compared whole
-- at every run: a view, and a partitioned table (its partitions are written directly)
CREATE VIEW t24.src_view AS SELECT * FROM t24.src;
CALL treeshap.explain_into('t24_reg', 't24.src_view', 't24.tgt_view', batch_size => 300, workers => 0, follow => true);
SELECT results_eq($$SELECT follow_by, state FROM t24.job('t24.tgt_view')$$,
                  $$VALUES ('comparison', 'done')$$, 'a view is followed by comparison');
SELECT t24.mutate(0.61);
UPDATE t24.src SET "HouseAge" = "HouseAge" + 1 WHERE id % 7 = 1;
CALL treeshap.explain_into('t24_reg', 't24.src_view', 't24.tgt_view', batch_size => 300, workers => 2, follow => true);
SELECT is(t24.in_step('t24.tgt_view'), 'missing 0, extra or different 0',
          'a compared view''s target follows updates (features, keys), deletes and inserts, with workers');
CREATE TABLE t24.parted (LIKE t24.src) PARTITION BY RANGE (id);
CREATE TABLE t24.parted_lo PARTITION OF t24.parted FOR VALUES FROM (MINVALUE) TO (3000);
CREATE TABLE t24.parted_hi PARTITION OF t24.parted FOR VALUES FROM (3000) TO (MAXVALUE);
ALTER TABLE t24.parted ADD PRIMARY KEY (id);
INSERT INTO t24.parted SELECT * FROM t24.src;
CALL treeshap.explain_into('t24_reg', 't24.parted', 't24.tgt_parted', batch_size => 300, workers => 0, follow => true);
UPDATE t24.parted_hi SET "MedInc" = "MedInc" + 2 WHERE id % 5 = 0;
DELETE FROM t24.parted_lo WHERE id % 11 = 0;
UPDATE t24.parted SET id = id + 3001 WHERE id BETWEEN 100 AND 200;
CALL treeshap.explain_into('t24_reg', 't24.parted', 't24.tgt_parted', batch_size => 300, workers => 0, follow => true);
SELECT is((SELECT format('missing %s, extra %s, rows_changed %s, rows_removed %s',
                         (SELECT count(*) FROM (SELECT * FROM treeshap.explain_shap_wide('t24_reg', 'SELECT id, * FROM t24.parted')
                                                EXCEPT ALL SELECT row_key, output, base_value, shap_values FROM t24.tgt_parted) m),
                         (SELECT count(*) FROM (SELECT row_key, output, base_value, shap_values FROM t24.tgt_parted
                                                EXCEPT ALL SELECT * FROM treeshap.explain_shap_wide('t24_reg', 'SELECT id, * FROM t24.parted')) x),
                         j.rows_changed, j.rows_removed) FROM t24.job('t24.tgt_parted') j),
          format('missing 0, extra 0, rows_changed %s, rows_removed %s', (SELECT count(*) FROM t24.parted),
                 (SELECT count(*) FROM t24.src s WHERE s.id % 11 = 0 AND s.id < 3000 OR s.id BETWEEN 100 AND 200)),
          'a compared partitioned table''s target follows changes written to its partitions');

-- the source's writers are never refused: a column's privilege, a renamed source, a
-- writer through a view, triggers of a job that is gone; the changes are followed
CREATE TABLE t24.src4 AS SELECT * FROM t24.src;
ALTER TABLE t24.src4 ADD PRIMARY KEY (id);
CALL treeshap.explain_into('t24_reg', 't24.src4', 't24.tgt4', batch_size => 300, workers => 0, follow => true);
ALTER TABLE t24.src4 RENAME TO src4_renamed;
CREATE VIEW t24.src4_view AS SELECT * FROM t24.src4_renamed;
GRANT SELECT, UPDATE ("MedInc") ON t24.src4_renamed TO t24_writer;
GRANT SELECT, UPDATE, DELETE ON t24.src4_view TO t24_writer;
SET ROLE t24_writer;
UPDATE t24.src4_renamed SET "MedInc" = "MedInc" + 3 WHERE id % 9 = 0;
DELETE FROM t24.src4_view WHERE id % 13 = 0;
RESET ROLE;
SELECT is((SELECT count(*) FROM treeshap.job_change c JOIN treeshap.job_store j USING (job) WHERE j.target = 't24.tgt4'),
          2::bigint, 'a renamed source''s writers with a column''s privilege or through a view log their statements');
SET ROLE t24_reader;
SELECT throws_ok(format($$INSERT INTO treeshap.job_change (job, keys) VALUES (%s, '{1}')$$,
                        (SELECT job FROM treeshap.job_store WHERE target = 't24.tgt4')),
                 '42501', NULL, 'no one writes a job''s log but its triggers');
RESET ROLE;
CALL treeshap.explain_into('t24_reg', 't24.src4_renamed', 't24.tgt4', batch_size => 300, workers => 0, follow => true);
SELECT is(t24.in_step('t24.tgt4', 't24.src4_renamed'), 'missing 0, extra or different 0', 'the renamed source''s target follows');
-- triggers disabled for a while (changes missed): the next run explains the target anew
ALTER TABLE t24.src4_renamed DISABLE TRIGGER USER;
UPDATE t24.src4_renamed SET "MedInc" = "MedInc" + 1 WHERE id % 7 = 0;
ALTER TABLE t24.src4_renamed ENABLE TRIGGER USER;
CALL treeshap.explain_into('t24_reg', 't24.src4_renamed', 't24.tgt4', batch_size => 300, workers => 0, follow => true);
SELECT is((SELECT count(*) FROM (SELECT row_key, output, base_value, shap_values FROM t24.tgt4
                                 EXCEPT ALL SELECT * FROM treeshap.explain_shap_wide('t24_reg', 'SELECT id, * FROM t24.src4_renamed')) x),
          0::bigint, 'triggers that were disabled: the next run explains the target anew');
-- the target dropped and its job forgotten: the triggers left log nothing and refuse no write
DROP TABLE t24.tgt4;
DELETE FROM treeshap.job_store WHERE target = 't24.tgt4';
SET ROLE t24_writer;
SELECT lives_ok($$UPDATE t24.src4_renamed SET "MedInc" = 1 WHERE id = 3$$, 'a gone job''s triggers refuse no write');
RESET ROLE;

-- the long layout follows inserts, updates and deletes
CALL treeshap.explain_into('t24_reg', 't24.src4_renamed', 't24.tgt_long', layout => 'long', batch_size => 300,
                           workers => 0, follow => true);
INSERT INTO t24.src4_renamed SELECT id + 500000, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup",
                                    "Latitude", "Longitude" FROM t24.src4_renamed WHERE id % 11 = 0;
UPDATE t24.src4_renamed SET "Latitude" = "Latitude" + 1 WHERE id % 5 = 0;
DELETE FROM t24.src4_renamed WHERE id % 17 = 0;
CALL treeshap.explain_into('t24_reg', 't24.src4_renamed', 't24.tgt_long', layout => 'long', batch_size => 300,
                           workers => 2, follow => true);
SELECT is(t24.in_step('t24.tgt_long', 't24.src4_renamed', 'long'), 'missing 0, extra or different 0', 'the long layout''s target follows inserts, updates and deletes');

-- a partition is compared (statements on its parent would not fire its triggers), and a
-- compared source's NULL keys are skipped as a pass skips them
CALL treeshap.explain_into('t24_reg', 't24.parted_lo', 't24.tgt_part_lo', batch_size => 300, workers => 0, follow => true);
SELECT is((SELECT follow_by FROM t24.job('t24.tgt_part_lo')), 'comparison', 'a partition is followed by comparison');
CREATE TABLE t24.src5 AS SELECT * FROM t24.src;
INSERT INTO t24.src5 (id, "MedInc") VALUES (NULL, 3);
CREATE VIEW t24.src5_view AS SELECT * FROM t24.src5;
CALL treeshap.explain_into('t24_reg', 't24.src5_view', 't24.tgt5', batch_size => 100000, workers => 0, follow => true);
UPDATE t24.src5 SET "MedInc" = "MedInc" + 2 WHERE id % 4 = 0;
CALL treeshap.explain_into('t24_reg', 't24.src5_view', 't24.tgt5', batch_size => 100000, workers => 0, follow => true);
SELECT is((SELECT count(*) FROM (SELECT row_key, output, base_value, shap_values FROM t24.tgt5
                                 EXCEPT ALL SELECT * FROM treeshap.explain_shap_wide('t24_reg', 'SELECT id, * FROM t24.src5 WHERE id IS NOT NULL')) x)
          + (SELECT count(*) FROM t24.src5 WHERE id IS NOT NULL) - (SELECT count(*) FROM t24.tgt5),
          0::bigint, 'a comparison in one range skips the NULL key');

-- a caller who may put triggers on a table but does not own it is compared
CREATE TABLE t24.src6 AS SELECT * FROM t24.src;
ALTER TABLE t24.src6 ADD PRIMARY KEY (id);
GRANT SELECT, TRIGGER ON t24.src6 TO t24_writer;
GRANT CREATE ON SCHEMA t24 TO t24_writer;
SET ROLE t24_writer;
CALL treeshap.explain_into('t24_reg', 't24.src6', 't24.tgt6', batch_size => 300, workers => 0, follow => true);
RESET ROLE;
SELECT results_eq($$SELECT follow_by, state FROM t24.job('t24.tgt6')$$, $$VALUES ('comparison', 'done')$$,
                  'a table the caller may put triggers on but does not own is followed by comparison');
-- interval keys written by a session with another IntervalStyle are logged in one style
CREATE TABLE t24.src7 AS SELECT make_interval(days => id, hours => id % 5 + 1, mins => 2) AS id, "MedInc", "HouseAge",
       "AveRooms", "AveBedrms", "Population", "AveOccup", "Latitude", "Longitude" FROM t24.src;
ALTER TABLE t24.src7 ADD PRIMARY KEY (id);
CALL treeshap.explain_into('t24_reg', 't24.src7', 't24.tgt7', batch_size => 300, workers => 0, follow => true);
SET IntervalStyle = sql_standard;
UPDATE t24.src7 SET "MedInc" = "MedInc" + 4 WHERE extract(day FROM id)::int % 4 = 0;
INSERT INTO t24.src7 SELECT -id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup",
                            "Latitude", "Longitude" FROM t24.src7 WHERE extract(day FROM id)::int % 7 = 0;
RESET IntervalStyle;
CALL treeshap.explain_into('t24_reg', 't24.src7', 't24.tgt7', batch_size => 300, workers => 0, follow => true);
SELECT is((SELECT format('missing %s, extra %s',
                         (SELECT count(*) FROM (SELECT * FROM treeshap.explain_shap_wide('t24_reg', 'SELECT id, * FROM t24.src7', NULL::interval)
                                                EXCEPT ALL SELECT row_key, output, base_value, shap_values FROM t24.tgt7) m),
                         (SELECT count(*) FROM (SELECT row_key, output, base_value, shap_values FROM t24.tgt7
                                                EXCEPT ALL SELECT * FROM treeshap.explain_shap_wide('t24_reg', 'SELECT id, * FROM t24.src7', NULL::interval)) x))),
          'missing 0, extra 0', 'interval keys changed under IntervalStyle sql_standard are followed');

SELECT * FROM finish();
DROP SCHEMA t24 CASCADE;
DROP ROLE t24_writer;
DROP ROLE t24_reader;
DELETE FROM treeshap.job_store WHERE target LIKE 't24.%';
SELECT 1 FROM treeshap.drop_model('t24_reg') \g /dev/null
