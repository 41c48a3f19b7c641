#!/usr/bin/env python3
"""The paper's model grid: load the data sets, train each model with Debian's
XGBoost (C API through ctypes), write the model, 10,000 rows to explain
(float32 and CSV), and time XGBoost's CPU pred_contribs on all cores.

    python3 bench/grid.py DATA_DIR LIB_DIR WORK_DIR [MODEL ...]

Writes WORK_DIR/NAME.json, NAME.rows.f32, NAME.csv and appends one JSON
record per model to WORK_DIR/results.jsonl. Models already trained are reused.
TS_BENCH_TRAIN_ONLY=1 skips the XGBoost timings (for kernel work).
"""
import gzip
import json
import lzma
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xgb_capi import open_library  # noqa: E402

ROWS = 10000
# name: (data set, rounds, depth); eta 0.01, other parameters default but tree_method=hist
GRID = {
    "cal_housing-small": ("cal_housing", 10, 3),
    "cal_housing-med": ("cal_housing", 100, 8),
    "cal_housing-large": ("cal_housing", 1000, 16),
    "adult-small": ("adult", 10, 3),
    "adult-med": ("adult", 100, 8),
    "adult-large": ("adult", 1000, 16),
    "fashion_mnist-small": ("fashion_mnist", 10, 3),
    "fashion_mnist-med": ("fashion_mnist", 100, 8),
    "covtype_synthetic-small": ("covtype_synthetic", 10, 3),
    "covtype_synthetic-med": ("covtype_synthetic", 100, 8),
}


def cal_housing(data):
    with gzip.open(os.path.join(data, "cal_housing.data.gz"), "rt") as f:
        raw = np.loadtxt(f, delimiter=",")
    X, y = raw[:, :8], raw[:, 8] / 1e5
    rows = np.random.default_rng(0).permutation(len(X))[:ROWS]
    return {"objective": "reg:squarederror"}, X, y, X[rows]


def adult(data):
    records = []
    for name in ("adult.data.gz", "adult.test.gz"):
        with gzip.open(os.path.join(data, name), "rt") as f:
            for line in f:
                p = [s.strip() for s in line.split(",")]
                if len(p) == 15:
                    records.append(p)
    cols = list(zip(*records))
    feats = []
    for j in range(14):
        try:
            feats.append(np.array([np.nan if v == "?" else float(v) for v in cols[j]]))
        except ValueError:  # categorical: ordinal codes, "?" missing
            cats = sorted(set(cols[j]) - {"?"})
            code = {c: i for i, c in enumerate(cats)}
            feats.append(np.array([np.nan if v == "?" else code[v] for v in cols[j]], dtype=float))
    X = np.column_stack(feats)
    y = np.array([v.startswith(">50K") for v in cols[14]], dtype=float)
    rows = np.random.default_rng(0).permutation(len(X))[:ROWS]
    return {"objective": "binary:logistic"}, X, y, X[rows]


def idx(path):
    opener = lzma.open if path.endswith(".xz") else gzip.open
    with opener(path, "rb") as f:
        raw = f.read()
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(data):
    X = idx(os.path.join(data, "train-images-idx3-ubyte.xz")).reshape(60000, -1)
    y = idx(os.path.join(data, "train-labels-idx1-ubyte.gz"))
    test = idx(os.path.join(data, "t10k-images-idx3-ubyte.xz")).reshape(10000, -1)
    return {"objective": "multi:softprob", "num_class": 10}, X, y, test[:ROWS]


def covtype_synthetic(_data):
    """Synthetic stand-in with covtype's shape: 10 continuous columns, 4 + 40
    one-hot columns (wilderness area, soil type), 8 classes. Not real data."""
    rng = np.random.default_rng(54)
    n = 100000
    cont = rng.normal(size=(n, 10)) * rng.uniform(1, 1000, size=10)
    wild = np.eye(4)[rng.integers(0, 4, n)]
    soil = np.eye(40)[rng.integers(0, 40, n)]
    X = np.column_stack([cont, wild, soil])
    z = (cont / cont.std(axis=0)) @ rng.normal(size=(10, 8)) + wild @ rng.normal(size=(4, 8)) \
        + soil @ rng.normal(size=(40, 8)) + np.sin(cont[:, :8] / cont[:, :8].std(axis=0)) * 2
    y = np.argmax(z + rng.gumbel(size=z.shape), axis=1).astype(float)
    return {"objective": "multi:softprob", "num_class": 8}, X, y, X[:ROWS]


