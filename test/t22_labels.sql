-- Labels and comments (issue 20): every user-facing object says what it is;
-- functions are parallel unsafe exactly where they write, and the labels hold
-- in parallel plans (a parallel safe function run by workers, a restricted one
-- in the leader beside a parallel scan), with the same results as serial plans.
BEGIN;
\ir setup.sql

SELECT plan(9);

SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY 1) FROM pg_proc p
            WHERE p.pronamespace = 'treeshap'::regnamespace AND p.proname NOT LIKE '\_%'
              AND obj_description(p.oid, 'pg_proc') IS NULL),
          NULL, 'every user-facing function and procedure has a comment');
SELECT is((SELECT array_agg(c.oid::regclass::text ORDER BY 1) FROM pg_class c
            WHERE c.relnamespace = 'treeshap'::regnamespace AND c.relkind IN ('r', 'v')
              AND obj_description(c.oid, 'pg_class') IS NULL),
          NULL, 'every table and view has a comment');
SELECT is((SELECT array_agg(t.oid::regtype::text ORDER BY 1) FROM pg_type t
            WHERE t.typnamespace = 'treeshap'::regnamespace AND t.typtype = 'e'
              AND obj_description(t.oid, 'pg_type') IS NULL),
          NULL, 'every type has a comment');

-- parallel unsafe: the functions that write (models, jobs, Citus's catalog), and no other
SELECT is((SELECT array_agg(DISTINCT p.proname::text ORDER BY p.proname::text) FROM pg_proc p
            WHERE p.pronamespace = 'treeshap'::regnamespace AND p.proname NOT LIKE '\_%'
              AND p.proparallel = 'u'),
          ARRAY['citus_share_models', 'drop_model', 'explain_into', 'load_model'],
          'parallel unsafe exactly where a function writes: load_model, drop_model, explain_into, citus_share_models');

SELECT is(treeshap.model_bytes(NULL), NULL, 'model_bytes is strict: NULL for a NULL name');

-- a parallel safe function in parallel workers
CREATE TABLE p_rows AS
SELECT h.id * 10 + k AS id, "MedInc", "HouseAge", "AveRooms", "AveBedrms", "Population", "AveOccup",
       "Latitude", "Longitude"
  FROM fx_houses h, generate_series(1, 10) k;
ANALYZE p_rows;
CREATE TEMP TABLE serial AS
SELECT (SELECT md5(string_agg(md5(treeshap.model_bytes(name)), ',' ORDER BY name)) FROM treeshap.model_store) AS bytes,
       (SELECT sum(w.base_value + w.shap_values[1]) FROM p_rows r
          JOIN treeshap.explain_shap_wide('reg', 'SELECT * FROM p_rows') w ON w.row_key = r.id) AS shap;
SET LOCAL parallel_setup_cost = 0;
SET LOCAL parallel_tuple_cost = 0;
SET LOCAL min_parallel_table_scan_size = 0;
SET LOCAL max_parallel_workers_per_gather = 2;
-- force_parallel_mode is debug_parallel_query from PostgreSQL 16 on
DO $$ BEGIN
    PERFORM set_config(CASE WHEN current_setting('server_version_num')::int >= 160000
                            THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', true);
END $$;
CREATE FUNCTION pg_temp.plan_of(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    line text;
    plan text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        plan := plan || line || E'\n';
    END LOOP;
    RETURN plan;
END
$$;
SELECT matches(pg_temp.plan_of($$SELECT md5(string_agg(md5(treeshap.model_bytes(name)), ',' ORDER BY name))
                                    FROM treeshap.model_store$$),
               'Gather', 'model_bytes (parallel safe) can run in a parallel plan''s workers');
SELECT is((SELECT md5(string_agg(md5(treeshap.model_bytes(name)), ',' ORDER BY name)) FROM treeshap.model_store),
          (SELECT bytes FROM serial), 'model_bytes in a parallel plan: the serial bytes');
SELECT matches(pg_temp.plan_of($$SELECT sum(w.base_value + w.shap_values[1]) FROM p_rows r
                                   JOIN treeshap.explain_shap_wide('reg', 'SELECT * FROM p_rows') w
                                     ON w.row_key = r.id$$),
               'Parallel Seq Scan on p_rows',
               'explain_shap_wide (parallel restricted) runs in the leader beside a parallel scan');
SELECT is((SELECT sum(w.base_value + w.shap_values[1]) FROM p_rows r
             JOIN treeshap.explain_shap_wide('reg', 'SELECT * FROM p_rows') w ON w.row_key = r.id),
          (SELECT shap FROM serial), 'and gives the serial plan''s values');

SELECT * FROM finish();
ROLLBACK;
