#!/bin/bash
# What this host gives explain_into on its two halves with nothing shared but
# the host: two plain servers (no distributed table, no coordinator), each
# pinned to its half (bench/machine_halves.py, as bench/citus_bench.sh pins
# its worker nodes) and configured as those nodes are. One server explains
# ROWS rows alone; then both at once explain ROWS/2 rows each (the same rows,
# split by key), each with as many workers as its half has CPUs. "both / one"
# is the rows a second both did over what one did alone: the most two Citus
# worker nodes on this host can give over one when each runs its part as fast
# as a server of its own. Every round checks that every row was explained and
# that the two halves' rows equal the one's (an order-free checksum). Prints a
# JSON record a round (kind halves_explain_into), then the ratios.
#   bash bench/halves_explain.sh WORK NAME [ROWS [ROUNDS]]
set -u
cd "$(dirname "$0")/.."
work=$(cd "$1" && pwd) name=$2 rows=${3:-2000000} rounds=${4:-2}
TS_CITUS_LABEL=halves-explain
TS_CITUS_GPUS=
. bench/halves_setup.sh
pa=$((port0 + 1)) pb=$((port0 + 2))
start_node a 1 "${shares[0]}"
start_node b 2 "${shares[1]}"
for p in "$pa" "$pb"; do
  on "$p" -c "CREATE EXTENSION pg_treeshap" \
     -c "SELECT 1 FROM treeshap.load_model('$name', pg_read_binary_file('$work/$name.json'))" >/dev/null \
    || { echo "halves-explain: FAIL (setup)"; exit 1; }
done

# server P: the table src of the rows whose key is in [LO, HI) of
# the base rows repeated to ROWS rows
load() {
  local p=$1 lo=$2 hi=$3
  on "$p" >/dev/null <<EOF || { echo "halves-explain: FAIL (setup)"; exit 1; }
DROP TABLE IF EXISTS explained, src, base;
CREATE TABLE base (id bigint PRIMARY KEY$cols);
\\copy base FROM '$work/$name.csv' CSV
CREATE TABLE src (id bigint PRIMARY KEY$cols);
INSERT INTO src SELECT * FROM (
  SELECT b.id + k * (SELECT count(*) FROM base) AS id$picks
    FROM base b, generate_series(0, $rows / (SELECT count(*) FROM base) - 1) k) s
 WHERE s.id >= $lo AND s.id < $hi;
VACUUM ANALYZE src;
EOF
}

# explain src into a new target on server P: seconds, rows, checksum
explain() {
  local p=$1 t0 t1
  on "$p" -c "DROP TABLE IF EXISTS explained" -c "CHECKPOINT" >/dev/null
  t0=$(date +%s.%N)
  on "$p" -c "CALL treeshap.explain_into('$name', 'src', 'explained', workers => $half)" >/dev/null \
    || { echo "halves-explain: FAIL (explain_into on $p)"; exit 1; }
  t1=$(date +%s.%N)
  echo "$(python3 -c "print($t1 - $t0)") $(on "$p" -At -c "SELECT count(*) FILTER (WHERE output = 0) || ' ' ||
      sum(hashtextextended(concat_ws(' ', row_key, output, base_value, shap_values), 0)::numeric) FROM explained")"
}

half_rows=$((rows / 2))
for r in $(seq "$rounds"); do
  load "$pa" 0 "$rows"
  read -r one one_rows one_sum <<<"$(explain "$pa")"
  load "$pa" 0 "$half_rows"
  load "$pb" "$half_rows" "$rows"
  on "$pb" -c "CHECKPOINT" >/dev/null
  explain "$pa" >"$base/a.txt" & explain "$pb" >"$base/b.txt" & wait
  read -r a a_rows a_sum <"$base/a.txt"
  read -r b b_rows b_sum <"$base/b.txt"
  python3 -c "
import json
one, a, b = $one, $a, $b
both = max(a, b)
print(json.dumps({'kind': 'halves_explain_into', 'name': '$name', 'device': '$device', 'rows': $rows,
                  'cores_per_half': $half, 'halves': '${shares[*]}'.split(), 'one_seconds': round(one, 3),
                  'one_rows_per_s': round($rows / one), 'half_seconds': [round(a, 3), round(b, 3)],
                  'both_rows_per_s': round($rows / both), 'both_over_one': round(one / both, 3),
                  'every_row': $one_rows == $rows and $a_rows + $b_rows == $rows,
                  'checksum_equal': $one_sum == $a_sum + $b_sum}))"
done
