-- pg_treeshap 0.1.0 -> 0.2.0. The fresh 0.2.0 script is 0.1.0's followed by
-- this one (the Makefile writes it), so both routes give the same catalog
-- (test/upgrade_check.sh compares them).
\echo Use "ALTER EXTENSION pg_treeshap UPDATE TO '0.2.0'" to load this file. \quit

-- Model regression tests ----------------------------------------------------

-- Two models' contributions over the same rows, per (output, feature): how far
-- they moved (mean and max of |phi_b - phi_a|, a feature one model lacks counting
-- as 0 there) and where each model ranks the feature by mean |phi| (1: largest;
-- ties by name). The query is explain_shap's: a unique integer row key, then the
-- features (by name: both models take their own).
CREATE FUNCTION treeshap.explanation_diff(model_a text, model_b text, query text)
RETURNS TABLE (output integer, feature text, mean_abs_diff double precision,
               max_abs_diff double precision, rank_a integer, rank_b integer,
               rank_change integer, rows bigint)
LANGUAGE sql VOLATILE PARALLEL RESTRICTED
AS $$
    WITH a AS (SELECT e.row_key, e.output, e.feature, e.shap_value,
                      count(*) OVER (PARTITION BY e.row_key, e.output, e.feature) AS n
                 FROM treeshap.explain_shap(model_a, query) e),
         b AS (SELECT e.row_key, e.output, e.feature, e.shap_value,
                      count(*) OVER (PARTITION BY e.row_key, e.output, e.feature) AS n
                 FROM treeshap.explain_shap(model_b, query) e),
         d AS (SELECT coalesce(a.output, b.output) AS output, coalesce(a.feature, b.feature) AS feature,
                      coalesce(a.shap_value, 0) AS va, coalesce(b.shap_value, 0) AS vb,
                      greatest(a.n, b.n) > 1 AS repeated
                 FROM a FULL JOIN b ON a.row_key = b.row_key AND a.output = b.output
                                   AND a.feature = b.feature),
         s AS (SELECT d.output, d.feature, avg(abs(d.vb - d.va)) AS mean_abs_diff,
                      max(abs(d.vb - d.va)) AS max_abs_diff, avg(abs(d.va)) AS mean_abs_a,
                      avg(abs(d.vb)) AS mean_abs_b, count(*) AS rows, bool_or(d.repeated) AS repeated
                 FROM d GROUP BY d.output, d.feature),
         r AS (SELECT s.*,
                      row_number() OVER (PARTITION BY s.output ORDER BY s.mean_abs_a DESC, s.feature)::integer AS rank_a,
                      row_number() OVER (PARTITION BY s.output ORDER BY s.mean_abs_b DESC, s.feature)::integer AS rank_b
                 FROM s
                WHERE CASE WHEN s.repeated
                           THEN treeshap._raise('21000', 'explanation_diff needs a unique row key', '',
                                                'Rows of the two models are paired by the key, the query''s first column.')
                                IS NULL
                           ELSE true END)
    SELECT r.output, r.feature, r.mean_abs_diff, r.max_abs_diff, r.rank_a, r.rank_b, r.rank_b - r.rank_a, r.rows
      FROM r ORDER BY r.output, r.feature
$$;
COMMENT ON FUNCTION treeshap.explanation_diff(text, text, text) IS
    'per (output, feature): mean and max |phi_b - phi_a| of two models over the same rows, and the rank of mean |phi| in each (1: largest)';

-- Dumps ----------------------------------------------------------------------

-- explain_into jobs survive pg_dump/restore with their targets (a restored job
-- resumes with the rows its target lacks), as models do
SELECT pg_catalog.pg_extension_config_dump('treeshap.job_store', '');
SELECT pg_catalog.pg_extension_config_dump('treeshap.job_store_job_seq', '');

-- Top features in one row ----------------------------------------------------

