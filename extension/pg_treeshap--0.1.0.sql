-- pg_treeshap 0.1.0: exact SHAP values for XGBoost tree ensembles.
\echo Use "CREATE EXTENSION pg_treeshap" to load this file. \quit

-- Model catalog ------------------------------------------------------------

-- Every load or replace draws a new version; backends compare it with their
-- cached copy, so a replace or drop in one session reaches all others.
CREATE SEQUENCE treeshap.model_version;

CREATE TABLE treeshap.model_store (
    name          text PRIMARY KEY CHECK (name <> ''),
    format        text NOT NULL,
    num_trees     integer NOT NULL,
    num_features  integer NOT NULL,
    num_outputs   integer NOT NULL,
    max_depth     integer NOT NULL,
    num_leaves    bigint NOT NULL,
    feature_names text[],
    objective     text,
    base_score    double precision[] NOT NULL,
    model         bytea NOT NULL,
    categorical_features text[],
    num_categories integer[],
    created_at    timestamptz NOT NULL DEFAULT now(),
    version       bigint NOT NULL DEFAULT nextval('treeshap.model_version'),
    digest        bigint NOT NULL,
    owner         name NOT NULL DEFAULT current_user
);
COMMENT ON TABLE treeshap.model_store IS 'stored models with their original bytes';
COMMENT ON COLUMN treeshap.model_store.digest IS
    'CityHash64 of model (set by a trigger): with the version, the GPU service''s name for these bytes';
COMMENT ON COLUMN treeshap.model_store.owner IS
    'the role that loaded the model: it, its members and superusers may replace or drop it';

-- Whether the current role may replace or drop a model of this owner: the owner
-- itself or a member of it (superusers bypass row level security anyway).
CREATE FUNCTION treeshap._owns(owner name)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(pg_catalog.pg_has_role(
        (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = owner), 'MEMBER'), false);
$$;

-- Everyone reads and explains every model; a role writes only its own rows.
ALTER TABLE treeshap.model_store ENABLE ROW LEVEL SECURITY;
CREATE POLICY model_read ON treeshap.model_store FOR SELECT USING (true);
CREATE POLICY model_load ON treeshap.model_store FOR INSERT WITH CHECK (treeshap._owns(owner));
CREATE POLICY model_replace ON treeshap.model_store FOR UPDATE
    USING (treeshap._owns(owner)) WITH CHECK (treeshap._owns(owner));
CREATE POLICY model_drop ON treeshap.model_store FOR DELETE USING (treeshap._owns(owner));

-- The digest always matches the bytes, however the row was written.
CREATE FUNCTION treeshap._model_digest(model bytea)
RETURNS bigint
AS 'MODULE_PATHNAME', 'treeshap_model_digest'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION treeshap._model_stamp()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.digest := treeshap._model_digest(NEW.model);
    RETURN NEW;
END
$$;
CREATE TRIGGER model_stamp BEFORE INSERT OR UPDATE ON treeshap.model_store
    FOR EACH ROW EXECUTE FUNCTION treeshap._model_stamp();

-- models survive pg_dump/restore
SELECT pg_catalog.pg_extension_config_dump('treeshap.model_store', '');
SELECT pg_catalog.pg_extension_config_dump('treeshap.model_version', '');

CREATE VIEW treeshap.models AS
SELECT name, format, num_trees, num_features, num_outputs, max_depth, num_leaves,
       feature_names, objective, base_score, octet_length(model)::bigint AS size,
       created_at, version, categorical_features, num_categories, owner
  FROM treeshap.model_store;
COMMENT ON VIEW treeshap.models IS 'one row per stored model; base_score is in margin space; num_categories counts the category names the model lists per categorical feature (NULL: codes only)';

-- Any role may use the extension: read and explain every model, load its own
-- (row level security above keeps it to its own rows).
GRANT USAGE ON SCHEMA treeshap TO PUBLIC;
GRANT SELECT ON treeshap.model_store, treeshap.models TO PUBLIC;
GRANT INSERT, UPDATE, DELETE ON treeshap.model_store TO PUBLIC;
GRANT USAGE ON SEQUENCE treeshap.model_version TO PUBLIC;

