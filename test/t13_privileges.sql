-- Two ordinary roles right after CREATE EXTENSION, with no grant of their own:
-- both may read and explain every model and load their own; only a model's
-- owner (or a member of the owning role, or a superuser) may replace or drop
-- it; job rows are written by the role running the job and cannot be forged
-- or altered by another. Direct writes to the catalog obey the same rule
-- (row level security), and the digest always matches the stored bytes.
\set QUIET 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
SET treeshap.device = cpu;
DROP TABLE IF EXISTS public.t13_rows, public.t13_alice_shap, public.t13_alice_keyed, public.t13_alice_par;
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname IN ('t13_alice', 't13_bob', 't13_carol')) THEN
    DELETE FROM treeshap.job_store WHERE owner IN ('t13_alice', 't13_bob', 't13_carol');
    DELETE FROM treeshap.model_store WHERE owner IN ('t13_alice', 't13_bob', 't13_carol');
    DROP OWNED BY t13_alice, t13_bob, t13_carol;
    DROP ROLE t13_carol, t13_alice, t13_bob;
  END IF;
END $$;
CREATE ROLE t13_alice;
CREATE ROLE t13_bob;
CREATE ROLE t13_carol IN ROLE t13_alice;	-- a member of alice's role
\set reg `cat test/fixtures/reg.json`
\set deep `cat test/fixtures/deep.json`
CREATE TABLE public.t13_rows AS
SELECT g AS id, 3 + sin(g)::real AS "MedInc", 20::real AS "HouseAge", 5::real AS "AveRooms",
       1::real AS "AveBedrms", 1000::real AS "Population", 3::real AS "AveOccup",
       34::real AS "Latitude", -118::real AS "Longitude"
  FROM generate_series(1, 20) g;
GRANT SELECT ON public.t13_rows TO PUBLIC;
GRANT CREATE ON SCHEMA public TO t13_alice;
\set QUIET 0

SELECT plan(23);

SET ROLE t13_alice;
SELECT is((treeshap.load_model('t13_alice_model', convert_to(:'reg', 'UTF8'))).owner, 't13_alice'::name,
          'a fresh role loads a model without any grant, and owns it');
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('t13_alice_model', 'SELECT * FROM public.t13_rows')),
          20::bigint, 'and explains it');
CALL treeshap.explain_into('t13_alice_model', 'public.t13_rows', 'public.t13_alice_shap');
SELECT is((SELECT ROW(state, rows_done)::text FROM treeshap.jobs WHERE target LIKE '%t13_alice_shap'),
          ROW('done', 20)::text, 'and runs an explain_into job into its own table');

-- workers act as the caller: a NOLOGIN role reached by SET ROLE, its privileges,
-- its row level security (the filter below holds only for alice, and is evaluated
-- in the workers)
CREATE TABLE public.t13_alice_keyed AS SELECT * FROM public.t13_rows;
ALTER TABLE public.t13_alice_keyed ADD PRIMARY KEY (id);
CALL treeshap.explain_into('t13_alice_model', 'public.t13_alice_keyed', 'public.t13_alice_par',
                           batch_size => 5, workers => 2, filter => 'current_user = ''t13_alice''');
SELECT is((SELECT ROW(state, rows_done, workers, ranges_done)::text FROM treeshap.jobs WHERE target LIKE '%t13_alice_par'),
          ROW('done', 20, 2, 4)::text, 'a run with workers under SET ROLE to a NOLOGIN role explains every row as that role');
SELECT is((SELECT ROW(count(*), bool_and(owner = 't13_alice'), bool_and(done_by <> pg_backend_pid()))::text
             FROM treeshap.job_range r JOIN treeshap.jobs j USING (job) WHERE j.target LIKE '%t13_alice_par'),
          ROW(4, true, true)::text, 'its ranges are the role''s, written by the workers');
SELECT is((SELECT count(*) FROM public.t13_alice_par), 20::bigint, 'into the role''s own target');
-- a target with row level security is written by INSERT, which applies the policies
CREATE TABLE public.t13_guarded (LIKE public.t13_alice_par INCLUDING ALL);
ALTER TABLE public.t13_guarded ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
SELECT throws_ok($$SELECT treeshap._explain_write('t13_alice_model', 'SELECT * FROM public.t13_rows',
                                                  'public.t13_guarded', 1, 'integer')$$,
                 '42809', NULL, 'explanations are never written straight into a target with row level security');
DROP TABLE public.t13_guarded;
RESET ROLE;

SET ROLE t13_bob;
SELECT is((SELECT count(*) FROM treeshap.explain_shap_wide('t13_alice_model', 'SELECT * FROM public.t13_rows')),
          20::bigint, 'another role explains it too (everyone reads and explains every model)');
