#!/bin/bash
# pg_treeshap on Citus: a coordinator and two workers (test/citus_cluster.sh:
# throwaway clusters on this machine, Citus built first when it is not
# installed). Checks that the explain and predict functions over a distributed
# table, in their query and table forms, return what they return over a plain
# table of the same rows; that models are on every node (test/citus_models.sh);
# and explain_into over a distributed table, its bad input and a worker killed
# mid-job (test/citus_jobs.sh). Prints ok lines and ends with citus-check: PASS
# or FAIL; the clusters are removed.
set -u
cd "$(dirname "$0")/.."
TS_CITUS_LABEL=citus-check
TS_CITUS_CONF="track_functions = 'all'"  # each node counts its calls of feature_importance
. test/citus_cluster.sh
citus_cluster_up 2 0  # worker 1 pinned to CPU 0: its thread defaults count that one core
status=0
check() {  # check NAME SQL: the SQL returns one boolean, true to pass
  local got
  got=$(on "$port0" -At -c "$2" 2>&1)
  if [ "$got" = t ]; then echo "ok   $1"; else echo "FAIL $1: $got"; status=1; fi
}

echo "Citus $(on "$port0" -At -c "SELECT citus_version()" | awk '{print $2}') on PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}'): a coordinator and $(on "$port0" -At -c "SELECT count(*) FROM citus_get_active_worker_nodes()") workers"

check "a node pinned to one core counts one core for its threads; the coordinator counts every core (up to 16)" \
  "SELECT (SELECT result FROM run_command_on_workers('SELECT treeshap._cpu_threads_shared(1)') WHERE nodeport = $((port0 + 1))) = '1'
      AND treeshap._cpu_threads_shared(1) = least($(nproc), 16)"

# the 'reg' fixture's rows, as a plain table and as a distributed one
model=$(base64 -w0 test/fixtures/reg.json)
# load_reg NAME [ARGS]: the fixture's bytes as model NAME, through stdin (too long for an argument)
load_reg() {
  on "$port0" >/dev/null <<EOF
SELECT 1 FROM treeshap.load_model('$1', decode('$model', 'base64')${2:+, $2});
EOF
}
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
calls_on_workers() {  # the calls of feature_importance on each worker (as its statistics have them so far)
  on "$port0" -At -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(
    'SELECT coalesce(sum(calls), 0) FROM pg_stat_user_functions WHERE funcname = ''feature_importance''')"
}
before=$(calls_on_workers)
check "feature_importance: the distributed table read as a table, to 1e-12 (its shards summed where they lie)" \
  "SELECT bool_and(d.rows = l.rows AND abs(d.mean_abs_shap - l.mean_abs_shap) <= 1e-12 * abs(l.mean_abs_shap)
                   AND abs(d.mean_shap - l.mean_shap) <= 1e-12 * greatest(abs(l.mean_shap), 1e-300)) AND count(*) = 8
     FROM treeshap.feature_importance('reg', 'houses_dist'::regclass) d
     JOIN treeshap.feature_importance('reg', 'houses_local'::regclass) l USING (output, feature)"
for _ in $(seq 20); do [ "$(calls_on_workers)" != "$before" ] && break; sleep 0.25; done
after=$(calls_on_workers)
if [ "$(paste -d' ' <(echo "$before" | tr ',' '\n') <(echo "$after" | tr ',' '\n') | awk '$2 <= $1 {bad = 1} END {print bad ? "no" : "yes"}')" = yes ]; then
  echo "ok   and summed on every worker (its calls of feature_importance there: $before -> $after)"
else echo "FAIL feature_importance was not summed on every worker: its calls there $before -> $after"; status=1; fi
check "feature_importance against a background, in probability space, over the distributed table: to 1e-12" \
  "SELECT bool_and(d.rows = l.rows AND abs(d.mean_abs_shap - l.mean_abs_shap) <= 1e-12 * abs(l.mean_abs_shap)
                   AND abs(d.mean_shap - l.mean_shap) <= 1e-12 * greatest(abs(l.mean_shap), 1e-300)) AND count(*) = 8
     FROM treeshap.feature_importance('reg', 'houses_dist'::regclass, 'probability'::treeshap.shap_output,
                                        'SELECT * FROM houses_dist ORDER BY id LIMIT 20') d
     JOIN treeshap.feature_importance('reg', 'houses_local'::regclass, 'probability'::treeshap.shap_output,
                                        'SELECT * FROM houses_dist ORDER BY id LIMIT 20') l
    USING (output, feature)"
on "$port0" -c "CREATE TABLE empty_dist (LIKE houses_local)" -c "SELECT create_distributed_table('empty_dist', 'id')" >/dev/null
check "feature_importance of an empty distributed table: what a plain empty table gives" \
  "SELECT $(same "treeshap.feature_importance('reg', 'empty_dist'::regclass)" \
                 "treeshap.feature_importance('reg', 'SELECT * FROM houses_local WHERE false')")"

. test/citus_models.sh
. test/citus_jobs.sh

echo "citus-check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
