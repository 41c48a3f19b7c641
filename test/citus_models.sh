# Models on every node of the Citus cluster: sourced by test/citus_check.sh
# once its coordinator and two workers run and the 'reg' model is loaded
# (uses its on, check, start_node, port0, base, nodes and status).

workers="$((port0 + 1)) $((port0 + 2))"
models_on() {  # models_on PORT: the node's models, bytes by their md5
  on "$1" -At -c "SELECT name, version, digest, owner, md5(model) FROM treeshap.model_store ORDER BY name" 2>&1
}
check_nodes() {  # check_nodes NAME WANT PORTS...: each node lists the coordinator's models, whose names are WANT
  local name=$1 want=$2 mine got bad=""
  shift 2
  mine=$(models_on "$port0")
  [ "$(echo "$mine" | cut -d'|' -f1 | paste -sd, -)" = "$want" ] || bad=" the coordinator lists $(echo "$mine" | cut -d'|' -f1 | paste -sd, -)"
  for p in "$@"; do
    got=$(models_on "$p")
    [ "$got" = "$mine" ] || bad="$bad; port $p has: $got"
  done
  if [ -z "$bad" ]; then echo "ok   $name"; else echo "FAIL $name:$bad"; status=1; fi
}
check_error() {  # check_error NAME PORT ROLE SQLSTATE SQL: the SQL fails with that SQLSTATE
  local got
  got=$(on "$2" -At -c "SET ROLE $3" -c '\set VERBOSITY verbose' -c "$5" 2>&1 | grep -m1 '^ERROR:' | awk '{print $2}')
  if [ "$got" = "$4:" ]; then echo "ok   $1"; else echo "FAIL $1: got '$got', wanted $4"; status=1; fi
}
as_role() {  # as_role PORT ROLE SQL
  on "$1" -c "SET ROLE $2" -c "$3" >/dev/null
}
explained_on() {  # explained_on PORT: the coordinator's distributed table explained by this node, as text
  on "$1" -At -c "SELECT md5(string_agg(format('%s %s %s %s', row_key, output, base_value, shap_values), ';'
                                        ORDER BY row_key, output))
                  FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM houses_dist')" 2>&1
}
other_model=$(base64 -w0 test/fixtures/binary.json)

check "treeshap.model_store is a reference table (CREATE EXTENSION on the coordinator made it one)" \
  "SELECT partmethod = 'n' FROM pg_dist_partition WHERE logicalrelid = 'treeshap.model_store'::regclass"
check "citus_share_models() finds it shared already" "SELECT NOT treeshap.citus_share_models()"
check_nodes "a model loaded on the coordinator is on every worker: bytes, version, digest, owner" reg $workers
mine=$(explained_on "$port0")
for p in $workers; do
  got=$(explained_on "$p")
  if [ "$got" = "$mine" ] && [ -n "$mine" ]; then echo "ok   a worker ($p) explains with it what the coordinator does, bit for bit"
  else echo "FAIL a worker ($p) explains with it: $got, coordinator: $mine"; status=1; fi
done

before=$(on "$port0" -At -c "SELECT version FROM treeshap.model_store WHERE name = 'reg'")
on "$port0" -c "SELECT 1 FROM treeshap.load_model('reg', decode('$other_model', 'base64'), replace => true)" >/dev/null
check "a replaced model has a new version" "SELECT version > $before FROM treeshap.model_store WHERE name = 'reg'"
check_nodes "a replaced model is replaced on every worker, with the same new version" reg $workers

on "$port0" -c "CREATE ROLE alice LOGIN" -c "CREATE ROLE bob LOGIN" >/dev/null
as_role "$port0" alice "SELECT 1 FROM treeshap.load_model('mine', decode('$other_model', 'base64'))"
check_nodes "a role's model is its own on every worker" mine,reg $workers
check "its owner there is the role" "SELECT owner = 'alice' FROM treeshap.model_store WHERE name = 'mine'"
check_error "another role cannot replace it from the coordinator" "$port0" bob 42501 \
  "SELECT treeshap.load_model('mine', decode('$other_model', 'base64'), replace => true)"
check_error "nor drop it from a worker" "$((port0 + 1))" bob 42501 "SELECT treeshap.drop_model('mine')"
as_role "$((port0 + 2))" bob "DELETE FROM treeshap.model_store WHERE name = 'mine'"
as_role "$((port0 + 2))" bob "UPDATE treeshap.model_store SET owner = 'bob' WHERE name = 'mine'"
check_nodes "nor delete or take its row on a worker (row level security there too)" mine,reg $workers
# 'reg' holds the other model's bytes now: its own go in as 'orig'
load_reg orig
check_error "a change of bytes that keeps the version is refused: each node would draw its own" "$port0" postgres 0A000 \
  "UPDATE treeshap.model_store SET model = (SELECT model FROM treeshap.model_store WHERE name = 'orig') WHERE name = 'reg'"
# Citus evaluates no volatile function in a distributed UPDATE: the version is drawn before it
on "$port0" >/dev/null <<'EOF'
SELECT nextval('treeshap.model_version') AS v \gset
UPDATE treeshap.model_store SET model = (SELECT model FROM treeshap.model_store WHERE name = 'orig'), version = :v
 WHERE name = 'reg';
EOF
check "an UPDATE with a version drawn before it changes the bytes and the version" \
  "SELECT r.digest = o.digest AND r.version > o.version
     FROM treeshap.model_store r, treeshap.model_store o WHERE r.name = 'reg' AND o.name = 'orig'"
check_nodes "and reaches every worker" mine,orig,reg $workers
as_role "$port0" alice "SELECT treeshap.drop_model('mine')"
check_nodes "a dropped model is gone from every worker" orig,reg $workers

# a worker added later: Citus copies reference tables to it on replicate_reference_tables()
# (by COPY: its default, logical replication, needs wal_level = logical)
start_node worker3 3
on "$port0" -c "SELECT citus_add_node('127.0.0.1', $((port0 + 3)))" -c "SELECT replicate_reference_tables('block_writes')" >/dev/null
check_nodes "a worker added later has every model" orig,reg $workers $((port0 + 3))
check "and its own copy of them" \
  "SELECT count(DISTINCT p.groupid) = 4 FROM pg_dist_placement p JOIN pg_dist_shard s USING (shardid)
    WHERE s.logicalrelid = 'treeshap.model_store'::regclass"
got=$(explained_on "$((port0 + 3))")
mine=$(explained_on "$port0")
if [ "$got" = "$mine" ] && [ -n "$mine" ]; then echo "ok   it explains with them what the coordinator does"
else echo "FAIL the added worker explains: $got, coordinator: $mine"; status=1; fi
