#!/bin/bash
# One session (K = 1) on this tree's GPU service against an older build,
# the two alternated call by call (bench/k1_paired.py) instead of build by
# build: bench/concurrency_baseline.sh restarts the server between builds,
# and one session's rate moved by a third between its rounds. The older
# build goes into a second PostgreSQL installation (PG_CONFIG_OLD; a copy of
# the first will do) and runs in a second cluster beside the first, with the
# same settings; this tree must already be installed and its server running
# with pg_treeshap preloaded (PG* variables).
#     PG_CONFIG_OLD=... bench/k1_paired.sh OLD_TREE WORK_DIR ROUNDS MODEL...
# WORK_DIR holds each MODEL's .json and .csv (bench/grid.py writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 work=$2 rounds=$3
shift 3
bin=$("$PG_CONFIG_OLD" --bindir)
owner=() ; [ "$(id -u)" = 0 ] && owner=(runuser -u "${TS_PG_OWNER:-pg}" -- env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}")
cluster=$(mktemp -d /tmp/ts_k1_old.XXXXXX)
[ "$(id -u)" = 0 ] && chown "${TS_PG_OWNER:-pg}" "$cluster"
port=${TS_OLD_PGPORT:-5499}
stop() { "${owner[@]}" "$bin/pg_ctl" -D "$cluster/data" -m fast stop >/dev/null 2>&1 || true; rm -rf "$cluster"; }
trap stop EXIT

make -s -C "$old" clean >/dev/null
make -s -C "$old" -j"$(nproc)" PG_CONFIG="$PG_CONFIG_OLD" WITH_CUDA="${WITH_CUDA:-yes}" >/dev/null 2>&1
make -s -C "$old" PG_CONFIG="$PG_CONFIG_OLD" install >/dev/null
"${owner[@]}" "$bin/initdb" -D "$cluster/data" -A trust -U postgres >"$cluster/initdb.log" 2>&1
# the settings of this tree's server that shape a session's speed, copied
for guc in shared_preload_libraries jit shared_buffers work_mem max_connections; do
  echo "$guc = '$(psql -X -At -c "SHOW $guc")'" >> "$cluster/data/postgresql.auto.conf"
done
"${owner[@]}" "$bin/pg_ctl" -D "$cluster/data" -l "$cluster/server.log" -w \
  -o "-k $cluster -p $port -c listen_addresses=''" start >/dev/null
TS_OLD_DSN="host=$cluster port=$port user=postgres dbname=postgres" \
  python3 bench/k1_paired.py "$work" "$rounds" "$@" | tee "$work/k1_paired.out"
