#!/bin/bash
# Source this file: starts a throwaway PostgreSQL cluster (the one PG_CONFIG
# names, default the machine's) in a temporary directory (as user postgres when run by root, since PostgreSQL refuses
# root), exports PGHOST/PGPORT/PGUSER/PGDATABASE for psql, pg_regress and
# pg_prove, and stops and removes the cluster when the shell exits.
# Extra server settings, one per line, @CLUSTER@ standing for the cluster's
# directory (its socket): TS_PG_CONF="shared_preload_libraries='pg_cron'".

PGBIN=${PGBIN:-$("${PG_CONFIG:-pg_config}" --bindir)}
# libpq-dev's pg_config reports /usr/bin, which has no initdb
[ -x "$PGBIN/initdb" ] || PGBIN=/usr/lib/postgresql/15/bin
# the server's own client programs first: psql (and pg_prove through it), pg_dump
export PATH="$PGBIN:$PATH"
TS_CLUSTER=$(mktemp -d /tmp/pg_treeshap.XXXXXX)
TS_PGPORT=${TS_PGPORT:-54329}
if [ "$(id -u)" = 0 ]; then
    chown postgres "$TS_CLUSTER"
    # from a directory postgres may enter: the checkout may be private to root
    ts_as_owner() { (cd "$TS_CLUSTER" && runuser -u postgres -- "$@"); }
else
    ts_as_owner() { "$@"; }
fi

# a relocatable install (test/pg_server.sh) carries its libpq, which its own
# modules (dblink) need and whose RUNPATH names where it was built
if [ -f "$PGBIN/../lib/libpq.so.5" ]; then
    export LD_LIBRARY_PATH="$(cd "$PGBIN/../lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

ts_cluster_stop() {
    ts_as_owner "$PGBIN/pg_ctl" -D "$TS_CLUSTER/data" -m immediate stop >/dev/null 2>&1
    rm -rf "$TS_CLUSTER"
}
trap ts_cluster_stop EXIT

ts_as_owner "$PGBIN/initdb" -D "$TS_CLUSTER/data" -A trust -U postgres >"$TS_CLUSTER/initdb.log" 2>&1 \
    || { cat "$TS_CLUSTER/initdb.log"; exit 1; }
ts_conf=${TS_PG_CONF:-}
echo "${ts_conf//@CLUSTER@/$TS_CLUSTER}" >>"$TS_CLUSTER/data/postgresql.auto.conf"
ts_as_owner "$PGBIN/pg_ctl" -D "$TS_CLUSTER/data" -l "$TS_CLUSTER/server.log" -w \
    -o "-k $TS_CLUSTER -p $TS_PGPORT -c listen_addresses=''" start >/dev/null \
    || { cat "$TS_CLUSTER/server.log"; exit 1; }
export PGHOST=$TS_CLUSTER PGPORT=$TS_PGPORT PGUSER=postgres PGDATABASE=postgres

# A copy of a file that the server reads (pg_read_binary_file), in the cluster's own
# directory: the checkout may be private (a new Debian user's home is 0700) and the
# server another user. Prints the copy's path; it goes with the cluster.
ts_server_file() {
    local dir="$TS_CLUSTER/files"
    mkdir -p "$dir" && install -m 644 "$1" "$dir/" || return 1
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; fi
    echo "$dir/$(basename "$1")"
}
echo "throwaway PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') at $PGHOST:$PGPORT"
