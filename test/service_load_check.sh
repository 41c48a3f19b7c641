#!/bin/bash
# The GPU service's executor killed with SIGKILL under load: pgbench clients
# (each aborted by its first ERROR, as a user's pool would be) explaining and
# predicting 1,000-row ranges through the service while the executor dies.
# Every request in flight is sent again to the next executor, so: no failed
# transaction, no aborted client, no postmaster restart, requests served
# after, and treeshap.gpu_status counts the retries. Needs a running server
# with pg_treeshap preloaded and treeshap.device = gpu (test/emulated_check.sh,
# test/gpu-check.sh), and the right to kill the server's processes.
#     bash test/service_load_check.sh [CLIENTS [SECONDS]]
set -u
cd "$(dirname "$0")/.."
clients=${1:-8}
seconds=${2:-8}
q() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
status=0
check() { if [ "$1" = 0 ]; then echo "ok: $2"; else echo "FAIL: $2"; status=1; fi; }

q "CREATE EXTENSION IF NOT EXISTS pg_treeshap" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<'SQL' || exit 1
\set m `cat test/fixtures/reg.json`
SELECT 1 FROM treeshap.load_model('svc_load_reg', convert_to(:'m', 'UTF8'), replace => true) \g /dev/null
DROP TABLE IF EXISTS svc_load_src;
CREATE TABLE svc_load_src AS
SELECT g AS id, (g * 37 % 1500) / 100.0::float8 AS "MedInc", (g * 11 % 52)::float8 AS "HouseAge",
       2 + (g * 13 % 700) / 100.0::float8 AS "AveRooms", 1 + (g % 7) / 20.0::float8 AS "AveBedrms",
       (g * 101 % 5000)::float8 AS "Population", 1 + (g * 17 % 400) / 100.0::float8 AS "AveOccup",
       32.5 + (g * 29 % 900) / 100.0::float8 AS "Latitude", -124.3 + (g * 31 % 1000) / 100.0::float8 AS "Longitude"
  FROM generate_series(0, 199999) g;
ALTER TABLE svc_load_src ADD PRIMARY KEY (id);
ANALYZE svc_load_src;
SQL
dir=$(mktemp -d)
cat >"$dir/explain.sql" <<'SQL'
\set a random(0, 199) * 1000
SELECT count(*) FROM treeshap.explain_shap_wide('svc_load_reg', 'SELECT id, * FROM svc_load_src WHERE id BETWEEN :a AND :a + 999');
SQL
cat >"$dir/predict.sql" <<'SQL'
\set a random(0, 199) * 1000
SELECT count(*) FROM treeshap.predict('svc_load_reg', 'SELECT id, * FROM svc_load_src WHERE id BETWEEN :a AND :a + 999');
SQL
[ "$(q "SHOW treeshap.device")" = gpu ] || { echo "FAIL: treeshap.device is not gpu"; exit 1; }
postmaster=$(q "SELECT pg_postmaster_start_time()")
retried=$(q "SELECT requests_retried FROM treeshap.gpu_status LIMIT 1")
executor=$(q "SELECT executor_pid FROM treeshap.gpu_status LIMIT 1")
pgbench -n -M simple -c "$clients" -j "$clients" -T "$seconds" \
        -f "$dir/explain.sql@1" -f "$dir/predict.sql@1" >"$dir/out" 2>&1 &
bench=$!
sleep $((seconds / 2))
served=$(q "SELECT requests_served FROM treeshap.gpu_status LIMIT 1")
kill -9 "$executor"
wait "$bench"
rc=$?
processed=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$dir/out")
failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$dir/out")
aborted=$(grep -c "aborted" "$dir/out")
retried2=$(q "SELECT requests_retried FROM treeshap.gpu_status LIMIT 1")
check "$([ "$rc" = 0 ] && [ "${failed:-0}" = 0 ] && [ "$aborted" = 0 ] && [ -n "$processed" ] && echo 0 || echo 1)" \
  "$clients pgbench clients, the executor (pid $executor) killed after ${served} requests: $processed transactions, ${failed:-0} failed, $aborted aborted client(s), pgbench rc $rc"
[ "$rc" = 0 ] || grep -i "error\|abort" "$dir/out" | head -5
check "$([ "$(q "SELECT pg_postmaster_start_time()")" = "$postmaster" ] && echo 0 || echo 1)" \
  "no postmaster restart"
check "$([ "$retried2" -gt "$retried" ] && echo 0 || echo 1)" \
  "the requests in flight were sent again (requests_retried $retried -> $retried2)"
after=$(q "SELECT count(*) FROM treeshap.explain_shap_wide('svc_load_reg', 'SELECT id, * FROM svc_load_src WHERE id < 1000')" 2>&1)
check "$([ "$after" = 1000 ] && echo 0 || echo 1)" "requests are served after ($after rows explained)"
q "DROP TABLE svc_load_src" >/dev/null
q "SELECT treeshap.drop_model('svc_load_reg')" >/dev/null
rm -rf "$dir"
echo "service-load-check: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
