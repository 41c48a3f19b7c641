"""The two halves of this machine's CPUs, as two servers would have them: whole
physical cores (a core's hyperthreads stay together), ordered by NUMA node, so
each half has its own cores and, where there are two nodes, its own memory
(the CPUs this process may run on).
Prints the two CPU lists (comma-separated) on one line, for taskset -c; with
"cpus LIST", the CPUs of a taskset list ("0-3,8" gives 0 1 2 3 8).
    python3 bench/machine_halves.py [cpus LIST]"""
import os
import subprocess
import sys


def cpus(taskset_list):
    """The CPUs a taskset list names, in its order."""
    out = []
    for part in taskset_list.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def halves():
    """The two halves' CPU lists."""
    out = subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET,NODE"], capture_output=True, text=True,
                         check=True).stdout
    allowed = os.sched_getaffinity(0)
    cores = {}
    for line in out.splitlines():
        if line.startswith("#"):
            continue
        cpu, core, socket, node = line.split(",")
        if int(cpu) not in allowed:
            continue
        # a CPU of no known core counts as a core of its own
        key = (int(node or 0), int(socket or 0), int(core) if core else -1 - int(cpu))
        cores.setdefault(key, []).append(int(cpu))
    order = [cores[k] for k in sorted(cores)]
    mid = len(order) // 2
    return [",".join(str(c) for cs in part for c in cs) for part in (order[:mid], order[mid:])]


if len(sys.argv) == 3 and sys.argv[1] == "cpus":
    print(*cpus(sys.argv[2]))
else:
    print(" ".join(halves()))
