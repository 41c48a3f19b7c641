-- The per-backend model cache is bounded by treeshap.model_cache_size: a
-- session explaining 300 distinct models (0.67 MB of parsed model and path
-- table each, 200 MB unbounded) keeps at most 8 MB of them, least recently
-- used freed first, and its resident memory grows accordingly. The cache's
-- entries are memory contexts named 'treeshap cached model' whose identifier
-- is the model's name (pg_backend_memory_contexts).
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
SET treeshap.device = cpu;
\set reg `cat test/fixtures/reg.json`
SELECT count(*) FROM (SELECT treeshap.load_model('t14_' || g, convert_to(:'reg', 'UTF8'), true)
                        FROM generate_series(1, 300) g) s \g /dev/null
CREATE TEMP TABLE t14_row AS
SELECT 1 AS id, 3::real AS "MedInc", 20::real AS "HouseAge", 5::real AS "AveRooms", 1::real AS "AveBedrms",
       1000::real AS "Population", 3::real AS "AveOccup", 34::real AS "Latitude", -118::real AS "Longitude";
-- this backend's resident memory in kB (Linux)
CREATE FUNCTION pg_temp.rss_kb() RETURNS bigint LANGUAGE sql AS $$
  SELECT substring(pg_read_file('/proc/self/status') FROM 'VmRSS:\s+(\d+)')::bigint
$$;
CREATE FUNCTION pg_temp.explain_all(n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  FOR g IN 1..n LOOP
    PERFORM count(*) FROM treeshap.explain_shap_wide('t14_' || g, 'SELECT * FROM t14_row');
  END LOOP;
END $$;
CREATE TEMP TABLE cached AS
SELECT ident, total_bytes FROM pg_backend_memory_contexts WHERE false;
CREATE FUNCTION pg_temp.cached() RETURNS void LANGUAGE sql AS $$
  TRUNCATE cached;
  INSERT INTO cached SELECT ident, total_bytes FROM pg_backend_memory_contexts
   WHERE name = 'treeshap cached model';
$$;
\set QUIET 0

SELECT plan(6);

SELECT is(current_setting('treeshap.model_cache_size'), '512MB', 'the default bound is 512MB');

\set QUIET 1
SET treeshap.model_cache_size = '8MB';
CREATE TEMP TABLE rss AS SELECT pg_temp.rss_kb() AS before;
SELECT pg_temp.explain_all(300), pg_temp.cached() \g /dev/null
UPDATE rss SET before = pg_temp.rss_kb() - before;
\set QUIET 0
SELECT cmp_ok((SELECT sum(total_bytes) FROM cached), '<=', 8 * 1048576::numeric,
              'after 300 distinct models the cache holds at most treeshap.model_cache_size (8MB)');
SELECT cmp_ok((SELECT count(*) FROM cached), '>', 1::bigint, 'and more than one model');
SELECT is((SELECT array_agg(ident ORDER BY ident) FROM cached),
          (SELECT array_agg('t14_' || g ORDER BY 't14_' || g)
             FROM generate_series(301 - (SELECT count(*) FROM cached)::int, 300) g),
          'the most recently used ones');
SELECT cmp_ok((SELECT before FROM rss), '<', 16 * 1024::bigint,
              'the backend''s resident memory grew by less than twice the bound (unbounded: about 200 MB)');

\set QUIET 1
SET treeshap.model_cache_size = 0;
SELECT pg_temp.explain_all(3), pg_temp.cached() \g /dev/null
\set QUIET 0
SELECT is((SELECT array_agg(ident) FROM cached), ARRAY['t14_3'],
          'with 0, only the model used last is kept (it may be larger than any bound)');

\set QUIET 1
SELECT * FROM finish();
SELECT treeshap.drop_model('t14_' || g) FROM generate_series(1, 300) g \g /dev/null
