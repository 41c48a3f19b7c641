# explain_into over a distributed table: sourced by test/citus_check.sh after
# test/citus_models.sh (uses its on, check, check_error, same, port0, base,
# as_owner, PGBIN and status; 'reg' holds test/fixtures/reg.json).

worker2=$((port0 + 2))
restart_worker2() {
  as_owner "$PGBIN/pg_ctl" -D "$base/worker2" -l "$base/worker2.log" -w \
    -o "-k $base -p $worker2 -c listen_addresses=127.0.0.1" start >/dev/null
}
target_rows() {  # target_rows TABLE: its explanations, as explain_shap_wide's columns
  echo "(SELECT row_key, output, base_value, shap_values FROM $1) t"
}
wide_of() {  # wide_of TABLE: explain_shap_wide of a table's rows, as a single node computes them
  echo "(SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide('reg', 'SELECT * FROM $1')) w"
}

on "$port0" -c "CALL treeshap.explain_into('reg', 'houses_dist', 'houses_out')" >/dev/null
check "explain_into over a distributed table creates its target distributed by row_key, co-located with it" \
  "SELECT column_to_column_name(t.logicalrelid, t.partkey) = 'row_key' AND t.colocationid = s.colocationid
     FROM pg_dist_partition t, pg_dist_partition s
    WHERE t.logicalrelid = 'houses_out'::regclass AND s.logicalrelid = 'houses_dist'::regclass"
check "and writes each shard's explanations where it lies: a single node's values, bit for bit" \
  "SELECT $(same "$(target_rows houses_out)" "$(wide_of houses_local)")"
check "the coordinator's treeshap.jobs shows the job done, with every row" \
  "SELECT state = 'done' AND rows_done = (SELECT count(*) FROM houses_local) AND runs = 1
     FROM treeshap.jobs WHERE target = 'public.houses_out'"
check "each worker holds the jobs of its own shards" \
  "SELECT bool_and(success AND result::int > 0) AND count(*) = 2 FROM run_command_on_workers(
     'SELECT count(*) FROM treeshap.job_store') WHERE nodeport IN ($((port0 + 1)), $worker2)"
on "$port0" -c "CALL treeshap.explain_into('reg', 'houses_dist', 'houses_out')" >/dev/null
check "a second run has nothing to do and changes nothing" \
  "SELECT state = 'done' AND rows_done = 0 AND runs = 2 FROM treeshap.jobs WHERE target = 'public.houses_out'
      AND $(same "$(target_rows houses_out)" "$(wide_of houses_local)")"
on "$port0" -c "CALL treeshap.explain_into('reg', 'houses_dist', 'houses_long', layout => 'long', batch_size => 7)" >/dev/null
check "the long layout, in small batches, holds explain_shap's rows" \
  "SELECT $(same "(SELECT row_key, output, feature, shap_value FROM houses_long) t" \
                 "(SELECT row_key, output, feature, shap_value FROM treeshap.explain_shap('reg', 'SELECT * FROM houses_local')) l")"

# bad input: refused before anything is written
on "$port0" >/dev/null <<'EOF'
CREATE TABLE out_apart (LIKE houses_out INCLUDING ALL);
SELECT create_distributed_table('out_apart', 'row_key', shard_count => 4);
CREATE TABLE out_reference (LIKE houses_out INCLUDING ALL);
SELECT create_reference_table('out_reference');
CREATE TABLE out_local (LIKE houses_out INCLUDING ALL);
EOF
for t in out_apart out_reference out_local; do
  check_error "a target that is not co-located ($t) is refused" "$port0" postgres 42P16 \
    "CALL treeshap.explain_into('reg', 'houses_dist', '$t')"
done
check "and left empty" "SELECT (SELECT count(*) FROM out_apart) + (SELECT count(*) FROM out_reference) + (SELECT count(*) FROM out_local) = 0"
check_error "a key other than the distribution column is refused" "$port0" postgres 0A000 \
  "CALL treeshap.explain_into('reg', 'houses_dist', 'out_key', key_column => 'HouseAge')"
