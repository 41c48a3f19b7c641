#!/bin/bash
# The GPU builds a server may be given, on a GPU machine (called by
# test/gpu-check.sh, which says what it needs; TS_PG_RESTART restarts the
# server so that it loads the library just installed):
# - PTX of compute_75 alone (Turing's code, JIT-compiled for the GPU here):
#   GPU against CPU on every fixture, every kernel family;
# - an sm_80 cubin alone, which a newer GPU (sm_90 and on) cannot run:
#   treeshap.gpu_status says so in words, auto computes on the CPU with one
#   NOTICE, gpu is an ERROR (0A000), and the server answers throughout.
# Each build's time is printed; the default build is installed again at the end.
set -u
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
: "${TS_PG_RESTART:?set TS_PG_RESTART to the command that restarts the server}"
status=0
check() { if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; status=1; fi; }
q() { psql -X -At "$@" 2>&1; }

# build with the given make variables, install, restart, wait for the service to settle
install_build() {
  local t0 t1
  make -s clean
  t0=$(date +%s.%N)
  make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" WITH_CUDA=yes "$@" || return 1
  t1=$(date +%s.%N)
  echo "build time ($*): $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s on $(nproc) cores"
  make -s PG_CONFIG="$PG_CONFIG" install >/dev/null || return 1
  eval "$TS_PG_RESTART" >/dev/null || return 1
  for _ in $(seq 100); do
    [ "$(q -c "SELECT service FROM treeshap.gpu_status LIMIT 1")" != starting ] && break; sleep 0.1
  done
}

echo "== PTX of compute_75 only (Turing's code path, JIT-compiled here)"
if install_build CUDA_ARCHS= CUDA_PTX=75; then
  q -c "SELECT format('gpu service: %s, %s', service, coalesce(name, message)) FROM treeshap.gpu_status"
  check "the service runs on the GPU" "$(q -c "SELECT service FROM treeshap.gpu_status LIMIT 1")" "ready"
  out=$(psql -X -v ON_ERROR_STOP=1 -f test/gpu_compare.sql 2>&1) || { echo "$out"; status=1; }
  echo "$out" | grep "gpu-compare" | sed 's/^ */compute_75 PTX: /'
  for family in "" " interactions" " predict" " interventional"; do
    echo "$out" | grep -q "gpu-compare$family:.*PASS" || { echo "FAIL: gpu-compare$family on compute_75 PTX"; status=1; }
  done
else
  echo "FAIL: the compute_75 PTX build"; status=1
fi

echo "== an sm_80 cubin only, on a GPU of compute capability $(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1)"
if install_build CUDA_ARCHS=80 CUDA_PTX=; then
  IFS='|' read -r state starts message <<<"$(q -c "SELECT service, executor_starts, message FROM treeshap.gpu_status LIMIT 1")"
  echo "gpu_status: $state: $message"
  check "gpu_status: no usable device" "$state" "no device"
  check "gpu_status says the build has no code for this GPU" "$(grep -c "this build has no code it can run (built for sm_80)" <<<"$message")" "1"
  # a database of its own: the houses of the reg fixture and its model
  q -c "DROP DATABASE IF EXISTS ts_arch" -c "CREATE DATABASE ts_arch" >/dev/null
  psql -X -q -d ts_arch -c "CREATE EXTENSION pg_treeshap" -f test/houses.sql >/dev/null
  # the model goes through the client: the server may not read the checkout
  # (psql's backquote reads it: as an argument, its 262 KB of base64 exceed the kernel's 128 KB limit)
  psql -X -q -d ts_arch -v ON_ERROR_STOP=1 >/dev/null <<'SQL' || { echo "FAIL: the model did not load"; status=1; }
\set model `base64 -w0 test/fixtures/reg.json`
SELECT 1 FROM treeshap.load_model('reg', decode(:'model', 'base64'))
SQL
  wide="SELECT md5(string_agg(row_key || ':' || array_to_string(shap_values, ','), ';' ORDER BY row_key))
          FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses')"
  cpu=$(q -d ts_arch -q -c "SET treeshap.device = cpu" -c "$wide")
  auto=$(psql -X -q -At -d ts_arch -c "SET treeshap.device = auto" -c "$wide" -c "$wide" 2>/tmp/ts_arch_auto.err)
  check "auto computes on the CPU (equal to cpu)" "$auto" "$cpu"$'\n'"$cpu"
  check "auto says so once, with a NOTICE" "$(grep -c "NOTICE:  treeshap.device is auto and the GPU cannot be used" /tmp/ts_arch_auto.err)" "1"
  err=$(psql -X -At -d ts_arch -v VERBOSITY=verbose -c "SET treeshap.device = gpu" -c "$wide" 2>&1)
  check "gpu is an ERROR with SQLSTATE 0A000" "$(grep -c "ERROR:  0A000: treeshap.device is gpu, but no GPU can be used" <<<"$err")" "1"
  echo "$err" | grep -E "ERROR|DETAIL" | sed 's/^/  /'
  sleep 2
  check "the server answers" "$(psql -X -At -d ts_arch -q -c "SET treeshap.device = auto" -c "SELECT count(*) FROM treeshap.predict('reg', 'SELECT * FROM houses')" 2>/dev/null)" \
    "$(q -d ts_arch -c "SELECT count(*) FROM houses")"
  check "no restart loop: the executor started once" "$(q -c "SELECT executor_starts FROM treeshap.gpu_status LIMIT 1")" "$starts"
  q -c "DROP DATABASE ts_arch" >/dev/null
else
  echo "FAIL: the sm_80 build"; status=1
fi

echo "== the default build again"
install_build || { echo "FAIL: the default build"; status=1; }
echo "gpu-arch-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
