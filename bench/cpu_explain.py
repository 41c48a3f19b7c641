#!/usr/bin/env python3
"""CPU throughput of treeshap.explain_shap_wide against XGBoost's CPU
pred_contribs on the same machine, model and rows (a peer in the same run).

Trains the paper's cal_housing-med shape (100 rounds, depth 8, eta 0.01),
stores 10,000 rows in a heap table, and times
  SELECT count(*) FROM treeshap.explain_shap_wide(...)   (end to end, 1 backend)
  booster.predict(pred_contribs=True) with nthread = 1 and = all cores.
Run inside a cluster (PG* variables), e.g.: source test/cluster.sh; python3 bench/cpu_explain.py
"""
import gzip
import os
import time

import numpy as np
import psycopg2
import xgboost as xgb

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = 10000


def main():
    path = os.path.join(HERE, "..", "..", "shared", "datasets", "cal_housing", "cal_housing.data.gz")
    with gzip.open(path, "rt") as f:
        raw = np.loadtxt(f, delimiter=",")
    X, y = raw[:, :8].astype(np.float32), raw[:, 8] / 1e5
    booster = xgb.train({"max_depth": 8, "eta": 0.01, "nthread": os.cpu_count()},
                        xgb.DMatrix(X, label=y), 100)
    leaves = sum(t.count("leaf=") for t in booster.get_dump())
    Xt = X[:ROWS]
    conn = psycopg2.connect("")
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS pg_treeshap")
    cur.execute("DROP TABLE IF EXISTS bench_rows")
    cur.execute("CREATE TABLE bench_rows (id bigint, %s)" % ", ".join(f"f{j} float8" for j in range(8)))
    cur.executemany("INSERT INTO bench_rows VALUES (%s)" % ",".join(["%s"] * 9),
                    [(i,) + tuple(float(v) for v in Xt[i]) for i in range(ROWS)])
    cur.execute("SELECT 1 FROM treeshap.load_model('bench_cal_med', %s, replace => true)",
                (psycopg2.Binary(bytes(booster.save_raw("json"))),))
    conn.commit()
    query = "SELECT id, %s FROM bench_rows" % ", ".join(f"f{j}" for j in range(8))
    cur.execute("SELECT count(*) FROM treeshap.explain_shap_wide('bench_cal_med', 'SELECT id, f0,f1,f2,f3,f4,f5,f6,f7 FROM bench_rows LIMIT 10')")
    t0 = time.perf_counter()
    cur.execute("SELECT count(*) FROM treeshap.explain_shap_wide('bench_cal_med', %s)", (query,))
    n = cur.fetchone()[0]
    ours = ROWS / (time.perf_counter() - t0)
    assert n == ROWS
    rates = {}
    for threads in (1, os.cpu_count()):
        booster.set_param({"nthread": threads})
        dm = xgb.DMatrix(Xt)
        t0 = time.perf_counter()
        booster.predict(dm, pred_contribs=True)
        rates[threads] = ROWS / (time.perf_counter() - t0)
    print(f"cal_housing-med: 100 trees, {leaves} leaves, {ROWS} rows, {os.cpu_count()} cores, xgboost {xgb.__version__}")
    print(f"explain_shap_wide (1 backend, end to end): {ours:10.0f} rows/s")
    print(f"xgboost pred_contribs, 1 thread:           {rates[1]:10.0f} rows/s   ratio ours/xgb {ours / rates[1]:.2f}")
    print(f"xgboost pred_contribs, {os.cpu_count()} threads:          {rates[os.cpu_count()]:10.0f} rows/s   ratio ours/xgb {ours / rates[os.cpu_count()]:.2f}")
    cur.execute("DROP TABLE bench_rows")
    cur.execute("SELECT treeshap.drop_model('bench_cal_med')")
    conn.commit()


if __name__ == "__main__":
    main()