check_error "following a distributed table is refused" "$port0" postgres 0A000 \
  "CALL treeshap.explain_into('reg', 'houses_dist', 'out_follow', follow => true)"
# a node's pool runs only shards' calls, whoever asks
for call in "SELECT 1" "CALL treeshap._citus_one_shard_into('reg', 1, 'a', 'b', 'id', NULL, 'wide', 10, NULL, true, 0); DROP TABLE houses_local" \
            "CALL public._citus_one_shard_into()" "CALL _citus_one_shard_into('reg')"; do
  check_error "a shard pool refuses another statement ($call)" "$port0" postgres 22023 \
    "CALL treeshap._citus_shard_pool(2, ARRAY[\$c\$$call\$c\$])"
done
shard=$(on "$port0" -At -c "SELECT shard_name('treeshap.model_store'::regclass, shardid) FROM pg_dist_shard
                             WHERE logicalrelid = 'treeshap.model_store'::regclass")
on "$worker2" -c "SET citus.enable_manual_changes_to_shards = on" -c "DELETE FROM $shard WHERE name = 'reg'" >/dev/null
check_error "a model missing on a worker is refused" "$port0" postgres 42704 \
  "CALL treeshap.explain_into('reg', 'houses_dist', 'out_missing')"
load_reg reg 'replace => true'
as_owner "$PGBIN/pg_ctl" -D "$base/worker2" -m immediate stop >/dev/null
check_error "a worker down at the start is refused" "$port0" postgres 08006 \
  "CALL treeshap.explain_into('reg', 'houses_dist', 'out_down')"
restart_worker2
check "and nothing was written: no target, no job" \
  "SELECT to_regclass('out_down') IS NULL AND to_regclass('out_missing') IS NULL AND to_regclass('out_key') IS NULL
      AND NOT EXISTS (SELECT FROM treeshap.job_store WHERE target LIKE 'public.out%')"

# a worker down that holds no shard of the source takes no part (Citus itself needs every
# node to create the target, so it exists first)
worker3=$((port0 + 3))
on "$port0" -c "CALL treeshap.explain_into('reg', 'houses_dist', 'out_w3_down', filter => 'false')" >/dev/null
as_owner "$PGBIN/pg_ctl" -D "$base/worker3" -m immediate stop >/dev/null
on "$port0" -c "CALL treeshap.explain_into('reg', 'houses_dist', 'out_w3_down')" >/dev/null 2>&1
check "a worker down that holds no shard of the source takes no part: the job runs" \
  "SELECT $(same "$(target_rows out_w3_down)" "$(wide_of houses_local)")"
as_owner "$PGBIN/pg_ctl" -D "$base/worker3" -l "$base/worker3.log" -w \
  -o "-k $base -p $worker3 -c listen_addresses=127.0.0.1" start >/dev/null

# a worker killed mid-job, the job run again: nothing lost, nothing written twice
on "$port0" >/dev/null <<'EOF'
CREATE TABLE many_local AS
SELECT g AS id, h."MedInc", h."HouseAge", h."AveRooms", h."AveBedrms", h."Population", h."AveOccup", h."Latitude", h."Longitude"
  FROM generate_series(1, 40000) g
  JOIN (SELECT row_number() OVER (ORDER BY id) - 1 AS k, * FROM houses_local) h
    ON h.k = g % (SELECT count(*) FROM houses_local);
CREATE TABLE many_dist (LIKE many_local);
SELECT create_distributed_table('many_dist', 'id');
INSERT INTO many_dist SELECT * FROM many_local;
EOF
# start_job TARGET LOG [BATCH]: explain_into of many_dist into TARGET in batches of BATCH
# rows (100) in the background, verbose, its output in LOG and its pid in job_pid; back
# once worker 2 has written rows of it (a FAIL line if not within 10 s)
start_job() {
  local n=0
  on "$port0" -c '\set VERBOSITY verbose' \
    -c "CALL treeshap.explain_into('reg', 'many_dist', '$1', batch_size => ${3:-100})" >"$2" 2>&1 &
  job_pid=$!
  for _ in $(seq 100); do
    n=$(on "$worker2" -At -c "SELECT coalesce(sum(rows_done), 0) FROM treeshap.job_store
                               WHERE state = 'running' AND target LIKE 'public.$1%'" 2>/dev/null)
    [ "${n:-0}" -gt 0 ] && break
    sleep 0.1
  done
  [ "${n:-0}" -gt 0 ] || { echo "FAIL the job into $1 wrote nothing on worker 2 within 10 s"; status=1; }
}
pool_workers() {  # the pool workers now running on worker 2
  on "$worker2" -At -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'pg_treeshap job worker'"
}
start_job many_out "$base/killed_job.log"
as_owner "$PGBIN/pg_ctl" -D "$base/worker2" -m immediate stop >/dev/null
wait $job_pid
if grep -q "ERROR:  08006: explain_into failed on" "$base/killed_job.log"; then echo "ok   the job with a worker killed mid-way ends with an ERROR (08006, $(grep -o 'failed on [0-9]* of [0-9]* shards' "$base/killed_job.log"))"
else echo "FAIL the job with a worker killed mid-way: $(cat "$base/killed_job.log")"; status=1; fi
restart_worker2
check "its job row says failed, with the worker's error" \
  "SELECT state = 'failed' AND error LIKE '%$worker2, shard%' FROM treeshap.jobs WHERE target = 'public.many_out'"
on "$port0" -c "CALL treeshap.explain_into('reg', 'many_dist', 'many_out', batch_size => 100)" >/dev/null
check "run again, it ends with every row explained once: a single node's values, bit for bit" \
  "SELECT $(same "$(target_rows many_out)" "$(wide_of many_local)")"

# a cancel of the job: it ends within the second, then every node's pool within the
# second, and the job run again explains every row once
start_job cancel_out "$base/cancel.log"
# while its pool runs, worker 2's session of the job holds no snapshot and no lock (it
# would hold back vacuum, and stall a statement that queues for one of its locks)
if [ "$(nproc)" -gt 1 ]; then
  workers_then=$(pool_workers)
  held=$(on "$worker2" -At -c "SELECT count(*) FILTER (WHERE a.backend_xmin IS NOT NULL OR EXISTS (
                                   SELECT FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'relation')) || ' of ' || count(*)
                                 FROM pg_stat_activity a WHERE a.query LIKE 'CALL treeshap._citus_shards_into(%'")
  if [ "$held" = "0 of 1" ] && [ "$workers_then" -gt 0 ]; then
    echo "ok   while its pool runs ($workers_then workers), a node's session of the job holds no snapshot and no lock"
  else echo "FAIL a node's session of the job while its pool runs ($workers_then workers): $held hold a snapshot or a lock"; status=1; fi
fi
t0=$(date +%s%N)
on "$port0" -At -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
                     WHERE query LIKE 'CALL treeshap.explain_into(''reg'', ''many_dist'', ''cancel_out''%'" >/dev/null
wait $job_pid
t1=$(date +%s%N)
left=""
for _ in $(seq 20); do  # what runs the job on the nodes, until none is left (at most 2 s)
  left=$(on "$port0" -At -c "SELECT sum(result::int) FROM run_command_on_workers(\$\$SELECT count(*) FROM pg_stat_activity
           WHERE pid <> pg_backend_pid() AND (backend_type = 'pg_treeshap job worker' OR query LIKE 'CALL treeshap._citus%')\$\$)")
  [ "$left" = 0 ] && break
  sleep 0.1
done
t2=$(date +%s%N)
ended=$(( (t1 - t0) / 1000000 )) gone=$(( (t2 - t1) / 1000000 ))
if grep -q "ERROR:  57014: canceling statement due to user request" "$base/cancel.log" && [ "$ended" -le 1000 ] && [ "$left" = 0 ] && [ "$gone" -le 1000 ]
then echo "ok   a cancel of the job ends it (57014, $ended ms after), and every node's pool ($gone ms after that)"
else echo "FAIL a cancel of the job: ended $ended ms after, nodes' job processes left $left $gone ms later: $(cat "$base/cancel.log")"; status=1; fi
on "$port0" -c "CALL treeshap.explain_into('reg', 'many_dist', 'cancel_out', batch_size => 100)" >/dev/null
check "run again, it ends with every row explained once: a single node's values, bit for bit" \
  "SELECT $(same "$(target_rows cancel_out)" "$(wide_of many_local)")"

# one shard's lasting error (its last row breaks a check of the target, after its other rows
# were written a row a batch): its session stops there, the session's other shards get a
# session each, and every other shard is done
# (a shard of worker 2, whose pool runs it where the machine has more than one core)
bad=$(on "$port0" -At -c "SELECT max(h.id) FROM houses_dist h
                            WHERE get_shard_id_for_distribution_column('houses_dist', h.id)
                                  IN (SELECT shardid FROM pg_dist_shard_placement WHERE nodeport = $worker2)")
on "$port0" >/dev/null <<EOF
CREATE TABLE one_bad (LIKE houses_out INCLUDING ALL);
ALTER TABLE one_bad ADD CONSTRAINT not_bad CHECK (row_key <> $bad);
SELECT create_distributed_table('one_bad', 'row_key', colocate_with => 'houses_dist');
EOF
on "$port0" -c '\set VERBOSITY verbose' -c "CALL treeshap.explain_into('reg', 'houses_dist', 'one_bad', batch_size => 1)" >"$base/one_bad.log" 2>&1
if grep -q "ERROR:  38000: explain_into failed on 1 of 32 shards" "$base/one_bad.log" && grep -q 'violates check constraint "not_bad' "$base/one_bad.log"
then echo "ok   one shard's lasting error fails the job on that shard alone (38000, 1 of 32 shards, its error)"
else echo "FAIL one shard's lasting error: $(cat "$base/one_bad.log")"; status=1; fi
check "and every other row is explained, the failed shard's before its error too: a single node's values, bit for bit" \
  "SELECT $(same "$(target_rows one_bad)" "(SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide('reg',
      \$q\$SELECT * FROM houses_local WHERE id <> $bad\$q\$)) w")"
check "and the coordinator's treeshap.jobs counts every row the run wrote, the failed shard's before its error too" \
  "SELECT state = 'failed' AND rows_done = (SELECT count(*) FROM one_bad) FROM treeshap.jobs WHERE target = 'public.one_bad'"

check_stdin() {  # check_stdin NAME <<SQL: the SQL's last line of output is true
  local got
  got=$(on "$port0" -At 2>&1 | tail -1)
  if [ "$got" = t ]; then echo "ok   $1"; else echo "FAIL $1: $got"; status=1; fi
}

# a running job's progress, as the coordinator's treeshap.jobs shows it from the nodes
on "$port0" -c "CALL treeshap.explain_into('reg', 'many_dist', 'many_progress', batch_size => 25)" >/dev/null 2>&1 &
job_pid=$!
progress=""
for _ in $(seq 200); do
  progress=$(on "$port0" -At -c "SELECT state, rows_done > 0, ranges_done < ranges_total, ranges_total
                                   FROM treeshap.jobs WHERE target = 'public.many_progress'" 2>&1)
  case "$progress" in running\|t\|*) break ;; esac
  sleep 0.05
done
if [ "$progress" = "running|t|t|32" ]; then echo "ok   the coordinator's treeshap.jobs shows a running job's rows and shards done, from their nodes"
else echo "FAIL a running job in the coordinator's treeshap.jobs (state, rows, shards done < 32, shards): $progress"; status=1; fi
wait $job_pid
check "and at its end done, with every row" \
  "SELECT state = 'done' AND rows_done = 40000 FROM treeshap.jobs WHERE target = 'public.many_progress'"

# names that need quoting, and % where Citus formats commands
on "$port0" >/dev/null <<'EOF'
SELECT 1 FROM treeshap.load_model('r%g', treeshap.model_bytes('reg'));
CREATE SCHEMA "Odd Schema";
CREATE TABLE "Odd Schema"."o'q%s" (LIKE houses_local);
SELECT create_distributed_table('"Odd Schema"."o''q%s"', 'id');
INSERT INTO "Odd Schema"."o'q%s" SELECT * FROM houses_local;
CALL treeshap.explain_into('r%g', '"Odd Schema"."o''q%s"', '"Odd Schema"."out''%s"',
                           filter => '"HouseAge" >= 0 OR ''%s'' = ''%s''');
EOF
check_stdin "a schema, table and model named with quotes, spaces and %, and % in the filter: explained as any" <<EOF
SELECT $(same "(SELECT row_key, output, base_value, shap_values FROM \"Odd Schema\".\"out'%s\") t" "$(wide_of houses_local)");
EOF
check_stdin "and their importance summed on the shards" <<'EOF'
SELECT bool_and(d.rows = l.rows AND abs(d.mean_abs_shap - l.mean_abs_shap) <= 1e-12 * abs(l.mean_abs_shap)) AND count(*) = 8
  FROM treeshap.feature_importance('r%g', '"Odd Schema"."o''q%s"'::regclass) d
  JOIN treeshap.feature_importance('reg', 'houses_local'::regclass) l USING (output, feature);
EOF

# inside a transaction block the shards' sessions would not see its changes: read as a query there
check_stdin "feature_importance in a transaction that deleted rows counts what the transaction sees" <<'EOF'
BEGIN;
DELETE FROM houses_dist WHERE id % 2 = 0;
SELECT (SELECT min(rows) FROM treeshap.feature_importance('reg', 'houses_dist'::regclass))
       = (SELECT count(*) FROM houses_dist);
ROLLBACK;
EOF

# the caller's settings reach the shards' sessions: columns matched by position
on "$port0" >/dev/null <<'EOF'
CREATE TABLE by_position (id bigint, f0 float8, f1 float8, f2 float8, f3 float8, f4 float8, f5 float8, f6 float8, f7 float8);
SELECT create_distributed_table('by_position', 'id');
INSERT INTO by_position SELECT * FROM houses_local;
SET treeshap.match_columns = position;
CALL treeshap.explain_into('reg', 'by_position', 'by_position_out');
EOF
check "the caller's treeshap.match_columns = position holds on the shards" \
  "SELECT $(same "$(target_rows by_position_out)" "$(wide_of houses_local)")"

# more shards than a node runs at once: one session a node, whose pool of background
# workers (as many as its cores, at most citus.max_adaptive_executor_pool_size) draws them
pool_calls() {  # each worker's calls of the node's part of a job and of its pool, so far
  on "$port0" -At -c "SELECT string_agg(result, ',' ORDER BY nodeport) FROM run_command_on_workers(
    \$\$SELECT coalesce(sum(calls) FILTER (WHERE funcname = '_citus_shards_into'), 0) || ':'
            || coalesce(sum(calls) FILTER (WHERE funcname = '_citus_shard_pool'), 0)
       FROM pg_stat_user_functions WHERE schemaname = 'treeshap'\$\$)"
}
before=$(pool_calls)
on "$port0" >/dev/null <<'EOF'
CREATE TABLE many_shards (LIKE houses_local);
SELECT create_distributed_table('many_shards', 'id', shard_count => 64);
INSERT INTO many_shards SELECT * FROM houses_local;
SET citus.max_adaptive_executor_pool_size = 3;
CALL treeshap.explain_into('reg', 'many_shards', 'many_shards_out');
EOF
check "64 shards, at most 3 at once a node: every row explained, a single node's values" \
  "SELECT $(same "$(target_rows many_shards_out)" "$(wide_of houses_local)")"
most=$(( $(nproc) < 3 ? $(nproc) : 3 ))
check "a node ran its shards in as many processes as its cores, at most 3 (worker 1, on one core: 1; the others $most)" \
  "SELECT string_agg(result, ',' ORDER BY nodeport) = '1,$most,$most' FROM run_command_on_workers(
     \$\$SELECT count(DISTINCT pid) FROM treeshap.job_store WHERE target LIKE 'public.many_shards_out%'\$\$)"
