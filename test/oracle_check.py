#!/usr/bin/env python3
"""Oracle check on models that are not in the repository.

Trains fresh XGBoost models (seeded from the clock unless TS_ORACLE_SEED is
set; the seed is printed), loads each with treeshap.load_model(..., replace
=> true), explains `SELECT id, <feature columns> FROM t` (bigint id, float8
features, NULL for missing) with treeshap.explain_shap_wide, and compares
with XGBoost's pred_contribs within 2e-5 relative to max(1, |margin|).
Connection settings come from the PG* environment variables.
"""
import os
import sys
import time

import numpy as np
import psycopg2
import xgboost as xgb

TOL = 2e-5
ROWS = 300


def data(rng, n, m, nan_rate):
    X = (rng.normal(size=(n, m)) * rng.uniform(0.5, 50, size=m)).astype(np.float32)
    X[rng.random(X.shape) < nan_rate] = np.nan
    Z = np.nan_to_num(X)
    y = Z[:, 0] / np.abs(Z[:, 0]).max() + np.sin(Z[:, 1 % m]) + (Z[:, 2 % m] > 0) * Z[:, 0 % m] / 10
    return X, y


def models(rng):
    yield "regression", {"objective": "reg:squarederror", "max_depth": 6}, 40, 0.0, None
    yield "binary", {"objective": "binary:logistic", "max_depth": 5}, 40, 0.05, lambda y: y > np.median(y)
    yield "multiclass", {"objective": "multi:softprob", "num_class": 5, "max_depth": 4}, 12, 0.05, \
        lambda y: np.digitize(y, np.quantile(y, [0.2, 0.4, 0.6, 0.8]))
    yield "nan_heavy", {"objective": "reg:squarederror", "max_depth": 7}, 30, 0.6, None
    yield "deep_repeated", {"objective": "reg:squarederror", "max_depth": 16, "min_child_weight": 0,
                            "colsample_bynode": 0.4}, 6, 0.1, None
    yield "dart", {"objective": "reg:squarederror", "booster": "dart", "rate_drop": 0.25,
                   "skip_drop": 0.0, "max_depth": 5}, 25, 0.1, None


def check(conn, name, booster, X, names):
    cur = conn.cursor()
    cols = names or [f"c{j}" for j in range(X.shape[1])]
    cur.execute("DROP TABLE IF EXISTS t")
    cur.execute("CREATE TABLE t (id bigint, %s)" % ", ".join(f'"{c}" float8' for c in cols))
    rows = [(i,) + tuple(None if np.isnan(v) else float(v) for v in X[i]) for i in range(len(X))]
    cur.executemany("INSERT INTO t VALUES (%s)" % ", ".join(["%s"] * (len(cols) + 1)), rows)
    raw = bytes(booster.save_raw("json"))
    cur.execute("SELECT num_trees FROM treeshap.load_model(%s, %s, replace => true)",
                (name, psycopg2.Binary(raw)))
    query = "SELECT id, %s FROM t" % ", ".join(f'"{c}"' for c in cols)
    cur.execute("SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide(%s, %s)",
                (name, query))
    got = {(r[0], r[1]): np.array(r[3] + [r[2]]) for r in cur.fetchall()}
    dm = xgb.DMatrix(X, feature_names=names, missing=np.nan)
    ref = booster.predict(dm, pred_contribs=True).reshape(len(X), -1, X.shape[1] + 1)
    margin = booster.predict(dm, output_margin=True).reshape(len(X), -1)
    worst = 0.0
    for i in range(len(X)):
        for k in range(ref.shape[1]):
            scale = max(1.0, abs(margin[i, k]))
            worst = max(worst, np.abs(got[(i, k)] - ref[i, k]).max() / scale)
            worst = max(worst, abs(got[(i, k)].sum() - margin[i, k]) / scale)
    conn.commit()
    return worst, len(got) == ref.shape[0] * ref.shape[1]


def main():
    seed = int(os.environ.get("TS_ORACLE_SEED", time.time_ns() % 2**31))
    rng = np.random.default_rng(seed)
    print(f"xgboost {xgb.__version__}, seed {seed}")
    conn = psycopg2.connect("")
    passed = failed = 0
    for kind, params, rounds, nan_rate, label in models(rng):
        m = int(rng.integers(3, 12))
        X, y = data(rng, 4000, m, nan_rate)
        y = label(y) if label else y
        names = [f"feat_{j}" for j in range(m)] if rng.random() < 0.5 else None
        params = {**params, "eta": float(rng.uniform(0.1, 0.5)), "seed": int(rng.integers(1000)),
                  "nthread": 2}
        booster = xgb.train(params, xgb.DMatrix(X[ROWS:], label=y[ROWS:], feature_names=names,
                                                missing=np.nan), rounds)
        worst, complete = check(conn, f"oracle_{kind}", booster, X[:ROWS], names)
        ok = complete and worst <= TOL
        passed += ok
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} {kind}: {len(booster.get_dump())} trees, {m} features, "
              f"{'named' if names else 'positional'}, max relative error {worst:.2e}")
    conn.cursor().execute("DROP TABLE IF EXISTS t")
    conn.commit()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
