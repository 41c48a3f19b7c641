#!/usr/bin/env python3
"""Interventional SHAP against a background, ours against shap's, same
machine, model, rows and background, both measured in this run:

    python3 bench/interventional.py WORK_DIR NAME [NAME ...]

WORK_DIR holds NAME.json and NAME.csv (bench/grid.py writes them). The
explained rows are the first TS_BENCH_IV_ROWS (default 100) distinct rows,
the background the TS_BENCH_IV_BG (default 1,000) rows after them.
Ours: explain_shap_wide(..., background => ...) with treeshap.cpu_threads =
TS_BENCH_IV_THREADS (default: every core) on each device of TS_BENCH_DEVICES
(comma-separated, default cpu; gpu needs the GPU service; cpu-walk is the CPU
with treeshap.background_grouping = never, the walk per background row), in
TS_BENCH_IV_OUTPUT space (margin, the default, or probability); shap:
TreeExplainer(booster, background, feature_perturbation="interventional")
.shap_values on the same rows, the whole background (shap.maskers.Independent
with max_samples = its size: a bare array of over 100 rows is silently
subsampled to 100). Devices: cpu, cpu-walk (the CPU with
treeshap.background_grouping = never, the walk per background row), gpu,
gpu-rows (the GPU with background_grouping = never: every background row
visited instead of each path's groups). TS_BENCH_IV_SHAP=0 leaves shap out
(where it is not installed): every device is then checked against the
first one. shap's interventional explainer runs on one core; it is
timed as it ships (TS_BENCH_IV_SHAP_SERIAL=0 skips that) and on every core,
the rows split over one process per core (TS_BENCH_IV_SHAP_PROCS), each
with its own explainer built before the clock starts. Each is timed once
after a warm-up call on a few rows; the values must agree within 1e-6
relative. Prints one JSON record per model and device, then the ratios.
"""
import json
import multiprocessing
import os
import sys
import time

import numpy as np
import psycopg2

SHAP = os.environ.get("TS_BENCH_IV_SHAP", "1") == "1"
if SHAP:
    import shap
    import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import features_of, load  # noqa: E402

ROWS = int(os.environ.get("TS_BENCH_IV_ROWS", "100"))
BG = int(os.environ.get("TS_BENCH_IV_BG", "1000"))
THREADS = int(os.environ.get("TS_BENCH_IV_THREADS", str(os.cpu_count())))
DEVICES = os.environ.get("TS_BENCH_DEVICES", os.environ.get("TS_BENCH_DEVICE", "cpu")).split(",")
SHAP_PROCS = int(os.environ.get("TS_BENCH_IV_SHAP_PROCS", str(os.cpu_count())))
SHAP_SERIAL = os.environ.get("TS_BENCH_IV_SHAP_SERIAL", "1") == "1"
OUTPUT = os.environ.get("TS_BENCH_IV_OUTPUT", "margin")


def ours(cur, name, table, features, rows):
    cols = ", ".join(f"f{j}" for j in range(features))
    query = f"SELECT id, {cols} FROM {table} WHERE id < {rows} ORDER BY id"
    background = f"SELECT {cols} FROM {table} WHERE id >= {ROWS} AND id < {ROWS + BG}"
    sql = (f"SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide("
           f"%s, %s, NULL::bigint, model_output => %s, background => %s) ORDER BY row_key, output")
    t0 = time.perf_counter()
    cur.execute(sql, (name, query, OUTPUT, background))
    out = cur.fetchall()
    return time.perf_counter() - t0, out


def explainer(work, name, R):
    booster = xgb.Booster()
    booster.load_model(os.path.join(work, name + ".json"))
    # a bare array of over 100 rows would be subsampled to 100 by shap's default masker
    background = shap.maskers.Independent(R, max_samples=len(R))
    return shap.TreeExplainer(booster, data=background, feature_perturbation="interventional",
                              model_output="probability" if OUTPUT == "probability" else "raw")


def theirs(work, name, X, R):
    e = explainer(work, name, R)
    t0 = time.perf_counter()
    values = np.asarray(e.shap_values(X, check_additivity=False), dtype=float)
    return time.perf_counter() - t0, values


_worker = {}


def _worker_init(work, name, R):
    _worker["e"] = explainer(work, name, R)


def _worker_rows(X):
    return np.asarray(_worker["e"].shap_values(X, check_additivity=False), dtype=float)


def theirs_parallel(work, name, X, R, procs):
    """shap on every core: the rows in chunks over procs processes (spawned: XGBoost's OpenMP does
    not survive a fork), explainers built first."""
    chunks = [c for c in np.array_split(X, procs * 4) if len(c) > 0]
    with multiprocessing.get_context("spawn").Pool(procs, _worker_init, (work, name, R)) as pool:
        pool.map(_worker_rows, [X[:1]] * procs)     # every worker's explainer built, warm
        t0 = time.perf_counter()
        parts = pool.map(_worker_rows, chunks)
        seconds = time.perf_counter() - t0
    return seconds, np.concatenate(parts, axis=0)