# one call of the node's part on each node, of its pool on the nodes with more than one
# core (a session's statistics reach its node when it ends)
pool=$([ "$most" -gt 1 ] && echo 1 || echo 0)
want=$(echo "$before" | tr ',' '\n' | awk -F: -v p="$pool" '{ printf "%s%d:%d", (NR > 1 ? "," : ""), $1 + 1, $2 + (NR > 1 ? p : 0) }')
for _ in $(seq 20); do after=$(pool_calls); [ "$after" = "$want" ] && break; sleep 0.25; done
if [ "$after" = "$want" ]; then
  echo "ok   and over one connection a node, with a pool where it has more than one core (calls of the node's part:pool, $before -> $after)"
else echo "FAIL one connection a node and its pool: calls of the node's part:pool $before -> $after, not $want"; status=1; fi

# a model replaced while the job runs (in worker 2's pool where the machine has more than
# one core): the job stops (55000), and the next run explains every row under the new
# version alone
start_job replaced_out "$base/replaced.log" 20
on "$port0" -c "SELECT 1 FROM treeshap.load_model('reg', treeshap.model_bytes('reg'), replace => true)" >/dev/null
wait $job_pid
if grep -q "ERROR:  55000: model \"reg\" was replaced" "$base/replaced.log"; then echo "ok   a model replaced during the job stops it (55000)"
else echo "FAIL a model replaced during the job: $(cat "$base/replaced.log")"; status=1; fi
check "and worker 2 stopped before it finished its shards" \
  "SELECT (SELECT result::int FROM run_command_on_workers(\$\$SELECT count(*) FROM treeshap.job_store
                                                          WHERE target LIKE 'public.replaced_out%' AND state = 'done'\$\$)
            WHERE nodeport = $worker2)
          < (SELECT count(*) FROM pg_dist_shard_placement p JOIN pg_dist_shard d USING (shardid)
              WHERE d.logicalrelid = 'many_dist'::regclass AND p.nodeport = $worker2)"
