#!/usr/bin/env python3
"""One CPU thread on each side (issue 46): treeshap.explain_shap_wide with
treeshap.device = cpu and treeshap.cpu_threads = 1 (quadrature, and the
EXTEND/UNWOUNDSUM algorithm) against XGBoost's pred_contribs with nthread = 1
and shap's TreeExplainer (single-threaded; left out where shap is not
installed), same machine, model and rows,
measured in this run: rounds alternate the three, best of TS_BENCH_REPS (3).
Ours is timed twice: fetched by this Python client (psycopg2 parses every
value from text: on fashion_mnist, 7,850 per row, most of the time), and in
the server alone (count(*) over explain_shap_wide: every result row built,
none sent), as a query that writes the results to a table sees it.
Values must agree: every contribution of the first 200 rows within 1e-5
relative to max(1, |margin|) of XGBoost's.

    python3 bench/cpu_one_thread.py WORK_DIR NAME [NAME ...]

WORK_DIR as bench/grid.py writes it (NAME.json, NAME.csv, NAME.rows.f32).
TS_BENCH_XGB_LIB names a second XGBoost library (e.g. a newer wheel's
xgboost/lib/libxgboost.so, where pip serves that version only for another
Python), measured the same way through its C API (bench/xgb_capi.py) as a
third peer, its contributions checked like the first's.
Rows: the first TS_BENCH_ROWS (10,000) of them; 1,000 for fashion_mnist (784 features,
10 classes). Needs xgboost (3.x) importable, shap if installed; the server through PG*
variables. Prints one JSON record per model, then the table of ratios.
"""
import json
import os
import sys
import time

import numpy as np
import psycopg2
import xgboost as xgb

try:    # the second peer; a GPU host may lack it (then its column says "-")
    import shap
except ImportError:
    shap = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import features_of, load  # noqa: E402
from xgb_capi import open_library  # noqa: E402

REPS = int(os.environ.get("TS_BENCH_REPS", 3))


def rows_of(name):
    default = 1000 if name.startswith("fashion_mnist") else 10000
    return int(os.environ.get("TS_BENCH_ROWS", default))


def ours(cur, name, table, algorithm):
    """explain_shap_wide's rows/s over the table on one thread, and its contributions."""
    cur.execute(f"SET treeshap.algorithm = {algorithm}")
    t0 = time.perf_counter()
    cur.execute(f"SELECT row_key, output, shap_values || base_value FROM treeshap.explain_shap_wide(%s, %s)",
                (name, f"SELECT * FROM {table}"))
    got = cur.fetchall()
    return len(got), time.perf_counter() - t0, got


def in_server(cur, name, table):
    """explain_shap_wide's rows/s on one thread with every result built but none sent (count(*) over it)."""
    cur.execute("SET treeshap.algorithm = quadrature")
    t0 = time.perf_counter()
    cur.execute("SELECT count(*) FROM treeshap.explain_shap_wide(%s, %s)", (name, f"SELECT * FROM {table}"))
    n = cur.fetchone()[0]
    return n, time.perf_counter() - t0


