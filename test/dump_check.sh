#!/bin/bash
# Dump and restore (issue 20): a database with models (one replaced, so versions
# differ from load order), an explain_into job and its target is dumped with
# pg_dump and restored into a fresh cluster with pg_restore; models, versions and
# bytes, the job and its target must be intact, explanations equal, and the job
# must resume there with the rows its target lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
TS_PGPORT=${TS_DUMP_PGPORT:-54345} source test/cluster.sh >/dev/null
dump=$(mktemp /tmp/pg_treeshap_dump.XXXXXX)
trap 'rm -f "$dump"; ts_cluster_stop' EXIT
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$@"; }
models="SELECT string_agg(name || ':' || version || ':' || encode(sha256(model_bytes), 'hex'), ',' ORDER BY name)
          FROM (SELECT m.name, m.version, treeshap.model_bytes(m.name) AS model_bytes FROM treeshap.models m) v"
jobs="SELECT string_agg(target || ':' || model || ':' || model_version || ':' || state || ':' || rows_done, ',')
        FROM treeshap.jobs"
target="SELECT md5(string_agg(row_key || ':' || output || ':' || base_value || ':'
                              || array_to_string(shap_values, ','), ';' ORDER BY row_key, output)) FROM reg_shap"
explained="SELECT md5(string_agg(row_key || ':' || output || ':' || array_to_string(shap_values, ','), ';'
                                ORDER BY row_key, output))
             FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses')"

psql -X -q -c "CREATE DATABASE source"
q source -c "CREATE EXTENSION pg_treeshap" \
  -c "SELECT 1 FROM treeshap.load_model('reg', pg_read_binary_file('$(ts_server_file test/fixtures/reg_v3.json)'))" \
  -c "SELECT 1 FROM treeshap.load_model('binary', pg_read_binary_file('$(ts_server_file test/fixtures/binary.json)'))" \
  -c "SELECT 1 FROM treeshap.load_model('reg', pg_read_binary_file('$(ts_server_file test/fixtures/reg.json)'), replace => true)" \
  -f test/houses.sql \
  -c "CALL treeshap.explain_into('reg', 'houses', 'reg_shap', batch_size => 9)" >/dev/null
want_models=$(q source -c "$models"); want_jobs=$(q source -c "$jobs")
want_target=$(q source -c "$target"); want_explained=$(q source -c "$explained")
"$PGBIN/pg_dump" -Fc -d source -f "$dump"

(
    TS_PGPORT=$((PGPORT + 1)) source test/cluster.sh >/dev/null
    fail=0
    check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; fail=1; fi; }
    psql -X -q -c "CREATE DATABASE restored"
    "$PGBIN/pg_restore" --exit-on-error -d restored "$dump"
    check "models, versions and bytes intact" "$(q restored -c "$models")" "$want_models"
    check "the job intact" "$(q restored -c "$jobs")" "$want_jobs"
    check "the job's target intact" "$(q restored -c "$target")" "$want_target"
    check "explanations equal the source database's" "$(q restored -c "$explained")" "$want_explained"
    check "a model loaded after the restore draws a version past every restored one" \
      "$(q restored -c "SELECT (treeshap.load_model('later', treeshap.model_bytes('binary'))).version
                          > (SELECT max(version) FROM treeshap.models WHERE name <> 'later')")" "t"
    q restored -c "INSERT INTO houses SELECT id + 100000, \"MedInc\", \"HouseAge\", \"AveRooms\", \"AveBedrms\",
                     \"Population\", \"AveOccup\", \"Latitude\", \"Longitude\" FROM houses WHERE id <= 4" \
      -c "CALL treeshap.explain_into('reg', 'houses', 'reg_shap', batch_size => 9)" >/dev/null
    check "the restored job resumes with the rows its target lacks" \
      "$(q restored -c "SELECT state || ':' || rows_done || ':' || runs FROM treeshap.jobs")" "done:4:2"
    check "its target then equals explain_shap_wide" "$(q restored -c "SELECT count(*) FROM reg_shap t
        FULL JOIN treeshap.explain_shap_wide('reg', 'SELECT * FROM houses') w USING (row_key, output)
        WHERE t.shap_values IS DISTINCT FROM w.shap_values")" "0"
    [ "$fail" = 0 ] && echo "dump-check: PASS" || echo "dump-check: FAIL"
    exit $fail
)
