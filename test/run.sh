#!/bin/bash
# The test command: install dependencies, build (with nvcc when present),
# install, start a throwaway cluster, then run the pg_regress suite, the
# pgTAP suite (pg_prove), a part of both on a cluster that does not preload
# the library, the update from the previous version against a fresh install
# (test/upgrade_check.sh), a dump restored into a fresh cluster
# (test/dump_check.sh), the plots rendered by headless Chromium
# (test/plots_check.sh), the README's SQL examples (test/readme_check.sh), both suites again through the GPU service on emulated
# devices (test/emulated_check.sh), the oracle check on freshly trained XGBoost models,
# the compute core under AddressSanitizer with mutated models, and the GPU
# quadrature layout evaluated on the host against every fixture's oracle.
# The PostgreSQL is the one PG_CONFIG names, as for PGXS (default: the
# machine's pg_config); test/pg_server.sh gets 16, 17 or 18 on Debian 12.
# TS_CHECKS=server keeps the checks of what differs between PostgreSQL
# versions (both suites, the service killed and replaced, jobs stopped and
# resumed, upgrade, dump and restore) and leaves out the slow ones that do not
# (fuzzing, plots, fresh-model oracles, the README, the compute core's checks).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
# what a fresh Debian 12 user may lack, said at once rather than minutes later
if [ -n "$SUDO" ] && ! sudo -n true 2>/dev/null; then
  echo "test/run.sh needs root or sudo without a password: it installs Debian packages and the extension"; exit 2
fi
[ -w /tmp ] || { echo "test/run.sh needs a writable /tmp: its clusters live there"; exit 2; }

checks=${TS_CHECKS:-all}
case $checks in all|server) ;; *) echo "TS_CHECKS is all or server, not '$checks'"; exit 2 ;; esac
export PG_CONFIG=${PG_CONFIG:-pg_config}
bash test/deps.sh
make -s clean >/dev/null
# the build must be silent: a warning from src/ or cuda/ fails the run
build_log=$(mktemp)
make -s -j2 ${WITH_CUDA:+WITH_CUDA=$WITH_CUDA} 2>&1 | tee "$build_log"
if grep -q "warning" "$build_log"; then
  echo "FAIL: the build warns with $("$PG_CONFIG" --version)"; exit 1
fi
$SUDO make -s install PG_CONFIG="$PG_CONFIG" ${WITH_CUDA:+WITH_CUDA=$WITH_CUDA} >/dev/null
# pg_cron (where this PostgreSQL has it) runs scheduled jobs through libpq, here over the
# cluster's socket; pg_treeshap preloaded starts its GPU service (with no GPU in CI: it
# reports none, t11_service.sql)
if [ -f "$("$PG_CONFIG" --pkglibdir)/pg_cron.so" ]; then
  TS_PG_CONF="shared_preload_libraries = 'pg_cron, pg_treeshap'
cron.database_name = 'postgres'
cron.host = '@CLUSTER@'"
else
  echo "no pg_cron for this PostgreSQL: the scheduled runs are left out"
  TS_PG_CONF="shared_preload_libraries = 'pg_treeshap'"
fi
TS_PG_CONF=$TS_PG_CONF source test/cluster.sh

status=0
if [ "$checks" = all ]; then
  echo "== META.json against the PGXN Meta Spec and the repository"
  /usr/bin/python3 test/meta_check.py || status=1

  echo "== the tracked files speak to users: no paths outside the repository, no words of this project's test machines"
  bash test/words_check.sh || status=1
fi

echo "== pg_regress"
make -s installcheck || { cat regression.diffs 2>/dev/null | head -100; status=1; }

echo "== pgTAP"
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS pgtap" -c "CREATE EXTENSION IF NOT EXISTS pg_treeshap"
pg_prove test/t*.sql || status=1

echo "== without shared_preload_libraries (as the demo runs): pg_regress, service, tables"
( bash test/unpreloaded_check.sh ) || status=1

