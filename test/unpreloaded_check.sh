#!/bin/bash
# pg_treeshap without shared_preload_libraries, as examples/demo.sh runs it:
# the library loads in a backend at CREATE EXTENSION, so it may define no
# setting that only server start can set. On a throwaway cluster of its own:
# pg_regress, and the pgTAP files of the service (its not-preloaded
# branches) and table input (t03 assumes the service is there).
set -euo pipefail
cd "$(dirname "$0")/.."
TS_PGPORT=${TS_UNPRELOADED_PORT:-54331} TS_PG_CONF="" source test/cluster.sh
status=0
if [ -n "$(psql -X -At -c "SHOW shared_preload_libraries")" ]; then
  echo "FAIL: the cluster preloads libraries"; exit 1
fi
make -s installcheck || { cat regression.diffs 2>/dev/null | head -60; status=1; }
psql -X -q -c "CREATE EXTENSION IF NOT EXISTS pgtap" -c "CREATE EXTENSION IF NOT EXISTS pg_treeshap"
pg_prove test/t11_service.sql test/t19_tables.sql || status=1
exit $status
