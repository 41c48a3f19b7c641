#!/bin/bash
# explain_into over a table distributed by Citus, with one worker node and then
# two, on this machine (test/citus_cluster.sh): each worker node pinned to its
# own half of the machine (taskset; see shares), the coordinator unpinned,
# treeshap.device = cpu unless TS_BENCH_DEVICE says otherwise (gpu: the nodes
# share the machine's GPUs, or with TS_BENCH_GPUS="0 1" worker node i has the
# i-th GPU to itself); TS_BENCH_CONF adds settings to every node. The
# table: NAME's rows from WORK (NAME.csv, NAME.json, as bench/fetch_inputs.sh
# writes them) repeated to ROWS rows (default 2,000,000), distributed by its
# key. Each run checks every row is explained and that a sample of 1 row in
# 1,000 holds what explain_shap_wide computes on the coordinator, bit for bit,
# and that the two runs' targets hold the same values (an order-free checksum
# of every row's text). After it, a peer: Citus itself writes the same rows
# into a co-located table with the same key (INSERT ... SELECT, on every node
# for the shards it holds): what writing them costs the nodes, without SHAP.
# Every node checkpoints before each timed statement. Prints one JSON record
# per run, then two nodes' rate over one node's, explain_into's and the
# peer's, measured in one run. TS_BENCH_WAITS=1 also samples, every
# 10 ms while a worker node runs shards, what its sessions wait on (CPU when
# nothing), per kind of backend, and, where nvidia-smi is, every GPU's
# utilization during the call, and adds both to the records.
#   bash bench/citus_bench.sh WORK NAME [ROWS]
set -u
cd "$(dirname "$0")/.."
work=$(cd "$1" && pwd) name=$2 rows=${3:-2000000}
cores=$(nproc)
TS_CITUS_LABEL=citus-bench
TS_CITUS_GPUS=${TS_BENCH_GPUS:-}
. bench/halves_setup.sh

# what a worker node's backends wait on while it runs shards of the job (a
# sample counts while a shard's CALL is active; sampling ends once they have
# been gone 0.1 s, or after 30 s): a NOTICE with the counts by backend type and
# wait event, and the samples counted in "samples"
sampler="DO \$\$DECLARE r record; acc jsonb := '{\"samples\": 0}'; seen boolean := false; quiet integer := 0;
BEGIN
  FOR i IN 1..3000 LOOP
    PERFORM pg_stat_clear_snapshot();
    IF EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'CALL treeshap._citus_shards_into(%' AND state = 'active') THEN
      seen := true;
      quiet := 0;
      acc := jsonb_set(acc, '{samples}', to_jsonb((acc ->> 'samples')::integer + 1));
      FOR r IN SELECT backend_type || ' ' || coalesce(wait_event_type || ':' || wait_event, 'CPU') AS k, count(*) AS c
                 FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'
                  AND backend_type NOT IN ('checkpointer', 'background writer', 'walwriter', 'autovacuum launcher',
                                           'logical replication launcher', 'archiver')
                GROUP BY 1 LOOP
        acc := jsonb_set(acc, ARRAY[r.k], to_jsonb(coalesce((acc ->> r.k)::integer, 0) + r.c));
      END LOOP;
    ELSIF seen THEN
      quiet := quiet + 1;
      EXIT WHEN quiet >= 10;
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
  RAISE NOTICE '%', acc;
END\$\$"

# every node writes what it holds in memory to disk (before each timed statement: the
# load's dirty pages are not written during it, nor its WAL checkpointed)
checkpoint() {
  on "$port0" -c "CHECKPOINT" -c "SELECT count(*) FROM run_command_on_workers('CHECKPOINT')" >/dev/null \
    || { echo "citus-bench: FAIL (checkpoint)"; exit 1; }
}

