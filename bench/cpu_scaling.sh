#!/bin/bash
# What the host gives single-threaded work on several cores, without PostgreSQL (issue 46):
# the CPU tree walk alone (bench/build/tree_walk) as one process, then as N processes
# started at once, each over the same rows; and a scalar loop the same way. Scaling is
# (one process's seconds) / (the N processes' seconds until the last one ends), the
# same yardstick as N threads of one session: a clock that drops under load, or cores
# that share their execution units (hyperthreads of the host under a VM), show here first.
#
#     bench/cpu_scaling.sh WORK_DIR NAME [NAME ...]
#
# WORK_DIR as bench/grid.py writes it (NAME.json, NAME.rows.f32); TS_BENCH_ROWS rows
# (default 10,000; 1,000 for fashion_mnist); TS_BENCH_PROCS the process counts (default:
# half the cores, all but one, all).
set -euo pipefail
work=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
walk=$here/build/tree_walk
cores=$(nproc)
procs=${TS_BENCH_PROCS:-"$((cores / 2)) $((cores - 1)) $cores"}
[ -x "$walk" ] || make -s -C "$here" build/tree_walk
lscpu | grep -E '^(Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)|Hypervisor vendor|L3 cache)' || true

# a scalar loop with no memory traffic
scalar_loop() { python3 -c 'for i in range(20_000_000): pass'; }

# seconds until n copies of "$@", started together, have all ended
wall_of() {
  local n=$1 t0 p
  shift
  t0=$(date +%s.%N)
  for p in $(seq "$n"); do "$@" > /dev/null & done
  wait
  awk -v t1="$(date +%s.%N)" -v t0="$t0" 'BEGIN { print t1 - t0 }'
}

# one row per process count: its scaling against one process, best of two
scaling() {
  local label=$1 one n all
  shift
  one=$(for r in 1 2; do wall_of 1 "$@"; done | sort -g | head -1)
  for n in $procs; do
    all=$(for r in 1 2; do wall_of "$n" "$@"; done | sort -g | head -1)
    awk -v l="$label" -v one="$one" -v all="$all" -v n="$n" \
      'BEGIN { printf "| %s | %.3f | %d | %.3f | %.2f |\n", l, one, n, all, one / all }'
  done
}

echo "| work | 1 process, s | processes | all of them, s | scaling |"
echo "|---|---:|---:|---:|---:|"
for name in "$@"; do
  rows=${TS_BENCH_ROWS:-10000}
  case $name in fashion_mnist*) rows=${TS_BENCH_ROWS:-1000} ;; esac
  scaling "tree walk, $name, $rows rows" "$walk" "$work/$name.json" "$work/$name.rows.f32" "$rows" 1
done
scaling "scalar loop (python, 20M iterations)" scalar_loop
