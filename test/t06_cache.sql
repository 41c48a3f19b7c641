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
SELECT 1 FROM treeshap.load_model('xb_cache', convert_to(:'m1', 'UTF8')) \g /dev/null
CREATE TEMP TABLE seen (step int, here float8[], there float8[]);
SELECT dblink_connect('other', format('dbname=%s port=%s host=%s user=%s', current_database(),
       current_setting('port'), current_setting('unix_socket_directories'), current_user)) \g /dev/null
\set QUIET 0
SELECT plan(3);

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

SELECT dblink_disconnect('other') \g /dev/null
SELECT treeshap.drop_model('xb_cache') \g /dev/null
SELECT * FROM finish();