# run N: explain_into with N worker nodes, then the peer's INSERT ... SELECT of the
# same rows; its JSON record in $base/run-N.json
run() {
  local n=$1 t0 t1 done sample checksum spans
  citus_cluster_up "$n" "${shares[@]:0:$n}" >/dev/null
  on "$port0" >/dev/null <<EOF || { echo "citus-bench: FAIL (setup)"; exit 1; }
SELECT 1 FROM treeshap.load_model('$name', pg_read_binary_file('$work/$name.json'));
CREATE TABLE base (id bigint PRIMARY KEY$cols);
\\copy base FROM '$work/$name.csv' CSV
CREATE TABLE src (id bigint PRIMARY KEY$cols);
SELECT create_distributed_table('src', 'id');
INSERT INTO src SELECT b.id + k * (SELECT count(*) FROM base) AS id$picks
  FROM base b, generate_series(0, $rows / (SELECT count(*) FROM base) - 1) k;
VACUUM ANALYZE src;
EOF
  local smi=""
  if [ "${TS_BENCH_WAITS:-0}" = 1 ]; then
    for i in $(seq "$n"); do
      on "$((port0 + i))" -c "$sampler" >"$base/waits-$n-$i.txt" 2>&1 &
    done
    if command -v nvidia-smi >/dev/null; then
      nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 100 >"$base/gpu-$n.txt" &
      smi=$!
    fi
  fi
  checkpoint
  t0=$(date +%s.%N)
  on "$port0" -c "CALL treeshap.explain_into('$name', 'src', 'explained')" >/dev/null \
    || { echo "citus-bench: FAIL (explain_into)"; exit 1; }
  t1=$(date +%s.%N)
  [ -n "$smi" ] && kill "$smi"
  # the peer: Citus itself writing the same rows into a co-located table with the same
  # key (INSERT ... SELECT, run on every node for the shards it holds, in parallel)
  on "$port0" >/dev/null <<EOF || { echo "citus-bench: FAIL (the peer's table)"; exit 1; }
CREATE TABLE copied (LIKE explained INCLUDING ALL);
SELECT create_distributed_table('copied', 'row_key', colocate_with => 'src');
EOF
  checkpoint
  c0=$(date +%s.%N)
  on "$port0" -c "INSERT INTO copied SELECT * FROM explained" >/dev/null || { echo "citus-bench: FAIL (the peer)"; exit 1; }
  c1=$(date +%s.%N)
  done=$(on "$port0" -At -c "SELECT rows_done FROM treeshap.jobs WHERE target = 'public.explained'")
  # each node's shard jobs: when the first began, the last ended, and how long one took
  spans=$(on "$port0" -At -c "SELECT string_agg(r.result, ' ' ORDER BY r.nodeport)
      FROM run_command_on_workers(\$\$SELECT concat_ws(',', extract(epoch FROM min(started_at)),
             extract(epoch FROM max(finished_at)), extract(epoch FROM avg(finished_at - started_at)),
             extract(epoch FROM max(finished_at - started_at))) FROM treeshap.job_store\$\$) r")
  sample=$(on "$port0" -At -c "SELECT NOT EXISTS (
      (SELECT row_key, output, base_value, shap_values FROM explained WHERE row_key % 1000 = 7
       EXCEPT ALL SELECT row_key, output, base_value, shap_values
                    FROM treeshap.explain_shap_wide('$name', 'SELECT * FROM src WHERE id % 1000 = 7'))
      UNION ALL
      (SELECT row_key, output, base_value, shap_values
         FROM treeshap.explain_shap_wide('$name', 'SELECT * FROM src WHERE id % 1000 = 7')
       EXCEPT ALL SELECT row_key, output, base_value, shap_values FROM explained WHERE row_key % 1000 = 7))")
  checksum=$(on "$port0" -At -c "SELECT sum(hashtextextended(
      concat_ws(' ', row_key, output, base_value, shap_values), 0)::numeric) FROM explained")
  wait
  citus_cluster_down
  python3 -c "
import glob, json, sys

def waits(f):  # the sampler's NOTICE, or None where it failed
    text = open(f).read()
    return json.loads(text.split('NOTICE:  ', 1)[1]) if 'NOTICE:  ' in text else None

def span(s):  # a node's shard spans from t0, or None where its answer was no numbers
    try:
        v = [float(x) for x in s.split(',')]
    except ValueError:
        return None
    return dict(zip(('first_shard_s', 'last_shard_end_s', 'mean_shard_s', 'max_shard_s'),
                    (round(x - ($t0 if i < 2 else 0), 3) for i, x in enumerate(v))))

def gpu_util(f):  # mean utilization (%) of each GPU over the call
    per = {}
    for line in open(f):
        i, u = line.split(',')
        per.setdefault(i.strip(), []).append(float(u))
    return {i: round(sum(u) / len(u), 1) for i, u in per.items()}

n, rows, done, t, sample = $n, $rows, int('$done' or 0), $t1 - $t0, '$sample' == 't'
peer_t = $c1 - $c0
print(json.dumps({'kind': 'citus_explain_into', 'name': '$name', 'device': '$device', 'rows': rows,
                  'worker_nodes': n, 'cores': $cores, 'cores_per_node': $half,
                  'node_cpus': '${shares[*]}'.split()[:n],
                  'gpus': '${TS_CITUS_GPUS}'.split()[:n], 'seconds': round(t, 3),
                  'rows_per_s': round(rows / t), 'every_row': done == rows, 'sample_equal': sample,
                  'peer': 'insert_select', 'peer_seconds': round(peer_t, 3), 'peer_rows_per_s': round(rows / peer_t),
                  'checksum': '$checksum',
                  'nodes': [span(s) for s in '$spans'.split(' ') if s],
                  'waits': [waits(f) for f in sorted(glob.glob('$base/waits-$n-*.txt'))],
                  'gpu_util_percent': [gpu_util(f) for f in glob.glob('$base/gpu-$n.txt')]}))" \
    > "$base/run-$n.json"
}

run 1
cat "$base/run-1.json"
run 2
cat "$base/run-2.json"
python3 -c "
import json
one, two = (json.load(open('$base/run-%d.json' % n)) for n in (1, 2))
ok = (all(r['every_row'] and r['sample_equal'] and r['checksum'] for r in (one, two))
      and one['checksum'] == two['checksum'])
print(f\"two worker nodes / one: {two['rows_per_s'] / one['rows_per_s']:.2f} \"
      f\"({one['rows_per_s']} -> {two['rows_per_s']} rows/s, {one['cores_per_node']} cores a node, \"
      f\"device {one['device']}{', a GPU a node' if two['gpus'] else ''}); the peer (Citus's INSERT ... SELECT \"
      f\"of the same rows): {two['peer_rows_per_s'] / one['peer_rows_per_s']:.2f} \"
      f\"({one['peer_rows_per_s']} -> {two['peer_rows_per_s']} rows/s); every row explained, \"
      f\"sample and checksums equal: {'yes' if ok else 'NO'}\")"
