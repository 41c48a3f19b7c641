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
    created_at    timestamptz NOT NULL DEFAULT now(),
    version       bigint NOT NULL DEFAULT nextval('treeshap.model_version')
);
COMMENT ON TABLE treeshap.model_store IS 'stored models with their original bytes';

-- models survive pg_dump/restore
SELECT pg_catalog.pg_extension_config_dump('treeshap.model_store', '');
SELECT pg_catalog.pg_extension_config_dump('treeshap.model_version', '');

CREATE VIEW treeshap.models AS
SELECT name, format, num_trees, num_features, num_outputs, max_depth, num_leaves,
       feature_names, objective, base_score, octet_length(model)::bigint AS size,
       created_at, version
  FROM treeshap.model_store;
COMMENT ON VIEW treeshap.models IS 'one row per stored model; base_score is in margin space';

GRANT SELECT ON treeshap.model_store, treeshap.models TO PUBLIC;

CREATE FUNCTION treeshap._store_model(name text, model bytea, replace boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'treeshap_store_model'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.load_model(name text, model bytea, replace boolean DEFAULT false)
RETURNS treeshap.models
LANGUAGE sql VOLATILE
AS $$
    SELECT treeshap._store_model(name, model, replace);
    SELECT * FROM treeshap.models m WHERE m.name = load_model.name;
$$;
COMMENT ON FUNCTION treeshap.load_model(text, bytea, boolean) IS
    'validate and store a model (XGBoost JSON); replace => true overwrites';

CREATE FUNCTION treeshap.drop_model(name text, if_exists boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
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

-- Explanations ---------------------------------------------------------------
-- The query's first column is the row key; the rest are features. The
-- two-argument forms return integer keys as bigint; the three-argument forms
-- take NULL::<type> and return keys in that type.

CREATE FUNCTION treeshap.explain_shap(model text, query text)
RETURNS TABLE (row_key bigint, output integer, feature text, shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_shap'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap(model text, query text, key_type anyelement)
RETURNS TABLE (row_key anyelement, output integer, feature text, shap_value double precision)
AS 'MODULE_PATHNAME', 'treeshap_explain_shap'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap_wide(model text, query text)
RETURNS TABLE (row_key bigint, output integer, base_value double precision,
               shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_shap_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_shap_wide(model text, query text, key_type anyelement)
RETURNS TABLE (row_key anyelement, output integer, base_value double precision,
               shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_shap_wide'
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
CREATE FUNCTION treeshap.feature_importance(model text, query text)
RETURNS TABLE (output integer, feature text, mean_abs_shap double precision,
               mean_shap double precision, rows bigint)
AS 'MODULE_PATHNAME', 'treeshap_feature_importance'
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
