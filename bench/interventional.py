#!/usr/bin/env python3
"""Interventional SHAP against a background, ours against shap's, same
machine, model, rows and background, both measured in this run:

    python3 bench/interventional.py WORK_DIR NAME [NAME ...]

WORK_DIR holds NAME.json and NAME.csv (bench/grid.py writes them). The
explained rows are the first TS_BENCH_IV_ROWS (default 100) distinct rows,
the background the TS_BENCH_IV_BG (default 1,000) rows after them.
Ours: explain_shap_wide(..., background => ...) with treeshap.cpu_threads =
TS_BENCH_IV_THREADS (default: every core) on the device treeshap.device
(TS_BENCH_DEVICE, default cpu); shap: TreeExplainer(booster, background,
feature_perturbation="interventional").shap_values on the same rows, the
whole background (shap.maskers.Independent with max_samples = its size: a
bare array of over 100 rows is silently subsampled to 100); shap's
interventional explainer runs on one core. Each is timed once after a
warm-up call on a few rows; the values must agree within 1e-6 relative.
Prints one JSON record per model, then the ratios.
"""
import json
import os
import sys
import time

import numpy as np
import psycopg2
import shap
import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import features_of, load  # noqa: E402

ROWS = int(os.environ.get("TS_BENCH_IV_ROWS", "100"))
BG = int(os.environ.get("TS_BENCH_IV_BG", "1000"))
THREADS = int(os.environ.get("TS_BENCH_IV_THREADS", str(os.cpu_count())))
DEVICE = os.environ.get("TS_BENCH_DEVICE", "cpu")


def ours(cur, name, table, features, rows):
    cols = ", ".join(f"f{j}" for j in range(features))
    query = f"SELECT id, {cols} FROM {table} WHERE id < {rows} ORDER BY id"
    background = f"SELECT {cols} FROM {table} WHERE id >= {ROWS} AND id < {ROWS + BG}"
    sql = (f"SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide("
           f"%s, %s, NULL::bigint, background => %s) ORDER BY row_key, output")
    t0 = time.perf_counter()
    cur.execute(sql, (name, query, background))
    out = cur.fetchall()
    return time.perf_counter() - t0, out


def theirs(work, name, X, R):
    booster = xgb.Booster()
    booster.load_model(os.path.join(work, name + ".json"))
    # a bare array of over 100 rows would be subsampled to 100 by shap's default masker
    background = shap.maskers.Independent(R, max_samples=len(R))
    e = shap.TreeExplainer(booster, data=background, feature_perturbation="interventional")
    t0 = time.perf_counter()
    values = np.asarray(e.shap_values(X, check_additivity=False), dtype=float)
    return time.perf_counter() - t0, values


def compare(mine, values, outputs):
    """Largest difference relative to max(1, |row's largest value|)."""
    worst = 0.0
    for key, k, _, phi in mine:
        ref = values[key] if outputs == 1 else values[key, :, k]
        worst = max(worst, np.abs(np.array(phi) - ref).max() / max(1.0, np.abs(ref).max()))
    return worst


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
        with conn.cursor() as cur:
            cur.execute(f"SET treeshap.device = {DEVICE}")
            cur.execute("SET treeshap.match_columns = position")
            cur.execute(f"SET treeshap.cpu_threads = {THREADS}")
            ours(cur, name, table, features, 2)     # warm: the model's cache entry
            t_ours, mine = ours(cur, name, table, features, ROWS)
        theirs(work, name, X[:2], R[:10])          # warm: shap's model conversion paths
        t_shap, values = theirs(work, name, X, R)
        err = compare(mine, values, outputs)
        rec = {"model": name, "rows": ROWS, "background": BG, "device": DEVICE, "threads": THREADS,
               "ours_s": round(t_ours, 3), "shap_s": round(t_shap, 3),
               "pairs_per_s_ours": round(ROWS * BG / t_ours), "pairs_per_s_shap": round(ROWS * BG / t_shap),
               "speedup": round(t_shap / t_ours, 2), "max_rel_diff": float(f"{err:.2e}"),
               "shap": shap.__version__}
        print(json.dumps(rec), flush=True)
        records.append(rec)
        assert err <= 1e-6, (name, err)
    print(f"\n{'model':<18} {'rows x bg':>11} {'ours s':>8} {'shap s':>8} {'ours/shap':>10}")
    for r in records:
        print(f"{r['model']:<18} {r['rows']:>5} x {r['background']:<5} {r['ours_s']:>8} {r['shap_s']:>8} "
              f"{r['speedup']:>9}x")


if __name__ == "__main__":
    main()