SELECT throws_ok($$SELECT treeshap.load_model('t13_alice_model', convert_to('x', 'UTF8'), replace => true)$$,
                 '42501', 'model "t13_alice_model" is owned by role "t13_alice"',
                 'another role cannot replace it');
SELECT throws_ok($$SELECT treeshap.drop_model('t13_alice_model')$$,
                 '42501', 'model "t13_alice_model" is owned by role "t13_alice"', 'nor drop it');
DELETE FROM treeshap.model_store WHERE name = 't13_alice_model';
UPDATE treeshap.model_store SET model = convert_to(:'deep', 'UTF8') WHERE name = 't13_alice_model';
SELECT is((SELECT owner FROM treeshap.models WHERE name = 't13_alice_model'), 't13_alice'::name,
          'nor delete or overwrite its catalog row directly (row level security)');
SELECT throws_ok($$INSERT INTO treeshap.model_store (name, model, owner)
                   SELECT 't13_forged', model, 't13_alice' FROM treeshap.model_store WHERE name = 't13_alice_model'$$,
                 '42501', NULL, 'nor load a model in another role''s name');
SELECT throws_like($$CALL treeshap.explain_into('t13_alice_model', 'public.t13_rows', 'public.t13_alice_shap')$$,
                   '%job into "%t13_alice_shap" belongs to role "t13_alice"',
                   'nor run or take over another role''s job');
SELECT throws_ok($$SELECT treeshap._explain_write('t13_alice_model', 'SELECT * FROM public.t13_rows',
                                                  'public.t13_alice_par', 1, 'integer')$$,
                 '42809', NULL, 'nor write explanations straight into another role''s target');
SELECT is((SELECT count(*) FROM treeshap.job_range r JOIN treeshap.job_store j USING (job) WHERE j.target LIKE '%t13_alice_par'),
          0::bigint, 'nor read another role''s key ranges (their bounds are its source''s keys)');
SELECT throws_ok($$INSERT INTO treeshap.job_range (job, range_no, model_version, lo, hi, pending_only, rows_planned, plan)
                   SELECT job, 99, model_version, NULL, NULL, false, 1, 'x' FROM treeshap.job_store
                    WHERE target LIKE '%t13_alice_par'$$,
                 '42501', NULL, 'nor add a range to another role''s job');
SELECT treeshap._job_update(job, 'failed', error => 'forged') FROM treeshap.jobs
 WHERE target LIKE '%t13_alice_shap' \g /dev/null
DELETE FROM treeshap.job_store WHERE target LIKE '%t13_alice_shap' OR target LIKE '%t13_alice_par';
RESET ROLE;
SELECT is((SELECT ROW(state, rows_done, error)::text FROM treeshap.jobs WHERE target LIKE '%t13_alice_shap'),
          ROW('done', 20, NULL)::text, 'nor forge, fail or forget another role''s job rows');
SELECT is((SELECT ROW(has_function_privilege('t13_bob', p.oid, 'EXECUTE'),
                      has_table_privilege('t13_bob', 'treeshap.gpu_status', 'SELECT'),
                      has_table_privilege('t13_bob', 'treeshap.gpu_models', 'SELECT'))::text
             FROM pg_proc p WHERE p.proname = '_service_load'),
          ROW(false, true, true)::text,
          'every role sees the GPU service''s state and models; its diagnostics stay revoked');

SET ROLE t13_carol;
SELECT lives_ok(format('SELECT treeshap.load_model(%L, %L::bytea, replace => true)', 't13_alice_model',
                       convert_to(:'deep', 'UTF8')),
                'a member of the owning role replaces the model');
SELECT is((SELECT owner FROM treeshap.models WHERE name = 't13_alice_model'), 't13_alice'::name,
          'which stays owned by the owning role');
RESET ROLE;

SELECT is((SELECT digest FROM treeshap.model_store WHERE name = 't13_alice_model'),
          treeshap._model_digest(convert_to(:'deep', 'UTF8')), 'the stored digest is that of the stored bytes');
UPDATE treeshap.model_store SET digest = 42 WHERE name = 't13_alice_model';
SELECT is((SELECT digest FROM treeshap.model_store WHERE name = 't13_alice_model'),
          treeshap._model_digest(convert_to(:'deep', 'UTF8')), 'even after a direct write of another digest');
SELECT ok(treeshap.drop_model('t13_alice_model'), 'a superuser drops any model');

\set QUIET 1
SELECT * FROM finish();
DROP TABLE IF EXISTS public.t13_rows, public.t13_alice_shap, public.t13_alice_keyed, public.t13_alice_par;
DELETE FROM treeshap.job_store WHERE target LIKE '%t13_alice_shap' OR target LIKE '%t13_alice_par';
REVOKE CREATE ON SCHEMA public FROM t13_alice;
DROP OWNED BY t13_alice, t13_bob, t13_carol;
DROP ROLE t13_carol, t13_alice, t13_bob;
