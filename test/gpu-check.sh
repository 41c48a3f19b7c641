#!/bin/bash
# GPU check, for a server with an NVIDIA GPU, the CUDA toolkit and a running
# PostgreSQL (15 to 18, the one PG_CONFIG names) that libpq's PGHOST, PGPORT
# and PGUSER reach as a superuser.
# Builds with nvcc, installs, runs the whole pg_regress + pgTAP suite with
# treeshap.device = gpu forced for every session, then compares GPU and CPU
# output on every fixture (worst deviation, bitwise determinism), and kills
# explain_into jobs mid-run (test/jobs_check.py, when psycopg2 is importable).
# Every GPU computation runs in the GPU service, so pg_treeshap must be in
# shared_preload_libraries; the check ends by counting the processes that
# hold a CUDA context (nvidia-smi): the service's executor alone. With
# TS_PG_RESTART (a command that restarts the server) it goes on to builds for
# other GPUs (test/gpu_arch_check.sh).
# Arguments name the parts to run (default: all of them, in this order): build
# suite compare batching contexts service jobs adversarial arch. The build is
# what the others test: run it first, in the same or an earlier invocation.
set -u
parts=${*:-build suite compare batching contexts service jobs adversarial arch}
want() { [[ " $parts " == *" $1 "* ]]; }
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
status=0
psql -X -At -c "SHOW shared_preload_libraries" | grep -q pg_treeshap \
  || { echo "gpu-check: pg_treeshap must be in shared_preload_libraries (the GPU service runs every GPU call)"; exit 1; }

if want build; then
echo "== build with nvcc and install"
make -s clean
t0=$(date +%s.%N)
make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" WITH_CUDA=yes || exit 1
echo "build time (default architectures): $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $t0 }") s on $(nproc) cores"
make -s PG_CONFIG="$PG_CONFIG" install >/dev/null || exit 1
psql -X -q -c "DROP EXTENSION IF EXISTS pg_treeshap CASCADE" -c "DROP EXTENSION IF EXISTS pgtap"
psql -X -At -c "CREATE EXTENSION pg_treeshap" \
     -c "SELECT format('gpu: %s, %s MiB, compute %s, %s SMs', name, total_memory / 1048576, compute_capability, multiprocessors) FROM treeshap.gpu_info()" \
     -c "SELECT format('gpu service: %s, pid %s, %s', service, service_pid, coalesce(name, message)) FROM treeshap.gpu_status" \
     -c "DROP EXTENSION pg_treeshap"
fi

echo "== force treeshap.device = gpu for every session"
# (LOAD first: ALTER SYSTEM only accepts the setting once the module defines it)
psql -X -q -c "LOAD 'pg_treeshap'" -c "ALTER SYSTEM SET treeshap.device = 'gpu'" \
     -c "ALTER SYSTEM SET jit = off" -c "SELECT pg_reload_conf()" >/dev/null || exit 1
psql -X -At -c "SHOW treeshap.device" | grep -qx gpu || { echo "treeshap.device is not forced"; exit 1; }
trap 'psql -X -q -c "LOAD '"'"'pg_treeshap'"'"'" -c "ALTER SYSTEM RESET treeshap.device" -c "SELECT pg_reload_conf()" >/dev/null' EXIT

if want suite; then
echo "== pg_regress"
make -s PG_CONFIG="$PG_CONFIG" installcheck || { cat regression.diffs 2>/dev/null | head -80; status=1; }

echo "== pgTAP"
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS pgtap" -c "CREATE EXTENSION IF NOT EXISTS pg_treeshap"
pg_prove test/t*.sql || status=1
fi

if want compare; then
echo "== GPU against CPU on every fixture"
out=$(psql -X -v ON_ERROR_STOP=1 -f test/gpu_compare.sql) || { echo "$out"; status=1; }
echo "$out" | grep -v '^$'
echo "$out" | grep -q "gpu-compare:.*PASS" || status=1
echo "$out" | grep -q "gpu-compare interactions:.*PASS" || status=1
echo "$out" | grep -q "gpu-compare predict:.*PASS" || status=1
echo "$out" | grep -q "gpu-compare interventional:.*PASS" || status=1
fi

if want batching; then
echo "== requests of eight sessions merged into shared launches, bitwise as one session alone"
bash test/batching_check.sh || status=1
fi

if want contexts; then
echo "== one CUDA context on the GPU, the service's executor's, after every session above"
executor=$(psql -X -At -c "SELECT executor_pid FROM treeshap.gpu_status LIMIT 1")
holders=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader | sort -u | tr '\n' ' ')
echo "processes with a CUDA context: ${holders:-none}; the service's executor: $executor"
[ "$(echo $holders)" = "$executor" ] || { echo "FAIL: CUDA contexts outside the service's executor"; status=1; }
fi

if want service; then
echo "== the GPU service's executor killed with SIGKILL"
bash test/service_check.sh || status=1
echo "== the executor killed under 64 pgbench clients: every request in flight sent again"
bash test/service_load_check.sh 64 10 || status=1
fi

if want jobs; then
echo "== explain_into stopped mid-run (terminate, cancel, SIGKILL) and resumed, on the GPU"
if python3 -c "import psycopg2" 2>/dev/null; then
  TS_JOBS_ROWS=${TS_JOBS_ROWS:-400000} TS_JOBS_BATCH=${TS_JOBS_BATCH:-5000} python3 test/jobs_check.py || status=1
else
  echo "psycopg2 is not importable: skipped"
fi
fi

if want adversarial; then
echo "== adversarial models on the GPU: every function stopped within 1 s; models planned off the serving path"
if python3 -c "import psycopg2" 2>/dev/null; then
  python3 test/adversarial/cancel_check.py --device gpu || status=1
  python3 test/adversarial/planning_check.py --latency || status=1
else
  echo "psycopg2 is not importable: skipped"
fi
fi

if want arch; then
echo "== builds for other GPUs: compute_75 PTX alone; an sm_80 cubin alone, which this GPU cannot run"
if [ -n "${TS_PG_RESTART:-}" ]; then
  bash test/gpu_arch_check.sh || status=1
else
  echo "SKIPPED: set TS_PG_RESTART to the command that restarts this server"
fi
fi

echo "gpu-check${*:+ ($*)}: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