def timed(xgb, predict, rows, n):
    """Seconds predict(dmatrix) takes over the first n rows."""
    d = xgb.dmatrix(rows[:n])
    t0 = time.perf_counter()
    predict(d)
    dt = time.perf_counter() - t0
    xgb.free_dmatrix(d)
    return dt


def time_contribs(xgb, booster, rows, budget=8.0):
    """Rows/s of pred_contribs on all cores: a probe on 200 rows sizes a run of about budget s."""
    def run(n):
        return timed(xgb, lambda d: xgb.pred_contribs(booster, d), rows, n)
    probe = run(200)
    n = int(min(len(rows), max(200, 200 * budget / max(probe, 1e-9))))
    return n, n / run(n)


def time_interactions(xgb, booster, rows, budget=10.0, most=200):
    """Rows/s of pred_interactions on all cores over up to most rows: a probe on
    one row per core (XGBoost parallelises over rows) sizes a run of about
    budget s (XGBoost takes minutes per 200 rows on the large models)."""
    def run(n):
        return timed(xgb, lambda d: xgb.pred_interactions(booster, d), rows, n)
    first = min(most, os.cpu_count())
    probe = run(first)
    n = int(min(most, max(first, first * budget / max(probe, 1e-9))))
    return n, n / (run(n) if n > first else probe)


def main():
    data, libdir, work = sys.argv[1:4]
    names = sys.argv[4:] or list(GRID)
    os.makedirs(work, exist_ok=True)
    xgb = open_library(libdir)
    threads = os.cpu_count()
    loaded = {}
    for name in names:
        dataset, rounds, depth = GRID[name]
        if dataset not in loaded:
            loaded[dataset] = globals()[dataset](data)
        params, X, y, rows = loaded[dataset]
        path = os.path.join(work, name + ".json")
        train_s = None
        if not os.path.exists(path):
            t0 = time.perf_counter()
            dtrain = xgb.dmatrix(X, y)
            booster = xgb.train({**params, "eta": 0.01, "max_depth": depth, "tree_method": "hist",
                                 "nthread": threads, "seed": 0}, dtrain, rounds)
            xgb.save(booster, path)
            xgb.free_dmatrix(dtrain)
            train_s = time.perf_counter() - t0
        else:
            booster = xgb.load(path)
            xgb.set_param(booster, "nthread", threads)
        rows32 = np.ascontiguousarray(rows, dtype=np.float32)
        rows32.tofile(os.path.join(work, name + ".rows.f32"))
        with open(os.path.join(work, name + ".csv"), "w") as f:
            for i, r in enumerate(rows32):
                f.write(str(i) + "," + ",".join("" if np.isnan(v) else repr(float(v)) for v in r) + "\n")
        n, rate = ((None, None) if os.environ.get("TS_BENCH_TRAIN_ONLY")
                   else time_contribs(xgb, booster, rows32))
        inter_n, inter_rate = (time_interactions(xgb, booster, rows32)
                               if os.environ.get("TS_BENCH_INTERACTIONS") else (None, None))
        xgb.free_booster(booster)
        rec = {"name": name, "dataset": dataset, "rounds": rounds, "depth": depth,
               "train_rows": len(X), "features": X.shape[1], "train_s": train_s,
               "xgboost_version": xgb.version, "xgboost_threads": threads,
               "xgboost_rows": n, "xgboost_rows_per_s": rate,
               "xgboost_interaction_rows": inter_n, "xgboost_interaction_rows_per_s": inter_rate}
        with open(os.path.join(work, "results.jsonl"), "a") as f:
            f.write(json.dumps({"kind": "xgboost", **rec}) + "\n")
        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
