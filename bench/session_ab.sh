#!/bin/bash
# explain_into in the calling session alone (workers => 0) under the extension
# SQL of two git revisions, on the same library and rows, rounds alternated:
# one job over ROWS rows into a new target, then the same rows as 32 tables (by
# a hash of the key) explained one after another into existing empty targets,
# as a Citus node's shard jobs are. Each round makes the extension again from
# its revision's script, installed over the current one (restored at exit: it
# needs to write the server's extension directory, as `make install` does),
# with treeshap.cpu_threads = 1. Prints each round's seconds, then NEW's median
# over OLD's for both. Run from a checkout whose library is installed.
#   bash bench/session_ab.sh WORK NAME OLD_REV [NEW_REV [ROWS [ROUNDS]]]
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(cd "$1" && pwd) name=$2 old=$3 new=${4:-HEAD} rows=${5:-2000000} rounds=${6:-2}
ext=$("${PG_CONFIG:-pg_config}" --sharedir)/extension
dir=$(mktemp -d /tmp/session_ab.XXXXXX)
cp "$ext/pg_treeshap--0.2.0.sql" "$dir/installed.sql"
restore() { cp "$dir/installed.sql" "$ext/pg_treeshap--0.2.0.sql"; git worktree prune; rm -rf "$dir"; }
trap restore EXIT
for rev in "$old" "$new"; do
  git worktree add -q --detach "$dir/tree" "$rev"
  make -s -C "$dir/tree" extension/pg_treeshap--0.2.0.sql
  cp "$dir/tree/extension/pg_treeshap--0.2.0.sql" "$dir/$rev.sql"
  git worktree remove --force "$dir/tree"
done
TS_PGPORT=${TS_BENCH_PGPORT:-54391} source test/cluster.sh >/dev/null
trap 'ts_cluster_stop; restore' EXIT
q() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
features=$(python3 -c "import json; print(json.load(open('$work/$name.json'))['learner']['learner_model_param']['num_feature'])")
cols=$(for j in $(seq 0 $((features - 1))); do printf ', f%d real' "$j"; done)
picks=$(for j in $(seq 0 $((features - 1))); do printf ', b.f%d' "$j"; done)
q <<EOF
CREATE TABLE base (id bigint PRIMARY KEY$cols);
\\copy base FROM '$work/$name.csv' CSV
CREATE TABLE src (id bigint PRIMARY KEY$cols);
INSERT INTO src SELECT b.id + k * (SELECT count(*) FROM base)$picks
  FROM base b, generate_series(0, $rows / (SELECT count(*) FROM base) - 1) k;
DO \$\$BEGIN FOR i IN 0..31 LOOP
  EXECUTE format('CREATE TABLE src%s (LIKE src INCLUDING ALL)', i);
  EXECUTE format('INSERT INTO src%s SELECT * FROM src WHERE hashint8(id) & 31 = %s', i, i);
END LOOP; END\$\$;
VACUUM ANALYZE;
EOF

# one round under the SQL of REV: "REV ONE_JOB_S THIRTY_TWO_S"
round() {
  cp "$dir/$1.sql" "$ext/pg_treeshap--0.2.0.sql"
  q >/dev/null <<EOF
DROP EXTENSION IF EXISTS pg_treeshap CASCADE;
CREATE EXTENSION pg_treeshap;
SELECT 1 FROM treeshap.load_model('$name', pg_read_binary_file('$work/$name.json'));
DO \$\$BEGIN FOR i IN 0..31 LOOP EXECUTE format('DROP TABLE IF EXISTS t%s', i); END LOOP; END\$\$;
DROP TABLE IF EXISTS one;
EOF
  q <<EOF | tr '\n' ' '
SET treeshap.cpu_threads = 1;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \\gset
CALL treeshap.explain_into('$name', 'src', 'one', workers => 0);
SELECT '$1', round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3);
DO \$\$BEGIN FOR i IN 0..31 LOOP EXECUTE format('CREATE TABLE t%s (LIKE one INCLUDING ALL)', i); END LOOP; END\$\$;
CHECKPOINT;
SELECT clock_timestamp() AS t0 \\gset
DO \$\$BEGIN FOR i IN 0..31 LOOP COMMIT; CALL treeshap.explain_into('$name', 'src' || i, 't' || i, workers => 0); END LOOP; END\$\$;
SELECT round(extract(epoch FROM clock_timestamp() - :'t0')::numeric, 3);
SELECT count(*) = $rows FROM one WHERE output = 0;
EOF
  echo
}
for r in $(seq "$rounds"); do
  round "$old"; round "$new"
done | tee "$dir/rounds.txt"
python3 - "$dir/rounds.txt" "$old" "$new" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    rev, one, shards, every = line.replace('|', ' ').split()
    assert every == 't', 'a round did not explain every row'
    runs.setdefault(rev, []).append((float(one), float(shards)))
old, new = (runs[r] for r in sys.argv[2:4])
med = lambda v, i: statistics.median(x[i] for x in v)
print(f"one job: {med(new, 0):.3f} s against {med(old, 0):.3f} s ({med(old, 0) / med(new, 0):.2f}x); "
      f"32 shard-sized jobs: {med(new, 1):.3f} s against {med(old, 1):.3f} s ({med(old, 1) / med(new, 1):.2f}x); "
      f"every row explained: yes")
EOF
