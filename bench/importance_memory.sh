#!/bin/bash
# feature_importance in bounded memory: explains 1M and then 10M generated rows
# with the cal_housing fixture model, each in a fresh backend, and prints the
# backend's peak resident memory (VmHWM) after each; flat memory means the two
# peaks are about equal. Needs a running server (PG* variables) with the
# extension installed; treeshap.device as configured (auto: the GPU if any).
#     bench/importance_memory.sh [ROWS ...]      default: 1000000 10000000
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
export PGOPTIONS="${PGOPTIONS:-} -c jit=off"  # the generated rows are cheap; no LLVM needed
max=$(printf '%s\n' "${sizes[@]}" | sort -n | tail -1)
psql -X -q -v ON_ERROR_STOP=1 <<SQL
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_treeshap;
SELECT 1 FROM treeshap.load_model('imp_reg', decode('$(base64 -w0 test/fixtures/reg.json)', 'base64'), replace => true) \g /dev/null
DROP TABLE IF EXISTS imp_rows;
CREATE UNLOGGED TABLE imp_rows AS
SELECT i AS id, (random() * 10)::real AS "MedInc", (random() * 50)::real AS "HouseAge",
       (random() * 8)::real AS "AveRooms", (random() * 2)::real AS "AveBedrms",
       (random() * 3000)::real AS "Population", (random() * 5)::real AS "AveOccup",
       (32 + random() * 10)::real AS "Latitude", (-124 + random() * 10)::real AS "Longitude"
  FROM generate_series(1, $max) i;
SQL
for n in "${sizes[@]}"; do
  out=$(psql -X -At -v ON_ERROR_STOP=1 \
    -c "\\timing on" \
    -c "SELECT 'rows ' || max(rows) || ', mean_abs_shap(MedInc) ' || round(max(mean_abs_shap) FILTER (WHERE feature = 'MedInc')::numeric, 6) FROM treeshap.feature_importance('imp_reg', 'SELECT * FROM imp_rows WHERE id <= $n')" \
    -c "SELECT regexp_replace(pg_read_file('/proc/' || pg_backend_pid() || '/status'), '.*(VmHWM:\\s+\\d+ kB).*', '\\1')" 2>&1 || true)
  echo "$n rows: $(echo "$out" | grep -E '^rows|^Time|VmHWM' | tr '\n' ' ')"
done
psql -X -q -c "DROP TABLE imp_rows" -c "SELECT treeshap.drop_model('imp_reg')" >/dev/null
