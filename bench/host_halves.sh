#!/bin/bash
# Does this host give two halves of its CPUs twice the work of one half, as two
# servers would? (issue 45: two Citus worker nodes on one host, each pinned to
# its half, bench/machine_halves.py.) bench/host_spin (register arithmetic, and
# passes over a 256 MB array) as one process, then one process on each CPU of
# the first half, of the second half, and of both at once, timed per process.
# "both / half" is the work both halves did per second over what one half did
# alone: 2.0 where the halves share nothing. Then a process on CPU 0 beside one
# on each other CPU k: a k where it slows down shares CPU 0's core.
#     bash bench/host_halves.sh
set -euo pipefail
cd "$(dirname "$0")"
make -s build/host_spin
read -r half0 half1 <<<"${TS_BENCH_SHARES:-$(python3 machine_halves.py)}"
lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)|Hypervisor vendor)' || true

# mean seconds of one host_spin MODE on each CPU of the list LIST, all at once
mean_on() {
  local mode=$1 list=$2 c out
  out=$(for c in ${list//,/ }; do taskset -c "$c" build/host_spin "$mode" & done; wait)
  awk '{ s += $1; n++ } END { printf "%.3f", s / n }' <<<"$out"
}

for mode in cpu mem; do
  one=$(mean_on "$mode" 0)
  a=$(mean_on "$mode" "$half0")
  b=$(mean_on "$mode" "$half1")
  both=$(mean_on "$mode" "$half0,$half1")
  python3 -c "
one, a, b, both = $one, $a, $b, $both
print(f'$mode: one process {one:.3f} s; a process on each CPU of half 0 {a:.3f} s, of half 1 '
      f'{b:.3f} s, of both {both:.3f} s; both / half: {2 * a / both:.2f} (half 0), {2 * b / both:.2f} (half 1)')"
done

# CPU 0 beside CPU k: its seconds, where they exceed 1.25x its time alone
alone=$(mean_on cpu 0)
shared=""
for k in $(seq 1 $(($(nproc) - 1))); do
  taskset -c "$k" build/host_spin cpu >/dev/null &
  p=$!
  t=$(taskset -c 0 build/host_spin cpu | cut -d' ' -f1)
  wait "$p"
  python3 -c "import sys; sys.exit(0 if $t > 1.25 * $alone else 1)" && shared="$shared $k($t s)"
done
echo "CPU 0 alone ${alone} s; beside CPUs that slow it by over 25%:${shared:- none}"
