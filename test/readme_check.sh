#!/bin/bash
# The README's SQL examples, executed: a throwaway cluster preloading pg_cron and
# pg_treeshap, the objects the examples name (test/readme_world.sql: the models of
# test/fixtures/readme/, tables over their ranges), then every ```sql block of README.md
# in order (test/readme_check.py). Run from anywhere; the extension must be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
TS_PGPORT=${TS_README_PGPORT:-54345} TS_PG_CONF="shared_preload_libraries = 'pg_cron, pg_treeshap'
cron.database_name = 'postgres'
cron.host = '@CLUSTER@'" source test/cluster.sh >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -f test/readme_world.sql >/dev/null
# the README's model file, where the server can read it
TS_README_MODEL=$(ts_server_file test/fixtures/reg.json) /usr/bin/python3 test/readme_check.py
