#!/bin/bash
# Does this host give two halves of its CPUs twice the work of one half, as two
# servers would? (issue 45: two Citus worker nodes on one host, each pinned to
# its half, bench/machine_halves.py.) bench/host_spin as one process, then one
# process on each CPU of the first half, of the second half, and of both at
# once, timed per process, for three kinds of work: "cpu" (eight chains of
# register arithmetic: a core's units full), "chain" (one chain: most units
# free) and "mem" (passes over a 256 MB array). "both / half" is the work both
# halves did per second over what one half did alone: 2.0 where the halves
# share nothing. Then a process on the first CPU beside one on each other CPU
# k: a k where it slows down shares that CPU's core. TS_BENCH_SHARES="LIST0
# LIST1" names the halves (taskset lists: 0-7,16-23).
#     bash bench/host_halves.sh
set -euo pipefail
cd "$(dirname "$0")"
make -s build/host_spin
halves=${TS_BENCH_SHARES:-$(python3 machine_halves.py)}
read -r half0 half1 <<<"$halves"
[ -n "${half1:-}" ] || { echo "host_halves: no two halves in \"$halves\""; exit 1; }
lscpu | grep -E '^(Model name|CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\)|Hypervisor vendor)' || true

# the CPUs of a taskset list ("0-3,8" gives 0 1 2 3 8)
cpus_of() { python3 machine_halves.py cpus "$1"; }

# mean seconds of one host_spin MODE on each CPU of the list LIST, all at once
mean_on() {
  local mode=$1 list=$2 c out
  out=$(for c in $(cpus_of "$list"); do taskset -c "$c" build/host_spin "$mode" & done; wait)
  awk '{ s += $1; n++ } END { printf "%.3f", s / n }' <<<"$out"
}

n0=$(cpus_of "$half0" | wc -w) n1=$(cpus_of "$half1" | wc -w)
first=$(cpus_of "$half0" | awk '{ print $1; exit }')
for mode in cpu chain mem; do
  one=$(mean_on "$mode" "$first")
  a=$(mean_on "$mode" "$half0")
  b=$(mean_on "$mode" "$half1")
  both=$(mean_on "$mode" "$half0,$half1")
  python3 -c "
one, a, b, both, n0, n1 = $one, $a, $b, $both, $n0, $n1
# work per second: processes over their mean seconds
print(f'$mode: one process {one:.3f} s; a process on each CPU of half 0 ({n0}) {a:.3f} s, of half 1 '
      f'({n1}) {b:.3f} s, of both {both:.3f} s; both / half: {((n0 + n1) / both) / (n0 / a):.2f} (half 0), '
      f'{((n0 + n1) / both) / (n1 / b):.2f} (half 1)')"
done

# the first CPU beside each other CPU this process may use: those that slow it by over 25%
alone=$(mean_on cpu "$first")
shared=""
for k in $(python3 -c "import os; print(*sorted(os.sched_getaffinity(0)))"); do
  [ "$k" = "$first" ] && continue
  taskset -c "$k" build/host_spin cpu >/dev/null &
  p=$!
  t=$(taskset -c "$first" build/host_spin cpu | cut -d' ' -f1)
  wait "$p"
  python3 -c "import sys; sys.exit(0 if $t > 1.25 * $alone else 1)" && shared="$shared $k($t s)"
done
echo "CPU $first alone ${alone} s; beside CPUs that slow it by over 25%:${shared:- none}"
