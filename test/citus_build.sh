#!/bin/bash
# Build Citus from its source and install it into the PostgreSQL that
# PG_CONFIG names, once: a run that finds citus.so there does nothing. For
# machines with no Citus package (Citus 13 builds on PostgreSQL 15, 16, 17).
# The source is a Citus 13 release tarball (or an unpacked tree): the one
# TS_CITUS_SOURCE names, else a citus-*.tar.xz lying beside the checkout or
# one folder down from there. Builds in $TS_CITUS_BUILD/MAJOR (default
# /var/tmp/pg_treeshap-citus). Messages go to stderr.
#     PG_CONFIG=... test/citus_build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
pkglib=$("$PG_CONFIG" --pkglibdir)
[ -f "$pkglib/citus.so" ] && exit 0

# where the source is: named, or beside the checkout (TS_CHECKOUT says where
# the checkout was when this one is a copy of it)
origin=${TS_CHECKOUT:-$here}
src=${TS_CITUS_SOURCE:-$(find "$(dirname "$origin")" -maxdepth 3 -name 'citus-*.tar.xz' 2>/dev/null | sort | tail -1)}
if [ -z "$src" ] || [ ! -e "$src" ]; then
  echo "citus_build.sh: no Citus source: set TS_CITUS_SOURCE to a Citus 13 release tarball or tree" >&2
  exit 2
fi

# Debian packages its build needs (PostgreSQL's server headers include gssapi.h)
pkgs="liblz4-dev libzstd-dev libkrb5-dev xz-utils"
missing=$(for p in $pkgs; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
if [ -n "$missing" ]; then
  echo "installing: $missing" >&2
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

major=$("$PG_CONFIG" --version | sed 's/^[^0-9]*\([0-9]*\).*/\1/')
build=${TS_CITUS_BUILD:-/var/tmp/pg_treeshap-citus}/$major
rm -rf "$build" && mkdir -p "$build"
if [ -d "$src" ]; then
  cp -a "$src/." "$build/"
else
  tar -xJf "$src" -C "$build" --strip-components=1
fi
cd "$build"
# PostgreSQL 15.14 and later declare have_createdb_privilege() themselves, which
# Citus 13.2 still defines as a static function for 15: keep the server's
if grep -q "have_createdb_privilege" "$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h" &&
   grep -q "^have_createdb_privilege(void)" src/include/pg_version_compat.h; then
  python3 - src/include/pg_version_compat.h <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
text = re.sub(r"static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n", "", text, count=1, flags=re.S)
open(path, "w").write(text)
EOF
fi
echo "building Citus $(sed -n 's/^PACKAGE_VERSION=.\(.*\).$/\1/p' configure | head -1) for PostgreSQL $major in $build" >&2
./configure -q --without-libcurl PG_CONFIG="$PG_CONFIG" >"$build/configure.log" 2>&1 \
  || { tail -20 "$build/configure.log" >&2; exit 1; }
make -s -j"$(nproc)" >"$build/make.log" 2>&1 || { tail -30 "$build/make.log" >&2; exit 1; }
if [ -w "$pkglib" ]; then make -s install >"$build/install.log" 2>&1; else $SUDO make -s install >"$build/install.log" 2>&1; fi
[ -f "$pkglib/citus.so" ] || { echo "citus_build.sh: citus.so was not installed into $pkglib" >&2; exit 1; }