CREATE FUNCTION treeshap._store_model(name text, model bytea, replace boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'treeshap_store_model'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.load_model(name text, model bytea, replace boolean DEFAULT false)
RETURNS treeshap.models
LANGUAGE sql VOLATILE
AS $$
    SELECT treeshap._check_owner(name) WHERE replace;
    SELECT treeshap._store_model(name, model, replace);
    SELECT * FROM treeshap.models m WHERE m.name = load_model.name;
$$;
COMMENT ON FUNCTION treeshap.load_model(text, bytea, boolean) IS
    'validate and store a model (XGBoost JSON or UBJSON, LightGBM text, CatBoost JSON); replace => true overwrites';

-- ERROR 42501 when the model exists and the current role may not replace or drop it.
CREATE FUNCTION treeshap._check_owner(name text)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    owner name;
BEGIN
    SELECT m.owner INTO owner FROM treeshap.model_store m WHERE m.name = _check_owner.name;
    IF FOUND AND NOT treeshap._owns(owner) THEN
        RAISE EXCEPTION 'model "%" is owned by role "%"', name, owner
              USING ERRCODE = 'insufficient_privilege',
                    HINT = 'Only its owner, a member of the owning role or a superuser may replace or drop it.';
    END IF;
END
$$;

CREATE FUNCTION treeshap.drop_model(name text, if_exists boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM treeshap._check_owner(name);
    DELETE FROM treeshap.model_store m WHERE m.name = drop_model.name;
    IF FOUND THEN
        RETURN true;
    END IF;
    IF if_exists THEN
        RETURN false;
    END IF;
    RAISE EXCEPTION 'model "%" does not exist', name USING ERRCODE = 'undefined_object';
END
$$;

CREATE FUNCTION treeshap.model_bytes(name text)
RETURNS bytea
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    bytes bytea;
BEGIN
    SELECT m.model INTO bytes FROM treeshap.model_store m WHERE m.name = model_bytes.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', name USING ERRCODE = 'undefined_object';
    END IF;
    RETURN bytes;
END
$$;
COMMENT ON FUNCTION treeshap.model_bytes(text) IS 'the model exactly as it was loaded';

-- What SHAP values explain: the margin (the trees' raw sum, as pred_contribs),
-- or, against a background, the model's output after its link (shap's
-- model_output = "probability").
CREATE TYPE treeshap.shap_output AS ENUM ('margin', 'probability');

-- Explanations ---------------------------------------------------------------
-- The query's first column is the row key; the rest are features. The
-- two-argument forms return integer keys as bigint; the three-argument forms
-- take NULL::<type> and return keys in that type.

CREATE FUNCTION treeshap.explain_shap(model text, query text,
                                      model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, feature text, shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_shap'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap(model text, query text, key_type anyelement,
                                      model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, feature text, shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_shap'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap_wide(model text, query text,
                                           model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, base_value double precision,
               shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_shap_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap_wide(model text, query text, key_type anyelement,
                                           model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, base_value double precision,
               shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_shap_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features(model text, query text, k integer DEFAULT 5,
                                              model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, prediction double precision,
               base_value double precision, rank integer, feature text,
               shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features(model text, query text, key_type anyelement,
                                              k integer DEFAULT 5,
                                              model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, prediction double precision,
               base_value double precision, rank integer, feature text,
               shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.predict(model text, query text)
RETURNS TABLE (row_key bigint, output integer, margin double precision,
               prediction double precision)
AS 'MODULE_PATHNAME', 'treeshap_predict'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.predict(model text, query text, key_type anyelement)
RETURNS TABLE (row_key anyelement, output integer, margin double precision,
               prediction double precision)
AS 'MODULE_PATHNAME', 'treeshap_predict'
LANGUAGE C VOLATILE;

-- Interaction values: row feature_a of each (row, output)'s matrix for every
-- selected feature_a (all when features is NULL); the diagonal and every
-- nonzero entry. method 'shapley' is XGBoost's pred_interactions (rows sum to
-- the SHAP values); 'taylor' is the Shapley-Taylor index of order 2.
CREATE FUNCTION treeshap.explain_interactions(model text, query text,
                                              features text[] DEFAULT NULL,
                                              method text DEFAULT 'shapley')
RETURNS TABLE (row_key bigint, output integer, feature_a text, feature_b text,
               interaction double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_interactions'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_interactions(model text, query text, key_type anyelement,
                                              features text[] DEFAULT NULL,
                                              method text DEFAULT 'shapley')
RETURNS TABLE (row_key anyelement, output integer, feature_a text, feature_b text,
               interaction double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_interactions'
LANGUAGE C VOLATILE;

-- Global importance, summed batch by batch: no per-row result is kept. The
-- query is the same as explain_shap's (its first column, the key, is ignored).
CREATE FUNCTION treeshap.feature_importance(model text, query text,
                                            model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (output integer, feature text, mean_abs_shap double precision,
               mean_shap double precision, rows bigint)
AS 'MODULE_PATHNAME', 'treeshap_feature_importance'
LANGUAGE C VOLATILE;

-- importance per segment: the query's first column (of segment_type's type)
-- names each row's segment, e.g. a month or a region
CREATE FUNCTION treeshap.feature_importance(model text, query text, segment_type anyelement,
                                            model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (segment anyelement, output integer, feature text, mean_abs_shap double precision,
               mean_shap double precision, rows bigint)
AS 'MODULE_PATHNAME', 'treeshap_feature_importance_segments'
LANGUAGE C VOLATILE;

-- Tables in: every form above also reads a table (regclass) in place of a
-- query, its features matched by name like a query's columns and its key the
-- column named by key_column. A plain table is read with a direct scan
-- (views, partitioned tables and tables under row-level security through a
-- generated SELECT). Passing NULL as key_column and NULL::<the table's row
-- type> as key_type makes row_key the source row itself: every column passes
-- through to the result, typed, to be read as (row_key).column. The column
-- is a name (not text) so that a query form's text key type, as in
-- predict(m, 'SELECT ...', NULL::text), still picks the query form.

CREATE FUNCTION treeshap.explain_shap(model text, source regclass, key_column name,
                                      model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, feature text, shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_shap'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap(model text, source regclass, key_column name,
                                      key_type anyelement,
                                      model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, feature text, shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_shap'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap_wide(model text, source regclass, key_column name,
                                           model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, base_value double precision,
               shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_shap_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap_wide(model text, source regclass, key_column name,
                                           key_type anyelement,
                                           model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, base_value double precision,
               shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_shap_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features(model text, source regclass, key_column name,
                                              k integer DEFAULT 5,
                                              model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, prediction double precision,
               base_value double precision, rank integer, feature text,
               shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features(model text, source regclass, key_column name,
                                              key_type anyelement, k integer DEFAULT 5,
                                              model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, prediction double precision,
               base_value double precision, rank integer, feature text,
               shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.predict(model text, source regclass, key_column name)
RETURNS TABLE (row_key bigint, output integer, margin double precision,
               prediction double precision)
AS 'MODULE_PATHNAME', 'treeshap_predict'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.predict(model text, source regclass, key_column name,
                                 key_type anyelement)
RETURNS TABLE (row_key anyelement, output integer, margin double precision,
               prediction double precision)
AS 'MODULE_PATHNAME', 'treeshap_predict'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_interactions(model text, source regclass, key_column name,
                                              features text[] DEFAULT NULL,
                                              method text DEFAULT 'shapley')
RETURNS TABLE (row_key bigint, output integer, feature_a text, feature_b text,
               interaction double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_interactions'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_interactions(model text, source regclass, key_column name,
                                              key_type anyelement,
                                              features text[] DEFAULT NULL,
                                              method text DEFAULT 'shapley')
RETURNS TABLE (row_key anyelement, output integer, feature_a text, feature_b text,
               interaction double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_interactions'
LANGUAGE C VOLATILE;

-- every column of the table but the segment column may be a feature
CREATE FUNCTION treeshap.feature_importance(model text, source regclass,
                                            model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (output integer, feature text, mean_abs_shap double precision,
               mean_shap double precision, rows bigint)
AS 'MODULE_PATHNAME', 'treeshap_feature_importance'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.feature_importance(model text, source regclass, segment_column name,
                                            segment_type anyelement,
                                            model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (segment anyelement, output integer, feature text, mean_abs_shap double precision,
               mean_shap double precision, rows bigint)
AS 'MODULE_PATHNAME', 'treeshap_feature_importance_segments'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.shap_values(model text, features double precision[])
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'treeshap_shap_values'
LANGUAGE C STRICT VOLATILE;
COMMENT ON FUNCTION treeshap.shap_values(text, double precision[]) IS
    'one row''s contributions in pred_contribs layout: outputs x (features + 1), bias last';

CREATE FUNCTION treeshap.gpu_info()
RETURNS TABLE (device integer, name text, total_memory bigint, compute_capability text,
               multiprocessors integer)
AS 'MODULE_PATHNAME', 'treeshap_gpu_info'
LANGUAGE C VOLATILE;

-- The GPU service (when pg_treeshap is preloaded): its state, its worker (a
-- background worker) and the executor process that worker forks to own the GPUs,
-- one row per GPU (one row of NULL device columns when there is none), and a
-- message saying why there is no device.
CREATE FUNCTION treeshap._gpu_status()
RETURNS TABLE (service text, service_pid integer, service_started timestamptz,
               service_starts integer, executor_pid integer, executor_starts integer,
               requests_served bigint, queue_depth integer,
               launches bigint, merged_launches bigint,
               device integer, name text, total_memory bigint, memory_used bigint,
               compute_capability text, multiprocessors integer, message text)
AS 'MODULE_PATHNAME', 'treeshap_gpu_status'
LANGUAGE C VOLATILE;

CREATE VIEW treeshap.gpu_status AS SELECT * FROM treeshap._gpu_status();

-- The models the GPU service holds, once per model version for the whole server;
-- their names where they belong to this database and are still stored.
CREATE FUNCTION treeshap._gpu_models()
RETURNS TABLE (database oid, version bigint, model_bytes bigint, paths bigint, hits bigint,
               last_used timestamptz, device_bytes bigint, devices integer)
AS 'MODULE_PATHNAME', 'treeshap_gpu_models'
LANGUAGE C VOLATILE;

CREATE VIEW treeshap.gpu_models AS
SELECT d.datname AS database, s.name AS model, g.version, g.model_bytes, g.paths, g.hits, g.last_used,
       g.device_bytes, g.devices
  FROM treeshap._gpu_models() g
  LEFT JOIN pg_database d ON d.oid = g.database
  LEFT JOIN treeshap.model_store s ON d.datname = current_database() AND s.version = g.version;

-- Whether the GPU is there and busy is every user's business (as pg_stat_activity's
-- basics are); the diagnostics that drive the service stay revoked below.
GRANT SELECT ON treeshap.gpu_status, treeshap.gpu_models TO PUBLIC;

-- A request through the GPU service to its executor, which waits wait_ms first; the
-- round trip in milliseconds. A diagnostic: a long wait holds the executor, so only
-- roles granted it may call it.
CREATE FUNCTION treeshap._service_ping(wait_ms integer DEFAULT 0)
RETURNS float8
AS 'MODULE_PATHNAME', 'treeshap_service_ping'
LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION treeshap._service_ping(integer) FROM PUBLIC;

-- Make a model's current version resident in the GPU service, as the first GPU
-- call on it does: the paths the service's executor read, whether this call
-- loaded it (false: it was resident), and the interface that a GPU call takes
-- from the service instead of parsing the model (its paths too long for the GPU,
-- its shape, names, base score and categories). A diagnostic: loading may evict
-- other sessions' models, so only roles granted it may call it.
CREATE FUNCTION treeshap._service_load(model text, OUT paths bigint, OUT loaded boolean,
    OUT long_paths bigint, OUT num_features integer, OUT num_outputs integer,
    OUT feature_names text[], OUT base_score float8[], OUT categorical_features text[],
    OUT num_categories integer[])
AS 'MODULE_PATHNAME', 'treeshap_service_load'
LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION treeshap._service_load(text) FROM PUBLIC;

-- Scheduled explanation jobs --------------------------------------------------
-- explain_into explains the rows of a source table that its target table does
-- not yet hold for the model's current version, committing batch by batch.
-- A target holds one model's explanations; one run per target at a time,
-- guarded by a session advisory lock (key: 'tshp', hashtext(target)).

CREATE TABLE treeshap.job_store (
    job           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    model         text NOT NULL,
    source        text NOT NULL,
    target        text NOT NULL,
    layout        text NOT NULL,
    model_version bigint,
    state         text NOT NULL DEFAULT 'new'
                  CHECK (state IN ('new', 'running', 'done', 'failed')),
    rows_done     bigint NOT NULL DEFAULT 0,
    rows_total    bigint,
    batches       bigint NOT NULL DEFAULT 0,
    runs          bigint NOT NULL DEFAULT 0,
    started_at    timestamptz,
    last_batch_at timestamptz,
    finished_at   timestamptz,
    error         text,
    pid           integer,
    owner         name NOT NULL DEFAULT current_user,
    UNIQUE (model, source, target)
);
COMMENT ON TABLE treeshap.job_store IS 'one row per explain_into job, written by its helpers in the running role';

-- Everyone sees every job's progress; a role writes only its own jobs' rows.
ALTER TABLE treeshap.job_store ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_read ON treeshap.job_store FOR SELECT USING (true);
CREATE POLICY job_open ON treeshap.job_store FOR INSERT WITH CHECK (treeshap._owns(owner));
CREATE POLICY job_update ON treeshap.job_store FOR UPDATE
    USING (treeshap._owns(owner)) WITH CHECK (treeshap._owns(owner));
CREATE POLICY job_forget ON treeshap.job_store FOR DELETE USING (treeshap._owns(owner));

/* The backend that holds the run lock of a target (see ts_jobs.c), or NULL. */
CREATE FUNCTION treeshap._job_lock_holder(target text)
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT k.pid FROM pg_catalog.pg_locks k
     WHERE k.locktype = 'advisory' AND k.granted
       AND k.database = (SELECT oid FROM pg_catalog.pg_database
                          WHERE datname = pg_catalog.current_database())
       AND k.classid = 1953720432::oid AND k.objsubid = 2
       AND k.objid = pg_catalog.hashtext(target)::oid
     LIMIT 1;
$$;

-- A run marked running whose backend no longer holds the target's lock was
-- terminated, crashed or lost its server: it is shown as failed.
CREATE VIEW treeshap.jobs AS
SELECT j.job, j.model, j.source, j.target, j.layout, j.model_version,
       CASE WHEN j.state = 'running' AND NOT l.held THEN 'failed' ELSE j.state END AS state,
       j.rows_done, j.rows_total,
       round((j.rows_done / NULLIF(extract(epoch FROM j.last_batch_at - j.started_at), 0))::numeric, 1)
           AS rows_per_second,
       j.batches, j.runs, j.started_at, j.last_batch_at, j.finished_at,
       CASE WHEN j.state = 'running' AND NOT l.held
            THEN 'interrupted: the backend running the job ended before it finished'
            ELSE j.error END AS error,
       j.pid
  FROM treeshap.job_store j,
       LATERAL (SELECT coalesce(treeshap._job_lock_holder(j.target) = j.pid, false) AS held) l;
COMMENT ON VIEW treeshap.jobs IS 'explain_into jobs: progress of the current or last run';

GRANT SELECT ON treeshap.job_store, treeshap.jobs TO PUBLIC;
GRANT INSERT, UPDATE, DELETE ON treeshap.job_store TO PUBLIC;

/* The job row of (model, source, target), created when missing. */
CREATE FUNCTION treeshap._job_open(model text, source text, target text, layout text,
                                   target_is_new boolean)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    other text;
    id    bigint;
    owner name;
BEGIN
    -- the rows of a dropped target are gone: forget who wrote them
    IF target_is_new THEN
        DELETE FROM treeshap.job_store j WHERE j.target = _job_open.target;
    END IF;
    SELECT j.model INTO other FROM treeshap.job_store j
     WHERE j.target = _job_open.target AND j.model <> _job_open.model LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'target "%" holds explanations of model "%"', target, other
              USING ERRCODE = 'invalid_parameter_value',
                    HINT = 'A target holds one model''s explanations; drop it or choose another.';
    END IF;
    INSERT INTO treeshap.job_store AS j (model, source, target, layout)
    VALUES (model, source, target, layout)
    ON CONFLICT ON CONSTRAINT job_store_model_source_target_key DO NOTHING;
    SELECT j.job, j.owner INTO id, owner FROM treeshap.job_store j
     WHERE (j.model, j.source, j.target) = (_job_open.model, _job_open.source, _job_open.target);
    IF NOT treeshap._owns(owner) THEN
        RAISE EXCEPTION 'the explain_into job into "%" belongs to role "%"', target, owner
              USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN id;
END
$$;

/* Record an event of the job's run: start, count (rows to do), batch, done, failed. */
CREATE FUNCTION treeshap._job_update(job bigint, event text, rows bigint DEFAULT 0,
                                     version bigint DEFAULT NULL, error text DEFAULT NULL)
RETURNS void
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
    UPDATE treeshap.job_store j SET
        state = CASE event WHEN 'start' THEN 'running' WHEN 'done' THEN 'done'
                           WHEN 'failed' THEN 'failed' ELSE j.state END,
        model_version = CASE event WHEN 'start' THEN version ELSE j.model_version END,
        rows_total = CASE event WHEN 'start' THEN NULL WHEN 'count' THEN rows ELSE j.rows_total END,
        rows_done = CASE event WHEN 'start' THEN 0 WHEN 'batch' THEN j.rows_done + rows ELSE j.rows_done END,
        batches = CASE event WHEN 'start' THEN 0 WHEN 'batch' THEN j.batches + 1 ELSE j.batches END,
        runs = j.runs + (event = 'start')::int,
        started_at = CASE event WHEN 'start' THEN clock_timestamp() ELSE j.started_at END,
        last_batch_at = CASE event WHEN 'start' THEN NULL WHEN 'batch' THEN clock_timestamp()
                                   ELSE j.last_batch_at END,
        finished_at = CASE WHEN event IN ('done', 'failed') THEN clock_timestamp() END,
        error = _job_update.error,
        pid = pg_backend_pid()
     WHERE j.job = _job_update.job;
$$;

/* The run lock of a target: a session advisory lock, released at the run's
   end, on any error the procedure catches, and by any abort that escapes it. */
CREATE FUNCTION treeshap._job_lock(key integer)
RETURNS boolean
AS 'MODULE_PATHNAME', 'treeshap_job_lock'
LANGUAGE C STRICT VOLATILE;

CREATE FUNCTION treeshap._job_unlock()
RETURNS void
AS 'MODULE_PATHNAME', 'treeshap_job_unlock'
LANGUAGE C VOLATILE;

/* Stop a run whose model has been replaced or dropped since it started. Checked
   before and after each batch: a replace committed in between may have reached
   the batch's explain call, so the batch is rolled back with the error. */
CREATE FUNCTION treeshap._check_version(model text, version bigint)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    IF (SELECT m.version FROM treeshap.model_store m WHERE m.name = _check_version.model)
       IS DISTINCT FROM _check_version.version THEN
        RAISE EXCEPTION 'model "%" was replaced or dropped while the job ran', model
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Run explain_into again: it explains every row under the new version.';
    END IF;
END
$$;

/* Does the existing target have the columns and unique key explain_into writes? */
CREATE FUNCTION treeshap._check_target(target regclass, layout text, key_type oid)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    want text[] := CASE layout
        WHEN 'wide' THEN ARRAY['row_key', 'output', 'base_value', 'shap_values', 'model_version', 'computed_at']
        ELSE ARRAY['row_key', 'output', 'feature', 'shap_value', 'model_version', 'computed_at'] END;
    unique_key text[] := CASE layout WHEN 'wide' THEN ARRAY['model_version', 'output', 'row_key']
        ELSE ARRAY['feature', 'model_version', 'output', 'row_key'] END;
    missing text;
BEGIN
    SELECT string_agg(w, ', ') INTO missing FROM unnest(want) w
     WHERE NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = target
                          AND a.attname = w AND a.attnum > 0 AND NOT a.attisdropped);
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'target % has no column %', target, missing
              USING ERRCODE = 'invalid_table_definition',
                    HINT = format('A %s target has the columns %s.', layout, array_to_string(want, ', '));
    END IF;
    IF (SELECT atttypid FROM pg_attribute WHERE attrelid = target AND attname = 'row_key') <> key_type THEN
        RAISE EXCEPTION 'column row_key of target % is not of the source key''s type %',
                        target, format_type(key_type, NULL)
              USING ERRCODE = 'invalid_table_definition';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM pg_index i
         WHERE i.indrelid = target AND i.indisunique AND i.indpred IS NULL
           AND (SELECT array_agg(a.attname::text ORDER BY a.attname::text) FROM pg_attribute a
                 WHERE a.attrelid = target AND a.attnum = ANY (i.indkey)) = unique_key
           AND cardinality(i.indkey) = cardinality(unique_key)) THEN
        RAISE EXCEPTION 'target % has no unique key on (%)', target, array_to_string(unique_key, ', ')
              USING ERRCODE = 'invalid_table_definition',
                    HINT = 'The unique key is what makes every row land exactly once.';
    END IF;
END
$$;

/* CREATE TABLE statement of a new target. Wide arrays are compressed with lz4
   where the server has it: pglz made writing 785-element arrays 2.5 times slower. */
CREATE FUNCTION treeshap._target_ddl(target text, layout text, key_type text, key_collation text)
RETURNS text
LANGUAGE sql STABLE
AS $$
    SELECT format('CREATE TABLE %s (row_key %s%s NOT NULL, output integer NOT NULL, %s, '
                  'model_version bigint NOT NULL, computed_at timestamptz NOT NULL DEFAULT now(), '
                  'PRIMARY KEY (row_key, output, %smodel_version))',
                  target, key_type, key_collation,
                  CASE layout WHEN 'wide'
                       THEN 'base_value double precision NOT NULL, shap_values double precision[] '
                            || CASE WHEN EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression'
                                                    AND 'lz4' = ANY (enumvals))
                                    THEN 'COMPRESSION lz4 ' ELSE '' END || 'NOT NULL'
                       ELSE 'feature text NOT NULL, shap_value double precision NOT NULL' END,
                  CASE layout WHEN 'wide' THEN '' ELSE 'feature, ' END);
$$;

/* FROM clause of the source rows that the target lacks under this version,
   with keys after last_key when given (on both sides: a merge anti join would
   otherwise rescan the target from its first key at every batch). */
CREATE FUNCTION treeshap._pending_rows(source text, key text, filter text, target text,
                                       version bigint, last_key text DEFAULT NULL,
                                       key_type text DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format('FROM %1$s s WHERE s.%2$s IS NOT NULL%3$s AND (%4$s) AND NOT EXISTS '
                  '(SELECT 1 FROM %5$s t WHERE t.row_key = s.%2$s%6$s AND t.model_version = %7$s)',
                  source, key,
                  CASE WHEN last_key IS NULL THEN ''
                       ELSE format(' AND s.%s > %L::%s', key, last_key, key_type) END,
                  coalesce(filter, 'true'), target,
                  CASE WHEN last_key IS NULL THEN ''
                       ELSE format(' AND t.row_key > %L::%s', last_key, key_type) END,
                  version);
$$;

/* The statement of one batch: explain the rows of `query` (key first) and
   insert them into the target; returns the source rows done and the last key. */
CREATE FUNCTION treeshap._batch_sql(model text, layout text, target text, version bigint,
                                    query text, key_type text, key_collation text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format('WITH ins AS (INSERT INTO %s (row_key, output, %s, model_version, computed_at) '
                  'SELECT e.row_key, e.output, %s, %s, now() FROM treeshap.%s(%L, %L, NULL::%s) e '
                  'RETURNING row_key, output) '
                  'SELECT %s, max(row_key%s)::text FROM ins',
                  target,
                  CASE layout WHEN 'wide' THEN 'base_value, shap_values' ELSE 'feature, shap_value' END,
                  CASE layout WHEN 'wide' THEN 'e.base_value, e.shap_values' ELSE 'e.feature, e.shap_value' END,
                  version,
                  CASE layout WHEN 'wide' THEN 'explain_shap_wide' ELSE 'explain_shap' END,
                  model, query, key_type,
                  -- every source row has an output 0 row (a long one per feature)
                  CASE layout WHEN 'wide' THEN 'count(*) FILTER (WHERE output = 0)'
                              ELSE 'count(DISTINCT row_key)' END,
                  key_collation);
$$;

/* Raise an error caught earlier again, with its SQLSTATE, detail and hint. */
CREATE FUNCTION treeshap._raise(state text, message text, detail text, hint text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    -- RAISE options cannot be NULL, and empty ones still print
    IF detail <> '' AND hint <> '' THEN
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail, HINT = hint;
    ELSIF detail <> '' THEN
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, DETAIL = detail;
    ELSIF hint <> '' THEN
        RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message, HINT = hint;
    END IF;
    RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message;
END
$$;

CREATE PROCEDURE treeshap.explain_into(model text, source regclass, target text,
                                       key_column text DEFAULT 'id',
                                       filter text DEFAULT NULL,
                                       layout text DEFAULT 'wide',
                                       batch_size integer DEFAULT 10000,
                                       features text[] DEFAULT NULL,
                                       keep_old_versions boolean DEFAULT false)
LANGUAGE plpgsql
AS $$
DECLARE
    version    bigint;
    model_names text[];
    key_type   oid;
    key_typmod integer;
    key_coll   text := '';
    src        text;
    tgt        text;
    created    boolean;
    key        text := quote_ident(key_column);
    columns    text;
    job        bigint;
    last_key   text;
    n_rows     bigint;
    counted    boolean := false;
    finished   boolean := false;
    err_state  text;
    err_msg    text;
    err_detail text;
    err_hint   text;
BEGIN
    IF model IS NULL OR source IS NULL OR target IS NULL OR key_column IS NULL
       OR layout IS NULL OR batch_size IS NULL OR keep_old_versions IS NULL THEN
        RAISE EXCEPTION 'explain_into arguments other than filter and features must not be NULL'
              USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF layout NOT IN ('wide', 'long') THEN
        RAISE EXCEPTION 'unknown layout "%"', layout
              USING ERRCODE = 'invalid_parameter_value', HINT = 'Use ''wide'' or ''long''.';
    END IF;
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT m.version, m.feature_names INTO version, model_names
      FROM treeshap.model_store m WHERE m.name = explain_into.model;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model "%" does not exist', model USING ERRCODE = 'undefined_object';
    END IF;
    SELECT a.atttypid, a.atttypmod,
           CASE WHEN a.attcollation <> 0 THEN ' COLLATE ' || a.attcollation::regcollation::text ELSE '' END
      INTO key_type, key_typmod, key_coll
      FROM pg_attribute a
     WHERE a.attrelid = source AND a.attname = key_column AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of % does not exist', key_column, source
              USING ERRCODE = 'undefined_column', HINT = 'Name the row key with key_column.';
    END IF;
    SELECT format('%I.%I', n.nspname, c.relname) INTO src
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = source;
    -- features: as given; else by name (explain matches names); else all but the key
    IF features IS NOT NULL THEN
        SELECT string_agg('s.' || quote_ident(f), ', ' ORDER BY i) INTO columns
          FROM unnest(features) WITH ORDINALITY u(f, i);
    ELSIF model_names IS NOT NULL THEN
        columns := 's.*';
    ELSE
        SELECT string_agg('s.' || quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO columns
          FROM pg_attribute a
         WHERE a.attrelid = source AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> key_column;
    END IF;
    IF columns IS NULL THEN
        RAISE EXCEPTION 'no feature columns' USING ERRCODE = 'datatype_mismatch';
    END IF;

    tgt := (SELECT string_agg(quote_ident(p), '.' ORDER BY i)
              FROM unnest(parse_ident(target)) WITH ORDINALITY u(p, i));
    created := to_regclass(tgt) IS NULL;
    IF created THEN
        EXECUTE treeshap._target_ddl(tgt, layout, format_type(key_type, key_typmod), key_coll);
    ELSE
        PERFORM treeshap._check_target(tgt::regclass, layout, key_type);
    END IF;
    -- one spelling per table: the job's name and its lock key
    SELECT format('%I.%I', n.nspname, c.relname) INTO tgt
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tgt::regclass;
    job := treeshap._job_open(model, src, tgt, layout, created);
    -- a CALL inside a transaction block fails here, before any lock is taken
    COMMIT;

    IF NOT treeshap._job_lock(hashtext(tgt)) THEN
        RAISE EXCEPTION 'an explain_into job into % is already running', tgt
              USING ERRCODE = 'lock_not_available',
                    DETAIL = format('Backend %s holds the lock of this target; see treeshap.jobs.',
                                    treeshap._job_lock_holder(tgt));
    END IF;

    -- running (and visible to others) from here, while the rows to do are counted
    PERFORM treeshap._job_update(job, 'start', version => version);
    COMMIT;
    -- From here on every error is caught, recorded and re-raised after the
    -- lock is released: COMMIT cannot run inside an exception block, so the
    -- count and each batch are one block and one commit. (An error between
    -- two statements escapes; the abort then releases the lock, see ts_jobs.c.)
    WHILE NOT finished LOOP
        BEGIN
            IF NOT counted THEN
                EXECUTE 'SELECT count(*) ' || treeshap._pending_rows(src, key, filter, tgt, version)
                   INTO n_rows;
                PERFORM treeshap._job_update(job, 'count', n_rows);
                counted := true;
            ELSE
                PERFORM treeshap._check_version(model, version);
                EXECUTE treeshap._batch_sql(model, layout, tgt, version,
                    format('SELECT s.%s, %s %s ORDER BY s.%s LIMIT %s', key, columns,
                           treeshap._pending_rows(src, key, filter, tgt, version, last_key,
                                                  format_type(key_type, key_typmod)),
                           key, batch_size),
                    format_type(key_type, key_typmod), key_coll)
                    INTO n_rows, last_key;
                PERFORM treeshap._check_version(model, version);
                PERFORM treeshap._job_update(job, 'batch', n_rows);
                IF n_rows < batch_size THEN
                    IF NOT keep_old_versions THEN
                        EXECUTE format('DELETE FROM %s WHERE model_version <> %s', tgt, version);
                    END IF;
                    PERFORM treeshap._job_update(job, 'done');
                    finished := true;
                END IF;
            END IF;
        EXCEPTION WHEN OTHERS OR query_canceled THEN
            GET STACKED DIAGNOSTICS err_state = RETURNED_SQLSTATE, err_msg = MESSAGE_TEXT,
                                    err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
        END;
        EXIT WHEN err_state IS NOT NULL;
        COMMIT;
    END LOOP;

    IF err_state IS NOT NULL THEN
        PERFORM treeshap._job_update(job, 'failed', error => err_msg);
    END IF;
    PERFORM treeshap._job_unlock();
    COMMIT;
    IF err_state IS NOT NULL THEN
        IF err_state = '23505' AND err_hint = '' THEN
            err_hint := 'The key column of the source must be unique.';
        END IF;
        PERFORM treeshap._raise(err_state, err_msg, err_detail, err_hint);
    END IF;
END
$$;
COMMENT ON PROCEDURE treeshap.explain_into(text, regclass, text, text, text, text, integer, text[], boolean) IS
    'explain the source rows the target lacks for the model''s current version, one commit per batch';
