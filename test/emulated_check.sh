#!/bin/bash
# The GPU service on emulated devices, for machines without a GPU (CI): a
# throwaway cluster whose service runs two devices that compute with the
# CPU's arithmetic (treeshap.service_emulated_devices), every session forced
# to treeshap.device = gpu. Everything the service does around a launch runs
# as on GPUs (models resident once, uploads per device, requests merged
# across sessions and split over devices, bounded launches, cancel,
# treeshap.gpu_memory_limit, a killed executor): the pg_regress and pgTAP
# suites, the GPU-vs-CPU comparison of every fixture, and the batching check.
set -u
cd "$(dirname "$0")/.."
TS_PGPORT=${TS_EMULATED_PGPORT:-54339}
TS_PG_CONF="shared_preload_libraries = 'pg_treeshap'
treeshap.service_emulated_devices = 2
treeshap.device = gpu" source test/cluster.sh
status=0
psql -X -At -c "SHOW treeshap.device" | grep -qx gpu || { echo "treeshap.device is not forced"; exit 1; }
psql -X -q -c "CREATE EXTENSION pg_treeshap" \
     -c "SELECT format('device %s: %s', device, name) FROM treeshap.gpu_status" -At

echo "== pg_regress on emulated devices"
make -s installcheck || { cat regression.diffs 2>/dev/null | head -80; status=1; }

# (TS_CHECKS=server, test/run.sh on a second PostgreSQL: pg_regress alone)
if [ "${TS_CHECKS:-all}" = all ]; then
  echo "== pgTAP on emulated devices"
  psql -X -q -c "CREATE EXTENSION IF NOT EXISTS pgtap"
  pg_prove test/t*.sql || status=1
fi

echo "== emulated devices against the CPU on every fixture"
out=$(psql -X -v ON_ERROR_STOP=1 -f test/gpu_compare.sql) || { echo "$out"; status=1; }
echo "$out" | grep "gpu-compare"
echo "$out" | grep -q "gpu-compare:.*PASS" || status=1
echo "$out" | grep -q "gpu-compare interactions:.*PASS" || status=1
echo "$out" | grep -q "gpu-compare predict:.*PASS" || status=1
echo "$out" | grep -q "gpu-compare interventional:.*PASS" || status=1

echo "== requests of eight sessions merged into shared launches"
bash test/batching_check.sh || status=1

echo "== the executor killed with SIGKILL"
bash test/service_check.sh || status=1

echo "== the executor killed under 8 pgbench clients: every request in flight sent again"
bash test/service_load_check.sh 8 8 || status=1

echo "== a load cancelled while the service plans its model"
/usr/bin/python3 test/adversarial/planning_check.py || status=1

psql -X -At -c "SELECT format('emulated service: %s requests, %s launches, %s merged', requests_served, launches, merged_launches) FROM treeshap.gpu_status LIMIT 1"
echo "emulated-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