on "$port0" -c "CALL treeshap.explain_into('reg', 'many_dist', 'replaced_out')" >/dev/null
check "run again, the target holds every row under the new version alone" \
  "SELECT $(same "$(target_rows replaced_out)" "$(wide_of many_local)")
      AND (SELECT min(model_version) = max(model_version) FROM replaced_out)
      AND (SELECT max(model_version) FROM replaced_out) = (SELECT version FROM treeshap.models WHERE name = 'reg')"

# importance after this transaction wrote: read through the coordinator (the shards'
# sessions would miss the change, or wait on its locks)
check_stdin "feature_importance after an UPDATE in the same transaction counts the updated rows" <<'EOF'
CREATE TABLE fi_dist (LIKE houses_local);
SELECT create_distributed_table('fi_dist', 'id') \g /dev/null
INSERT INTO fi_dist SELECT * FROM houses_local;
CREATE FUNCTION fi_after_update() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
    UPDATE fi_dist SET "MedInc" = "MedInc" * 3;
    RETURN (SELECT bool_and(abs(d.mean_abs_shap - q.mean_abs_shap) <= 1e-12 * abs(q.mean_abs_shap))
              FROM treeshap.feature_importance('reg', 'fi_dist'::regclass) d
              JOIN treeshap.feature_importance('reg', 'SELECT * FROM fi_dist') q USING (output, feature));
