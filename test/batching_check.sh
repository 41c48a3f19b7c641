#!/bin/bash
# Cross-session batching through the GPU service (GPUs, or emulated devices):
# eight sessions explain their shares of 12,000 rows at once, in batches of
# 250 rows, so that the service merges their requests into shared launches
# and splits them over its devices. Each row's values must be bitwise those
# of one session explaining every row alone, within 1e-9 of the CPU path,
# and the service must have merged launches (treeshap.gpu_status). A lone
# request cut into launches is cut into a multiple of the devices' count. Needs a
# running server with pg_treeshap preloaded and a device (PG* variables).
set -u
cd "$(dirname "$0")/.."
export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
q() { psql -X -At -v ON_ERROR_STOP=1 "$@"; }
fail=0
check() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fail=1; fi; }

devices=$(q -c "SELECT count(device) FROM treeshap.gpu_status")
if [ "$devices" = 0 ]; then
  echo "batching-check: the GPU service has no device; skipped"
  exit 0
fi
for f in deep multiclass; do
  q -q -c "DROP TABLE IF EXISTS bc_rows_$f, bc_solo_$f, bc_cpu_$f, bc_many_$f" \
       -c "CREATE TABLE bc_many_$f (sess int, id bigint, output int, v float8[])"
  q -q -v f=$f <<'EOF'
\set model `base64 -w0 test/fixtures/:f.json`
SELECT 1 FROM treeshap.load_model('bc_' || :'f', decode(:'model', 'base64'), replace => true) \g /dev/null
\set rows `cat test/fixtures/:f.data.csv`
CREATE TABLE bc_rows_:f AS
SELECT (c * 1000 + p[1]::bigint) AS id, p[2]::float8[] AS x
  FROM (SELECT regexp_match(l, '^(\d+),"?([^"]*)"?$') AS p
          FROM regexp_split_to_table(:'rows', '\r?\n') AS l) s, generate_series(0, 59) c
 WHERE p IS NOT NULL;
EOF
  n=$(q -c "SELECT array_length(x, 1) FROM bc_rows_$f LIMIT 1")
  cols=$(seq -s, -f 'x[%g]' 1 "$n")
  query="SELECT id, $cols FROM bc_rows_$f"
  q -q -c "SET treeshap.match_columns = position" -c "SET treeshap.device = cpu" \
       -c "CREATE TABLE bc_cpu_$f AS SELECT row_key AS id, output, shap_values AS v FROM treeshap.explain_shap_wide('bc_$f', '$query')"
  q -q -c "SET treeshap.match_columns = position" -c "SET treeshap.device = gpu" -c "SET treeshap.batch_rows = 250" \
       -c "CREATE TABLE bc_solo_$f AS SELECT row_key AS id, output, shap_values AS v FROM treeshap.explain_shap_wide('bc_$f', '$query')"
  # one request of 3,000 rows alone, cut into launches: a multiple of the devices' count of
  # equal pieces, so that the devices end it together (13 unequal pieces left one device
  # the last on two GPUs); with emulated devices it is cut, into 6 pieces (5 before)
  launches=$(q -c "SELECT max(launches) FROM treeshap.gpu_status")
  q -q -c "SET treeshap.match_columns = position" -c "SET treeshap.device = gpu" -c "SET treeshap.batch_rows = 20000" \
       -c "SELECT count(*) FROM treeshap.explain_shap_wide('bc_$f', '$query ORDER BY id LIMIT 3000')" >/dev/null
  launches=$(( $(q -c "SELECT max(launches) FROM treeshap.gpu_status") - launches ))
  check "$([ "$launches" = 1 ] || [ $((launches % devices)) = 0 ] && echo 0 || echo 1)" \
    "$f: one request of 3,000 rows took $launches launches: one, or a multiple of the $devices devices"
  before=$(q -c "SELECT max(merged_launches) FROM treeshap.gpu_status")
  for s in 0 1 2 3 4 5 6 7; do
    q -q -c "SET treeshap.match_columns = position" -c "SET treeshap.device = gpu" -c "SET treeshap.batch_rows = 250" \
         -c "INSERT INTO bc_many_$f SELECT $s, row_key, output, shap_values FROM treeshap.explain_shap_wide('bc_$f', '$query WHERE id % 8 = $s')" &
  done
  wait
  after=$(q -c "SELECT max(merged_launches) FROM treeshap.gpu_status")
  read -r rows same <<<"$(q -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE m.v = s.v) FROM bc_many_$f m JOIN bc_solo_$f s USING (id, output)")"
  expected=$(q -c "SELECT count(*) FROM bc_solo_$f")
  check "$([ "$rows" = "$expected" ] && [ "$same" = "$rows" ] && echo 0 || echo 1)" \
    "$f: eight sessions at once give every row's values bitwise as one session alone ($same of $rows rows, $expected expected)"
  worst=$(q -c "SELECT max(abs(a - b)) FROM bc_solo_$f s JOIN bc_cpu_$f c USING (id, output), unnest(s.v, c.v) AS u(a, b)")
  check "$(q -c "SELECT CASE WHEN $worst < 1e-9 THEN 0 ELSE 1 END")" "$f: within 1e-9 of the CPU path (worst $worst)"
  check "$([ "$after" -gt "$before" ] && echo 0 || echo 1)" \
    "$f: the service merged requests of different sessions into shared launches ($((after - before)) launches)"
  q -q -c "DROP TABLE bc_rows_$f, bc_solo_$f, bc_cpu_$f, bc_many_$f" -c "SELECT treeshap.drop_model('bc_$f')"
done
echo "batching-check: $([ $fail = 0 ] && echo PASS || echo FAIL)"
exit $fail
