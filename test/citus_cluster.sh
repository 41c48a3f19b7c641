# A throwaway Citus cluster on this machine, sourced by test/citus_check.sh and
# bench/citus_bench.sh: a coordinator and workers, each a cluster of the
# PostgreSQL that PG_CONFIG names preloading citus and pg_treeshap (Citus built
# first when it is not installed: test/citus_build.sh), node i on
# 127.0.0.1:port0+i (Citus's nodes reach each other over TCP); with
# TS_CITUS_GPUS (a list, e.g. "0 1"), worker i's server sees only the i-th GPU
# (CUDA_VISIBLE_DEVICES in its environment), so each node's GPU service has its
# own card. Defines on,
# start_node, citus_cluster_up, citus_cluster_down and stop_all (trapped at
# exit), and base, port0, nodes, PGBIN; callers set TS_CITUS_LABEL (their name
# in messages) first.
PG_CONFIG=${PG_CONFIG:-pg_config}
if ! bash test/citus_build.sh; then
  echo "$TS_CITUS_LABEL: FAIL (Citus is not installed and could not be built)"
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
nodes=""
if [ "$(id -u)" = 0 ]; then
  chown postgres "$base"
  as_owner() { (cd "$base" && runuser -u postgres -- "$@"); }
else
  as_owner() { "$@"; }
fi
citus_cluster_down() {  # stop and remove every node
  local n
  for n in $nodes; do
    [ -d "$base/$n" ] && as_owner "$PGBIN/pg_ctl" -D "$base/$n" -m immediate stop >/dev/null 2>&1
    rm -rf "${base:?}/$n"
  done
  nodes=""
}
stop_all() {
  citus_cluster_down
  rm -rf "$base"
}
trap stop_all EXIT
export PGHOST=$base PGUSER=postgres PGDATABASE=postgres
on() { local p=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -p "$p" "$@"; }

# start_node NAME I [CPUS [GPU]]: initdb and start node I, pinned to the CPU
# list CPUS (taskset) when given and seeing only GPU when given; TS_CITUS_CONF
# is added to its configuration
start_node() {
  local pin=()
  [ -n "${3:-}" ] && pin=(taskset -c "$3")
  [ -n "${4:-}" ] && pin=(env CUDA_VISIBLE_DEVICES="$4" "${pin[@]}")
  as_owner "$PGBIN/initdb" -D "$base/$1" -A trust -U postgres >"$base/$1.initdb.log" 2>&1 \
    || { cat "$base/$1.initdb.log"; echo "$TS_CITUS_LABEL: FAIL (initdb)"; exit 1; }
  cat >>"$base/$1/postgresql.auto.conf" <<EOF
shared_preload_libraries = 'citus,pg_treeshap'
max_worker_processes = 16
treeshap.device = cpu
${TS_CITUS_CONF:-}
EOF
  nodes="$nodes $1"
  as_owner "${pin[@]}" "$PGBIN/pg_ctl" -D "$base/$1" -l "$base/$1.log" -w \
    -o "-k $base -p $((port0 + $2)) -c listen_addresses=127.0.0.1" start >/dev/null \
    || { cat "$base/$1.log"; echo "$TS_CITUS_LABEL: FAIL (start $1)"; exit 1; }
  on "$((port0 + $2))" -c "CREATE EXTENSION citus" >/dev/null || exit 1
}

# citus_cluster_up N [CPUS...]: a coordinator and N workers, worker i pinned to
# the i-th CPU list when given (and to the i-th GPU of TS_CITUS_GPUS), then
# pg_treeshap created on the coordinator (Citus creates it on the workers)
citus_cluster_up() {
  local n=$1 i gpus
  read -r -a gpus <<<"${TS_CITUS_GPUS:-}"
  shift
  start_node coordinator 0
  on "$port0" -c "SELECT citus_set_coordinator_host('127.0.0.1', $port0)" >/dev/null || exit 1
  for i in $(seq "$n"); do
    start_node "worker$i" "$i" "${1:-}" "${gpus[$((i - 1))]:-}"
    [ $# -gt 0 ] && shift
    on "$port0" -c "SELECT citus_add_node('127.0.0.1', $((port0 + i)))" >/dev/null \
      || { echo "$TS_CITUS_LABEL: FAIL (adding worker $i)"; exit 1; }
  done
  on "$port0" -c "CREATE EXTENSION pg_treeshap" || exit 1
}
