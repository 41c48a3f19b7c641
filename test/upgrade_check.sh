#!/bin/bash
# Versioned upgrade (issue 20): a database with pg_treeshap 0.1.0, models and a
# finished explain_into job is updated with ALTER EXTENSION ... UPDATE; its models,
# versions, job and explanations must survive unchanged, the new version's functions
# must work, and its catalog (test/upgrade_catalog.sql) must equal a fresh install's.
set -euo pipefail
cd "$(dirname "$0")/.."
TS_PGPORT=${TS_UPGRADE_PGPORT:-54343} source test/cluster.sh >/dev/null
fail=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; fail=1; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$@"; }

default=$(sed -n "s/^default_version = '\(.*\)'/\1/p" pg_treeshap.control)
check "the fresh script of the default version is installed" \
  "$(ls "$("${PG_CONFIG:-pg_config}" --sharedir)/extension/pg_treeshap--$default.sql" >/dev/null && echo yes)" "yes"

psql -X -q -c "CREATE DATABASE upgraded" -c "CREATE DATABASE fresh"
q upgraded -c "CREATE EXTENSION pg_treeshap VERSION '0.1.0'" \
  -c "SELECT 1 FROM treeshap.load_model('reg', pg_read_binary_file('$(ts_server_file test/fixtures/reg.json)'))" \
  -c "SELECT 1 FROM treeshap.load_model('reg_v3', pg_read_binary_file('$(ts_server_file test/fixtures/reg_v3.json)'))" \
  -f test/houses.sql \
  -c "CALL treeshap.explain_into('reg', 'houses', 'reg_shap', batch_size => 7)" >/dev/null
before=$(q upgraded -c "SELECT string_agg(name || ':' || version || ':' || sha256, ',' ORDER BY name)
                          FROM (SELECT m.name, m.version, encode(sha256(s.model), 'hex') AS sha256
                                  FROM treeshap.models m JOIN treeshap.model_store s USING (name)) v")
values=$(q upgraded -c "SELECT md5(string_agg(row_key || ':' || output || ':' || array_to_string(shap_values, ','), ';'
                                             ORDER BY row_key, output))
                          FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses')")
job=$(q upgraded -c "SELECT state || ':' || rows_done FROM treeshap.jobs WHERE target = 'public.reg_shap'")

q upgraded -c "ALTER EXTENSION pg_treeshap UPDATE"
check "the update reaches the default version" \
  "$(q upgraded -c "SELECT extversion FROM pg_extension WHERE extname = 'pg_treeshap'")" "$default"
check "models, versions and bytes unchanged" "$(q upgraded -c "SELECT string_agg(name || ':' || version || ':' || sha256, ',' ORDER BY name)
    FROM (SELECT m.name, m.version, encode(sha256(s.model), 'hex') AS sha256
            FROM treeshap.models m JOIN treeshap.model_store s USING (name)) v")" "$before"
check "models loaded under 0.1.0 have their path counts after the update" \
  "$(q upgraded -c "SELECT count(*) FILTER (WHERE num_paths > 0 AND path_elements > num_paths) || '/' || count(*)
                      FROM treeshap.models")" "2/2"
check "explanations unchanged" "$(q upgraded -c "SELECT md5(string_agg(row_key || ':' || output || ':' || array_to_string(shap_values, ','), ';'
                                             ORDER BY row_key, output))
                          FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses')")" "$values"
check "the job unchanged" "$(q upgraded -c "SELECT state || ':' || rows_done FROM treeshap.jobs WHERE target = 'public.reg_shap'")" "$job"
check "the job's target equals explain_shap_wide" "$(q upgraded -c "SELECT count(*) FROM reg_shap t
    FULL JOIN treeshap.explain_shap_wide('reg', 'SELECT * FROM houses') w USING (row_key, output)
    WHERE t.shap_values IS DISTINCT FROM w.shap_values")" "0"
q upgraded -c "INSERT INTO houses SELECT id + 100000, \"MedInc\", \"HouseAge\", \"AveRooms\", \"AveBedrms\",
                 \"Population\", \"AveOccup\", \"Latitude\", \"Longitude\" FROM houses WHERE id <= 5" \
  -c "CALL treeshap.explain_into('reg', 'houses', 'reg_shap', batch_size => 7)" >/dev/null
check "the job resumes after the update: the new rows only" \
  "$(q upgraded -c "SELECT state || ':' || rows_done FROM treeshap.jobs WHERE target = 'public.reg_shap'")" "done:5"
check "explanation_diff (0.2.0) works on models loaded under 0.1.0" \
  "$(q upgraded -c "SELECT count(*) = 8 AND bool_and(rows = (SELECT count(*) FROM houses))
                      FROM treeshap.explanation_diff('reg', 'reg_v3', 'SELECT * FROM houses')")" "t"

q fresh -c "CREATE EXTENSION pg_treeshap"
psql -X -q -v ON_ERROR_STOP=1 -d upgraded -f test/upgrade_catalog.sql > "$TS_CLUSTER/upgraded.txt"
psql -X -q -v ON_ERROR_STOP=1 -d fresh -f test/upgrade_catalog.sql > "$TS_CLUSTER/fresh.txt"
lines=$(wc -l < "$TS_CLUSTER/fresh.txt")
check "the catalog listing has the explanation_diff function" \
  "$(grep -c '^member function treeshap.explanation_diff(text,text,text)$' "$TS_CLUSTER/fresh.txt")" "1"
if [ "$lines" -lt 500 ]; then
    echo "FAIL: the catalog listing has $lines lines"; fail=1
elif diff "$TS_CLUSTER/fresh.txt" "$TS_CLUSTER/upgraded.txt" > "$TS_CLUSTER/catalog.diff"; then
    echo "ok: the updated catalog equals a fresh install's ($lines lines: members, definitions, labels, privileges, comments)"
else
    echo "FAIL: the updated catalog differs from a fresh install's:"; head -40 "$TS_CLUSTER/catalog.diff"; fail=1
fi
[ "$fail" = 0 ] && echo "upgrade-check: PASS" || echo "upgrade-check: FAIL"
exit $fail
