#!/usr/bin/env python3
"""The CPU path on every core (treeshap.cpu_threads): one session's
explain_shap_wide and predict with 1 thread and with one per core, against
XGBoost's CPU pred_contribs on all cores, same machine, model and rows, all
measured in this run.

    python3 bench/cpu_threads.py WORK_DIR LIB_DIR NAME [NAME ...]

WORK_DIR holds NAME.json, NAME.csv and NAME.rows.f32 (bench/grid.py writes
them: 10,000 rows of the data set), LIB_DIR XGBoost's library (bench/xgb_capi.py).
SHAP runs over those rows with 1 thread; over as many rows per thread with
all (the first rows of the table, which repeats them), so that each
statement takes about as long; and in as many sessions as cores at once, 1
thread each, over those rows (what the machine gives independent work on
every core: its clocks and memory under full load). predict runs over
TS_BENCH_ROWS (default 1,000,000) rows repeating them, in a heap table. Each
rate is the best of two runs, alternating 1 thread and all; the two thread
counts' checksums over the same rows must be equal bit for bit. LIB_DIR may
name a library file instead (a wheel's xgboost/lib/libxgboost.so). Prints one
JSON record per model, then a table of the ratios: scaling = (rate on all
threads or sessions) / (cores x rate on 1 thread).
"""
import json
import os
import re
import sys
import time

import numpy as np
import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import connect, features_of, load, queries_at_once  # noqa: E402
from xgb_capi import open_library  # noqa: E402

REPS = 2


def timed(cur, sql):
    """(seconds, first row) of one statement."""
    t0 = time.perf_counter()
    cur.execute(sql)
    row = cur.fetchone()
    return time.perf_counter() - t0, row


def best_of(cur, sql_by_threads, rows):
    """Per thread count: best rows/s over REPS alternating runs, and the result rows (all equal)."""
    rates, results = {}, {}
    for _ in range(REPS):
        for threads, sql in sql_by_threads.items():
            cur.execute(f"SET treeshap.cpu_threads = {threads}")
            seconds, row = timed(cur, sql)
            rates[threads] = max(rates.get(threads, 0.0), rows / seconds)
            results.setdefault(threads, set()).add(row)
    return rates, results


def sessions_rate(shap_sql, sessions, rows, expected):
    """rows/s of `sessions` sessions at once, each explaining `rows` rows on 1 thread: what
    the machine gives independent single-threaded work on every core (its clocks and
    memory under full load), the yardstick for the threads' scaling. Each session's
    result must be `expected`."""
    conns = [connect("cpu") for _ in range(sessions)]
    for c in conns:
        with c.cursor() as cur:
            cur.execute("SET treeshap.cpu_threads = 1")
            cur.execute(shap_sql(10))  # the session reads the model once
    best = 0.0
    for _ in range(REPS):
        seconds, results = queries_at_once(conns, [shap_sql(rows)] * sessions)
        wrong = [r for r in results if r != expected]
        if wrong:
            raise RuntimeError(f"{len(wrong)} of {sessions} sessions failed or differed: {wrong[0]}")
        best = max(best, sessions * rows / seconds)
    for c in conns:
        c.close()
    return best


def xgb_contribs_rate(xgb, work, name, features, rows):
    """XGBoost's pred_contribs on all cores over the same rows (rows/s, best of REPS)."""
    x = np.fromfile(os.path.join(work, name + ".rows.f32"), dtype=np.float32).reshape(-1, features)[:rows]
    booster = xgb.load(os.path.join(work, name + ".json"))
    xgb.set_param(booster, "nthread", os.cpu_count())
    d = xgb.dmatrix(x)
    best = 0.0
    for _ in range(REPS):
        t0 = time.perf_counter()
        xgb.pred_contribs(booster, d)
        best = max(best, len(x) / (time.perf_counter() - t0))
    xgb.free_dmatrix(d)
    xgb.free_booster(booster)
    return best


