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
psql -X -q -v ON_ERROR_STOP=1 -v model=svc_load_reg -v source=svc_load_src -v rows=200000 -f test/service_source.sql || exit 1
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
