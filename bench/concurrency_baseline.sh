#!/bin/bash
# This tree's GPU service against an older build in one run: bench/
# concurrency.py (1,000,000 rows, K = 1 and 64 sessions) on the build of
# OLD_TREE (a source tree from before the GPU service, whose backends each
# drive the GPU: `git archive f657aba`), then on this tree, and the ratio of
# their aggregate rows/s at each K. PostgreSQL must run with pg_treeshap in
# shared_preload_libraries; TS_PG_RESTART is the command that restarts it
# (a preloaded library is replaced only by a restart). TS_BENCH_SESSIONS
# (default 1,64) lists the Ks; TS_BENCH_ROUNDS (default 1) alternates the two
# builds that many times, and each build's best round is compared, since one
# session's rate swings by a third between runs on the same machine.
#     TS_PG_RESTART='pg_ctl -D ... restart' bench/concurrency_baseline.sh OLD_TREE WORK_DIR MODEL...
# WORK_DIR holds each MODEL's .json and .csv (bench/grid.py writes them).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 work=$2
shift 2
PG_CONFIG=${PG_CONFIG:-pg_config}
: > "$work/baseline.jsonl"
sessions=${TS_BENCH_SESSIONS:-1,64}
for round in $(seq "${TS_BENCH_ROUNDS:-1}"); do
for build in old this; do
  tree=$([ $build = old ] && echo "$old" || echo .)
  [ "$round" = 1 ] && make -s -C "$tree" clean
  make -s -C "$tree" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" WITH_CUDA=yes >/dev/null 2>&1
  make -s -C "$tree" PG_CONFIG="$PG_CONFIG" install >/dev/null
  eval "$TS_PG_RESTART" >/dev/null
  for name in "$@"; do
    psql -X -q -c "DROP EXTENSION IF EXISTS pg_treeshap CASCADE" 2>/dev/null
    python3 bench/concurrency.py "$work" "$name" 1000000 "$sessions" \
      | sed "s/^{/{\"build\": \"$build\", \"round\": $round, /" | tee -a "$work/baseline.jsonl"
  done
done
done
python3 - "$work/baseline.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = {}  # per (build, model): each K's best round
for r in recs:
    best = by.setdefault((r["build"], r["name"]), r)
    for k, s in r["sessions"].items():
        if s["rows_per_s"] > best["sessions"][k]["rows_per_s"]:
            best["sessions"][k] = s
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