-- explain_top_features' records, one row per (input row, output): the k features
-- of largest |SHAP value| and their values as two arrays in rank order (BigQuery's
-- ML.EXPLAIN_PREDICT), so a 10-class model gives ten rows per input row, not 10 k.
CREATE FUNCTION treeshap.explain_top_features_wide(model text, query text, k integer DEFAULT 5,
                                                   model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, prediction double precision,
               base_value double precision, features text[], shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features_wide(model text, query text, key_type anyelement,
                                                   k integer DEFAULT 5,
                                                   model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, prediction double precision,
               base_value double precision, features text[], shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features_wide(model text, source regclass, key_column name,
                                                   k integer DEFAULT 5,
                                                   model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key bigint, output integer, prediction double precision,
               base_value double precision, features text[], shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features_wide'
LANGUAGE C VOLATILE;

CREATE FUNCTION treeshap.explain_top_features_wide(model text, source regclass, key_column name,
                                                   key_type anyelement, k integer DEFAULT 5,
                                                   model_output treeshap.shap_output DEFAULT 'margin', background text DEFAULT NULL)
RETURNS TABLE (row_key anyelement, output integer, prediction double precision,
               base_value double precision, features text[], shap_values double precision[])
AS 'MODULE_PATHNAME', 'treeshap_explain_top_features_wide'
LANGUAGE C VOLATILE;

-- Labels and comments -------------------------------------------------------

-- The functions that explain or predict read (the user's query, the models) and
-- write nothing, but they may start the session's threads and talk to the GPU
-- service: parallel restricted, so a parallel plan runs them in its leader beside
-- parallel scans of other tables. Those that write (load_model, drop_model,
-- explain_into) stay parallel unsafe. None is strict: a NULL background or
-- model_output has a meaning.
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p
              WHERE p.pronamespace = 'treeshap'::regnamespace
                AND p.proname IN ('explain_shap', 'explain_shap_wide', 'explain_top_features',
                                  'explain_top_features_wide', 'predict', 'explain_interactions',
                                  'feature_importance', 'gpu_info')
    LOOP
        EXECUTE format('ALTER FUNCTION %s PARALLEL RESTRICTED', f);
    END LOOP;
END
$$;
-- one row's values: the same within a statement (STABLE), and, being one call, in the leader
ALTER FUNCTION treeshap.shap_values(text, double precision[]) STABLE PARALLEL RESTRICTED;
-- a table read: NULL for a NULL name, and safe in a parallel worker
ALTER FUNCTION treeshap.model_bytes(text) STRICT PARALLEL SAFE;

-- every user-facing object says what it is (\df+, \dv+ and pgAdmin show these)
DO $$
DECLARE
    c record;
    f regprocedure;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('explain_shap', 'SHAP values, one row per (input row, output, feature); against a background (interventional) when one is given'),
        ('explain_shap_wide', 'SHAP values, one row per (input row, output) with every feature''s value in model order and the base value'),
        ('explain_top_features', 'per (input row, output), the k features of largest |SHAP value| with the row''s prediction'),
        ('explain_top_features_wide', 'one row per (input row, output): the k features of largest |SHAP value| and their values as arrays in rank order, with the row''s prediction'),
        ('predict', 'per (input row, output), the margin and the prediction (the model''s link applied)'),
        ('explain_interactions', 'SHAP interaction values (Shapley or Shapley-Taylor) per (input row, output, feature pair)'),
        ('feature_importance', 'mean |SHAP value| and mean SHAP value per (output, feature) over every row, summed batch by batch'),
        ('drop_model', 'remove a stored model (its owner, or a role granted it, only)'),
        ('gpu_info', 'the GPUs the GPU service found: one row each')) AS v(name, comment)
    LOOP
        FOR f IN SELECT p.oid FROM pg_proc p
                  WHERE p.pronamespace = 'treeshap'::regnamespace AND p.proname = c.name
        LOOP
            EXECUTE format('COMMENT ON FUNCTION %s IS %L', f, c.comment);
        END LOOP;
    END LOOP;
END
$$;
COMMENT ON TYPE treeshap.shap_output IS
    'what SHAP values explain: margin (the trees'' raw sum), or probability (the link applied; needs a background)';
-- requests_retried: requests the service failed (its executor or worker died) and that
-- were sent again, once, when it was back (a client saw only a slower answer)
DROP VIEW treeshap.gpu_status;
DROP FUNCTION treeshap._gpu_status();
CREATE FUNCTION treeshap._gpu_status()
RETURNS TABLE (service text, service_pid integer, service_started timestamptz,
               service_starts integer, executor_pid integer, executor_starts integer,
               requests_served bigint, queue_depth integer,
               launches bigint, merged_launches bigint,
               device integer, name text, total_memory bigint, memory_used bigint,
               compute_capability text, multiprocessors integer, message text,
               requests_retried bigint)
AS 'MODULE_PATHNAME', 'treeshap_gpu_status'
LANGUAGE C VOLATILE;
CREATE VIEW treeshap.gpu_status AS SELECT * FROM treeshap._gpu_status();
GRANT SELECT ON treeshap.gpu_status TO PUBLIC;
COMMENT ON VIEW treeshap.gpu_status IS
    'the GPU service: its state and processes, one row per GPU, the requests it has served';
COMMENT ON VIEW treeshap.gpu_models IS
    'the model versions the GPU service holds on each GPU, with their memory, hits and last use';

-- Pictures ------------------------------------------------------------------
-- Each plot is a standalone SVG document (text) written here from the computed
-- values: no plotting library in the server. Marks carry their numbers as data-*
-- attributes (t23_plots.sql checks them against explain_shap; test/plots_check.sh
-- renders them in headless Chromium). Colours are shap's: #ff0d57 raises the
-- output, #1e88e5 lowers it; in the beeswarm they run from a feature's low values
-- (blue) to its high ones (red).

-- text safe inside an SVG element or attribute
CREATE FUNCTION treeshap._svg_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT replace(replace(replace(replace(t, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;')
$$;

-- a number for a label: four significant digits, no exponent for ordinary sizes
CREATE FUNCTION treeshap._svg_num(v double precision) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE WHEN v = 0 THEN '0'
                WHEN abs(v) >= 1e6 OR abs(v) < 1e-3 THEN to_char(v, 'FM9.999EEEE')
                ELSE rtrim(rtrim(round(v::numeric, greatest(0, 3 - floor(log(abs(v)::numeric))::int))::text,
                                 '0'), '.') END
$$;

-- pixel x of value v on an axis from lo to hi drawn from x0 to x1
CREATE FUNCTION treeshap._svg_x(v double precision, lo double precision, hi double precision,
                                x0 double precision, x1 double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT round((x0 + (v - lo) / nullif(hi - lo, 0) * (x1 - x0))::numeric, 2)::double precision
$$;

-- round values from lo to hi for an axis's ticks: 1, 2 or 5 times a power of ten apart
CREATE FUNCTION treeshap._svg_ticks(lo double precision, hi double precision) RETURNS SETOF double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    WITH s AS (SELECT CASE WHEN hi > lo THEN power(10, floor(log((hi - lo) / 5))) ELSE 1 END AS p),
         step AS (SELECT CASE WHEN (hi - lo) / p > 25 THEN 5 * p WHEN (hi - lo) / p > 10 THEN 2 * p
                              ELSE p END AS st FROM s)
    SELECT g * st FROM step, generate_series(ceil(lo / st)::bigint, floor(hi / st)::bigint) g
$$;

-- a horizontal axis at pixel y: line, ticks and their labels, a title below
CREATE FUNCTION treeshap._svg_axis(lo double precision, hi double precision, x0 double precision,
                                   x1 double precision, y double precision, title text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>', x0, y, x1, y)
        || coalesce((SELECT string_agg(format('<line x1="%1$s" y1="%2$s" x2="%1$s" y2="%3$s" stroke="#333"/>'
                                              '<text x="%1$s" y="%4$s" font-size="12" text-anchor="middle">%5$s</text>',
                                              treeshap._svg_x(t, lo, hi, x0, x1), y, y + 5, y + 19,
                                              treeshap._svg_num(t)), '')
                       FROM treeshap._svg_ticks(lo, hi) t), '')
        || format('<text x="%s" y="%s" font-size="13" text-anchor="middle">%s</text>',
                  (x0 + x1) / 2, y + 40, treeshap._svg_text(title))
$$;

-- an SVG document of the given size around body
CREATE FUNCTION treeshap._svg_document(width integer, height integer, title text, body text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT format('<svg xmlns="http://www.w3.org/2000/svg" width="%1$s" height="%2$s" viewBox="0 0 %1$s %2$s" '
                  'font-family="Helvetica, Arial, sans-serif">'
                  '<rect width="%1$s" height="%2$s" fill="white"/>'
                  '<text x="%3$s" y="24" font-size="15" text-anchor="middle" font-weight="bold">%4$s</text>%5$s</svg>',
                  width, height, width / 2, treeshap._svg_text(title), body)
$$;

-- The query's rows, sampled down to about max_rows by key order when larger.
CREATE FUNCTION treeshap._plot_rows(source text, max_rows integer) RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED AS $$
DECLARE
    first json;
    key text;
    n bigint;
BEGIN
    EXECUTE format('SELECT row_to_json(q) FROM (%s) q LIMIT 1', source) INTO first;
    IF first IS NULL THEN
        RAISE EXCEPTION 'query returned no rows to plot' USING ERRCODE = '22023';
    END IF;
    SELECT k INTO key FROM json_each(first) WITH ORDINALITY e(k, v, i) WHERE i = 1;
    EXECUTE format('SELECT count(*) FROM (%s) q', source) INTO n;
    IF n <= max_rows THEN
        RETURN source;
    END IF;
    RETURN format('SELECT q.* FROM (%1$s) q WHERE q.%2$I IN (SELECT s.%2$I FROM (SELECT r.%2$I, '
                  'row_number() OVER (ORDER BY r.%2$I) AS rn FROM (%1$s) r) s WHERE s.rn %% %3$s = 1)',
                  source, key, ceil(n::numeric / max_rows));
END
$$;

-- Each row's feature values by the model's features (by name when the model names
-- them, else by position after the key); NULL where missing or not a number.
CREATE FUNCTION treeshap._plot_values(model text, query text)
RETURNS TABLE (row_key bigint, feature text, value double precision)
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED AS $$
DECLARE
    names text[];
    nf integer;
BEGIN
    SELECT m.feature_names, m.num_features INTO names, nf FROM treeshap.models m WHERE m.name = model;
    RETURN QUERY EXECUTE format(
        'SELECT k.v::bigint, f.name, CASE WHEN f.raw ~ ''^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$'' '
        '                                 THEN f.raw::double precision END '
        '   FROM (SELECT row_to_json(q) AS j FROM (%s) q) t, '
        '        LATERAL (SELECT x.v FROM json_each_text(t.j) WITH ORDINALITY x(k, v, o) WHERE o = 1) k, '
        '        LATERAL (SELECT coalesce($1[i], ''f'' || (i - 1)) AS name, '
        '                        CASE WHEN $1 IS NULL OR current_setting(''treeshap.match_columns'', true) = ''position'' '
        '                             THEN (SELECT x.v FROM json_each_text(t.j) WITH ORDINALITY x(k, v, o) '
        '                                    WHERE o = i + 1) '
        '                             ELSE t.j ->> $1[i] END AS raw '
        '                   FROM generate_series(1, $2) i) f', query)
    USING names, nf;
END
$$;

-- shap's colour for t in [0, 1]: #1e88e5 (low) to #ff0d57 (high); grey for NULL
CREATE FUNCTION treeshap._svg_colour(t double precision) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN t IS NULL THEN '#999999'
                ELSE format('rgb(%s,%s,%s)', round(30 + t * 225), round(136 - t * 123), round(229 - t * 142)) END
$$;

CREATE FUNCTION treeshap.plot_summary(model text, query text, max_features integer DEFAULT 10,
                                      output integer DEFAULT 0)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
AS $$
DECLARE
    rows_q text;
    x0 constant double precision := 210;
    x1 constant double precision := 690;
    top constant integer := 50;
    lane constant integer := 30;
    r record;
BEGIN
    IF max_features IS NULL OR max_features < 1 THEN
        RAISE EXCEPTION 'max_features must be at least 1' USING ERRCODE = '22023';
    END IF;
    rows_q := treeshap._plot_rows(query, 1000);
    WITH e AS (SELECT s.row_key, s.feature, s.shap_value FROM treeshap.explain_shap(model, rows_q) s
                WHERE s.output = plot_summary.output),
         imp AS (SELECT e.feature, avg(abs(e.shap_value)) AS m FROM e GROUP BY e.feature),
         top_f AS (SELECT imp.feature, imp.m, row_number() OVER (ORDER BY imp.m DESC, imp.feature)::integer AS rk
                     FROM imp ORDER BY imp.m DESC, imp.feature LIMIT max_features),
         v AS (SELECT * FROM treeshap._plot_values(model, rows_q)),
         rng AS (SELECT v.feature, percentile_cont(0.05) WITHIN GROUP (ORDER BY v.value) AS p05,
                        percentile_cont(0.95) WITHIN GROUP (ORDER BY v.value) AS p95
                   FROM v WHERE v.value IS NOT NULL GROUP BY v.feature),
         pts AS (SELECT tf.rk, tf.feature, tf.m AS mean_abs, e.row_key, e.shap_value AS shap,
                        CASE WHEN vv.value IS NULL THEN NULL WHEN rg.p95 > rg.p05
                             THEN least(1, greatest(0, (vv.value - rg.p05) / (rg.p95 - rg.p05))) ELSE 0.5 END AS t
                   FROM top_f tf JOIN e ON e.feature = tf.feature
                   LEFT JOIN v vv ON vv.row_key = e.row_key AND vv.feature = e.feature
                   LEFT JOIN rng rg ON rg.feature = e.feature),
         st AS (SELECT max(rk) AS nfeat, count(DISTINCT row_key) AS n,
                       least(min(shap), 0) AS lo0, greatest(max(shap), 0) AS hi0 FROM pts),
         ax AS (SELECT nfeat, n, lo0 - 0.05 * greatest(hi0 - lo0, 1e-9) AS lo,
                       hi0 + 0.05 * greatest(hi0 - lo0, 1e-9) AS hi FROM st),
         placed AS (SELECT p.*, treeshap._svg_x(p.shap, ax.lo, ax.hi, x0, x1) AS px FROM pts p, ax),
         -- dots side by side where they would overlap (a beeswarm)
         swarm AS (SELECT pl.*, row_number() OVER (PARTITION BY pl.rk, floor(pl.px / 4) ORDER BY pl.row_key) - 1 AS i
                     FROM placed pl)
    SELECT ax.nfeat, ax.n, ax.lo, ax.hi,
           (SELECT string_agg(format('<circle class="dot" cx="%s" cy="%s" r="2.6" fill="%s" fill-opacity="0.9" '
                                     'data-feature="%s" data-row="%s" data-shap="%s"/>',
                                     w.px, top + (w.rk - 1) * lane + lane / 2 +
                                         least(9, ((w.i + 1) / 2) * 1.8) * CASE WHEN w.i % 2 = 0 THEN 1 ELSE -1 END,
                                     treeshap._svg_colour(w.t), treeshap._svg_text(w.feature), w.row_key, w.shap),
                              '' ORDER BY w.rk, w.row_key) FROM swarm w) AS marks,
           (SELECT string_agg(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd" stroke-dasharray="2,3"/>'
                                     '<text class="feature" x="%s" y="%s" font-size="13" text-anchor="end" '
                                     'data-mean-abs="%s">%s</text>',
                                     x0, top + (f.rk - 1) * lane + lane / 2, x1, top + (f.rk - 1) * lane + lane / 2,
                                     x0 - 10, top + (f.rk - 1) * lane + lane / 2 + 4, f.m,
                                     treeshap._svg_text(f.feature)), '' ORDER BY f.rk) FROM top_f f) AS labels
      INTO r FROM ax;
    IF r.nfeat IS NULL THEN
        RAISE EXCEPTION 'model "%" has no output %', model, output USING ERRCODE = '22023';
    END IF;
    RETURN treeshap._svg_document(800, top + r.nfeat * lane + 70,
        format('%s: SHAP values of %s rows, output %s', model, r.n, output),
        r.labels
        || format('<line x1="%1$s" y1="%2$s" x2="%1$s" y2="%3$s" stroke="#999"/>',
                  treeshap._svg_x(0, r.lo, r.hi, x0, x1), top, top + r.nfeat * lane)
        || r.marks
        || treeshap._svg_axis(r.lo, r.hi, x0, x1, top + r.nfeat * lane + 5, 'SHAP value (impact on model output)')
        || format('<defs><linearGradient id="ts-colour" x1="0" y1="0" x2="0" y2="1">'
                  '<stop offset="0" stop-color="#ff0d57"/><stop offset="1" stop-color="#1e88e5"/></linearGradient></defs>'
                  '<rect class="colour-bar" x="720" y="%1$s" width="12" height="%2$s" fill="url(#ts-colour)"/>'
                  '<text x="738" y="%3$s" font-size="12">High</text><text x="738" y="%4$s" font-size="12">Low</text>'
                  '<text x="770" y="%5$s" font-size="12" text-anchor="middle" transform="rotate(-90 770 %5$s)">'
                  'Feature value</text>',
                  top, greatest(r.nfeat * lane, 60), top + 10, top + greatest(r.nfeat * lane, 60),
                  top + greatest(r.nfeat * lane, 60) / 2));
END
$$;
COMMENT ON FUNCTION treeshap.plot_summary(text, text, integer, integer) IS
    'beeswarm of SHAP values as an SVG document: a lane per feature by mean |SHAP value|, dots coloured by feature value (rows sampled to about 1,000)';

CREATE FUNCTION treeshap.plot_waterfall(model text, query text, max_features integer DEFAULT 10,
                                        output integer DEFAULT 0)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
AS $$
DECLARE
    x0 constant double precision := 250;
    x1 constant double precision := 730;
    top constant integer := 60;
    lane constant integer := 28;
    n bigint;
    r record;
BEGIN
    IF max_features IS NULL OR max_features < 1 THEN
        RAISE EXCEPTION 'max_features must be at least 1' USING ERRCODE = '22023';
    END IF;
    EXECUTE format('SELECT count(*) FROM (%s) q', query) INTO n;
    IF n <> 1 THEN
        RAISE EXCEPTION 'plot_waterfall explains one row; the query returned %', n
            USING ERRCODE = '22023', HINT = 'Select the row by its key: ... WHERE id = 42.';
    END IF;
    WITH w AS (SELECT s.row_key, s.base_value FROM treeshap.explain_shap_wide(model, query) s
                WHERE s.output = plot_waterfall.output),
         e AS (SELECT s.feature, s.shap_value,
                      row_number() OVER (ORDER BY abs(s.shap_value) DESC, s.feature) AS rk
                 FROM treeshap.explain_shap(model, query) s WHERE s.output = plot_waterfall.output),
         v AS (SELECT * FROM treeshap._plot_values(model, query)),
         -- the shown features, largest first; the rest as one bar at the bottom
         bars AS (SELECT e.rk::integer AS rk, e.feature AS name,
                         coalesce(treeshap._svg_num(v.value), 'missing') || ' = ' || e.feature AS label,
                         e.shap_value AS shap
                    FROM e LEFT JOIN v ON v.feature = e.feature WHERE e.rk <= max_features
                  UNION ALL
                  SELECT max_features + 1, NULL, count(*) || ' other features', sum(e.shap_value)
                    FROM e WHERE e.rk > max_features HAVING count(*) > 0),
         -- from the base value at the bottom up to the row's output at the top
         cum AS (SELECT b.*, w.base_value + coalesce(sum(b.shap) OVER (ORDER BY b.rk DESC ROWS BETWEEN
                                                        UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS start
                   FROM bars b, w),
         st AS (SELECT count(*)::integer AS nbars, min(least(c.start, c.start + c.shap)) AS lo0,
                       max(greatest(c.start, c.start + c.shap)) AS hi0 FROM cum c),
         ax AS (SELECT st.nbars, st.lo0 - 0.08 * greatest(st.hi0 - st.lo0, 1e-9) AS lo,
                       st.hi0 + 0.08 * greatest(st.hi0 - st.lo0, 1e-9) AS hi FROM st)
    SELECT ax.*, w.row_key, w.base_value AS base, w.base_value + (SELECT sum(shap) FROM bars) AS fx,
           (SELECT string_agg(format('<rect class="bar" x="%s" y="%s" width="%s" height="18" fill="%s" '
                                     'data-feature="%s" data-shap="%s" data-start="%s"/>'
                                     '<text x="%s" y="%s" font-size="12" text-anchor="%s" fill="%s">%s</text>'
                                     '<text class="feature" x="%s" y="%s" font-size="13" text-anchor="end">%s</text>',
                                     treeshap._svg_x(least(c.start, c.start + c.shap), ax.lo, ax.hi, x0, x1),
                                     top + (c.rk - 1) * lane + 5,
                                     greatest(0.5, abs(treeshap._svg_x(c.start + c.shap, ax.lo, ax.hi, x0, x1)
                                                       - treeshap._svg_x(c.start, ax.lo, ax.hi, x0, x1))),
                                     CASE WHEN c.shap >= 0 THEN '#ff0d57' ELSE '#1e88e5' END,
                                     treeshap._svg_text(coalesce(c.name, 'other features')), c.shap, c.start,
                                     treeshap._svg_x(greatest(c.start, c.start + c.shap), ax.lo, ax.hi, x0, x1) + 4,
                                     top + (c.rk - 1) * lane + 18, 'start',
                                     CASE WHEN c.shap >= 0 THEN '#ff0d57' ELSE '#1e88e5' END,
                                     CASE WHEN c.shap >= 0 THEN '+' ELSE '' END || treeshap._svg_num(c.shap),
                                     x0 - 10, top + (c.rk - 1) * lane + 18, treeshap._svg_text(c.label)),
                              '' ORDER BY c.rk) FROM cum c) AS marks
      INTO r FROM ax, w;
    IF r.nbars IS NULL OR r.row_key IS NULL THEN
        RAISE EXCEPTION 'model "%" has no output %', model, output USING ERRCODE = '22023';
    END IF;
    RETURN treeshap._svg_document(800, top + r.nbars * lane + 100,
        format('%s: row %s, output %s', model, r.row_key, output),
        format('<line x1="%1$s" y1="%2$s" x2="%1$s" y2="%3$s" stroke="#888" stroke-dasharray="4,3"/>'
               '<text class="base" x="%1$s" y="%4$s" font-size="12" text-anchor="middle" data-value="%5$s">'
               'E[f(X)] = %6$s</text>',
               treeshap._svg_x(r.base, r.lo, r.hi, x0, x1), top, top + r.nbars * lane + 8,
               top + r.nbars * lane + 80, r.base, treeshap._svg_num(r.base))
        || format('<line x1="%1$s" y1="%2$s" x2="%1$s" y2="%3$s" stroke="#888" stroke-dasharray="4,3"/>'
                  '<text class="output" x="%1$s" y="%4$s" font-size="12" text-anchor="middle" data-value="%5$s">'
                  'f(x) = %6$s</text>',
                  treeshap._svg_x(r.fx, r.lo, r.hi, x0, x1), top - 6, top + r.nbars * lane,
                  top - 12, r.fx, treeshap._svg_num(r.fx))
        || r.marks
        || treeshap._svg_axis(r.lo, r.hi, x0, x1, top + r.nbars * lane + 8, 'model output (margin)'));
END
$$;
COMMENT ON FUNCTION treeshap.plot_waterfall(text, text, integer, integer) IS
    'waterfall of one row''s SHAP values as an SVG document: from the base value to the row''s output, the largest contributions first';

CREATE FUNCTION treeshap.plot_dependence(model text, query text, feature text, output integer DEFAULT 0)
RETURNS text
LANGUAGE plpgsql VOLATILE PARALLEL RESTRICTED
AS $$
DECLARE
    rows_q text;
    x0 constant double precision := 90;
    x1 constant double precision := 740;
    y0 constant double precision := 50;
    y1 constant double precision := 420;
    r record;
BEGIN
    IF feature IS NULL THEN
        RAISE EXCEPTION 'feature must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM treeshap.models m, generate_series(1, m.num_features) i
                                       WHERE m.name = model
                                         AND coalesce(m.feature_names[i], 'f' || (i - 1)) = feature) THEN
        RAISE EXCEPTION 'model "%" has no feature "%"', model, feature USING ERRCODE = '22023';
    END IF;
    rows_q := treeshap._plot_rows(query, 1000);
    WITH e AS (SELECT s.row_key, s.shap_value FROM treeshap.explain_shap(model, rows_q) s
                WHERE s.output = plot_dependence.output AND s.feature = plot_dependence.feature),
         v AS (SELECT * FROM treeshap._plot_values(model, rows_q) x WHERE x.feature = plot_dependence.feature),
         pts AS (SELECT e.row_key, v.value, e.shap_value AS shap FROM e JOIN v USING (row_key)),
         st AS (SELECT count(*) FILTER (WHERE value IS NOT NULL) AS n, count(*) FILTER (WHERE value IS NULL) AS missing,
                       min(value) AS xl, max(value) AS xh, least(min(shap), 0) AS yl, greatest(max(shap), 0) AS yh
                  FROM pts),
         ax AS (SELECT n, missing, xl - 0.05 * greatest(xh - xl, 1e-9) AS xlo, xh + 0.05 * greatest(xh - xl, 1e-9) AS xhi,
                       yl - 0.05 * greatest(yh - yl, 1e-9) AS ylo, yh + 0.05 * greatest(yh - yl, 1e-9) AS yhi FROM st)
    SELECT ax.*,
           (SELECT string_agg(format('<circle class="point" cx="%s" cy="%s" r="3" fill="#1e88e5" fill-opacity="0.7" '
                                     'data-row="%s" data-x="%s" data-shap="%s"/>',
                                     treeshap._svg_x(p.value, ax.xlo, ax.xhi, x0, x1),
                                     treeshap._svg_x(p.shap, ax.ylo, ax.yhi, y1, y0), p.row_key, p.value, p.shap),
                              '' ORDER BY p.row_key) FROM pts p WHERE p.value IS NOT NULL) AS marks,
           (SELECT string_agg(format('<line x1="%1$s" y1="%2$s" x2="%3$s" y2="%2$s" stroke="#333"/>'
                                     '<text x="%4$s" y="%5$s" font-size="12" text-anchor="end">%6$s</text>',
                                     x0 - 5, treeshap._svg_x(t, ax.ylo, ax.yhi, y1, y0), x0, x0 - 8,
                                     treeshap._svg_x(t, ax.ylo, ax.yhi, y1, y0) + 4, treeshap._svg_num(t)), '')
              FROM treeshap._svg_ticks(ax.ylo, ax.yhi) t) AS yticks
      INTO r FROM ax;
    IF r.n = 0 THEN
        RAISE EXCEPTION 'no row has a value of feature "%" to plot', feature USING ERRCODE = '22023';
    END IF;
    RETURN treeshap._svg_document(800, 500,
        format('%s: SHAP value of %s by its value, %s rows%s, output %s', model, feature, r.n,
               CASE WHEN r.missing > 0 THEN format(' (%s missing not shown)', r.missing) ELSE '' END, output),
        format('<line x1="%1$s" y1="%2$s" x2="%3$s" y2="%2$s" stroke="#999"/>', x0,
               treeshap._svg_x(0, r.ylo, r.yhi, y1, y0), x1)
        || format('<line x1="%1$s" y1="%2$s" x2="%1$s" y2="%3$s" stroke="#333"/>', x0, y0, y1)
        || r.yticks
        || format('<text x="20" y="%1$s" font-size="13" text-anchor="middle" transform="rotate(-90 20 %1$s)">'
                  'SHAP value for %2$s</text>', (y0 + y1) / 2, treeshap._svg_text(feature))
        || r.marks
        || treeshap._svg_axis(r.xlo, r.xhi, x0, x1, y1 + 5, feature));
END
$$;
COMMENT ON FUNCTION treeshap.plot_dependence(text, text, text, integer) IS
    'dependence plot as an SVG document: each row''s SHAP value of one feature against the feature''s value (rows sampled to about 1,000)';

-- Targets ---------------------------------------------------------------------
-- An existing explain_into target must have every column of its layout in the type
-- explain_into writes: a target of other types (an integer base_value, a text
-- shap_value) took the rows and rounded or converted them silently.
CREATE OR REPLACE FUNCTION treeshap._check_target(target regclass, layout text, key_type oid)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    want text[] := CASE layout
        WHEN 'wide' THEN ARRAY['row_key', 'output', 'base_value', 'shap_values', 'model_version', 'computed_at']
        ELSE ARRAY['row_key', 'output', 'feature', 'shap_value', 'model_version', 'computed_at'] END;
    want_type regtype[] := CASE layout
        WHEN 'wide' THEN ARRAY[key_type, 'integer', 'double precision', 'double precision[]', 'bigint',
                               'timestamp with time zone']::regtype[]
        ELSE ARRAY[key_type, 'integer', 'text', 'double precision', 'bigint',
                   'timestamp with time zone']::regtype[] END;
    unique_key text[] := CASE layout WHEN 'wide' THEN ARRAY['model_version', 'output', 'row_key']
        ELSE ARRAY['feature', 'model_version', 'output', 'row_key'] END;
    missing text;
    wrong record;
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
    SELECT w.name, w.type, a.atttypid::regtype AS found INTO wrong
      FROM unnest(want, want_type) WITH ORDINALITY AS w(name, type, n)
      JOIN pg_attribute a ON a.attrelid = target AND a.attname = w.name AND a.attnum > 0 AND NOT a.attisdropped
     WHERE a.atttypid <> w.type
     ORDER BY w.n LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'column % of target % has type %, but explain_into writes %',
                        wrong.name, target, wrong.found, wrong.type
              USING ERRCODE = 'invalid_table_definition',
                    HINT = format('A %s target has the columns %s of the types %s.', layout,
                                  array_to_string(want, ', '), array_to_string(want_type, ', '));
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

-- Models ----------------------------------------------------------------------
-- Whatever writes a model_store row (load_model, an owner's own INSERT or UPDATE,
-- a restore), its bytes are parsed and every column that describes them derived
-- from them; bytes that are no model are refused, and new bytes are a new version.
CREATE OR REPLACE FUNCTION treeshap._model_stamp()
RETURNS trigger
AS 'MODULE_PATHNAME', 'treeshap_model_stamp'
LANGUAGE C;

-- What a model's SHAP values cost, before any job runs: its root-to-leaf paths
-- and their elements (the unique features of each path, plus one), about the
-- work of one row's explanation. Derived from the bytes by the trigger above.
ALTER TABLE treeshap.model_store ADD COLUMN num_paths bigint, ADD COLUMN path_elements bigint;
UPDATE treeshap.model_store SET model = model;
CREATE OR REPLACE VIEW treeshap.models AS
SELECT name, format, num_trees, num_features, num_outputs, max_depth, num_leaves,
       feature_names, objective, base_score, octet_length(model)::bigint AS size,
       created_at, version, categorical_features, num_categories, owner, num_paths, path_elements
  FROM treeshap.model_store;
COMMENT ON COLUMN treeshap.model_store.path_elements IS
    'elements of the model''s path table (per path its unique features plus one): about the work of one row''s SHAP values';

-- A model's bytes are compressed with lz4 where the server has it, else not at
-- all: pglz took 0.43 s of an 18 MB model's 1 s load, in PostgreSQL's own code,
-- where no cancel reaches it (lz4 takes a tenth of that).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_settings
                WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE treeshap.model_store ALTER COLUMN model SET COMPRESSION lz4;
    ELSE
        ALTER TABLE treeshap.model_store ALTER COLUMN model SET STORAGE EXTERNAL;
    END IF;
END
$$;

-- Parallel jobs ---------------------------------------------------------------
-- explain_into(..., workers => N) splits the source into key ranges of about
-- batch_size rows, and background workers acting as the caller claim them one at
-- a time (FOR UPDATE SKIP LOCKED): a range's rows are written and the range marked
-- done in one transaction, so a killed worker's range is neither, and whoever runs
-- next takes it. A run over a target that holds no row of the version writes
-- without reading the target; otherwise each range skips the rows it holds.
-- Over a table keyed by a unique index, the workers draw the ranges as they go
-- (each the next batch_size keys of the index after the last range's end), so no
-- one reads the whole key column before the first row is written. A parallel
-- run's progress is its ranges' (treeshap.jobs sums them): a row of job_store
-- updated by every range would make the workers wait for each other's commits.
CREATE TABLE treeshap.job_range (
    job           bigint NOT NULL REFERENCES treeshap.job_store ON DELETE CASCADE,
    range_no      integer NOT NULL,
    model_version bigint NOT NULL,
    lo            text,         -- lo <= key < hi, in the key's type as text; NULL: unbounded
    hi            text,
    pending_only  boolean NOT NULL,
    rows_planned  bigint NOT NULL,
    rows_done     bigint,
    done          boolean NOT NULL DEFAULT false,
    done_by       integer,      -- the pid of the worker (or leader) that wrote it
    done_at       timestamptz,
    plan          text NOT NULL, -- what the rows were drawn from: a resumed run must draw the same
    owner         name NOT NULL DEFAULT current_user,
    keys          text[],       -- a followed job's change range: the keys to explain again (see below)
    rows_removed  bigint,       -- of those, the keys the source no longer had
    PRIMARY KEY (job, range_no)
);
COMMENT ON TABLE treeshap.job_range IS 'the key ranges of a parallel explain_into run, each done in the transaction that wrote its rows';
ALTER TABLE treeshap.job_range ENABLE ROW LEVEL SECURITY;
-- A job's ranges (their bounds are the source's keys) are its owner's alone: read,
-- planned, claimed and forgotten only by the role that owns the job (its members, a
-- superuser). treeshap.jobs counts them for everyone.
CREATE FUNCTION treeshap._owns_job(job bigint)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT coalesce((SELECT treeshap._owns(j.owner) FROM treeshap.job_store j WHERE j.job = _owns_job.job), false);
$$;
CREATE POLICY range_read ON treeshap.job_range FOR SELECT USING (treeshap._owns_job(job));
CREATE POLICY range_plan ON treeshap.job_range FOR INSERT
    WITH CHECK (treeshap._owns_job(job) AND treeshap._owns(owner));
CREATE POLICY range_done ON treeshap.job_range FOR UPDATE
    USING (treeshap._owns_job(job)) WITH CHECK (treeshap._owns_job(job));
CREATE POLICY range_forget ON treeshap.job_range FOR DELETE USING (treeshap._owns_job(job));
GRANT SELECT, INSERT, UPDATE, DELETE ON treeshap.job_range TO PUBLIC;

ALTER TABLE treeshap.job_store ADD COLUMN workers integer;
-- whether the target may hold rows of other model versions: a run deletes them
-- at its end only then (reading a target of millions of rows to find none costs
-- as much as a tenth of writing them)
ALTER TABLE treeshap.job_store ADD COLUMN old_versions boolean NOT NULL DEFAULT true;
-- the target relation the flag speaks of: a target dropped and made again by hand may
-- hold anything
ALTER TABLE treeshap.job_store ADD COLUMN target_oid oid;
-- explain_into(..., follow => true): see "Following the data" below
ALTER TABLE treeshap.job_store ADD COLUMN follow boolean NOT NULL DEFAULT false;
-- whether the target is the source's explanation under model_version but for the keys the
-- change log holds: set when a followed run's pass over the source ends
ALTER TABLE treeshap.job_store ADD COLUMN in_step boolean NOT NULL DEFAULT false;
ALTER TABLE treeshap.job_store ADD COLUMN rows_changed bigint NOT NULL DEFAULT 0;
-- what a followed job's target holds: source, key, filter, features and layout
ALTER TABLE treeshap.job_store ADD COLUMN follow_plan text;
ALTER TABLE treeshap.job_store ADD COLUMN rows_removed bigint NOT NULL DEFAULT 0;
-- how a followed job follows: 'triggers' (its change log), or 'comparison' (a source that
-- cannot carry them is compared whole at every run)
ALTER TABLE treeshap.job_store ADD COLUMN follow_by text;
-- a job over a table distributed by Citus: its shards, each a job of its own on the
-- node that holds it (NULL: a job of this node)
ALTER TABLE treeshap.job_store ADD COLUMN shards integer;
-- whether the target held a row when the job's last completed run ended: a run that
-- then finds it empty knows that what the job marked done is gone (see explain_into)
ALTER TABLE treeshap.job_store ADD COLUMN target_filled boolean NOT NULL DEFAULT false;

-- A running job over a distributed table, as its shards' jobs have it on their
-- nodes now (when asked, with Citus and a distributed source: NULLs otherwise):
-- the rows they explained since the job started, and how many of them are done.
-- One command a node, each connection given 2 s, the start sent as an epoch
-- (the nodes' date styles and time zones may differ from the reader's).
CREATE FUNCTION treeshap._citus_job_progress(source text, target text, started timestamptz, asked boolean,
                                             OUT rows_done bigint, OUT shards_done bigint)
LANGUAGE plpgsql STABLE
SET citus.node_connection_timeout = 2000
AS $$
BEGIN
    IF NOT asked OR started IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus')
       OR pg_catalog.to_regclass(source) IS NULL OR pg_catalog.to_regclass(target) IS NULL THEN
        RETURN;
    END IF;
    IF NOT treeshap._citus_distributed(pg_catalog.to_regclass(source))
       OR NOT treeshap._citus_distributed(pg_catalog.to_regclass(target)) THEN
        RETURN;
    END IF;
    SELECT coalesce(sum(pg_catalog.split_part(r.result, ',', 1)::bigint), 0),
           coalesce(sum(pg_catalog.split_part(r.result, ',', 2)::bigint), 0)
      INTO rows_done, shards_done
      FROM treeshap._citus_run(ARRAY(
               SELECT ARRAY[p.node, p.port::text, '0',
                            format('SELECT coalesce(sum(j.rows_done), 0) || '','' || count(*) FILTER (WHERE j.state = ''done'') '
                                   'FROM treeshap.job_store j WHERE j.target_oid = ANY (%L::regclass[]) '
                                   'AND j.started_at >= pg_catalog.to_timestamp(%s)',
                                   array_agg(p.target_shard), extract(epoch FROM started))]
                 FROM treeshap._citus_shard_pairs(pg_catalog.to_regclass(source), pg_catalog.to_regclass(target)) p
                GROUP BY p.node, p.port), 1) r
     WHERE r.success;
END
$$;

CREATE OR REPLACE VIEW treeshap.jobs AS
SELECT j.job, j.model, j.source, j.target, j.layout, j.model_version,
       CASE WHEN j.state = 'running' AND NOT l.held THEN 'failed' ELSE j.state END AS state,
       coalesce(c.rows_done, p.rows_done) AS rows_done, j.rows_total,
       round((coalesce(c.rows_done, p.rows_done)
              / NULLIF(extract(epoch FROM CASE WHEN c.rows_done IS NOT NULL THEN clock_timestamp()
                                               ELSE p.last_batch_at END - j.started_at), 0))::numeric, 1)
           AS rows_per_second,
       p.batches, j.runs, j.started_at, p.last_batch_at, j.finished_at,
       CASE WHEN j.state = 'running' AND NOT l.held
            THEN 'interrupted: the backend running the job ended before it finished'
            ELSE j.error END AS error,
       j.pid, j.workers, coalesce(c.shards_done, r.ranges_done) AS ranges_done,
       CASE WHEN c.shards_done IS NOT NULL THEN j.shards ELSE r.ranges_total END AS ranges_total,
       j.follow, j.follow_by, p.rows_changed, p.rows_removed
  FROM treeshap.job_store j,
       LATERAL (SELECT coalesce(treeshap._job_lock_holder(j.target) = j.pid, false) AS held) l,
       -- a running job over a distributed table: its shards' progress, from their nodes
       LATERAL treeshap._citus_job_progress(j.source, j.target, j.started_at,
                                            j.shards IS NOT NULL AND j.state = 'running' AND l.held
                                            AND treeshap._owns(j.owner)) c,
       LATERAL (SELECT count(*) FILTER (WHERE x.done) AS ranges_done, count(*) AS ranges_total,
                       coalesce(sum(x.rows_done) FILTER (WHERE x.done_at >= j.started_at), 0)::bigint AS run_rows,
                       count(*) FILTER (WHERE x.done_at >= j.started_at) AS run_ranges,
                       coalesce(sum(x.rows_done) FILTER (WHERE x.done_at >= j.started_at AND x.keys IS NOT NULL), 0)::bigint
                           AS run_changed,
                       coalesce(sum(x.rows_removed) FILTER (WHERE x.done_at >= j.started_at), 0)::bigint AS run_removed,
                       max(x.done_at) FILTER (WHERE x.done_at >= j.started_at) AS run_last
                  FROM treeshap.job_range x WHERE x.job = j.job AND x.model_version = j.model_version) r,
       -- a running run with workers counts its ranges (its end writes them into job_store),
       -- one in this session alone its batches
       LATERAL (SELECT j.workers > 0 AND j.state = 'running' AS by_ranges) w,
       LATERAL (SELECT CASE WHEN w.by_ranges THEN r.run_rows + j.rows_done ELSE j.rows_done END AS rows_done,
                       CASE WHEN w.by_ranges THEN r.run_ranges + j.batches ELSE j.batches END AS batches,
                       CASE WHEN w.by_ranges THEN greatest(r.run_last, j.last_batch_at)
                            ELSE j.last_batch_at END AS last_batch_at,
                       j.rows_changed + CASE WHEN w.by_ranges THEN r.run_changed ELSE 0 END AS rows_changed,
                       j.rows_removed + CASE WHEN w.by_ranges THEN r.run_removed ELSE 0 END AS rows_removed) p;

/* The workers a run uses: the argument, else treeshap.job_workers (auto: one per core, up to half of max_worker_processes). */
CREATE FUNCTION treeshap._job_workers_wanted(workers integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'treeshap_job_workers_wanted'
LANGUAGE C VOLATILE;

/* Up to `workers` background workers acting as the caller run _job_run_range with
   these arguments, and _job_draw when no range is left to claim, until none is
   left to draw; how many started. Only inside explain_into (the session holds a
   run's lock). */
CREATE FUNCTION treeshap._job_workers(workers integer, job bigint, model text, layout text, source text,
                                      key text, columns text, filter text, target text, version bigint,
                                      key_type text, key_collation text, bulk boolean,
                                      range_rows integer, plan text)
RETURNS integer
AS 'MODULE_PATHNAME', 'treeshap_job_workers'
LANGUAGE C VOLATILE;

/* FROM clause of the rows a range explains: all the source's (with the filter), or
   only those the target lacks under this version. */
CREATE FUNCTION treeshap._range_rows(source text, key text, filter text, target text,
                                     version bigint, pending_only boolean)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN pending_only THEN treeshap._pending_rows(source, key, filter, target, version)
                ELSE format('FROM %s s WHERE s.%s IS NOT NULL AND (%s)', source, key, coalesce(filter, 'true')) END;
$$;

/* The statement of one batch: explain the rows of `query` (key first) and
   insert them into the target; returns the source rows done. (No last key: a
   batch's end is read first, _batch_end, and some keys have no max().) */
DROP FUNCTION treeshap._batch_sql(text, text, text, bigint, text, text, text);
CREATE FUNCTION treeshap._batch_sql(model text, layout text, target text, version bigint,
                                    query text, key_type text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT format('WITH ins AS (INSERT INTO %s (row_key, output, %s, model_version, computed_at) '
                  'SELECT e.row_key, e.output, %s, %s, now() FROM treeshap.%s(%L, %L, NULL::%s) e '
                  'RETURNING row_key, output) '
                  'SELECT %s FROM ins',
                  target,
                  CASE layout WHEN 'wide' THEN 'base_value, shap_values' ELSE 'feature, shap_value' END,
                  CASE layout WHEN 'wide' THEN 'e.base_value, e.shap_values' ELSE 'e.feature, e.shap_value' END,
                  version,
                  CASE layout WHEN 'wide' THEN 'explain_shap_wide' ELSE 'explain_shap' END,
                  model, query, key_type,
                  -- every source row has an output 0 row (a long one per feature)
                  CASE layout WHEN 'wide' THEN 'count(*) FILTER (WHERE output = 0)'
                              ELSE 'count(DISTINCT row_key)' END);
$$;

/* Whether the target holds rows of this model version: a run that finds none
   writes without reading it (its job holds the target: no other writes them). */
CREATE FUNCTION treeshap._target_holds(target text, version bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    holds boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s WHERE model_version = %s)', target, version) INTO holds;
    RETURN holds;
END
$$;

/* A key as text that reads back as that key whatever the session's settings:
   every float digit, dates and times in ISO with numeric zone offsets. (Its own
   settings apply to this call alone: the rows around it, a filter among them,
   are read in the caller's.) */
CREATE FUNCTION treeshap._key_text(key anyelement)
RETURNS text
LANGUAGE sql STABLE
SET extra_float_digits = 3
SET IntervalStyle = postgres
SET DateStyle = 'ISO, YMD'
AS $$ SELECT key::text $$;

/* The last key of the next batch of a run in one session, the batch_size-th
   key of `rows_from` (a _range_rows clause), or NULL where fewer are left, as
   _key_text writes it. */
CREATE FUNCTION treeshap._batch_end(rows_from text, key text, batch_size integer)
RETURNS text
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    last text;
BEGIN
    EXECUTE format('SELECT treeshap._key_text(x.k) FROM (SELECT s.%s AS k %s ORDER BY s.%s OFFSET %s LIMIT 1) x',
                   key, rows_from, key, batch_size - 1)
       INTO last;
    RETURN last;
END
$$;

/* Split the rows of `rows_from` (a _range_rows clause) into ranges of range_rows
   keys, replacing the job's earlier ranges; the rows to do. A followed job's
   comparison (`compare`) adds its ranges after those of the run so far instead (and
   replaces what a stopped comparison left), as change ranges of every key in them. */
CREATE FUNCTION treeshap._job_plan(job bigint, version bigint, key text, rows_from text,
                                   range_rows integer, pending_only boolean, plan text,
                                   compare boolean DEFAULT false)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET extra_float_digits = 3
SET IntervalStyle = postgres
AS $$
DECLARE
    bounds text[];
    total  bigint;
    first  integer := 0;
BEGIN
    IF compare THEN
        DELETE FROM treeshap.job_range r WHERE r.job = _job_plan.job AND NOT r.done AND r.keys IS NOT NULL;
        first := (SELECT coalesce(max(r.range_no), 0) FROM treeshap.job_range r WHERE r.job = _job_plan.job);
    ELSE
        DELETE FROM treeshap.job_range r WHERE r.job = _job_plan.job;
    END IF;
    -- bounds as JSON writes them: the same text whatever the session's DateStyle
    EXECUTE format('SELECT array_agg(to_json(k) #>> ''{}'' ORDER BY n) FILTER (WHERE (n - 1) %% %s = 0), count(*) '
                   'FROM (SELECT s.%s AS k, row_number() OVER (ORDER BY s.%s) AS n %s) x',
                   range_rows, key, key, rows_from)
       INTO bounds, total;
    -- range i holds bounds[i] <= key < bounds[i + 1]; the first is open below (keys
    -- added meanwhile below the first land there), the last above
    INSERT INTO treeshap.job_range (job, range_no, model_version, lo, hi, pending_only, rows_planned, plan, keys)
    SELECT _job_plan.job, first + i, version, CASE WHEN i > 1 THEN bounds[i] END, bounds[i + 1], pending_only,
           least(range_rows, total - (i - 1)::bigint * range_rows), plan, CASE WHEN compare THEN '{}'::text[] END
      FROM generate_subscripts(bounds, 1) i;
    RETURN total;
END
$$;

/* The rows of a job's drawn ranges for the run started at `since`: those it wrote, and those it is to write. */
CREATE FUNCTION treeshap._job_range_rows(job bigint, since timestamptz)
RETURNS bigint
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(sum(CASE WHEN x.done THEN x.rows_done ELSE x.rows_planned END), 0)::bigint
      FROM treeshap.job_range x
     WHERE x.job = _job_range_rows.job AND (NOT x.done OR x.done_at >= since);
$$;

/* A run with workers ends: its ranges' progress goes into job_store, as a run in one session keeps it. */
CREATE FUNCTION treeshap._job_fold(job bigint)
RETURNS void
LANGUAGE sql VOLATILE
AS $$
    UPDATE treeshap.job_store j SET rows_done = v.rows_done, batches = v.batches, last_batch_at = v.last_batch_at,
                                    rows_changed = v.rows_changed, rows_removed = v.rows_removed
      FROM treeshap.jobs v
     WHERE j.job = _job_fold.job AND v.job = j.job AND j.workers > 0;
$$;

/* Draw the job's next range, in a transaction of its own (others claim it once it
   commits): the next range_rows keys of the source after the last range's end,
   found through the key's index. Whether one was drawn: false once a range open
   above ends the plan, and for a plan drawn whole at its start (range_rows 0).
   One drawer at a time (the job's row is the lock). */
CREATE FUNCTION treeshap._job_draw(job bigint, version bigint, source text, key text, filter text,
                                   key_type text, range_rows integer, plan text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET extra_float_digits = 3
SET IntervalStyle = postgres
AS $$
DECLARE
    last      record;
    rows_from text;
    hi        text;
    n         bigint;
BEGIN
    IF range_rows < 1 THEN
        RETURN false;
    END IF;
    PERFORM FROM treeshap.job_store j WHERE j.job = _job_draw.job FOR UPDATE;
    SELECT x.range_no, x.hi INTO last FROM treeshap.job_range x
     WHERE x.job = _job_draw.job AND x.keys IS NULL ORDER BY x.range_no DESC LIMIT 1;
    IF FOUND AND last.hi IS NULL THEN
        RETURN false;
    END IF;
    rows_from := treeshap._range_rows(source, key, filter, NULL, version, false)
                 || CASE WHEN last.hi IS NULL THEN ''
                         ELSE format(' AND s.%s >= %L::%s', key, last.hi, key_type) END;
    -- the bound is made text once, not for each key the offset passes
    EXECUTE format('SELECT to_json(x.k) #>> ''{}'' FROM (SELECT s.%s AS k %s ORDER BY s.%s OFFSET %s LIMIT 1) x',
                   key, rows_from, key, range_rows)
       INTO hi;
    IF hi IS NULL THEN
        EXECUTE 'SELECT count(*) ' || rows_from INTO n;
    ELSIF hi = last.hi THEN
        -- more than range_rows rows share a key: an empty range would be drawn forever
        RAISE EXCEPTION 'column % of % is not a unique key', key, source
              USING ERRCODE = 'unique_violation';
    END IF;
    INSERT INTO treeshap.job_range (job, range_no, model_version, lo, hi, pending_only, rows_planned, plan)
    VALUES (job, coalesce(last.range_no, 0) + 1, version, last.hi, hi, false, coalesce(n, range_rows), plan);
    -- the last range tells the run's total: what it wrote so far and what is left
    IF hi IS NULL THEN
        UPDATE treeshap.job_store j SET rows_total = treeshap._job_range_rows(j.job, j.started_at)
         WHERE j.job = _job_draw.job;
    END IF;
    RETURN true;
END
$$;

/* The total of a run whose ranges are drawn as it goes, for treeshap.jobs: what it
   wrote, what its drawn ranges hold, and the keys after the last range's end, read
   at one snapshot; left to _job_draw (exact) once the last range is drawn. One
   worker counts while the others write. */
CREATE FUNCTION treeshap._job_count(job bigint, source text, key text, filter text, key_type text,
                                    range_rows integer)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF range_rows < 1 THEN
        RETURN false;
    END IF;
    EXECUTE format('UPDATE treeshap.job_store j SET rows_total = treeshap._job_range_rows(j.job, j.started_at) '
                   '+ (SELECT count(*) %s AND (r.last IS NULL OR s.%s >= r.last::%s)) '
                   'FROM (SELECT (SELECT y.hi FROM treeshap.job_range y WHERE y.job = $1 AND y.keys IS NULL '
                   'ORDER BY y.range_no DESC LIMIT 1) AS last, '
                   'EXISTS (SELECT FROM treeshap.job_range x WHERE x.job = $1) AS drawn) r '
                   'WHERE j.job = $1 AND j.rows_total IS NULL AND NOT (r.drawn AND r.last IS NULL)',
                   treeshap._range_rows(source, key, filter, NULL, NULL, false), key, key_type)
      USING job;
    RETURN true;
END
$$;

/* Wide explanations of a query written straight into a target, as COPY writes (ts_bulk_write.c); the source rows. */
CREATE FUNCTION treeshap._explain_write(model text, query text, target regclass, version bigint, key_type regtype)
RETURNS bigint
AS 'MODULE_PATHNAME', 'treeshap_explain_write'
LANGUAGE C STRICT VOLATILE;

/* Whether _explain_write can write into the target as the current user: a plain
   table of the wide layout's columns alone, without triggers, row level security,
   check constraints or generated columns (else SQL's INSERT writes). */
CREATE FUNCTION treeshap._bulk_target_ok(target regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'treeshap_bulk_target_ok'
LANGUAGE C STRICT STABLE;

/* One range of a run, in the caller's transaction: claim the first range not done
   (skipping those others hold, unless wait), explain and write its rows (a change
   range's keys: _job_apply_keys), mark it done and count it. The rows written, or
   NULL when no range is left. */
CREATE FUNCTION treeshap._job_run_range(job bigint, model text, layout text, source text, key text,
                                        columns text, filter text, target text, version bigint,
                                        key_type text, key_collation text, wait boolean,
                                        bulk boolean)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r      record;
    n      bigint;
    rows   text;
    change record;
BEGIN
    IF wait THEN
        SELECT * INTO r FROM treeshap.job_range x WHERE x.job = _job_run_range.job AND NOT x.done
         ORDER BY x.range_no LIMIT 1 FOR UPDATE;
    ELSE
        SELECT * INTO r FROM treeshap.job_range x WHERE x.job = _job_run_range.job AND NOT x.done
         ORDER BY x.range_no LIMIT 1 FOR UPDATE SKIP LOCKED;
    END IF;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM treeshap._check_version(model, version);
    IF r.keys IS NOT NULL THEN
        change := treeshap._job_apply_keys(r.keys, r.lo, r.hi, model, layout, source, key, columns, filter,
                                           target, version, key_type, key_collation);
        PERFORM treeshap._check_version(model, version);
        UPDATE treeshap.job_range x SET done = true, rows_done = change.explained, rows_removed = change.removed,
                                        done_by = pg_backend_pid(), done_at = clock_timestamp()
         WHERE x.job = r.job AND x.range_no = r.range_no;
        RETURN change.explained;
    END IF;
    rows := format('SELECT s.%s, %s %s%s%s', key, columns,
                   treeshap._range_rows(source, key, filter, target, version, r.pending_only),
                   CASE WHEN r.lo IS NULL THEN '' ELSE format(' AND s.%s >= %L::%s', key, r.lo, key_type) END,
                   CASE WHEN r.hi IS NULL THEN '' ELSE format(' AND s.%s < %L::%s', key, r.hi, key_type) END);
    IF bulk THEN
        n := treeshap._explain_write(model, rows, target::regclass, version, key_type::regtype);
    ELSE
        EXECUTE treeshap._batch_sql(model, layout, target, version, rows, key_type) INTO n;
    END IF;
    PERFORM treeshap._check_version(model, version);
    UPDATE treeshap.job_range x SET done = true, rows_done = n, done_by = pg_backend_pid(),
                                    done_at = clock_timestamp()
     WHERE x.job = r.job AND x.range_no = r.range_no;
    RETURN n;
END
$$;

/* Whether a parallel run can split the source by its key: for a table, whether
   the key has a valid unique index of its own, in the column's collation (the
   ranges are found through it); NULL
   for a view or any other source, which is taken as it is. */
CREATE FUNCTION treeshap._key_splits(source regclass, key_column text)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN c.relkind IN ('r', 'm', 'p') THEN EXISTS (
               SELECT 1 FROM pg_index i
                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                WHERE i.indrelid = source AND i.indisunique AND i.indisvalid AND i.indpred IS NULL
                  AND i.indnkeyatts = 1 AND i.indexprs IS NULL AND a.attname = key_column
                  -- unique as the ranges compare keys: in the column's collation
                  AND i.indcollation[0] = a.attcollation) END
      FROM pg_class c WHERE c.oid = source;
$$;

-- Following the data -------------------------------------------------------------
-- explain_into(..., follow => true) keeps the target equal to the source. Its first
-- run puts statement triggers on the source (as the caller, who must own it) that log
-- the keys every INSERT, UPDATE (old and new keys) and DELETE touches, and a TRUNCATE,
-- into treeshap.job_change; each later run explains those keys again from the source as
-- it is then, removes the rows of keys the source lost, and consumes their log rows in
-- the same transaction, so a killed run leaves the log to the next. Work is
-- proportional to what changed: a run after a completed run of the same version reads
-- nothing else.
CREATE TABLE treeshap.job_change (
    job  bigint NOT NULL,       -- no reference: a trigger must never fail a change to the source
    seq  bigint GENERATED ALWAYS AS IDENTITY,
    keys text[],                -- one statement's keys as JSON writes them; NULL: a TRUNCATE
    PRIMARY KEY (job, seq)
);
COMMENT ON TABLE treeshap.job_change IS 'keys changed in a followed source since its explain_into job consumed them, a row per statement';

ALTER TABLE treeshap.job_change ENABLE ROW LEVEL SECURITY;
-- only the job's owner reads the log (the keys are the source's) and consumes it; rows
-- come only from the job's own triggers (_job_log_changes), whoever wrote the source
CREATE POLICY change_read ON treeshap.job_change FOR SELECT USING (treeshap._owns_job(job));
CREATE POLICY change_rest ON treeshap.job_change FOR UPDATE
    USING (treeshap._owns_job(job)) WITH CHECK (treeshap._owns_job(job));
CREATE POLICY change_done ON treeshap.job_change FOR DELETE USING (treeshap._owns_job(job));
GRANT SELECT, UPDATE, DELETE ON treeshap.job_change TO PUBLIC;
-- the followed source, by oid: a renamed source is still the job's
ALTER TABLE treeshap.job_store ADD COLUMN source_oid oid;


/* The triggers of a followed source: the keys a statement inserted, updated (old and
   new) or deleted go into the change log of the job named by the first argument (the
   key column's number is the second: a renamed key is still found); a TRUNCATE, or a
   key column gone, logs a NULL key (the next run explains the target anew). Keys are
   written at full precision, in one style whatever the writer's settings. It runs as
   the extension's owner, so that whoever may write the source (a column's privilege, an
   updatable view) logs what they wrote and a failing check never fails their write;
   and it logs only from the job's own triggers on the job's own source, so no one else
   can log into a job. A trigger of a job that is gone, or no longer follows by
   triggers, logs nothing. */
CREATE FUNCTION treeshap._job_log_changes()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET extra_float_digits = 3
SET IntervalStyle = postgres
AS $$
DECLARE
    key text;
BEGIN
    IF NOT EXISTS (SELECT FROM treeshap.job_store j
                    WHERE j.job = TG_ARGV[0]::bigint AND j.follow AND j.follow_by = 'triggers'
                      AND j.source_oid = TG_RELID
                      AND TG_NAME = ANY (treeshap._job_trigger_names(j.job, TG_ARGV[1]::int2))) THEN
        RETURN NULL;
    END IF;
    SELECT a.attname INTO key FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = TG_RELID AND a.attnum = TG_ARGV[1]::int2 AND NOT a.attisdropped;
    IF TG_OP = 'TRUNCATE' OR key IS NULL THEN
        INSERT INTO treeshap.job_change (job, keys) VALUES (TG_ARGV[0]::bigint, NULL);
    ELSE
        -- a row for every million keys of the statement (an array holds at most a
        -- gigabyte); the key column's name goes in by the second format
        EXECUTE format(format('INSERT INTO treeshap.job_change (job, keys) SELECT $1, array_agg(k) '
                              'FROM (SELECT k, (row_number() OVER () - 1) / 1000000 AS part '
                              'FROM (%s) x(k) WHERE k IS NOT NULL) y GROUP BY part',
                              CASE TG_OP WHEN 'INSERT' THEN 'SELECT to_json(n.%1$I) #>> ''{}'' FROM treeshap_new n'
                                         WHEN 'DELETE' THEN 'SELECT to_json(o.%1$I) #>> ''{}'' FROM treeshap_old o'
                                         ELSE 'SELECT to_json(o.%1$I) #>> ''{}'' FROM treeshap_old o UNION '
                                              'SELECT to_json(n.%1$I) #>> ''{}'' FROM treeshap_new n' END),
                       key)
        USING TG_ARGV[0]::bigint;
    END IF;
    RETURN NULL;
END
$$;

/* The names of a followed job's triggers for a key column (its number). */
CREATE FUNCTION treeshap._job_trigger_names(job bigint, key_attnum int2)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
    SELECT array_agg('treeshap_job_' || job || '_' || key_attnum || '_' || e ORDER BY e)
      FROM unnest(ARRAY['del', 'ins', 'trunc', 'upd']) e;
$$;

/* Put the change log's triggers on the source of a followed job, as the caller (the
   source's owner); whether they were put there now (false: they were there). A source
   that cannot carry them is an ERROR. */
CREATE FUNCTION treeshap._job_track(job bigint, source regclass, key_column text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    attnum int2 := (SELECT a.attnum FROM pg_attribute a WHERE a.attrelid = source AND a.attname = key_column);
    names  text[] := treeshap._job_trigger_names(job, attnum);
    t      text;
BEGIN
    -- triggers of jobs that are gone (a dropped target, a renamed source) log for no one
    FOR t IN SELECT g.tgname FROM pg_trigger g
              WHERE g.tgrelid = source AND g.tgname ~ '^treeshap_job_[0-9]+_'
                AND NOT EXISTS (SELECT FROM treeshap.job_store j
                                 WHERE g.tgname LIKE 'treeshap\_job\_' || j.job || '\_%' AND j.follow) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t, source);
    END LOOP;
    -- all four, enabled always (one disabled for a while may have missed changes)
    IF (SELECT count(*) FROM pg_trigger g WHERE g.tgrelid = source AND g.tgname = ANY (names)
           AND g.tgenabled = 'A') = 4 THEN
        RETURN false;
    END IF;
    PERFORM treeshap._job_untrack(job, source);
    BEGIN
        -- names are in the order of the events: del, ins, trunc, upd
        FOR i IN 1 .. 4 LOOP
            EXECUTE format('CREATE TRIGGER %I AFTER %s ON %s %s FOR EACH STATEMENT '
                           'EXECUTE FUNCTION treeshap._job_log_changes(%L, %L)',
                           names[i], (ARRAY['DELETE', 'INSERT', 'TRUNCATE', 'UPDATE'])[i], source,
                           (ARRAY['REFERENCING OLD TABLE AS treeshap_old', 'REFERENCING NEW TABLE AS treeshap_new', '',
                                  'REFERENCING OLD TABLE AS treeshap_old NEW TABLE AS treeshap_new'])[i],
                           job, attnum);
            -- also for changes a logical replication subscriber applies
            EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER %I', source, names[i]);
        END LOOP;
    EXCEPTION WHEN wrong_object_type OR feature_not_supported OR insufficient_privilege THEN
        GET STACKED DIAGNOSTICS t = MESSAGE_TEXT;
        RAISE EXCEPTION 'explain_into cannot follow the changes of %: %', source, t
              USING ERRCODE = 'feature_not_supported',
                    HINT = 'follow => true puts triggers on the source, which takes a table its caller owns; '
                           'run with follow => false to append the rows the target lacks.';
    END;
    RETURN true;
END
$$;

/* Take a job's triggers off its source, and forget its change log (a run that does not
   follow by triggers). Triggers on a table the caller no longer owns stay: they log
   nothing for a job that does not follow by triggers. */
CREATE FUNCTION treeshap._job_untrack(job bigint, source regclass)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT g.tgname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
              WHERE g.tgrelid = source AND g.tgname LIKE 'treeshap\_job\_' || job || '\_%'
                AND pg_has_role(c.relowner, 'USAGE') LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', t, source);
    END LOOP;
    DELETE FROM treeshap.job_change c WHERE c.job = _job_untrack.job;
END
$$;

/* Turn a followed job's change log into change ranges, in the caller's transaction: the
   keys logged before any TRUNCATE mark, and those of change ranges a stopped run left,
   each once, in key order, in ranges of batch_rows keys at most, and of fewer (down to
   100) where that makes `parts` ranges (each worker a few); the log rows read are consumed. The keys
   planned. Workers then take the ranges as they take a pass's (_job_run_range). */
CREATE FUNCTION treeshap._job_drain_changes(job bigint, version bigint, key_type text, key_collation text,
                                            batch_rows integer, parts integer)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET extra_float_digits = 3
SET IntervalStyle = postgres
AS $$
DECLARE
    stop  bigint := (SELECT min(c.seq) FROM treeshap.job_change c
                      WHERE c.job = _job_drain_changes.job AND c.keys IS NULL);
    first integer := (SELECT coalesce(max(x.range_no), 0) + 1 FROM treeshap.job_range x
                       WHERE x.job = _job_drain_changes.job);
    n     bigint;
BEGIN
    -- what earlier runs did is folded into job_store already
    DELETE FROM treeshap.job_range x WHERE x.job = _job_drain_changes.job AND x.done
       AND x.done_at < (SELECT j.started_at FROM treeshap.job_store j WHERE j.job = _job_drain_changes.job);
    -- keys compared, deduplicated and ordered as the key column's type does, written
    -- back as JSON writes them
    EXECUTE format('WITH taken AS (DELETE FROM treeshap.job_change c WHERE c.job = $1 AND c.seq < $2 '
                   'RETURNING c.keys), '
                   'left_over AS (DELETE FROM treeshap.job_range x WHERE x.job = $1 AND NOT x.done '
                   'AND x.keys IS NOT NULL RETURNING x.keys), '
                   'k AS (SELECT DISTINCT u::%1$s%2$s AS k FROM (SELECT keys FROM taken UNION ALL '
                   'SELECT keys FROM left_over) a, unnest(a.keys) u), '
                   'n AS (SELECT k.k, (row_number() OVER (ORDER BY k.k) - 1) / least($4, greatest(100, '
                   'ceil(count(*) OVER () / $6::float8)))::bigint AS chunk FROM k), '
                   'planned AS (INSERT INTO treeshap.job_range (job, range_no, model_version, pending_only, '
                   'rows_planned, plan, keys) '
                   'SELECT $1, $3 + n.chunk::integer, $5, false, count(*), ''changes'', '
                   'array_agg(to_json(n.k) #>> ''{}'' ORDER BY n.k) FROM n GROUP BY n.chunk '
                   'RETURNING rows_planned) '
                   'SELECT coalesce(sum(rows_planned), 0) FROM planned',
                   key_type, key_collation)
       INTO n
      USING job, coalesce(stop, 9223372036854775807), first, batch_rows, version, parts;
    RETURN n;
END
$$;

/* A condition on a key expression: the key is one of keys, or (none listed) not NULL,
   from lo (NULL: unbounded) up to, not including, hi (NULL: unbounded). */
CREATE FUNCTION treeshap._keys_where(expr text, keys text[], lo text, hi text, key_type text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN cardinality(keys) > 0 THEN format('%s = ANY (%L::%s[])', expr, keys, key_type)
                ELSE concat_ws(' AND ', expr || ' IS NOT NULL',
                               CASE WHEN lo IS NOT NULL THEN format('%s >= %L::%s', expr, lo, key_type) END,
                               CASE WHEN hi IS NOT NULL THEN format('%s < %L::%s', expr, hi, key_type) END) END;
$$;

/* A change range's keys (or, none listed, every key from lo to hi: a comparison), in
   the caller's transaction, in one statement: the target's rows of keys the source has
   (with the filter) are explained again and written where their values changed
   (bitwise) or are new; the rows of keys it has not are deleted. The keys explained and
   the keys removed. Keys are found through the indexes: with thousands of keys the
   planner would rather read a whole target of millions of rows, which is what a small
   change must not cost. */
CREATE FUNCTION treeshap._job_apply_keys(keys text[], lo text, hi text, model text, layout text, source text,
                                         key text, columns text, filter text, target text, version bigint,
                                         key_type text, key_collation text,
                                         OUT explained bigint, OUT removed bigint)
LANGUAGE plpgsql VOLATILE
SET enable_seqscan = off
AS $$
DECLARE
    wide   boolean := layout = 'wide';
    -- a target row is (row_key, output[, feature]) under the version
    same   text := format('t.row_key = e.row_key%s AND t.output = e.output%s AND t.model_version = %s',
                          key_collation, CASE WHEN wide THEN '' ELSE ' AND t.feature = e.feature' END, version);
    vals   text[] := CASE WHEN wide THEN ARRAY['base_value', 'shap_values'] ELSE ARRAY['shap_value'] END;
    rows   bigint;
    distinct_rows bigint;
BEGIN
    EXECUTE format(
        'WITH e AS MATERIALIZED (SELECT * FROM treeshap.%1$s(%2$L, %3$L, NULL::%4$s)), '
        'm AS (SELECT e.*, t.row_key IS NOT NULL AS held, '
        'coalesce(%5$s, false) AS unchanged FROM e LEFT JOIN %7$s t ON %8$s), '
        'u AS (UPDATE %7$s t SET (%9$s) = ROW(%6$s), computed_at = now() FROM m e '
        'WHERE %8$s AND e.held AND NOT e.unchanged RETURNING 1), '
        'i AS (INSERT INTO %7$s (row_key, output, %14$s%9$s, model_version) '
        'SELECT e.row_key, e.output, %15$s%6$s, %10$s FROM m e WHERE NOT e.held RETURNING 1), '
        'd AS (DELETE FROM %7$s t WHERE %11$s AND t.model_version = %10$s '
        'AND NOT EXISTS (SELECT FROM e WHERE e.row_key = t.row_key%12$s) RETURNING t.row_key) '
        'SELECT (SELECT count(*) FROM e), (SELECT count(DISTINCT (e.row_key, e.output%13$s)) FROM e), '
        '(SELECT count(DISTINCT e.row_key) FROM e), (SELECT count(DISTINCT d.row_key) FROM d)',
        CASE WHEN wide THEN 'explain_shap_wide' ELSE 'explain_shap' END, model,
        format('SELECT s.%1$s, %2$s FROM %3$s s WHERE %4$s AND (%5$s)',
               key, columns, source, treeshap._keys_where('s.' || key, keys, lo, hi, key_type),
               coalesce(filter, 'true')),
        key_type,
        -- unchanged: the same bits (float8 equality takes -0 for 0)
        (SELECT string_agg(format('%1$s(t.%2$s) = %1$s(e.%2$s)',
                                  CASE WHEN v = 'shap_values' THEN 'array_send' ELSE 'float8send' END, v), ' AND ')
           FROM unnest(vals) v),
        (SELECT string_agg('e.' || v, ', ') FROM unnest(vals) v),
        target, same, array_to_string(vals, ', '), version,
        treeshap._keys_where('t.row_key' || key_collation, keys, lo, hi, key_type),
        key_collation,
        CASE WHEN wide THEN '' ELSE ', e.feature' END,
        CASE WHEN wide THEN '' ELSE 'feature, ' END, CASE WHEN wide THEN '' ELSE 'e.feature, ' END)
       INTO rows, distinct_rows, explained, removed;
    -- a key the source holds twice would be written twice (as a pass fails its batch)
    IF rows <> distinct_rows THEN
        RAISE EXCEPTION 'column % of % is not a unique key', key, source USING ERRCODE = 'unique_violation';
    END IF;
END
$$;

DROP PROCEDURE treeshap.explain_into(text, regclass, text, text, text, text, integer, text[], boolean);
/* Take the run lock of a target (as spelled by explain_into), or ERROR: a run holds it. */
CREATE FUNCTION treeshap._job_lock_target(target text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT treeshap._job_lock(hashtext(target)) THEN
        RAISE EXCEPTION 'an explain_into job into % is already running', target
              USING ERRCODE = 'lock_not_available',
                    DETAIL = format('Backend %s holds the lock of this target; see treeshap.jobs.',
                                    treeshap._job_lock_holder(target));
    END IF;
END
$$;

CREATE PROCEDURE treeshap.explain_into(model text, source regclass, target text,
                                       key_column text DEFAULT 'id',
                                       filter text DEFAULT NULL,
                                       layout text DEFAULT 'wide',
                                       batch_size integer DEFAULT 10000,
                                       features text[] DEFAULT NULL,
                                       keep_old_versions boolean DEFAULT false,
                                       workers integer DEFAULT NULL,
                                       follow boolean DEFAULT false)
LANGUAGE plpgsql
AS $$
#variable_conflict use_variable
DECLARE
    version    bigint;
    key_type   oid;
    key_typmod integer;
    key_coll   text := '';
    key_name   text;
    src        text;
    tgt        text;
    created    boolean;
    key        text := quote_ident(key_column);
    columns    text;
    job        bigint;
    last_key   text;
    next_key   text;
    rows_from  text;
    batch_query text;
    n_rows     bigint;
    n_workers  integer;
    pending    boolean;
    plan       text;
    draw_rows  integer := 0;
    change_workers integer;
    compare    boolean := false;
    had_rows   boolean := false;
    complete   boolean := false;
    replaced   boolean;
    moved      boolean;
    wrote      boolean;
    emptied    boolean := false;
    holds      text;
    bulk       boolean;
    step       text := 'count';
    finished   boolean := false;
    err_state  text;
    err_msg    text;
    err_detail text;
    err_hint   text;
BEGIN
    IF model IS NULL OR source IS NULL OR target IS NULL OR key_column IS NULL
       OR layout IS NULL OR batch_size IS NULL OR keep_old_versions IS NULL OR follow IS NULL THEN
        RAISE EXCEPTION 'explain_into arguments other than filter, features and workers must not be NULL'
              USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF layout NOT IN ('wide', 'long') THEN
        RAISE EXCEPTION 'unknown layout "%"', layout
              USING ERRCODE = 'invalid_parameter_value', HINT = 'Use ''wide'' or ''long''.';
    END IF;
    IF batch_size < 1 THEN
        RAISE EXCEPTION 'batch_size must be at least 1' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    n_workers := treeshap._job_workers_wanted(workers);
    SELECT m.version INTO version
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
    key_name := format_type(key_type, key_typmod);
    SELECT format('%I.%I', n.nspname, c.relname) INTO src
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = source;
    -- features: as given; else every column but the key, which is never a feature (a
    -- model with names takes its own among them, under treeshap.match_columns = name)
    IF features IS NOT NULL THEN
        SELECT string_agg('s.' || quote_ident(f), ', ' ORDER BY i) INTO columns
          FROM unnest(features) WITH ORDINALITY u(f, i);
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
    -- a table distributed by Citus is explained where its shards are
    IF treeshap._citus_distributed(source) THEN
        CALL treeshap._citus_explain_into(model, version, source, tgt, key_column, key_name, key_coll, filter,
                                          layout, batch_size, features, keep_old_versions, workers, follow);
        RETURN;
    END IF;
    created := to_regclass(tgt) IS NULL;
    IF created THEN
        EXECUTE treeshap._target_ddl(tgt, layout, key_name, key_coll);
    ELSE
        PERFORM treeshap._check_target(tgt::regclass, layout, key_type);
    END IF;
    -- following puts triggers on the source: a table the caller may put them on (a
    -- statement on a partition or an inheritance child would not fire the parent's);
    -- any other source is compared whole with the target at every run
    IF follow AND ((SELECT c.relkind <> 'r' OR c.relispartition OR NOT pg_has_role(c.relowner, 'USAGE')
                      FROM pg_class c WHERE c.oid = source)
                   OR EXISTS (SELECT FROM pg_inherits i WHERE source IN (i.inhparent, i.inhrelid))) THEN
        compare := true;
        RAISE NOTICE 'explain_into cannot track the changes of %: each run compares the whole source with the target', source
              USING DETAIL = 'Changes are tracked by triggers, which take a table that the caller owns, neither '
                             'partitioned nor a partition, without inheritance parents or children.',
                    HINT = 'treeshap.jobs shows follow_by = ''comparison''.';
    END IF;
    -- workers split the source by its key: where that needs a unique index the
    -- table lacks, or where source or target is temporary (the workers are other
    -- sessions), the default runs in this session, and asking for workers is an error
    IF n_workers > 0 AND 't' IN (SELECT c.relpersistence FROM pg_class c WHERE c.oid IN (source, tgt::regclass)) THEN
        IF workers IS NULL THEN
            n_workers := 0;
        ELSE
            RAISE EXCEPTION 'explain_into cannot run in workers with a temporary source or target'
                  USING ERRCODE = 'feature_not_supported',
                        HINT = 'Workers are other sessions, which cannot see this session''s temporary tables: run with workers => 0.';
        END IF;
    END IF;
    IF n_workers > 0 AND NOT coalesce(treeshap._key_splits(source, key_column), true) THEN
        IF workers IS NULL THEN
            n_workers := 0;
        ELSE
            RAISE EXCEPTION 'column "%" of % is not a unique key', key_column, source
                  USING ERRCODE = 'invalid_column_reference',
                        HINT = 'A run with workers splits the source into ranges of its key: give the column '
                               'a unique index (a primary key), or run with workers => 0.';
        END IF;
    END IF;
    -- one spelling per table: the job's name and its lock key
    SELECT format('%I.%I', n.nspname, c.relname) INTO tgt
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = tgt::regclass;
    -- a source renamed since: its job is the one whose source it is
    UPDATE treeshap.job_store j SET source = src
     WHERE j.model = explain_into.model AND j.target = tgt AND j.source_oid = source AND j.source <> src
       AND NOT EXISTS (SELECT FROM treeshap.job_store k
                        WHERE k.model = explain_into.model AND k.target = tgt AND k.source = src);
    job := treeshap._job_open(model, src, tgt, layout, created);
    -- a followed target is one source's: another job's rows would be taken for stale
    IF EXISTS (SELECT FROM treeshap.job_store j WHERE j.target = tgt AND j.job <> job
                  AND (follow OR j.follow)) THEN
        RAISE EXCEPTION 'target % is written by another explain_into job, and one of them follows its source', tgt
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'A target that follows its source holds that source''s explanations alone: choose another target.';
    END IF;
    IF created THEN
        UPDATE treeshap.job_store j SET old_versions = false, target_oid = tgt::regclass WHERE j.job = job;
    END IF;
    -- a CALL inside a transaction block fails here, before any lock is taken
    COMMIT;

    PERFORM treeshap._job_lock_target(tgt);

    -- running (and visible to others) from here, while the rows to do are counted
    -- a followed job whose target is in step with its source under this version but for
    -- the change log has only the log to do
    holds := concat_ws(' ', src, key, filter, columns, layout);
    SELECT follow AND j.in_step AND j.model_version = version AND j.target_oid = tgt::regclass
           AND j.follow_plan = holds,
           NOT created AND j.target_oid IS DISTINCT FROM tgt::regclass
           OR follow AND j.follow_plan IS DISTINCT FROM holds,
           NOT created AND j.target_oid IS DISTINCT FROM tgt::regclass,
           NOT created AND (j.target_filled OR EXISTS (SELECT FROM treeshap.job_range x
                                                        WHERE x.job = j.job AND x.done AND x.rows_done > 0))
      INTO complete, replaced, moved, wrote
      FROM treeshap.job_store j WHERE j.job = job;
    -- what a job marked done holds for the target it wrote into: a target dropped and
    -- made again, or found empty where the job left rows or marked ranges done (a crash
    -- empties an unlogged table, TRUNCATE any table), is explained anew rather than
    -- trusted to those marks (the probe reads the first row only)
    IF wrote AND NOT moved THEN
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %s)', tgt) INTO emptied;
    END IF;
    IF moved OR emptied THEN
        complete := false;
        replaced := replaced OR follow;
        DELETE FROM treeshap.job_range x WHERE x.job = job;
    END IF;
    UPDATE treeshap.job_store j SET workers = n_workers, target_oid = tgt::regclass,
           old_versions = j.old_versions OR coalesce(j.model_version <> version, false)
                          OR j.target_oid IS DISTINCT FROM tgt::regclass,
           follow = explain_into.follow, rows_changed = 0, rows_removed = 0,
           follow_by = CASE WHEN NOT explain_into.follow THEN NULL WHEN compare THEN 'comparison' ELSE 'triggers' END,
           source_oid = source,
           follow_plan = CASE WHEN explain_into.follow THEN holds END,
           -- in step again only when this run's pass over the source ends
           in_step = complete
     WHERE j.job = job;
    PERFORM treeshap._job_update(job, 'start', version => version);
    IF NOT follow OR compare THEN
        -- (in_step is false already when not following: such a run is never complete)
        PERFORM treeshap._job_untrack(job, source);
    -- (the triggers are put on in a statement of their own: an OR may skip a call)
    ELSIF treeshap._job_track(job, source, key_column) THEN
        replaced := true;
    END IF;
    IF follow AND (replaced OR EXISTS (SELECT FROM treeshap.job_change c WHERE c.job = job AND c.keys IS NULL)) THEN
        -- what changed while no trigger logged it, or before a TRUNCATE, is unknown: the
        -- target is explained anew, and the run's pass covers what the log holds now
        EXECUTE format('DELETE FROM %s WHERE model_version = %s', tgt, version);
        DELETE FROM treeshap.job_range x WHERE x.job = job;
        DELETE FROM treeshap.job_change c WHERE c.job = job;
        UPDATE treeshap.job_store j SET in_step = false WHERE j.job = job;
        complete := false;
    END IF;
    -- a run in this session alone writes rows a parallel run's ranges may still
    -- count as missing: those ranges are forgotten (change ranges a stopped run left
    -- are not: their keys are this run's to explain again)
    IF n_workers = 0 THEN
        DELETE FROM treeshap.job_range x WHERE x.job = job AND (x.keys IS NULL OR x.done);
    END IF;
    COMMIT;
    -- From here on every error is caught, recorded and re-raised after the
    -- lock is released: COMMIT cannot run inside an exception block, so each
    -- step is one block and one commit. (An error between two statements
    -- escapes; the abort then releases the lock, see ts_jobs.c.) Steps: in this
    -- session alone, count, then batch after batch; with workers, plan (or take up
    -- the ranges a stopped run left), work (the workers claim ranges until none is
    -- left), then rest (this session takes what no worker finished).
    -- a comparison after a pass is needed where the target held rows the pass kept
    IF compare AND NOT complete AND NOT created THEN
        had_rows := treeshap._target_holds(tgt, version);
    END IF;
    IF complete THEN
        step := CASE WHEN compare THEN 'compare' ELSE 'drain' END;
    END IF;
    WHILE NOT finished LOOP
        BEGIN
            IF step = 'drain' THEN
                -- a followed run's changes: the log (and what a stopped run left of it)
                -- as ranges of keys, which workers take as they take a pass's
                n_rows := treeshap._job_drain_changes(job, version, key_name, key_coll, batch_size,
                                                      CASE WHEN n_workers > 0 THEN 4 * (n_workers + 1) ELSE 1 END);
                UPDATE treeshap.job_store j SET rows_total = coalesce(j.rows_total, 0) + n_rows WHERE j.job = job;
                step := 'change_work';
            ELSIF step = 'compare' THEN
                -- every key of the source or of the target, in ranges compared one by one
                n_rows := treeshap._job_plan(job, version, key,
                    format('FROM (SELECT s.%1$s FROM %2$s s WHERE s.%1$s IS NOT NULL AND (%3$s) '
                           'UNION SELECT t.row_key%4$s FROM %5$s t WHERE t.model_version = %6$s) s',
                           key, src, coalesce(filter, 'true'), key_coll, tgt, version),
                    batch_size, false, 'compare', true);
                UPDATE treeshap.job_store j SET rows_total = coalesce(j.rows_total, 0) + n_rows WHERE j.job = job;
                step := 'change_work';
            ELSIF step = 'change_work' THEN
                -- workers for two ranges or more; this session takes the rest
                change_workers := least(n_workers, (SELECT count(*) - 1 FROM treeshap.job_range x
                                                  WHERE x.job = job AND NOT x.done AND x.keys IS NOT NULL));
                IF change_workers > 0 THEN
                    PERFORM treeshap._job_workers(change_workers, job, model, layout, src, key, columns,
                                                  filter, tgt, version, key_name, key_coll, false, 0, 'changes');
                END IF;
                step := 'change_rest';
            ELSIF step = 'change_rest' THEN
                n_rows := treeshap._job_run_range(job, model, layout, src, key, columns, filter, tgt,
                                                  version, key_name, key_coll, true, false);
                finished := n_rows IS NULL;
                IF NOT finished AND n_workers = 0 THEN
                    -- a run in this session alone keeps its progress in job_store
                    UPDATE treeshap.job_store j SET rows_changed = j.rows_changed + n_rows,
                                                    rows_removed = j.rows_removed + x.rows_removed
                      FROM (SELECT y.rows_removed FROM treeshap.job_range y
                             WHERE y.job = job AND y.done_by = pg_backend_pid()
                             ORDER BY y.done_at DESC LIMIT 1) x
                     WHERE j.job = job;
                    PERFORM treeshap._job_update(job, 'batch', n_rows);
                END IF;
            ELSIF step = 'count' AND n_workers = 0 THEN
                pending := treeshap._target_holds(tgt, version);
                EXECUTE 'SELECT count(*) ' || treeshap._range_rows(src, key, filter, tgt, version, pending)
                   INTO n_rows;
                PERFORM treeshap._job_update(job, 'count', n_rows);
                -- wide rows go straight into a plain target, as COPY writes them
                bulk := layout = 'wide' AND treeshap._bulk_target_ok(tgt::regclass);
                step := 'batch';
            ELSIF step = 'batch' THEN
                PERFORM treeshap._check_version(model, version);
                -- the batch's last key first, then its rows up to it (in any order): the
                -- next batch starts after the same text, whatever it reads back as
                rows_from := treeshap._range_rows(src, key, filter, tgt, version, pending)
                             || CASE WHEN last_key IS NULL THEN ''
                                     ELSE format(' AND s.%s > %L::%s', key, last_key, key_name) END;
                next_key := treeshap._batch_end(rows_from, key, batch_size);
                IF next_key = last_key THEN
                    RAISE EXCEPTION 'keys of % do not read back from their text', src
                          USING ERRCODE = 'feature_not_supported', DETAIL = format('Key %s came after itself.', last_key),
                                HINT = 'Key the source by a column whose text reads back as its value.';
                END IF;
                batch_query := format('SELECT s.%s, %s %s%s', key, columns, rows_from,
                                      CASE WHEN next_key IS NULL THEN ''
                                           ELSE format(' AND s.%s <= %L::%s', key, next_key, key_name) END);
                IF bulk THEN
                    n_rows := treeshap._explain_write(model, batch_query, tgt::regclass, version, key_name::regtype);
                ELSE
                    EXECUTE treeshap._batch_sql(model, layout, tgt, version, batch_query, key_name) INTO n_rows;
                END IF;
                -- a batch short of batch_size is the last
                last_key := next_key;
                finished := next_key IS NULL;
                PERFORM treeshap._check_version(model, version);
                PERFORM treeshap._job_update(job, 'batch', n_rows);
            ELSIF step = 'count' THEN
                -- a stopped run's ranges are taken up (and drawn on) when they were
                -- drawn from the same rows (source, key, filter) under this version;
                -- else the run plans anew
                plan := concat_ws(' ', src, key, filter);
                IF EXISTS (SELECT 1 FROM treeshap.job_range x WHERE x.job = job
                              AND x.keys IS NULL AND (NOT x.done OR x.hi IS NOT NULL AND x.range_no =
                                   (SELECT max(y.range_no) FROM treeshap.job_range y
                                     WHERE y.job = job AND y.keys IS NULL)))
                   AND NOT EXISTS (SELECT 1 FROM treeshap.job_range x WHERE x.job = job AND x.keys IS NULL
                                      AND (x.model_version <> version OR x.plan <> plan)) THEN
                    -- the rows to do are unknown while ranges are left to draw
                    n_rows := NULL;
                    IF (SELECT x.hi FROM treeshap.job_range x WHERE x.job = job AND x.keys IS NULL
                         ORDER BY x.range_no DESC LIMIT 1) IS NULL THEN
                        SELECT sum(x.rows_planned) INTO n_rows FROM treeshap.job_range x
                         WHERE x.job = job AND NOT x.done AND x.keys IS NULL;
                    ELSE
                        draw_rows := batch_size;
                    END IF;
                ELSE
                    pending := treeshap._target_holds(tgt, version);
                    IF pending OR NOT coalesce(treeshap._key_splits(source, key_column), false) THEN
                        n_rows := treeshap._job_plan(job, version, key,
                            treeshap._range_rows(src, key, filter, tgt, version, pending), batch_size, pending, plan);
                    ELSE
                        -- ranges of a keyed table are drawn as the run goes (_job_draw)
                        DELETE FROM treeshap.job_range x WHERE x.job = job;
                        n_rows := NULL;
                        draw_rows := batch_size;
                    END IF;
                END IF;
                PERFORM treeshap._job_update(job, 'count', n_rows);
                -- wide rows go straight into a plain target, as COPY writes them
                bulk := layout = 'wide' AND treeshap._bulk_target_ok(tgt::regclass);
                step := 'work';
            ELSIF step = 'work' THEN
                PERFORM treeshap._job_workers(n_workers, job, model, layout, src, key, columns, filter, tgt,
                                              version, key_name, key_coll, bulk, draw_rows, plan);
                step := 'rest';
            ELSIF step = 'rest' THEN
                -- what no worker finished, one range per transaction; then what is left to draw
                IF treeshap._job_run_range(job, model, layout, src, key, columns, filter, tgt,
                                           version, key_name, key_coll, true, bulk) IS NULL THEN
                    step := 'draw';
                END IF;
            ELSE
                finished := NOT treeshap._job_draw(job, version, src, key, filter, key_name, draw_rows, plan);
                step := 'rest';
            END IF;
            -- a followed run's pass over the source is over: what changed meanwhile is next
            -- (the log; or, compared, the rows the target held before the pass)
            IF finished AND follow AND step NOT IN ('drain', 'compare', 'change_work', 'change_rest') THEN
                UPDATE treeshap.job_store j SET in_step = true WHERE j.job = job;
                IF had_rows OR NOT compare THEN
                    step := CASE WHEN compare THEN 'compare' ELSE 'drain' END;
                    finished := false;
                END IF;
            END IF;
            IF finished THEN
                IF NOT keep_old_versions AND (SELECT j.old_versions FROM treeshap.job_store j WHERE j.job = job) THEN
                    EXECUTE format('DELETE FROM %s WHERE model_version <> %s', tgt, version);
                    UPDATE treeshap.job_store j SET old_versions = false WHERE j.job = job;
                END IF;
                EXECUTE format('UPDATE treeshap.job_store j SET target_filled = EXISTS (SELECT 1 FROM %s) '
                               'WHERE j.job = $1', tgt) USING job;
                PERFORM treeshap._job_fold(job);
                PERFORM treeshap._job_update(job, 'done');
            END IF;
        EXCEPTION WHEN OTHERS OR query_canceled THEN
            GET STACKED DIAGNOSTICS err_state = RETURNED_SQLSTATE, err_msg = MESSAGE_TEXT,
                                    err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
        END;
        EXIT WHEN err_state IS NOT NULL;
        COMMIT;
    END LOOP;

    IF err_state IS NOT NULL THEN
        PERFORM treeshap._job_fold(job);
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
COMMENT ON PROCEDURE treeshap.explain_into(text, regclass, text, text, text, text, integer, text[], boolean, integer, boolean) IS
    'explain the source rows the target lacks for the model''s current version, one commit per batch or key range, in up to `workers` background workers';

-- Citus -------------------------------------------------------------------

-- Every node of a Citus cluster holds every model: treeshap.model_store becomes
-- a reference table, a copy on each node written in the same transaction. Its
-- trigger runs on every copy and derives the same columns from the same bytes;
-- versions are drawn on the node that writes (load_model draws them in the
-- row). Row level security and the owner column hold on every node. Refused
-- while a worker holds models of its own: the worker's copy of the table
-- becomes the shared one's shell there, and they would be lost from sight.
CREATE FUNCTION treeshap.citus_share_models()
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- Citus refuses a table with triggers unless told; this one is row-local and deterministic
SET citus.enable_unsafe_triggers = on
AS $$
DECLARE
    holder  text;
    reached boolean;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'citus is not installed in this database'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'CREATE EXTENSION citus first.';
    END IF;
    IF EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'treeshap.model_store'::regclass) THEN
        RETURN false;
    END IF;
    -- (a worker that has no pg_treeshap yet holds none: Citus creates it there after this)
    SELECT format('%s:%s', w.nodename, w.nodeport), w.success INTO holder, reached
      FROM pg_catalog.run_command_on_workers(
               'SELECT pg_catalog.to_regclass(''treeshap.model_store'') IS NOT NULL AND '
               'pg_catalog.query_to_xml(''SELECT 1 FROM treeshap.model_store LIMIT 1'', false, true, '''')::text <> ''''') w
     WHERE NOT w.success OR w.result <> 'f' ORDER BY w.success LIMIT 1;
    IF holder IS NOT NULL AND NOT reached THEN
        RAISE EXCEPTION 'worker % cannot be reached', holder
              USING ERRCODE = 'connection_failure',
                    HINT = 'Share the models once every worker is up: each takes a copy.';
    ELSIF holder IS NOT NULL THEN
        RAISE EXCEPTION 'worker % holds models of its own', holder
              USING ERRCODE = 'object_not_in_prerequisite_state',
                    HINT = 'Load them on the coordinator and drop them on the worker, then share the models.';
    END IF;
    PERFORM pg_catalog.create_reference_table('treeshap.model_store');
    RETURN true;
END
$$;
REVOKE ALL ON FUNCTION treeshap.citus_share_models() FROM PUBLIC;
COMMENT ON FUNCTION treeshap.citus_share_models() IS
    'make treeshap.model_store a Citus reference table, so that every node holds every model (true), or find it one already (false); CREATE EXTENSION does it on a Citus coordinator';

-- update only (the Makefile leaves this block out of the fresh 0.2.0 script):
-- Citus replays the update on the workers, where a model_store made a reference
-- table here would turn this script's own statements into distributed ones. (A
-- WARNING: an extension script shows the client nothing below that.)
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE WARNING 'the models are not shared across the nodes of the Citus cluster'
              USING HINT = 'Run SELECT treeshap.citus_share_models(); on the coordinator to keep every model on every node.';
    END IF;
END
$$;
-- update only: end

-- Whether a table is distributed by Citus across its nodes (hash-distributed:
-- reference and Citus-local tables are read through queries like any table).
CREATE FUNCTION treeshap._citus_distributed(rel regclass)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- nested: without Citus, pg_dist_partition does not exist to be read
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        RETURN EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = rel AND p.partmethod = 'h');
    END IF;
    RETURN false;
END
$$;

-- The caller's settings that a shard's session takes on: every setting a user
-- may set that the caller set in its session (the filter, the features and a
-- background query are read with them: search_path, DateStyle, TimeZone, the
-- treeshap settings), as (name, value) pairs. (No SET clause: its own would be
-- taken for the caller's.)
CREATE FUNCTION treeshap._citus_settings()
RETURNS text[]
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(pg_catalog.array_agg(ARRAY[s.name, pg_catalog.current_setting(s.name)] ORDER BY s.name), '{}')
      FROM pg_catalog.pg_settings s
     WHERE s.source OPERATOR(pg_catalog.=) 'session' AND s.context OPERATOR(pg_catalog.=) 'user'
       -- the shard's connection reads its answers in the encoding Citus expects
       AND s.name OPERATOR(pg_catalog.<>) 'client_encoding';
$$;

-- The threads each of that many sessions computing at once takes so that
-- together they use the server's cores (at least 1, at most 16 each).
CREATE FUNCTION treeshap._cpu_threads_shared(sessions integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'treeshap_cpu_threads_shared'
LANGUAGE C STABLE;

-- Take on the caller's settings in a shard's session (its connection ends with
-- the command). Where neither the caller nor the node set treeshap.cpu_threads,
-- the shards the node runs at once (`sessions`) share its cores instead of
-- each taking them all.
CREATE FUNCTION treeshap._citus_take_settings(settings text[], sessions integer)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF (SELECT s.source FROM pg_catalog.pg_settings s WHERE s.name = 'treeshap.cpu_threads') = 'default' THEN
        PERFORM pg_catalog.set_config('treeshap.cpu_threads', treeshap._cpu_threads_shared(sessions)::text, false);
    END IF;
    FOR i IN 1 .. coalesce(array_length(settings, 1), 0) LOOP
        PERFORM pg_catalog.set_config(settings[i][1], settings[i][2], false);
    END LOOP;
END
$$;

-- A shard's placement by its qualified name (shard_name leaves out a public schema).
CREATE FUNCTION treeshap._citus_shard(rel regclass, shard bigint)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN n.nspname = 'public' THEN 'public.' ELSE '' END || pg_catalog.shard_name(rel, shard)
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = rel;
$$;

-- The shards a node runs at once: Citus's own cap on connections to a node.
CREATE FUNCTION treeshap._citus_per_node()
RETURNS integer
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(nullif(pg_catalog.current_setting('citus.max_adaptive_executor_pool_size', true), '')::integer, 16);
$$;

-- Whether a worker cannot be reached now: the cause to report when shards failed.
-- (PL/pgSQL: its body names Citus's function, which a server without Citus lacks)
CREATE FUNCTION treeshap._citus_worker_down()
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (SELECT FROM pg_catalog.run_command_on_workers('SELECT 1') w WHERE NOT w.success);
END
$$;

-- Run one command per shard on the node that holds it (node, port, shard and
-- command in `work`), all at once but at most `per_node` at a time on a node:
-- Citus opens a connection per command. Returns (node, port, shard, success, result).
CREATE FUNCTION treeshap._citus_run(work text[], per_node integer)
RETURNS TABLE (node text, port integer, shard bigint, success boolean, result text)
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    -- the k-th command of a node goes in wave k / per_node; a wave ends before the next starts
    WITH w AS MATERIALIZED (
        SELECT i, work[i][1] AS node, work[i][2]::integer AS port, work[i][3]::bigint AS shard, work[i][4] AS command,
               (row_number() OVER (PARTITION BY work[i][1], work[i][2] ORDER BY i) - 1) / greatest(per_node, 1) AS wave
          FROM generate_subscripts(work, 1) i)
    SELECT r.node_name, r.node_port, a.shards[r.ordinality], r.success, r.result
      FROM (SELECT w.wave, array_agg(w.node ORDER BY w.i) AS nodes, array_agg(w.port ORDER BY w.i) AS ports,
                   array_agg(w.command ORDER BY w.i) AS commands, array_agg(w.shard ORDER BY w.i) AS shards
              FROM w GROUP BY w.wave) a,
           LATERAL pg_catalog.master_run_on_worker(a.nodes, a.ports, a.commands, true) WITH ORDINALITY r
     ORDER BY a.wave, r.ordinality;
$$;

-- Every worker that holds shards of the source reachable and holding the model
-- in this version, or an ERROR, before a job over a distributed table writes
-- anything (a worker without such shards takes no part); returns each such
-- worker with the cores its server may use (at most 16), asked in the same command.
CREATE FUNCTION treeshap._citus_check_workers(model text, version bigint, source regclass)
RETURNS TABLE (node text, port integer, cores integer)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w record;
    found_version text;
BEGIN
    FOR w IN SELECT * FROM pg_catalog.run_command_on_workers(
                 format('SELECT coalesce((SELECT version::text FROM treeshap.model_store WHERE name = %L), '''') '
                        '|| '','' || treeshap._cpu_threads_shared(1)', model)) r
              WHERE (r.nodename, r.nodeport) IN (SELECT p.nodename, p.nodeport
                                                   FROM pg_dist_shard_placement p
                                                   JOIN pg_dist_shard d ON d.shardid = p.shardid
                                                  WHERE d.logicalrelid = source) LOOP
        found_version := CASE WHEN w.success THEN split_part(w.result, ',', 1) END;
        IF NOT w.success AND NOT EXISTS (SELECT FROM pg_catalog.run_command_on_workers('SELECT 1') x
                                          WHERE x.nodename = w.nodename AND x.nodeport = w.nodeport AND x.success) THEN
            RAISE EXCEPTION 'worker %:% cannot be reached', w.nodename, w.nodeport
                  USING ERRCODE = 'connection_failure', DETAIL = w.result,
                        HINT = 'Nothing was written: run explain_into again once every worker is up.';
        ELSIF NOT w.success OR found_version IS DISTINCT FROM version::text THEN
            RAISE EXCEPTION 'model "%" is not on worker %:% in version %', model, w.nodename, w.nodeport, version
                  USING ERRCODE = 'undefined_object',
                        DETAIL = CASE WHEN NOT w.success THEN w.result
                                      WHEN found_version = '' THEN 'The worker has no model of that name.'
                                      ELSE format('The worker has version %s.', found_version) END,
                        HINT = 'SELECT treeshap.citus_share_models() on the coordinator keeps every model on every node.';
        END IF;
        node := w.nodename;
        port := w.nodeport;
        cores := split_part(w.result, ',', 2)::integer;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The target of a job over a distributed source: created distributed by its
-- row key and co-located with the source (each source shard's rows then land in
-- the target shard on the same node), or checked to be so. (The caller's
-- search_path places and finds the target, as in explain_into.) Its shards are
-- created one after another on one connection a node: in parallel, inside the
-- job's procedure, Citus opened a connection per shard and committed each in
-- two phases, which took twice as long (development machine, 32 shards).
CREATE FUNCTION treeshap._citus_target(source regclass, target text, layout text, key_type oid,
                                       key_name text, key_collation text)
RETURNS boolean
LANGUAGE plpgsql
SET citus.multi_shard_modify_mode = 'sequential'
AS $$
DECLARE
    colocation integer;
    target_colocation integer;
    target_column text;
BEGIN
    SELECT p.colocationid INTO colocation FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = source;
    IF pg_catalog.to_regclass(target) IS NULL THEN
        EXECUTE treeshap._target_ddl(target, layout, key_name, key_collation);
        PERFORM pg_catalog.create_distributed_table(target, 'row_key', colocate_with => source::text);
        RETURN true;
    END IF;
    PERFORM treeshap._check_target(target::regclass, layout, key_type);
    SELECT p.colocationid, pg_catalog.column_to_column_name(p.logicalrelid, p.partkey)
      INTO target_colocation, target_column
      FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = target::regclass AND p.partmethod = 'h';
    IF target_colocation IS DISTINCT FROM colocation OR target_column IS DISTINCT FROM 'row_key' THEN
        RAISE EXCEPTION 'target % is not distributed by row_key and co-located with %', target, source
              USING ERRCODE = 'invalid_table_definition',
                    DETAIL = CASE WHEN target_colocation IS NULL
                                  THEN 'The target is not a distributed table.'
                                  ELSE format('The target is distributed by %s in co-location group %s, the source in group %s.',
                                              target_column, target_colocation, colocation) END,
                    HINT = format('Let explain_into create the target, or run SELECT create_distributed_table(%L, ''row_key'', colocate_with => %L).',
                                  target, source::text);
    END IF;
    RETURN false;
END
$$;

-- One shard of a job over a distributed table: explain_into of a source shard
-- into its target shard, on the node that holds both, in the node's session
-- or a worker of its pool (_citus_shard_pool).
CREATE PROCEDURE treeshap._citus_one_shard_into(model text, version bigint, source text, target text,
                                                key_column text, filter text, layout text, batch_size integer,
                                                features text[], keep_old_versions boolean, workers integer)
LANGUAGE plpgsql
AS $$
BEGIN
    -- the job's version, as the coordinator saw it: a model replaced since stops the shards
    PERFORM treeshap._check_version(model, version);
    CALL treeshap.explain_into(model, source::regclass, target, key_column => key_column,
                               filter => filter, layout => layout, batch_size => batch_size,
                               features => features, keep_old_versions => keep_old_versions,
                               workers => workers);
END
$$;

/* Up to `workers` background workers acting as the caller run the calls (each a
   CALL of _citus_one_shard_into), each drawing the next; `started`, the number
   started (0: the caller runs them). It commits first: the caller holds no
   snapshot and no lock while they run. */
CREATE PROCEDURE treeshap._citus_shard_pool(workers integer, calls text[], INOUT started integer DEFAULT 0)
AS 'MODULE_PATHNAME', 'treeshap_citus_shard_pool'
LANGUAGE C;

-- A node's part of a job over a distributed table: its shards (or, in a retry,
-- one of them), each explain_into of a source shard into its target shard,
-- with the caller's settings. Where the node runs more than one at once
-- (`sessions`), a pool of that many background workers (at most half the
-- node's max_worker_processes) draws them one at a time; else, or where no
-- worker could start, this session runs them one after another. Returns the
-- rows their jobs explained (the CALL's one column, as Citus passes it back),
-- so that a job that ends well asks its nodes nothing more.
CREATE PROCEDURE treeshap._citus_shards_into(settings text[], sessions integer, model text, version bigint,
                                             sources text[], targets text[], key_column text, filter text,
                                             layout text, batch_size integer, features text[],
                                             keep_old_versions boolean, workers integer,
                                             OUT rows_done bigint)
LANGUAGE plpgsql
AS $$
DECLARE
    started timestamptz := pg_catalog.clock_timestamp();
    n integer := coalesce(array_length(sources, 1), 0);
    pool integer := CASE WHEN n > 1 THEN least(sessions, n, greatest(pg_catalog.current_setting('max_worker_processes')::integer / 2, 1))
                         ELSE 0 END;
    calls text[];
    pooled integer := 0;
BEGIN
    -- (the cores shared by the pool's workers, or by the node's sessions of a retry)
    PERFORM treeshap._citus_take_settings(settings, CASE WHEN pool > 1 THEN pool WHEN n > 1 THEN 1 ELSE sessions END);
    IF pool > 1 THEN
        PERFORM treeshap._check_version(model, version);
        calls := ARRAY(
            SELECT format('CALL treeshap._citus_one_shard_into(%L, %s, %L, %L, %L, %L, %L, %s, %L, %L, %s)',
                          model, version, u.source, u.target, key_column, filter, layout, batch_size,
                          features, keep_old_versions, workers)
              FROM unnest(sources, targets) WITH ORDINALITY u(source, target, i) ORDER BY u.i);
        CALL treeshap._citus_shard_pool(pool, calls, pooled);
        IF pooled = 0 THEN
            -- none could start: this session runs them all, with the node's cores
            RESET treeshap.cpu_threads;
            PERFORM treeshap._citus_take_settings(settings, 1);
        END IF;
    END IF;
    IF pooled = 0 THEN
        FOR i IN 1 .. n LOOP
            CALL treeshap._citus_one_shard_into(model, version, sources[i], targets[i], key_column, filter,
                                                layout, batch_size, features, keep_old_versions, workers);
        END LOOP;
    END IF;
    PERFORM treeshap._check_version(model, version);
    rows_done := (SELECT coalesce(sum(j.rows_done), 0) FROM treeshap.job_store j
                   WHERE j.target_oid = ANY (targets::regclass[]) AND j.started_at >= started);
END
$$;

-- The shards of a job: each source shard, the co-located target shard and the
-- node that holds both, by their qualified names.
CREATE FUNCTION treeshap._citus_shard_pairs(source regclass, target regclass)
RETURNS TABLE (node text, port integer, shard bigint, source_shard text, target_shard text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p.nodename, p.nodeport, s.shardid, treeshap._citus_shard(source, s.shardid),
           treeshap._citus_shard(target, t.shardid)
      FROM pg_dist_shard s
      JOIN pg_dist_shard t ON t.logicalrelid = target AND t.shardminvalue = s.shardminvalue
                          AND t.shardmaxvalue = s.shardmaxvalue
      JOIN pg_dist_shard_placement p ON p.shardid = s.shardid AND p.shardstate = 1
      JOIN pg_dist_shard_placement q ON q.shardid = t.shardid AND q.shardstate = 1
                                    AND q.nodename = p.nodename AND q.nodeport = p.nodeport
     WHERE s.logicalrelid = source
     ORDER BY s.shardid;
$$;

-- The sessions of a job over a distributed table: one a node, holding all its
-- shards, which it runs with as many at once as the node has cores
-- (`node_cores`, from _citus_check_workers; a node it did not ask, such as a
-- coordinator holding shards, counts this server's), at most `per_node` and
-- at most its shards (_citus_shards_into's pool). With `subset`, those shards
-- alone; with node_cores NULL, a session a shard (run at most `per_node` a
-- node at once). Returns each session's node, its shards (the first names
-- it), their source and target shards, and the shards its node runs at once.
CREATE FUNCTION treeshap._citus_sessions(source regclass, target regclass, node_cores jsonb, per_node integer,
                                         subset bigint[] DEFAULT NULL)
RETURNS TABLE (node text, port integer, shards bigint[], sources text[], targets text[], on_node integer)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH p AS (
        SELECT q.*, count(*) OVER (PARTITION BY q.node, q.port) AS node_shards,
               row_number() OVER (PARTITION BY q.node, q.port ORDER BY q.shard) AS k
          FROM treeshap._citus_shard_pairs(source, target) q
         WHERE subset IS NULL OR q.shard = ANY (subset)),
    s AS (
        SELECT p.*, least(greatest(per_node, 1), p.node_shards,
                          CASE WHEN node_cores IS NULL THEN p.node_shards
                               ELSE greatest(coalesce((node_cores ->> (p.node || ':' || p.port))::integer,
                                                      treeshap._cpu_threads_shared(1)), 1) END) AS at_once
          FROM p)
    SELECT s.node, s.port, array_agg(s.shard ORDER BY s.shard), array_agg(s.source_shard ORDER BY s.shard),
           array_agg(s.target_shard ORDER BY s.shard), min(s.at_once)::integer
      FROM s
     GROUP BY s.node, s.port, CASE WHEN node_cores IS NULL THEN s.k ELSE 0 END
     ORDER BY min(s.shard);
$$;

-- Run a job's sessions (_citus_sessions with these node_cores and `subset`), one
-- CALL of _citus_shards_into each, all at once but at most per_node a node.
-- Returns the sessions that failed, their shards, one failure (node, port, the
-- session's shards and the error), and the rows the others explained.
CREATE FUNCTION treeshap._citus_run_sessions(settings text[], model text, version bigint, source regclass,
                                             target regclass, node_cores jsonb, per_node integer, subset bigint[],
                                             key_column text, filter text, layout text, batch_size integer,
                                             features text[], keep_old_versions boolean, workers integer,
                                             OUT failed bigint, OUT failed_shards bigint[], OUT failure text,
                                             OUT rows_done bigint)
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    WITH s AS MATERIALIZED (
        SELECT * FROM treeshap._citus_sessions(source, target, node_cores, per_node, subset)),
    r AS MATERIALIZED (
        SELECT r.node, r.port, r.success, r.result, s.shards
          FROM treeshap._citus_run(ARRAY(
                   SELECT ARRAY[s.node, s.port::text, s.shards[1]::text,
                                format('CALL treeshap._citus_shards_into(%L, %s, %L, %s, %L, %L, %L, %L, %L, %s, %L, %L, %s, NULL)',
                                       settings, s.on_node, model, version, s.sources, s.targets, key_column,
                                       filter, layout, batch_size, features, keep_old_versions, workers)]
                     FROM s ORDER BY s.shards[1]), per_node) r
          JOIN s ON s.node = r.node AND s.port = r.port AND s.shards[1] = r.shard)
    SELECT count(*) FILTER (WHERE NOT r.success),
           ARRAY(SELECT x FROM r, unnest(r.shards) x WHERE NOT r.success ORDER BY x),
           min(format('%s:%s, shards %s: %s', r.node, r.port, array_to_string(r.shards, ' '), r.result))
               FILTER (WHERE NOT r.success),
           sum(r.result::bigint) FILTER (WHERE r.success)
      FROM r;
$$;

-- Of these shards of a job, those whose shard jobs finished since `started`,
-- and the rows the others' jobs explained since then (a run of a shard's job
-- starts its rows anew), asked of their nodes (one command a node, each
-- connection given 2 s; a node that does not answer counts none).
CREATE FUNCTION treeshap._citus_shards_done(source regclass, target regclass, shards bigint[], started timestamptz,
                                            OUT done bigint[], OUT partial_rows bigint)
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
SET citus.node_connection_timeout = 2000
AS $$
    WITH s AS MATERIALIZED (
        SELECT p.node, p.port, array_agg(p.shard ORDER BY p.shard) AS ids,
               array_agg(p.target_shard ORDER BY p.shard) AS targets
          FROM treeshap._citus_shard_pairs(source, target) p
         WHERE p.shard = ANY (shards)
         GROUP BY p.node, p.port),
    -- each shard's "done:rows" on its node, in the order given
    a AS (
        SELECT s.ids[i] AS shard, split_part(split_part(r.result, ' ', i), ':', 1) = '1' AS is_done,
               split_part(split_part(r.result, ' ', i), ':', 2)::bigint AS rows
          FROM treeshap._citus_run(ARRAY(
                   SELECT ARRAY[s.node, s.port::text, s.ids[1]::text,
                                format('SELECT string_agg(coalesce((SELECT (j.state = ''done'')::integer || '':'' || j.rows_done '
                                       'FROM treeshap.job_store j WHERE j.target_oid = t::regclass '
                                       'AND j.started_at >= pg_catalog.to_timestamp(%s) '
                                       'ORDER BY j.started_at DESC LIMIT 1), ''0:0''), '' '' ORDER BY i) '
                                       'FROM unnest(%L::text[]) WITH ORDINALITY u(t, i)',
                                       extract(epoch FROM started), s.targets)]
                     FROM s), 1) r
          JOIN s ON s.node = r.node AND s.port = r.port AND s.ids[1] = r.shard,
               LATERAL generate_subscripts(s.ids, 1) i
         WHERE r.success)
    SELECT coalesce(array_agg(a.shard ORDER BY a.shard) FILTER (WHERE a.is_done), '{}'),
           coalesce(sum(a.rows) FILTER (WHERE NOT a.is_done), 0)::bigint
      FROM a;
$$;

-- explain_into over a table distributed by Citus: each shard of the source is
-- explained on the node that holds it, into the co-located shard of the target,
-- with the caller's settings, by one session a node whose pool of background
-- workers, as many as the node has cores (at most
-- citus.max_adaptive_executor_pool_size), draws the node's shards one at a
-- time (_citus_sessions, _citus_shards_into). Each shard is a job of its
-- own on its node, exactly once as every job is: a run that fails on some
-- shards leaves the others done, and the next run skips what is done. The
-- job's row here holds the run's state and, at its end, the rows all shards
-- explained.
CREATE PROCEDURE treeshap._citus_explain_into(model text, version bigint, source regclass, target text,
                                              key_column text, key_name text, key_collation text,
                                              filter text, layout text, batch_size integer,
                                              features text[], keep_old_versions boolean,
                                              workers integer, follow boolean)
LANGUAGE plpgsql
AS $$
DECLARE
    dist_column text;
    created     boolean;
    job_id      bigint;
    n_shards    integer;
    started     timestamptz;
    src         text;
    node_cores  jsonb;
    pass        record;
    retry       record;
    retried     boolean := false;
    undone      record;
    carried_rows bigint := 0;
    failed      bigint;
    failure     text;
    worker_down boolean;
    done_rows   bigint;
    done_shards bigint;
    per_node    integer := treeshap._citus_per_node();
    err_state   text;
    err_msg     text;
    err_detail  text;
    err_hint    text;
    settings    text[];
BEGIN
    IF follow THEN
        RAISE EXCEPTION 'explain_into cannot follow a table distributed by Citus'
              USING ERRCODE = 'feature_not_supported', HINT = 'Run it with follow => false.';
    END IF;
    SELECT pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) INTO dist_column
      FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = source;
    IF dist_column IS DISTINCT FROM key_column THEN
        RAISE EXCEPTION 'explain_into over % needs its distribution column as the key', source
              USING ERRCODE = 'feature_not_supported',
                    DETAIL = format('The table is distributed by %s; the key is %s.', dist_column, key_column),
                    HINT = format('Pass key_column => %L: each shard is explained where it lies, into the target shard that holds the same keys.', dist_column);
    END IF;
    -- what the shards' own calls would refuse with a SQLSTATE of their own
    IF NOT pg_catalog.has_table_privilege(source, 'SELECT') THEN
        RAISE EXCEPTION 'permission denied for table %', source USING ERRCODE = 'insufficient_privilege';
    END IF;
    node_cores := (SELECT pg_catalog.jsonb_object_agg(w.node || ':' || w.port, w.cores)
                     FROM treeshap._citus_check_workers(model, version, source) w);
    SELECT format('%I.%I', n.nspname, c.relname) INTO src
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = source;
    created := treeshap._citus_target(source, target, layout,
                                      (SELECT a.atttypid FROM pg_catalog.pg_attribute a
                                        WHERE a.attrelid = source AND a.attname = key_column),
                                      key_name, key_collation);
    IF NOT pg_catalog.has_table_privilege(target::regclass, 'INSERT') THEN
        RAISE EXCEPTION 'permission denied for table %', target USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- one spelling per table, as explain_into's: the job's name and its lock key
    SELECT format('%I.%I', n.nspname, c.relname) INTO target
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid = target::regclass;
    job_id := treeshap._job_open(model, src, target, layout, created);
    n_shards := (SELECT count(*) FROM treeshap._citus_shard_pairs(source, target::regclass));
    UPDATE treeshap.job_store j SET shards = n_shards WHERE j.job = job_id;
    -- the shards' jobs see the target's shards once they are committed
    COMMIT;
    PERFORM treeshap._job_lock_target(target);
    PERFORM treeshap._job_update(job_id, 'start', version => version);
    started := (SELECT j.started_at FROM treeshap.job_store j WHERE j.job = job_id);
    COMMIT;

    -- from here an error or a cancel is recorded in the job's row before it is raised
    BEGIN
        settings := treeshap._citus_settings();
        SELECT * INTO pass FROM treeshap._citus_run_sessions(settings, model, version, source, target::regclass,
                                                             node_cores, per_node, NULL, key_column, filter, layout,
                                                             batch_size, features, keep_old_versions,
                                                             coalesce(workers, 0));
        -- a node's session (its pool with it) stops at its first failing shard: where
        -- the nodes are up and the model is the job's, its shards not done yet get a
        -- session each, so that one shard's error leaves the others done
        IF pass.failed > 0 AND NOT treeshap._citus_worker_down()
           AND EXISTS (SELECT FROM treeshap.model_store m WHERE m.name = _citus_explain_into.model
                                                         AND m.version = _citus_explain_into.version) THEN
            undone := treeshap._citus_shards_done(source, target::regclass, pass.failed_shards, started);
            -- (their jobs' rows so far: a retry's run starts them anew)
            carried_rows := undone.partial_rows;
            retry := treeshap._citus_run_sessions(settings, model, version, source, target::regclass, NULL, per_node,
                                                  ARRAY(SELECT x FROM unnest(pass.failed_shards) x
                                                        EXCEPT SELECT y FROM unnest(undone.done) y),
                                                  key_column, filter, layout, batch_size, features,
                                                  keep_old_versions, coalesce(workers, 0));
            pass.failed := retry.failed;
            pass.failure := retry.failure;
            retried := true;
        END IF;
        failed := pass.failed;
        failure := pass.failure;
        -- (after a failed session the rows are asked of the nodes: its done shards' are not here)
        done_rows := CASE WHEN NOT retried AND failed = 0 THEN pass.rows_done END;
        worker_down := failed > 0 AND treeshap._citus_worker_down();
        -- a version stored since the job began is the cause to report (the shards stopped on it)
        PERFORM treeshap._check_version(model, version);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        GET STACKED DIAGNOSTICS err_state = RETURNED_SQLSTATE, err_msg = MESSAGE_TEXT,
                                err_detail = PG_EXCEPTION_DETAIL, err_hint = PG_EXCEPTION_HINT;
    END;
    -- an error or a cancel: Citus closes the nodes' connections, and cancels what runs on
    -- them, when the transaction ends (not when the block above gave it up)
    IF err_state IS NOT NULL THEN
        COMMIT;
    END IF;
    -- a run that did not end well: the rows and shards its shards' jobs finished, asked of
    -- their nodes, whatever ended it (a cancel included)
    IF err_state IS NOT NULL OR failed > 0 OR done_rows IS NULL THEN
        BEGIN
            SELECT p.rows_done, p.shards_done INTO done_rows, done_shards
              FROM treeshap._citus_job_progress(src, target, started, true) p;
        EXCEPTION WHEN OTHERS OR query_canceled THEN
            done_rows := NULL;
        END;
    END IF;
    -- (a session whose answer was lost after its shards were done leaves none undone)
    IF err_state IS NULL AND failed > 0 AND n_shards - coalesce(done_shards, 0) > 0 THEN
        -- the shards not done in this run (a node that does not answer counts none done)
        err_state := CASE WHEN worker_down THEN '08006' ELSE '38000' END;
        err_msg := format('explain_into failed on %s of %s shards of %s',
                          n_shards - coalesce(done_shards, 0), n_shards, source);
        err_detail := failure;
        err_hint := 'Run it again: the shards done are skipped, the others go on where they stopped.';
    END IF;
    PERFORM treeshap._job_update(job_id, 'batch', rows => coalesce(done_rows, 0) + carried_rows);
    IF err_state IS NOT NULL THEN
        PERFORM treeshap._job_update(job_id, 'failed', error => err_msg || coalesce(': ' || nullif(err_detail, ''), ''));
    ELSE
        PERFORM treeshap._job_update(job_id, 'done');
    END IF;
    PERFORM treeshap._job_unlock();
    COMMIT;
    IF err_state IS NOT NULL THEN
        PERFORM treeshap._raise(err_state, err_msg, err_detail, err_hint);
    END IF;
END
$$;

-- feature_importance over a table distributed by Citus: each shard's sums are
-- computed on the node that holds it (its GPU service or CPU threads, with the
-- caller's settings), then added here in shard order and divided by the rows
-- (NULL means for none, as on a single node). A shard returns its means times
-- its rows, so the result equals a single node's to about 1e-15, the order of
-- the additions aside. Called by the C function for such a table, outside a
-- transaction block (a shard's session sees only what is committed), with the
-- caller's settings (treeshap._citus_settings(), read before this function's
-- own search_path is set).
CREATE FUNCTION treeshap._citus_importance(model text, source regclass,
                                           model_output treeshap.shap_output, background text,
                                           settings text[])
RETURNS TABLE (output integer, feature text, mean_abs_shap double precision,
               mean_shap double precision, rows bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    results  text[];
    missing  text;
    per_node integer := treeshap._citus_per_node();
BEGIN
    -- one answer per shard, from a placement that gave one (an empty shard's means are NULL: its sums are 0)
    SELECT array_agg(p.result ORDER BY p.shard) FILTER (WHERE p.success),
           min(format('%s:%s, shard %s: %s', p.node, p.port, p.shard, p.result)) FILTER (WHERE NOT p.success)
      INTO results, missing
      FROM (SELECT DISTINCT ON (r.shard) r.*
              FROM treeshap._citus_run(ARRAY(
                       SELECT ARRAY[pl.nodename, pl.nodeport::text, s.shardid::text,
                                    format('SELECT treeshap._citus_shard_importance(%L, %s, %L, %L, %L, %L)',
                                           settings, least(per_node, pl.on_node), model,
                                           treeshap._citus_shard(source, s.shardid), model_output, background)]
                         FROM pg_dist_shard s
                         JOIN (SELECT x.*, count(*) OVER (PARTITION BY x.nodename, x.nodeport) AS on_node
                                 FROM pg_dist_shard_placement x
                                 JOIN pg_dist_shard y ON y.shardid = x.shardid AND y.logicalrelid = source
                                WHERE x.shardstate = 1) pl ON pl.shardid = s.shardid
                        WHERE s.logicalrelid = source ORDER BY s.shardid), per_node) r
             ORDER BY r.shard, r.success DESC) p;
    IF missing IS NOT NULL THEN
        RAISE EXCEPTION 'feature_importance of % failed on a shard', source
              USING ERRCODE = CASE WHEN treeshap._citus_worker_down()
                                   THEN 'connection_failure' ELSE 'external_routine_exception' END,
                    DETAIL = missing;
    END IF;
    RETURN QUERY
    SELECT (e->>0)::integer, e->>1,
           sum((e->>2)::float8 ORDER BY u.i) / nullif(sum((e->>4)::bigint), 0)::float8,
           sum((e->>3)::float8 ORDER BY u.i) / nullif(sum((e->>4)::bigint), 0)::float8,
           sum((e->>4)::bigint)::bigint
      FROM unnest(results) WITH ORDINALITY u(res, i), json_array_elements(u.res::json) e
     GROUP BY 1, 2
     ORDER BY 1, min((e->>5)::bigint);
END
$$;

-- One shard's importance sums, in that shard's own session with the caller's
-- settings: (output, feature, sum of |SHAP|, sum of SHAP, rows, position) as JSON.
CREATE FUNCTION treeshap._citus_shard_importance(settings text[], sessions integer, model text, shard regclass,
                                                 model_output treeshap.shap_output, background text)
RETURNS json
LANGUAGE plpgsql
AS $$
DECLARE
    sums json;
BEGIN
    PERFORM treeshap._citus_take_settings(settings, sessions);
    SELECT json_agg(json_build_array(f.output, f.feature, coalesce(f.mean_abs_shap * f.rows, 0),
                                     coalesce(f.mean_shap * f.rows, 0), f.rows, f.i) ORDER BY f.i)
      INTO sums
      FROM treeshap.feature_importance(model, shard, model_output, background) WITH ORDINALITY
           AS f(output, feature, mean_abs_shap, mean_shap, rows, i);
    RETURN sums;
END
$$;
