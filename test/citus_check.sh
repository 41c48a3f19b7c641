#!/bin/bash
# pg_treeshap on Citus: a coordinator and two workers (three throwaway
# clusters of the PostgreSQL that PG_CONFIG names, on this machine, each
# preloading citus and pg_treeshap), Citus built first when it is not
# installed (test/citus_build.sh). Checks that the explain and predict
# functions over a distributed table, in their query and table forms, return
# what they return over a plain table of the same rows. Prints ok lines and
# ends with citus-check: PASS or FAIL; the clusters are removed.
set -u
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
if ! bash test/citus_build.sh; then
  echo "citus-check: FAIL (Citus is not installed and could not be built)"
  exit 1
fi
PGBIN=$("$PG_CONFIG" --bindir)
[ -x "$PGBIN/initdb" ] || PGBIN=/usr/lib/postgresql/15/bin
export PATH="$PGBIN:$PATH"
if [ -f "$PGBIN/../lib/libpq.so.5" ]; then
  export LD_LIBRARY_PATH="$(cd "$PGBIN/../lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
base=$(mktemp -d /tmp/pg_treeshap-citus.XXXXXX)
port0=${TS_CITUS_PORT:-54371}
nodes="coordinator worker1 worker2"
if [ "$(id -u)" = 0 ]; then
  chown postgres "$base"
  as_owner() { (cd "$base" && runuser -u postgres -- "$@"); }
else
  as_owner() { "$@"; }
fi
stop_all() {
  for n in $nodes; do
    [ -d "$base/$n" ] && as_owner "$PGBIN/pg_ctl" -D "$base/$n" -m immediate stop >/dev/null 2>&1
  done
  rm -rf "$base"
}
trap stop_all EXIT

# node i listens on 127.0.0.1:port0+i (Citus's nodes reach each other over TCP)
start_node() {  # start_node NAME I
  as_owner "$PGBIN/initdb" -D "$base/$1" -A trust -U postgres >"$base/$1.initdb.log" 2>&1 \
    || { cat "$base/$1.initdb.log"; echo "citus-check: FAIL (initdb)"; exit 1; }
  cat >>"$base/$1/postgresql.auto.conf" <<EOF
shared_preload_libraries = 'citus,pg_treeshap'
max_worker_processes = 16
treeshap.device = cpu
EOF
  as_owner "$PGBIN/pg_ctl" -D "$base/$1" -l "$base/$1.log" -w \
    -o "-k $base -p $((port0 + $2)) -c listen_addresses=127.0.0.1" start >/dev/null \
    || { cat "$base/$1.log"; echo "citus-check: FAIL (start $1)"; exit 1; }
}
i=0
for n in $nodes; do
  start_node "$n" "$i"
  i=$((i + 1))
done
export PGHOST=$base PGUSER=postgres PGDATABASE=postgres
on() { local p=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -p "$p" "$@"; }
status=0
check() {  # check NAME SQL: the SQL returns one boolean, true to pass
  local got
  got=$(on "$port0" -At -c "$2" 2>&1)
  if [ "$got" = t ]; then echo "ok   $1"; else echo "FAIL $1: $got"; status=1; fi
}

for i in 0 1 2; do on $((port0 + i)) -c "CREATE EXTENSION citus" || exit 1; done
on "$port0" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port0)" >/dev/null &&
on "$port0" -c "SELECT citus_add_node('127.0.0.1', $((port0 + 1)))" -c "SELECT citus_add_node('127.0.0.1', $((port0 + 2)))" >/dev/null \
  || { echo "citus-check: FAIL (adding the workers)"; exit 1; }
on "$port0" -c "CREATE EXTENSION pg_treeshap" || exit 1
echo "Citus $(on "$port0" -At -c "SELECT citus_version()" | awk '{print $2}') on PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'): a coordinator and $(on "$port0" -At -c "SELECT count(*) FROM citus_get_active_worker_nodes()") workers"

# the 'reg' fixture's rows, as a plain table and as a distributed one
model=$(base64 -w0 test/fixtures/reg.json)
on "$port0" <<EOF || { echo "citus-check: FAIL (setup)"; exit 1; }
SELECT 1 FROM treeshap.load_model('reg', decode('$model', 'base64')) \g /dev/null
CREATE TABLE raw (id bigint, x float8[]);
\copy raw FROM 'test/fixtures/reg.data.csv' CSV
CREATE TABLE houses_local AS
SELECT id, x[1] AS "MedInc", x[2] AS "HouseAge", x[3] AS "AveRooms", x[4] AS "AveBedrms",
       x[5] AS "Population", x[6] AS "AveOccup", x[7] AS "Latitude", x[8] AS "Longitude" FROM raw;
CREATE TABLE houses_dist (LIKE houses_local);
SELECT create_distributed_table('houses_dist', 'id') \g /dev/null
INSERT INTO houses_dist SELECT * FROM houses_local;
EOF

# rows of two row sources, as sets with duplicates: equal when neither has a row the other lacks
same() { echo "NOT EXISTS ((SELECT * FROM $1 EXCEPT ALL SELECT * FROM $2) UNION ALL (SELECT * FROM $2 EXCEPT ALL SELECT * FROM $1))"; }

check "the distributed table holds every row, in shards on both workers" \
  "SELECT (SELECT count(*) FROM houses_dist) = (SELECT count(*) FROM houses_local) AND (SELECT count(*) FROM houses_local) > 0
      AND (SELECT count(DISTINCT nodeport) FROM citus_shards WHERE table_name = 'houses_dist'::regclass) = 2"
for form in "explain_shap_wide(%s)" "explain_shap(%s)" "predict(%s)" "explain_top_features_wide(%s, k => 3)" \
            "explain_top_features(%s, k => 3)"; do
  name=${form%%(*}
  q_dist=$(printf "treeshap.$form" "'reg', 'SELECT * FROM houses_dist'")
  q_local=$(printf "treeshap.$form" "'reg', 'SELECT * FROM houses_local'")
  t_dist=$(printf "treeshap.$form" "'reg', 'houses_dist'::regclass, 'id'")
  check "$name: a query over the distributed table gives the plain table's rows, bit for bit" "SELECT $(same "$q_dist" "$q_local")"
  check "$name: the distributed table read as a table gives them too" "SELECT $(same "$t_dist" "$q_local")"
done
# the sums of importance are added in the rows' order: a query that orders the rows gives the same bits
check "feature_importance: an ordered query over the distributed table sums to the plain table's bits" \
  "SELECT $(same "treeshap.feature_importance('reg', 'SELECT * FROM houses_dist ORDER BY id')" \
                 "treeshap.feature_importance('reg', 'SELECT * FROM houses_local ORDER BY id')")"
check "feature_importance: the distributed table read as a table, to 1e-12 (its rows come in the shards' order)" \
  "SELECT bool_and(d.rows = l.rows AND abs(d.mean_abs_shap - l.mean_abs_shap) <= 1e-12 * abs(l.mean_abs_shap)
                   AND abs(d.mean_shap - l.mean_shap) <= 1e-12 * greatest(abs(l.mean_shap), 1e-300)) AND count(*) = 8
     FROM treeshap.feature_importance('reg', 'houses_dist'::regclass) d
     JOIN treeshap.feature_importance('reg', 'houses_local'::regclass) l USING (output, feature)"

. test/citus_models.sh

echo "citus-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
