#!/usr/bin/env python3
"""Quadrature carried down each tree (src/core/ts_quad_tree.c) against the
path table's (src/core/ts_quad_lanes.c), in blocks of the walk's 32 rows and
the path lanes' 8 on one thread, through the core's CLI (no PostgreSQL): rows/s of each on every
instruction set this CPU runs, best of TS_BENCH_REPS (3) alternated runs, the
time of loading the model (a run over no rows) taken off; the CLI's own time
to parse and print the rows stays in. The two must agree within 1e-12 relative
(test/core/lanes_check.py checks every fixture). TS_BENCH_XGB_LIB names an
XGBoost library (bench/xgb_capi.py) whose pred_contribs on one thread, same
rows, is measured in the same rounds as a peer.

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xgb_capi import open_library  # noqa: E402

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


def xgb_seconds(lib, model, csv):
    """pred_contribs of the CSV's rows on one thread, through XGBoost's C API."""
    import numpy as np
    with open(csv) as f:  # an empty field is a missing value, as the CLI reads it
        x = np.array([[float(v) if v.strip() else np.nan for v in line.split(",")] for line in f],
                     dtype=np.float32)
    booster = lib.load(model)
    lib.set_param(booster, "nthread", 1)
    d = lib.dmatrix(x)
    t0 = time.perf_counter()
    lib.pred_contribs(booster, d)
    t = time.perf_counter() - t0
    lib.free_dmatrix(d)
    lib.free_booster(booster)
    return t


def main():
    work, names = sys.argv[1], sys.argv[2:]
    lib = open_library(os.environ["TS_BENCH_XGB_LIB"]) if os.environ.get("TS_BENCH_XGB_LIB") else None
    peer = f"XGBoost {lib.version}" if lib else "XGBoost"
    print(f"| model | rows | instruction set | paths in lanes, rows/s | tree walk in lanes, rows/s | tree / paths "
          f"| {peer}, rows/s | tree / {peer} |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
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
                    if lib is not None and best:
                        t = xgb_seconds(lib, model, tmp.name)
                        best["xgb"] = min(best.get("xgb", t), t)
                if best:
                    xgb = (f"| {rows / best['xgb']:.0f} | {best['xgb'] / best['tree-lanes']:.2f} |" if "xgb" in best
                           else "| - | - |")
                    print(f"| {name} | {rows} | {isa} | {rows / best['lanes']:.0f} | {rows / best['tree-lanes']:.0f} "
                          f"| {best['lanes'] / best['tree-lanes']:.2f} {xgb}", flush=True)
        finally:
            os.unlink(tmp.name)
            os.unlink(empty.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
