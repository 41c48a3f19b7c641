#!/bin/bash
# A GPU the build cannot use is no failure: a throwaway cluster whose GPU
# service emulates one GPU this build has no code for
# (treeshap.service_emulated_devices = -1, what an sm_80-only build sees on an
# H100; test/gpu-check.sh checks the real one). treeshap.gpu_status says why in
# words; treeshap.device = auto computes on the CPU, with one NOTICE a
# session; treeshap.device = gpu is an ERROR (0A000); the service neither
# restarts nor stops answering.
set -u
cd "$(dirname "$0")/.."
TS_PGPORT=${TS_UNUSABLE_PGPORT:-54347}
TS_PG_CONF="shared_preload_libraries = 'pg_treeshap'
treeshap.service_emulated_devices = -1" source test/cluster.sh >/dev/null
status=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; status=1; fi; }
q() { psql -X -At -v ON_ERROR_STOP=1 "$@" 2>&1; }

q -q -c "CREATE EXTENSION pg_treeshap" -c "SELECT 1 FROM treeshap.load_model('reg', pg_read_binary_file('$(ts_server_file test/fixtures/reg.json)'))" \
  -f test/houses.sql >/dev/null
for _ in $(seq 50); do
  [ "$(q -c "SELECT service FROM treeshap.gpu_status")" != starting ] && break; sleep 0.1
done
IFS='|' read -r state starts message <<<"$(q -c "SELECT service, executor_starts, message FROM treeshap.gpu_status")"
check "gpu_status: the service runs with no usable device" "$state" "no device"
check "gpu_status says why, in words" \
  "$(grep -c "this build has no code it can run (built for sm_80); rebuild with make CUDA_ARCHS=90" <<<"$message")" "1"

wide="SELECT md5(string_agg(row_key || ':' || array_to_string(shap_values, ','), ';' ORDER BY row_key))
        FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses')"
cpu=$(q -q -c "SET treeshap.device = cpu" -c "$wide")
auto=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SET treeshap.device = auto" -c "$wide" -c "$wide" 2>"$TS_CLUSTER/auto.err")
check "auto computes on the CPU: equal to treeshap.device = cpu" "$auto" "$cpu"$'\n'"$cpu"
check "auto says so once a session, with a NOTICE" \
  "$(grep -c "NOTICE:  treeshap.device is auto and the GPU cannot be used: computing on the CPU" "$TS_CLUSTER/auto.err")" "1"
check "the NOTICE carries the reason" "$(grep -c "DETAIL:  GPU 0 (emulated device, compute capability 9.0)" "$TS_CLUSTER/auto.err")" "1"

err=$(psql -X -At -v VERBOSITY=verbose -c "SET treeshap.device = gpu" -c "$wide" 2>&1)
check "gpu is an ERROR with SQLSTATE 0A000" "$(grep -c "ERROR:  0A000: treeshap.device is gpu, but no GPU can be used" <<<"$err")" "1"
check "the ERROR carries the reason" "$(grep -c "DETAIL:  GPU 0 (emulated device" <<<"$err")" "1"

sleep 1
check "the server answers after the ERROR" \
  "$(psql -X -At -c "SELECT count(*) FROM treeshap.predict('reg', 'SELECT * FROM houses')" 2>/dev/null)" \
  "$(q -c "SELECT count(*) FROM houses")"
check "no restart loop: the executor started once" "$(q -c "SELECT executor_starts FROM treeshap.gpu_status")" "$starts"
echo "unusable-check: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
