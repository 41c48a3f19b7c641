#!/bin/bash
# The benchmark, on a GPU server with PostgreSQL running (libpq's PG* variables
# and PG_CONFIG name it) and .bench/ filled by bench/fetch_inputs.sh. Builds
# and installs the extension and bench/ts_bench, trains the model grid (bench/grid.py), then per model measures packing and
# the kernel (ts_bench) and end-to-end SQL (bench/sql_bench.py), and writes
# $TS_BENCH_WORK/RESULTS.md (copy it to bench/RESULTS.md).
#     bench/run.sh [MODEL ...]        default: the whole grid of bench/grid.py
# TS_BENCH_INTERACTIONS=1 adds interaction values on 200 rows (GPU kernel
# against XGBoost's CPU pred_interactions) and feature_importance;
# TS_BENCH_JOBS=1 adds explain_into against explain_shap_wide, alone and with workers
# (bench/jobs_bench.py; TS_BENCH_JOB_WORKERS, max_worker_processes large enough);
# TS_BENCH_CONCURRENCY=1 adds 1, 8, 32 and 64 sessions splitting 1M rows
# (bench/concurrency.py: pg_treeshap preloaded, max_connections >= 70, psycopg2).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${TS_BENCH_WORK:-/tmp/ts_bench}
PG_CONFIG=${PG_CONFIG:-pg_config}
mkdir -p "$WORK" && chmod 755 "$WORK"
[ -n "${TS_BENCH_APPEND:-}" ] || : > "$WORK/results.jsonl"

make -s -j"$(nproc)" PG_CONFIG="$PG_CONFIG" WITH_CUDA=yes >/dev/null
make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
make -s -C bench >/dev/null
models=("$@")
[ ${#models[@]} -gt 0 ] || mapfile -t models < <(python3 -c "import sys; sys.path.insert(0, 'bench'); import grid; print('\n'.join(grid.GRID))")

echo "== training and XGBoost pred_contribs"
python3 bench/grid.py .bench/data .bench/lib "$WORK" "${models[@]}"
chmod -R a+rX "$WORK"
for name in "${models[@]}"; do
  echo "== $name"
  case $name in *-large) reps=1 check=10 ;; *) reps=3 check=200 ;; esac
  bench/build/ts_bench "$WORK/$name.json" "$WORK/$name.rows.f32" 10000 $reps $check ${TS_BENCH_INTERACTIONS:+200} \
    | sed "s/^{/{\"kind\": \"kernel\", \"name\": \"$name\", /" | tee -a "$WORK/results.jsonl"
  python3 bench/sql_bench.py "$WORK" "$name" | tee -a "$WORK/results.jsonl"
  if [ -n "${TS_BENCH_CONCURRENCY:-}" ]; then
    python3 bench/concurrency.py "$WORK" "$name" | tee -a "$WORK/results.jsonl"
  fi
  if [ -n "${TS_BENCH_JOBS:-}" ]; then
    case $name in fashion_mnist-*|*-large) jrows=20000 ;; *) jrows=500000 ;; esac
    for batch in 10000 100000; do
      TS_BENCH_DEVICE=gpu python3 bench/jobs_bench.py "$WORK" "$name" $jrows $batch | grep '^{' | tee -a "$WORK/results.jsonl"
    done
  fi
done
machine="Machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1); $(nproc) CPU cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); $(date -u +%Y-%m-%d)."
python3 bench/report.py "$WORK/results.jsonl" "$machine" > "$WORK/RESULTS.md"
cat "$WORK/RESULTS.md"