END $f$;
CREATE FUNCTION fi_after_truncate() RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN
    TRUNCATE fi_dist;
    RETURN (SELECT sum(rows) FROM treeshap.feature_importance('reg', 'fi_dist'::regclass));
END $f$;
SET statement_timeout = '30s';
SELECT fi_after_update() AND fi_after_truncate() = 0;
EOF

# the caller's date style reaches the filter on the shards
check_stdin "the caller's DateStyle holds in a filter on the shards" <<'EOF'
SET DateStyle = 'ISO, DMY';
CALL treeshap.explain_into('reg', 'houses_dist', 'dmy_out', filter => $f$"HouseAge" < extract(day from '03/04/2024'::date) + 20$f$);
SELECT NOT EXISTS ((SELECT row_key, output, base_value, shap_values FROM dmy_out
                    EXCEPT ALL SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide('reg',
                      $q$SELECT * FROM houses_local WHERE "HouseAge" < extract(day from '03/04/2024'::date) + 20$q$))
                   UNION ALL
                   (SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide('reg',
                      $q$SELECT * FROM houses_local WHERE "HouseAge" < extract(day from '03/04/2024'::date) + 20$q$)
                    EXCEPT ALL SELECT row_key, output, base_value, shap_values FROM dmy_out))
   AND (SELECT count(*) FROM dmy_out) <> (SELECT count(*) FROM houses_local WHERE "HouseAge" < 24);
