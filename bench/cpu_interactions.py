#!/usr/bin/env python3
"""SHAP interaction values on one CPU thread on each side (issue 46: interactions
measured): treeshap.explain_interactions with treeshap.device = cpu and
treeshap.cpu_threads = 1 against XGBoost's pred_interactions with nthread = 1,
same machine, model and rows, measured in this run: rounds alternate the two,
best of TS_BENCH_REPS (3). The long form emits up to features^2 tuples per row
and output (entries exactly zero are left out), so a third column times one
backend's rate of as many plain tuples (generate_series), the ceiling the long
form has whatever its arithmetic.
Values must agree: every entry of the first 20 rows within 1e-5 relative to
max(1, |margin|) of XGBoost's.

    python3 bench/cpu_interactions.py WORK_DIR NAME [NAME ...]

WORK_DIR as bench/grid.py writes it. TS_BENCH_XGB_LIB names a second XGBoost
library, measured through its C API (bench/xgb_capi.py) as another peer.
Rows: the first TS_BENCH_ROWS (1,000). Needs xgboost importable; the server
through PG* variables. Prints one JSON record per model, then the table.
"""
import json
import os
import sys
import time

import numpy as np
import psycopg2
import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import features_of, load  # noqa: E402
from xgb_capi import open_library  # noqa: E402

REPS = int(os.environ.get("TS_BENCH_REPS", 3))
ROWS = int(os.environ.get("TS_BENCH_ROWS", 1000))
CHECKED = 20


def timed(cur, sql, args=None):
    """The statement's seconds and its rows."""
    t0 = time.perf_counter()
    cur.execute(sql, args)
    got = cur.fetchall()
    return time.perf_counter() - t0, got


def ours(cur, name, table):
    """explain_interactions' seconds over the table (counted in the server, no transfer)."""
    t, got = timed(cur, "SELECT count(*) FROM treeshap.explain_interactions(%s, %s)",
                   (name, f"SELECT * FROM {table}"))
    return t, got[0][0]


def ours_values(cur, name, table, features, outputs):
    """The first CHECKED rows' interaction matrices, rows x outputs x features x features."""
    cur.execute("SELECT feature_names FROM treeshap.models WHERE name = %s", (name,))
    names = cur.fetchone()[0] or [f"f{j}" for j in range(features)]  # a model without names: f0, f1, ...
    index = {f: j for j, f in enumerate(names)}
    out = np.zeros((CHECKED, outputs, features, features))
    cur.execute("SELECT row_key, output, feature_a, feature_b, interaction FROM treeshap.explain_interactions(%s, %s)",
                (name, f"SELECT * FROM {table} WHERE id < {CHECKED}"))
    for i, k, a, b, v in cur.fetchall():
        out[i, k, index[a], index[b]] = v
    return out


def worst(got, ref):
    """Worst |got - ref| / max(1, |margin|) over the checked rows (the margin: the matrix's sum)."""
    return max(np.abs(got[i, k] - ref[i, k]).max() / max(1.0, abs(ref[i, k].sum()))
               for i in range(got.shape[0]) for k in range(got.shape[1]))


def main():
    work, names = sys.argv[1], sys.argv[2:]
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    for setting in ("treeshap.device = cpu", "treeshap.cpu_threads = 1", "treeshap.match_columns = position",
                    "jit = off"):
        cur.execute("SET " + setting)
    second = os.environ.get("TS_BENCH_XGB_LIB")
    lib = open_library(second) if second else None
    records = []
    for name in names:
        features, outputs = features_of(work, name)
        table = "bi_" + name.replace("-", "_")
        load(conn, work, name, table, features, ROWS)
        X = np.fromfile(os.path.join(work, name + ".rows.f32"), dtype=np.float32).reshape(-1, features)[:ROWS]
        booster = xgb.Booster(model_file=os.path.join(work, name + ".json"))
        booster.set_param({"nthread": 1})
        dm = xgb.DMatrix(X, missing=np.nan)
        if lib is not None:
            lib_booster = lib.load(os.path.join(work, name + ".json"))
            lib.set_param(lib_booster, "nthread", 1)
            lib_dm = lib.dmatrix(X)
        tuples = None
        best = {"ours": 0.0, "tuples": 0.0, "xgboost": 0.0, "xgboost_lib": 0.0}
        for _ in range(REPS):
            t, n = ours(cur, name, table)
            assert ROWS * outputs * features <= n <= ROWS * outputs * features * features, (name, n)
            assert tuples in (None, n), (name, n, tuples)
            tuples = n
            best["ours"] = max(best["ours"], ROWS / t)
            t, _ = timed(cur, "SELECT count(*) FROM (SELECT g::bigint, 0, 'a'::text, 'b'::text, g::float8 "
                         "FROM generate_series(1, %s) g) s", (tuples,))
            best["tuples"] = max(best["tuples"], ROWS / t)
            t0 = time.perf_counter()
            ref = booster.predict(dm, pred_interactions=True).reshape(ROWS, outputs, features + 1, features + 1)
            best["xgboost"] = max(best["xgboost"], ROWS / (time.perf_counter() - t0))
            if lib is not None:
                t0 = time.perf_counter()
                lib_ref = lib.pred_interactions(lib_booster, lib_dm).reshape(ROWS, outputs, features + 1, features + 1)
                best["xgboost_lib"] = max(best["xgboost_lib"], ROWS / (time.perf_counter() - t0))
        got = ours_values(cur, name, table, features, outputs)
        dev = worst(got, ref[:CHECKED, :, :features, :features])
        if lib is not None:
            dev = max(dev, worst(got, lib_ref[:CHECKED, :, :features, :features]))
            lib.free_dmatrix(lib_dm)
            lib.free_booster(lib_booster)
        rec = {"name": name, "rows": ROWS, "features": features, "outputs": outputs, "tuples": tuples,
               "xgboost_version": xgb.__version__, "xgboost_lib_version": lib.version if lib else None,
               "rows_per_s": {k: round(v, 1) for k, v in best.items()},
               "ours_over_xgboost": round(best["ours"] / best["xgboost"], 2),
               "ours_over_xgboost_lib": round(best["ours"] / best["xgboost_lib"], 2) if lib else None,
               "tuple_ceiling_over_ours": round(best["tuples"] / best["ours"]),
               "worst_deviation": dev}
        assert dev <= 1e-5, rec
        print(json.dumps(rec), flush=True)
        records.append(rec)
        cur.execute(f"DROP TABLE {table}, {table}_distinct")
        cur.execute("SELECT treeshap.drop_model(%s)", (name,))
    lib_version = lib.version if lib else "-"
    print(f"| model | rows | explain_interactions, rows/s | tuple ceiling, rows/s | XGBoost {xgb.__version__} "
          f"| XGBoost {lib_version} | ours / XGBoost {xgb.__version__} | ours / XGBoost {lib_version} "
          f"| ceiling / ours |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in records:
        b = r["rows_per_s"]
        lib_rate = f"{b['xgboost_lib']:.0f}" if b["xgboost_lib"] else "-"
        lib_ratio = f"{r['ours_over_xgboost_lib']:.2f}" if r["ours_over_xgboost_lib"] else "-"
        print(f"| {r['name']} | {r['rows']} | {b['ours']:.0f} | {b['tuples']:.0f} | {b['xgboost']:.0f} | {lib_rate} "
              f"| {r['ours_over_xgboost']:.2f} | {lib_ratio} | {r['tuple_ceiling_over_ours']} |")


if __name__ == "__main__":
    main()
