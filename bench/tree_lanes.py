#!/usr/bin/env python3
"""Quadrature carried down each tree (src/core/ts_quad_tree.c) against the
path table's (src/core/ts_quad_lanes.c), both in blocks of 8 rows on one
thread, through the core's CLI (no PostgreSQL): rows/s of each on every
instruction set this CPU runs, best of TS_BENCH_REPS (3) alternated runs, the
time of loading the model (a run over no rows) taken off. The two must agree
within 1e-12 relative (test/core/lanes_check.py checks every fixture).

    python3 bench/tree_lanes.py WORK_DIR NAME [NAME ...]

WORK_DIR as bench/grid.py writes it (NAME.json, NAME.csv); rows: the first
TS_BENCH_ROWS (3,000; 200 of fashion_mnist) of NAME.csv. Needs
test/core/build/ts_cli (make -C test/core).
"""
import os
import subprocess
import sys
import tempfile
import time

CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "core", "build", "ts_cli")
REPS = int(os.environ.get("TS_BENCH_REPS", 3))


def seconds(model, csv, algorithm):
    """Wall time of one CLI run, or None when the CPU lacks the instruction set."""
    t0 = time.perf_counter()
    res = subprocess.run([CLI, "contribs", model, csv, algorithm], stdout=subprocess.DEVNULL)
    if res.returncode == 2:
        return None
    if res.returncode != 0:
        raise SystemExit(f"{model} {algorithm}: exit {res.returncode}")
    return time.perf_counter() - t0


def main():
    work, names = sys.argv[1], sys.argv[2:]
    print("| model | rows | instruction set | paths in lanes, rows/s | tree walk in lanes, rows/s | tree / paths |")
    print("|---|---:|---|---:|---:|---:|")
    for name in names:
        default = 200 if name.startswith("fashion_mnist") else 3000
        rows = int(os.environ.get("TS_BENCH_ROWS", default))
        model = os.path.join(work, name + ".json")
        with open(os.path.join(work, name + ".csv")) as f, \
                tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as tmp, \
                tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as empty:
            for _, line in zip(range(rows), f):
                tmp.write(line.split(",", 1)[1])   # the features, without the id
        try:
            for isa in ("avx512", "avx2", "x86-64"):
                best = {}
                for _ in range(REPS):
                    for kind in ("lanes", "tree-lanes"):
                        t = seconds(model, tmp.name, f"{kind}:{isa}")
                        load = seconds(model, empty.name, f"{kind}:{isa}")
                        if t is not None:
                            best[kind] = min(best.get(kind, t), t - load)
                if best:
                    print(f"| {name} | {rows} | {isa} | {rows / best['lanes']:.0f} | {rows / best['tree-lanes']:.0f} "
                          f"| {best['lanes'] / best['tree-lanes']:.2f} |", flush=True)
        finally:
            os.unlink(tmp.name)
            os.unlink(empty.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