def compare(mine, values, outputs):
    """Largest difference relative to max(1, |row's largest value|)."""
    worst = 0.0
    for key, k, _, phi in mine:
        ref = values[key] if outputs == 1 else values[key, :, k]
        worst = max(worst, np.abs(np.array(phi) - ref).max() / max(1.0, np.abs(ref).max()))
    return worst


def as_values(mine, features, outputs):
    """A device's rows in shap's layout (rows x features, x outputs when several)."""
    values = np.zeros((ROWS, features) if outputs == 1 else (ROWS, features, outputs))
    for key, k, _, phi in mine:
        if outputs == 1:
            values[key] = phi
        else:
            values[key, :, k] = phi
    return values


def measure_ours(conn, name, table, features, device):
    with conn.cursor() as cur:
        cur.execute(f"SET treeshap.device = {device.split('-')[0]}")
        cur.execute("SET treeshap.background_grouping = never" if device in ("cpu-walk", "gpu-rows")
                    else "RESET treeshap.background_grouping")
        cur.execute("SET treeshap.match_columns = position")
        cur.execute(f"SET treeshap.cpu_threads = {THREADS}")
        ours(cur, name, table, features, 2)     # warm: the model's cache entry
        return ours(cur, name, table, features, ROWS)


def main():
    work, names = sys.argv[1], sys.argv[2:]
    conn = psycopg2.connect("")
    conn.autocommit = True
    records = []
    for name in names:
        features, outputs = features_of(work, name)
        table = "iv_" + name.replace("-", "_")
        distinct = np.genfromtxt(os.path.join(work, name + ".csv"), delimiter=",", dtype=np.float32)  # empty: NaN
        load(conn, work, name, table, features, len(distinct))
        X = distinct[:ROWS, 1:].astype(np.float64)
        R = distinct[ROWS:ROWS + BG, 1:].astype(np.float64)
        t_par, values, t_serial = None, None, None
        if SHAP:
            theirs(work, name, X[:2], R[:10])          # warm: shap's model conversion paths
            t_par, values = theirs_parallel(work, name, X, R, SHAP_PROCS)
            t_serial = theirs(work, name, X, R)[0] if SHAP_SERIAL else None
        first = None
        for device in DEVICES:
            t_ours, mine = measure_ours(conn, name, table, features, device)
            if values is None:  # no shap: the first device is the reference
                values, first = as_values(mine, features, outputs), t_ours
            err = compare(mine, values, outputs)
            rec = {"model": name, "output": OUTPUT, "rows": ROWS, "background": BG, "device": device,
                   "threads": THREADS,
                   "ours_s": round(t_ours, 4), "shap_all_cores_s": round(t_par, 3) if t_par else None,
                   "shap_procs": SHAP_PROCS if SHAP else None,
                   "shap_one_core_s": round(t_serial, 3) if t_serial else None,
                   "pairs_per_s_ours": round(ROWS * BG / t_ours),
                   "speedup_vs_shap_all_cores": round(t_par / t_ours, 2) if t_par else None,
                   "speedup_vs_shap_one_core": round(t_serial / t_ours, 2) if t_serial else None,
                   "speedup_vs_first_device": round(first / t_ours, 2) if first else None,
                   "max_rel_diff": float(f"{err:.2e}"), "shap": shap.__version__ if SHAP else None}
            print(json.dumps(rec), flush=True)
            records.append(rec)
            assert err <= 1e-6, (name, device, err)
    if not SHAP:
        print(f"\n{'model':<18} {'device':>8} {'rows x bg':>13} {'s':>8} {DEVICES[0] + ' / device':>16}")
        for r in records:
            print(f"{r['model']:<18} {r['device']:>8} {r['rows']:>5} x {r['background']:<6} {r['ours_s']:>8} "
                  f"{r['speedup_vs_first_device']:>15}x")
        return
    print(f"\n{'model':<18} {'device':>8} {'rows x bg':>11} {'ours s':>8} {'shap s, all cores':>18} "
          f"{'ours/shap':>10} {'shap s, 1 core':>15} {'ours/shap':>10}")
    for r in records:
        print(f"{r['model']:<18} {r['device']:>8} {r['rows']:>5} x {r['background']:<5} {r['ours_s']:>8} "
              f"{r['shap_all_cores_s']:>18} {r['speedup_vs_shap_all_cores']:>9}x "
              f"{str(r['shap_one_core_s']):>15} {str(r['speedup_vs_shap_one_core']):>9}x")


if __name__ == "__main__":
    main()