echo "== versioned upgrade: 0.1.0 with models and a job, ALTER EXTENSION UPDATE, against a fresh install"
bash test/upgrade_check.sh || status=1

echo "== pg_dump and pg_restore into a fresh cluster: models, versions, jobs and targets intact"
bash test/dump_check.sh || status=1

if [ "$checks" = all ]; then
  echo "== the plots rendered by headless Chromium, checked on the picture"
  bash test/plots_check.sh || status=1

  echo "== every SQL example of the README, run in order against the objects it names"
  bash test/readme_check.sh || status=1
fi

echo "== the GPU service: its executor killed with SIGKILL costs no session and is replaced"
bash test/service_check.sh || status=1

echo "== a GPU the build cannot run (emulated): gpu_status says why, auto falls back with a NOTICE, gpu is an ERROR"
bash test/unusable_check.sh || status=1

echo "== the GPU service on two emulated devices: both suites, every fixture, batching, a killed executor"
bash test/emulated_check.sh || status=1

if [ "$checks" = all ]; then
  echo "== oracle: fresh XGBoost models against pred_contribs"
  /usr/bin/python3 test/oracle_check.py || status=1
  if [ -n "${TS_EXTRA_PYTHON:-}" ]; then "$TS_EXTRA_PYTHON" test/oracle_check.py || status=1; fi
fi

echo "== explain_into: stopped mid-run (terminate, cancel, SIGKILL), resumed; scheduled by pg_cron"
/usr/bin/python3 test/jobs_check.py || status=1

echo "== adversarial models (chains of depth 30,000 and 200,000, a forest of deep trees): every function stopped within 1 s"
/usr/bin/python3 test/adversarial/cancel_check.py || status=1

# Citus 13 builds on PostgreSQL 15 to 17
if [ "$("$PG_CONFIG" --version | sed 's/^[^0-9]*\([0-9]*\).*/\1/')" -le 17 ]; then
  echo "== Citus: a coordinator and two workers; the functions over distributed tables"
  bash test/citus_check.sh || status=1
fi

if [ "$checks" = server ]; then
  echo "$("$PG_CONFIG" --version): $([ $status = 0 ] && echo PASS || echo FAIL)"
  exit $status
fi

echo "== layers of src/: includes point down only, PostgreSQL only in the backend's glue"
/usr/bin/python3 test/core/layers_check.py || status=1

echo "== compute core under AddressSanitizer"
make -s -C test/core >/dev/null
/usr/bin/python3 test/core/fuzz_core.py || status=1
test/core/build/tracked_check test/fixtures/reg.json || status=1
echo "== the GPU service executor's mapping cache: a run's segment mapped and pinned once"
out=$(test/core/build/segments_check) || { echo "$out"; status=1; }

echo "== libFuzzer over each model reader, AddressSanitizer and UndefinedBehaviorSanitizer (a short slice)"
bash test/fuzz/run.sh "${TS_FUZZ_RUNS:-20000}" || status=1

echo "== the GPU quadrature layout evaluated on the host against every fixture's oracle"
/usr/bin/python3 test/core/layout_check.py || status=1
echo "== quadrature SHAP in vector lanes (each instruction set this CPU runs) against the per-row evaluation"
/usr/bin/python3 test/core/lanes_check.py || status=1

echo "== bin packing (NF, FFD, BFD) and the quadrature layout of every fixture, checked under AddressSanitizer"
for f in test/fixtures/*.json test/fixtures/*.ubj test/fixtures/*.txt test/fixtures/*.tl; do
  out=$(test/core/build/ts_cli_asan pack "$f") || { echo "invalid packing: $f"; echo "$out"; status=1; }
done
echo "packings and quadrature layouts checked: $(ls test/fixtures/*.json test/fixtures/*.ubj test/fixtures/*.txt test/fixtures/*.tl | wc -l) fixtures x (3 packings + 1 layout)"

exit $status