def measure(xgb, work, name, predict_rows):
    table = "t_" + re.sub(r"\W", "_", name)
    features, outputs = features_of(work, name)
    conn = connect("cpu")
    distinct = load(conn, work, name, table, features, predict_rows)
    cores = os.cpu_count()
    with conn.cursor() as cur:
        def shap_sql(rows):
            return (f"SELECT count(*), sum(shap_values[1 + (row_key % {features})::int] + base_value) "
                    f"FROM treeshap.explain_shap_wide('{name}', 'SELECT * FROM {table} WHERE id < {rows}')")
        all_rows = min(predict_rows, cores * distinct)
        pred_sql = f"SELECT count(*), sum(margin) FROM treeshap.predict('{name}', 'SELECT * FROM {table}')"
        cur.execute(shap_sql(10))  # the session reads the model once
        shap = {}
        for _ in range(REPS):
            for threads, rows in ((1, distinct), (cores, all_rows)):
                cur.execute(f"SET treeshap.cpu_threads = {threads}")
                seconds, _row = timed(cur, shap_sql(rows))
                shap[threads] = max(shap.get(threads, 0.0), rows / seconds)
        shap_res = {threads: set() for threads in (1, cores)}
        for threads in (1, cores):  # the same rows on both, for the bitwise check
            cur.execute(f"SET treeshap.cpu_threads = {threads}")
            shap_res[threads].add(timed(cur, shap_sql(distinct))[1])
        pred, pred_res = best_of(cur, {1: pred_sql, cores: pred_sql}, predict_rows)
    conn.close()
    sessions = sessions_rate(shap_sql, cores, distinct, next(iter(shap_res[1])))
    same = all(len(set().union(*r.values())) == 1 for r in (shap_res, pred_res))
    xgb_rate = xgb_contribs_rate(xgb, work, name, features, distinct)
    return {"kind": "cpu_threads", "name": name, "cores": cores, "outputs": outputs,
            "shap_rows_1": distinct, "shap_rows_all": all_rows, "predict_rows": predict_rows,
            "shap_1": shap[1], "shap_all": shap[cores], "shap_scaling": shap[cores] / (cores * shap[1]),
            "sessions_all": sessions, "sessions_scaling": sessions / (cores * shap[1]),
            "threads_over_sessions": shap[cores] / sessions,
            "predict_1": pred[1], "predict_all": pred[cores],
            "predict_scaling": pred[cores] / (cores * pred[1]),
            "xgboost_version": xgb.version, "xgboost_contribs_all": xgb_rate,
            "shap_all_over_xgboost": shap[cores] / xgb_rate, "bitwise_equal": same}


def main():
    work, libdir = sys.argv[1:3]
    names = sys.argv[3:]
    predict_rows = int(os.environ.get("TS_BENCH_ROWS", "1000000"))
    xgb = open_library(libdir)
    recs = []
    for name in names:
        rec = measure(xgb, work, name, predict_rows)
        print(json.dumps(rec), flush=True)
        recs.append(rec)
    print(f"\n{os.cpu_count()} cores; rows/s through SQL, one session; XGBoost {xgb.version} on all cores")
    print("| model | SHAP 1 thread | SHAP all | scaling | sessions x 1 thread | their scaling "
          "| XGBoost pred_contribs | ours / XGBoost "
          "| predict 1 thread | predict all | scaling | bitwise equal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in recs:
        print(f"| {r['name']} | {r['shap_1']:.0f} | {r['shap_all']:.0f} | {r['shap_scaling']:.2f} "
              f"| {r['sessions_all']:.0f} | {r['sessions_scaling']:.2f} "
              f"| {r['xgboost_contribs_all']:.0f} | {r['shap_all_over_xgboost']:.2f} "
              f"| {r['predict_1']:.0f} | {r['predict_all']:.0f} | {r['predict_scaling']:.2f} "
              f"| {'yes' if r['bitwise_equal'] else 'NO'} |")
    return 0 if all(r["bitwise_equal"] for r in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
