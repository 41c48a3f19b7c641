#!/bin/bash
# Install what building and testing need, from Debian 12's packages. Safe to
# re-run: packages already present are skipped. Uses sudo when not root.
set -euo pipefail
pkgs="make gcc libc6-dev postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap postgresql-15-cron
      libtap-parser-sourcehandler-pgtap-perl python3 python3-pip python3-numpy python3-xgboost python3-psycopg2
      clang libclang-rt-14-dev chromium fonts-liberation python3-pil"
missing=$(for p in $pkgs; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"; done)
[ -z "$missing" ] && exit 0
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing: $missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
