#!/bin/bash
# This tree's GPU service against an older build in one run: bench/
# concurrency.py (1,000,000 rows, K = 1 and 64 sessions) on the build of
# OLD_TREE (a source tree from before the GPU service, whose backends each
# drive the GPU: `git archive f657aba`), then on this tree, and the ratio of
# their aggregate rows/s at each K. PostgreSQL must run with pg_treeshap in
# shared_preload_libraries; TS_PG_RESTART is the command that restarts it
# (a preloaded library is replaced only by a restart).
#     TS_PG_RESTART='pg_ctl -D ... restart' bench/concurrency_baseline.sh OLD_TREE WORK_DIR MODEL...
# WORK_DIR holds each MODEL's .json and .csv (bench/grid.py writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 work=$2
shift 2
PG_CONFIG=${PG_CONFIG:-pg_config}
: > "$work/baseline.jsonl"
for build in old this; do
  tree=$([ $build = old ] && echo "$old" || echo .)
  make -s -C "$tree" clean
  make -s -C "$tree" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" WITH_CUDA=yes >/dev/null 2>&1
  make -s -C "$tree" PG_CONFIG="$PG_CONFIG" install >/dev/null
  eval "$TS_PG_RESTART" >/dev/null
  for name in "$@"; do
    psql -X -q -c "DROP EXTENSION IF EXISTS pg_treeshap CASCADE" 2>/dev/null
    python3 bench/concurrency.py "$work" "$name" 1000000 1,64 \
      | sed "s/^{/{\"build\": \"$build\", /" | tee -a "$work/baseline.jsonl"
  done
done
python3 - "$work/baseline.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = {(r["build"], r["name"]): r for r in recs}
for (build, name), r in sorted(by.items()):
    if build != "this" or ("old", name) not in by:
        continue
    o = by[("old", name)]
    for k in r["sessions"]:
        print(f"{name}: K = {k}: {r['sessions'][k]['rows_per_s']:,.0f} rows/s with the service, "
              f"{o['sessions'][k]['rows_per_s']:,.0f} before it: x{r['sessions'][k]['rows_per_s'] / o['sessions'][k]['rows_per_s']:.2f}"
              f"; first call of a new session {r['first_call_s'] * 1e3:.1f} ms, was {o['first_call_s'] * 1e3:.1f} ms")
    ok = r["checksums_match_cpu"] and o["checksums_match_cpu"]
    print(f"{name}: checksums equal the CPU's: {'yes' if ok else 'NO'}")
PY
