#!/bin/bash
# The demo: build, install, start a throwaway cluster, load the bundled
# California-housing model (XGBoost, 30 trees) and five houses, print what
# drives each predicted price, and keep a table of explanations with
# explain_into.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
bash test/deps.sh
# the PostgreSQL is the one PG_CONFIG names, as for PGXS (default: the machine's)
export PG_CONFIG=${PG_CONFIG:-pg_config}
make -s -j2
$SUDO make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
source test/cluster.sh

psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION pg_treeshap;
\set model `cat test/fixtures/reg.json`
\echo '-- the model'
SELECT name, num_trees, num_leaves, max_depth, feature_names, objective
  FROM treeshap.load_model('california', convert_to(:'model', 'UTF8'));
CREATE TABLE houses (id bigint, "MedInc" float8, "HouseAge" float8, "AveRooms" float8,
                     "AveBedrms" float8, "Population" float8, "AveOccup" float8,
                     "Latitude" float8, "Longitude" float8);
\copy houses FROM 'examples/houses.csv' CSV HEADER
\echo '-- predicted value (x $100,000) and the three features that move it most'
SELECT p.row_key AS house, round(p.prediction::numeric, 3) AS predicted,
       round(w.base_value::numeric, 3) AS average,
       (SELECT string_agg(format('%s %s', e.feature, to_char(e.shap_value, 'SG0.000')), ', '
                          ORDER BY abs(e.shap_value) DESC)
          FROM (SELECT * FROM treeshap.explain_shap('california', 'SELECT * FROM houses') x
                 WHERE x.row_key = p.row_key ORDER BY abs(x.shap_value) DESC LIMIT 3) e) AS top_reasons
  FROM treeshap.predict('california', 'SELECT * FROM houses') p
  JOIN treeshap.explain_shap_wide('california', 'SELECT * FROM houses') w USING (row_key, output)
 ORDER BY house;
\echo '-- every contribution of house 5 (NULL features are missing values)'
SELECT feature, round(shap_value::numeric, 4) AS shap_value
  FROM treeshap.explain_shap('california', 'SELECT * FROM houses WHERE id = 5')
 ORDER BY abs(shap_value) DESC;
SQL

# explain_into commits batch by batch, so it runs outside a transaction block
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
\echo '-- a job keeps a table of explanations up to date (what pg_cron would schedule)'
CALL treeshap.explain_into('california', 'houses', 'house_shap', batch_size => 2);
INSERT INTO houses VALUES (6, 8.3, 41, 6.98, 1.02, 322, 2.56, 37.88, -122.23);
CALL treeshap.explain_into('california', 'houses', 'house_shap', batch_size => 2);
SELECT state, rows_done AS new_rows, runs, (SELECT count(*) FROM house_shap) AS rows_in_target
  FROM treeshap.jobs WHERE target = 'public.house_shap';
SQL
