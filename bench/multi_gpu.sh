#!/bin/bash
# One GPU against every GPU, measured in one run: bench/multi_gpu.py on each
# MODEL with only the first GPU visible to the server, then with all of
# them, and the ratio of rows/s; the results must be bitwise identical.
# TS_PG_RESTART restarts the server (the service's executor inherits
# CUDA_VISIBLE_DEVICES from the postmaster).
#     TS_PG_RESTART='pg_ctl -D ... restart' bench/multi_gpu.sh WORK_DIR ROWS MODEL...
# TS_BATCH_ROWS lists the treeshap.batch_rows to measure (default 10000).
# On a server with two or more GPUs, pg_treeshap built, installed and preloaded,
# psycopg2 importable, .bench/ filled (bench/fetch_inputs.sh) and the models trained:
#     TS_BENCH_TRAIN_ONLY=1 python3 bench/grid.py .bench/data .bench/lib /tmp/w cal_housing-large adult-large
#     chmod -R a+rX /tmp/w; TS_BATCH_ROWS="10000 40000" \
#       TS_PG_RESTART='pg_ctl -D "$PGDATA" -w restart' bench/multi_gpu.sh /tmp/w 40000 cal_housing-large adult-large
set -euo pipefail
cd "$(dirname "$0")/.."
work=$1 rows=$2
shift 2
all=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)
: > "$work/multi_gpu.jsonl"
for devs in 0 "$all"; do
  CUDA_VISIBLE_DEVICES=$devs eval "$TS_PG_RESTART" >/dev/null
  for _ in $(seq 1 20); do
    [ "$(psql -X -At -c "SELECT service FROM treeshap.gpu_status LIMIT 1" 2>/dev/null)" = ready ] && break
    sleep 0.5
  done
  for name in "$@"; do
    for batch in ${TS_BATCH_ROWS:-10000}; do
      python3 bench/multi_gpu.py "$work" "$name" "$rows" "$batch" | tee -a "$work/multi_gpu.jsonl"
    done
  done
done
python3 - "$work/multi_gpu.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
for name, batch in dict.fromkeys((r["name"], r["batch_rows"]) for r in recs):
    one, *more = sorted((r for r in recs if (r["name"], r["batch_rows"]) == (name, batch)), key=lambda r: r["devices"])
    for r in more:
        print(f"{name}, batches of {batch:,} rows: {r['devices']} GPUs {r['rows_per_s']:,} rows/s, 1 GPU {one['rows_per_s']:,} rows/s: "
              f"x{r['rows_per_s'] / one['rows_per_s']:.2f}; results bitwise identical: "
              f"{'yes' if r['md5'] == one['md5'] else 'NO'}")
PY
