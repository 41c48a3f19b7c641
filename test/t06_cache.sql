-- Cache invalidation across backends: another backend (through dblink)
-- caches a model, this backend replaces it, and the other backend's next
-- call must use the new model.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
\set m1 `cat test/fixtures/reg.json`
\set m2 `cat test/fixtures/reg_v3.json`
SELECT treeshap.drop_model('xb_cache', true) \g /dev/null
SELECT treeshap.drop_model('xb_check', true) \g /dev/null
SELECT 1 FROM treeshap.load_model('xb_cache', convert_to(:'m1', 'UTF8')) \g /dev/null
CREATE TEMP TABLE seen (step int, here float8[], there float8[]);
SELECT dblink_connect('other', format('dbname=%s port=%s host=%s user=%s', current_database(),
       current_setting('port'), current_setting('unix_socket_directories'), current_user)) \g /dev/null
\set QUIET 0
SELECT plan(15);

INSERT INTO seen
SELECT 1, treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118]), t.v
  FROM dblink('other', $$SELECT treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118])$$) AS t(v float8[]);
SELECT 1 FROM treeshap.load_model('xb_cache', convert_to(:'m2', 'UTF8'), replace => true) \g /dev/null
INSERT INTO seen
SELECT 2, treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118]), t.v
  FROM dblink('other', $$SELECT treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118])$$) AS t(v float8[]);

SELECT is((SELECT there FROM seen WHERE step = 1), (SELECT here FROM seen WHERE step = 1),
          'both backends agree on the first model');
SELECT isnt((SELECT here FROM seen WHERE step = 2), (SELECT here FROM seen WHERE step = 1),
            'the replacement model gives other values');
SELECT is((SELECT there FROM seen WHERE step = 2), (SELECT here FROM seen WHERE step = 2),
          'the other backend dropped its cached copy and uses the replacement');

-- Bytes changed behind the cache, by an owner's own writes to model_store (row
-- level security allows them): the row describes its bytes, and both backends
-- explain with the new bytes at their next call.
CREATE TEMP TABLE before_update AS SELECT version FROM treeshap.model_store WHERE name = 'xb_cache';
UPDATE treeshap.model_store SET model = convert_to(:'m1', 'UTF8') WHERE name = 'xb_cache';
SELECT cmp_ok((SELECT version FROM treeshap.model_store WHERE name = 'xb_cache'), '>',
              (SELECT version FROM before_update), 'new bytes written by UPDATE are a new version');
INSERT INTO seen
SELECT 3, treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118]), t.v
  FROM dblink('other', $$SELECT treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118])$$) AS t(v float8[]);
SELECT is((SELECT here FROM seen WHERE step = 3), (SELECT here FROM seen WHERE step = 1),
          'this backend explains with the bytes an UPDATE wrote');
SELECT is((SELECT there FROM seen WHERE step = 3), (SELECT here FROM seen WHERE step = 1),
          'so does the other backend');
-- the same version number over other bytes (a row deleted and inserted again)
CREATE TEMP TABLE kept AS SELECT version FROM treeshap.model_store WHERE name = 'xb_cache';
DELETE FROM treeshap.model_store WHERE name = 'xb_cache';
INSERT INTO treeshap.model_store (name, model, version)
SELECT 'xb_cache', convert_to(:'m2', 'UTF8'), version FROM kept;
INSERT INTO seen
SELECT 4, treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118]), t.v
  FROM dblink('other', $$SELECT treeshap.shap_values('xb_cache', ARRAY[3,20,5,1,1000,3,34,-118])$$) AS t(v float8[]);
SELECT is((SELECT here FROM seen WHERE step = 4), (SELECT here FROM seen WHERE step = 2),
          'the same version over other bytes: this backend sees the new bytes (the cache compares digests)');
SELECT is((SELECT there FROM seen WHERE step = 4), (SELECT here FROM seen WHERE step = 2),
          'and the other backend too');
-- metadata comes from the bytes, never from the writer
UPDATE treeshap.model_store SET num_features = 2, num_outputs = 7, format = 'lightgbm', feature_names = '{a,b}'
 WHERE name = 'xb_cache';
SELECT is((SELECT format || ' ' || num_features || ' ' || num_outputs || ' ' || array_length(feature_names, 1)
             FROM treeshap.models WHERE name = 'xb_cache'),
          'xgboost-json 8 1 8', 'an UPDATE of the metadata is overruled by the bytes');
DELETE FROM treeshap.model_store WHERE name = 'xb_cache';
INSERT INTO treeshap.model_store (name, model, format, num_trees, num_features, num_outputs, max_depth,
                                  num_leaves, base_score, digest)
VALUES ('xb_cache', convert_to(:'m1', 'UTF8'), 'lightgbm', 1, 2, 7, 1, 1, '{0}', 42);
SELECT is((SELECT format || ' ' || num_features || ' ' || num_outputs || ' ' || num_trees
             FROM treeshap.models WHERE name = 'xb_cache'),
          (SELECT format || ' ' || num_features || ' ' || num_outputs || ' ' || num_trees
             FROM treeshap.load_model('xb_check', convert_to(:'m1', 'UTF8'))),
          'a direct INSERT stores what the bytes say, not what the writer claimed');
SELECT is((SELECT digest FROM treeshap.model_store WHERE name = 'xb_cache'),
          (SELECT digest FROM treeshap.model_store WHERE name = 'xb_check'), 'and the digest of its bytes');
SELECT throws_like($$INSERT INTO treeshap.model_store (name, model) VALUES ('xb_junk', '\x7b7d')$$,
                   'could not read model "xb_junk"%', 'bytes that are no model are refused on a direct INSERT');
SELECT throws_ok($$INSERT INTO treeshap.model_store (name, model) VALUES ('xb_null', NULL)$$, '23502', NULL,
                 'a NULL model is refused by the NOT NULL constraint, the trigger reading nothing');
SELECT throws_ok($$UPDATE treeshap.model_store SET name = NULL WHERE name = 'xb_cache'$$, '23502', NULL,
                 'and so is a NULL name');
SELECT throws_like($$UPDATE treeshap.model_store SET model = '\x00' WHERE name = 'xb_cache'$$,
                   'could not read model "xb_cache"%', 'and on a direct UPDATE');

SELECT dblink_disconnect('other') \g /dev/null
SELECT treeshap.drop_model('xb_cache') \g /dev/null
SELECT treeshap.drop_model('xb_check') \g /dev/null
SELECT * FROM finish();