EOF

# a role of its own: its privileges, on every node
on "$port0" >/dev/null <<'EOF'
CREATE ROLE carol LOGIN;
GRANT SELECT ON houses_dist TO carol;
GRANT CREATE ON SCHEMA public TO carol;
EOF
as_role "$port0" carol "CALL treeshap.explain_into('reg', 'houses_dist', 'carol_out')"
check "a role with SELECT on the source runs the job as itself: its target, its rows" \
  "SELECT $(same "$(target_rows carol_out)" "$(wide_of houses_local)")
      AND (SELECT tableowner = 'carol' FROM pg_tables WHERE tablename = 'carol_out')"
check_error "a role without SELECT on the source is refused" "$port0" carol 42501 \
  "CALL treeshap.explain_into('reg', 'many_dist', 'carol_many')"

# an update from 0.1.0 on a Citus coordinator: the models are shared once asked
on "$port0" >/dev/null 2>&1 <<'EOF'
DROP EXTENSION pg_treeshap CASCADE;
CREATE EXTENSION pg_treeshap VERSION '0.1.0';
EOF
got=$(on "$port0" -c "ALTER EXTENSION pg_treeshap UPDATE" 2>&1)
if echo "$got" | grep -q "HINT:  Run SELECT treeshap.citus_share_models();"; then echo "ok   ALTER EXTENSION UPDATE from 0.1.0 on a Citus coordinator works, and says how to share the models"
else echo "FAIL ALTER EXTENSION UPDATE from 0.1.0 on a Citus coordinator: $got"; status=1; fi
as_owner "$PGBIN/pg_ctl" -D "$base/worker3" -m immediate stop >/dev/null
check_error "sharing them with a worker down is refused" "$port0" postgres 08006 "SELECT treeshap.citus_share_models()"
as_owner "$PGBIN/pg_ctl" -D "$base/worker3" -l "$base/worker3.log" -w \
  -o "-k $base -p $worker3 -c listen_addresses=127.0.0.1" start >/dev/null
check "with every worker up, citus_share_models() shares them" "SELECT treeshap.citus_share_models()"
load_reg reg
check_nodes "and a model loaded after is on every worker" reg $workers $((port0 + 3))
