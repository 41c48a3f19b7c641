"""The two halves of this machine's CPUs, as two servers would have them: whole
physical cores (a core's hyperthreads stay together), ordered by NUMA node, so
each half has its own cores and, where there are two nodes, its own memory
(the CPUs this process may run on).
Prints the two CPU lists (comma-separated) on one line, for taskset -c.
    python3 bench/machine_halves.py"""
import os
import subprocess

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
print(" ".join(",".join(str(c) for cs in part for c in cs) for part in (order[:mid], order[mid:])))