def main():
    work, names = sys.argv[1], sys.argv[2:]
    conn = psycopg2.connect("")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET treeshap.device = cpu")
    cur.execute("SET treeshap.cpu_threads = 1")
    cur.execute("SET treeshap.match_columns = position")
    cur.execute("SET jit = off")
    second = os.environ.get("TS_BENCH_XGB_LIB")
    lib = open_library(second) if second else None
    records = []
    for name in names:
        features, outputs = features_of(work, name)
        rows = rows_of(name)
        table = "b1_" + name.replace("-", "_")
        load(conn, work, name, table, features, rows)
        X = np.fromfile(os.path.join(work, name + ".rows.f32"), dtype=np.float32).reshape(-1, features)[:rows]
        booster = xgb.Booster(model_file=os.path.join(work, name + ".json"))
        booster.set_param({"nthread": 1})
        explainer = shap.TreeExplainer(booster) if shap is not None else None
        dm = xgb.DMatrix(X, missing=np.nan)
        if lib is not None:
            lib_booster = lib.load(os.path.join(work, name + ".json"))
            lib.set_param(lib_booster, "nthread", 1)
            lib_dm = lib.dmatrix(X)
        best = {"quadrature": 0.0, "treeshap": 0.0, "xgboost": 0.0, "shap": 0.0, "xgboost_lib": 0.0,
                "quadrature_in_server": 0.0}
        for _ in range(REPS):
            n, t = in_server(cur, name, table)
            assert n == rows * outputs, (name, n)
            best["quadrature_in_server"] = max(best["quadrature_in_server"], rows / t)
            for algorithm in ("quadrature", "treeshap"):
                n, t, got = ours(cur, name, table, algorithm)
                assert n == rows * outputs, (name, n)
                best[algorithm] = max(best[algorithm], rows / t)
            t0 = time.perf_counter()
            ref = booster.predict(dm, pred_contribs=True).reshape(rows, outputs, features + 1)
            best["xgboost"] = max(best["xgboost"], rows / (time.perf_counter() - t0))
            if lib is not None:
                t0 = time.perf_counter()
                lib_ref = lib.pred_contribs(lib_booster, lib_dm).reshape(rows, outputs, features + 1)
                best["xgboost_lib"] = max(best["xgboost_lib"], rows / (time.perf_counter() - t0))
            if explainer is not None:
                t0 = time.perf_counter()
                explainer.shap_values(X, check_additivity=False)
                best["shap"] = max(best["shap"], rows / (time.perf_counter() - t0))
        cur.execute("SET treeshap.algorithm = quadrature")
        cur.execute(f"SELECT row_key, output, shap_values || base_value FROM treeshap.explain_shap_wide(%s, %s)",
                    (name, f"SELECT * FROM {table} WHERE id < 200"))
        got = cur.fetchall()
        worst = max(np.abs(np.array(v) - ref[i, k]).max() / max(1.0, abs(ref[i, k].sum())) for i, k, v in got)
        if lib is not None:
            worst = max(worst, max(np.abs(np.array(v) - lib_ref[i, k]).max() / max(1.0, abs(lib_ref[i, k].sum()))
                                   for i, k, v in got))
            lib.free_dmatrix(lib_dm)
            lib.free_booster(lib_booster)
        rec = {"name": name, "rows": rows, "features": features, "outputs": outputs,
               "xgboost_version": xgb.__version__, "shap_version": shap.__version__ if shap else None,
               "rows_per_s": {k: round(v, 1) for k, v in best.items()},
               "ours_over_xgboost": round(best["quadrature"] / best["xgboost"], 2),
               "in_server_over_xgboost": round(best["quadrature_in_server"] / best["xgboost"], 2),
               "in_server_over_xgboost_lib": round(best["quadrature_in_server"] / best["xgboost_lib"], 2) if lib else None,
               "ours_over_shap": round(best["quadrature"] / best["shap"], 2) if best["shap"] else None,
               "xgboost_lib_version": lib.version if lib else None,
               "ours_over_xgboost_lib": round(best["quadrature"] / best["xgboost_lib"], 2) if lib else None,
               "worst_deviation": worst}
        assert worst <= 1e-5, rec
        print(json.dumps(rec), flush=True)
        records.append(rec)
        cur.execute(f"DROP TABLE {table}, {table}_distinct")
        cur.execute("SELECT treeshap.drop_model(%s)", (name,))
    version = records[0]["xgboost_version"] if records else xgb.__version__
    lib_version = lib.version if lib else "-"
    print(f"| model | rows | quadrature | in the server | `algorithm = treeshap` | XGBoost {version} "
          f"| XGBoost {lib_version} | shap TreeExplainer | ours / XGBoost {version} | ours / XGBoost {lib_version} "
          f"| ours / shap | in the server / XGBoost {version} | in the server / XGBoost {lib_version} |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in records:
        b = r["rows_per_s"]
        shap_rate = f"{b['shap']:.0f}" if b["shap"] else "-"
        shap_ratio = f"{r['ours_over_shap']:.2f}" if r["ours_over_shap"] else "-"
        lib_rate = f"{b['xgboost_lib']:.0f}" if b["xgboost_lib"] else "-"
        lib_ratio = f"{r['ours_over_xgboost_lib']:.2f}" if r["ours_over_xgboost_lib"] else "-"
        server_lib = f"{r['in_server_over_xgboost_lib']:.2f}" if r["in_server_over_xgboost_lib"] else "-"
        print(f"| {r['name']} | {r['rows']} | {b['quadrature']:.0f} | {b['quadrature_in_server']:.0f} "
              f"| {b['treeshap']:.0f} | {b['xgboost']:.0f} | {lib_rate} | {shap_rate} | {r['ours_over_xgboost']:.2f} "
              f"| {lib_ratio} | {shap_ratio} | {r['in_server_over_xgboost']:.2f} | {server_lib} |")


if __name__ == "__main__":
    main()
