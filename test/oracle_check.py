#!/usr/bin/env python3
"""Oracle check on models that are not in the repository.

Trains fresh XGBoost models (JSON, and UBJSON with categorical features) and,
when the lightgbm module is there, fresh LightGBM models (seeded from the
clock unless TS_ORACLE_SEED is set; the seed is printed), loads each with
treeshap.load_model(..., replace => true), explains `SELECT id, <feature
columns> FROM t` (bigint id, float8 features or bigint category codes, NULL
for missing) with treeshap.explain_shap_wide, and compares with the
library's own pred_contrib(s) within 1e-5 relative to max(1, |margin|).
Connection settings come from the PG* environment variables.
"""
import os
import sys
import time

import numpy as np
import psycopg2
import xgboost as xgb

try:
    import lightgbm as lgb
except ImportError:
    lgb = None

TOL = 1e-5
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


def with_categories(rng, X, ncat):
    """Replace the last ncat columns by integer codes (some missing, some unseen)."""
    m = X.shape[1]
    cats = list(range(m - ncat, m))
    for j in cats:
        X[:, j] = rng.integers(0, int(rng.integers(3, 40)), len(X))
        X[rng.random(len(X)) < 0.05, j] = np.nan
        X[:ROWS:17, j] = 77     # never seen in training
    return cats


def check(conn, name, raw, X, names, cats, ref, margin):
    """Load raw, explain X from a table and compare with ref / margin (rows x outputs x ...)."""
    cur = conn.cursor()
    cols = names or [f"f{j}" for j in range(X.shape[1])]
    types = ["bigint" if j in cats else "float8" for j in range(X.shape[1])]
    cur.execute("DROP TABLE IF EXISTS t")
    cur.execute("CREATE TABLE t (id bigint, %s)" % ", ".join(f'"{c}" {t}' for c, t in zip(cols, types)))
    rows = [(i,) + tuple(None if np.isnan(v) else (int(v) if j in cats else float(v))
                         for j, v in enumerate(X[i])) for i in range(len(X))]
    cur.executemany("INSERT INTO t VALUES (%s)" % ", ".join(["%s"] * (len(cols) + 1)), rows)
    cur.execute("SELECT num_trees FROM treeshap.load_model(%s, %s, replace => true)",
                (name, psycopg2.Binary(raw)))
    query = "SELECT id, %s FROM t" % ", ".join(f'"{c}"' for c in cols)
    cur.execute("SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide(%s, %s)",
                (name, query))
    got = {(r[0], r[1]): np.array(r[3] + [r[2]]) for r in cur.fetchall()}
    ref = ref.reshape(len(X), -1, X.shape[1] + 1)
    margin = margin.reshape(len(X), -1)
    worst = 0.0
    for i in range(len(X)):
        for k in range(ref.shape[1]):
            scale = max(1.0, abs(margin[i, k]))
            worst = max(worst, np.abs(got[(i, k)] - ref[i, k]).max() / scale)
            worst = max(worst, abs(got[(i, k)].sum() - margin[i, k]) / scale)
    conn.commit()
    return worst, len(got) == ref.shape[0] * ref.shape[1]


def xgboost_cases(rng):
    """(label, raw model, X, names, categorical columns, contribs, margins) per fresh model."""
    for kind, params, rounds, nan_rate, label in models(rng):
        m = int(rng.integers(3, 12))
        X, y = data(rng, 4000, m, nan_rate)
        y = label(y) if label else y
        cats = with_categories(rng, X, int(rng.integers(1, 3))) if kind in ("binary", "multiclass") else []
        fmt = "ubj" if cats else "json"
        names = [f"feat_{j}" for j in range(m)] if rng.random() < 0.5 else None
        types = ["c" if j in cats else "q" for j in range(m)]
        params = {**params, "eta": float(rng.uniform(0.1, 0.5)), "seed": int(rng.integers(1000)),
                  "nthread": 2}
        if cats:    # categorical splits need hist; the others keep the library's default method
            params.update(tree_method="hist", max_cat_to_onehot=int(rng.choice([1, 64])))
        booster = xgb.train(params, xgb.DMatrix(X[ROWS:], label=y[ROWS:], feature_names=names,
                                                feature_types=types, enable_categorical=True,
                                                missing=np.nan), rounds)
        dm = xgb.DMatrix(X[:ROWS], feature_names=names, feature_types=types, enable_categorical=True,
                         missing=np.nan)
        yield (f"xgboost {kind} ({fmt}{', categorical' if cats else ''})", bytes(booster.save_raw(fmt)),
               X[:ROWS], names, cats, booster.predict(dm, pred_contribs=True),
               booster.predict(dm, output_margin=True))


def lightgbm_cases(rng):
    """Fresh LightGBM models: regression, binary, multiclass, zero-as-missing, random forest."""
    shapes = [("regression", {"objective": "regression"}, None),
              ("binary", {"objective": "binary", "sigmoid": float(rng.uniform(0.5, 2))},
               lambda y: y > np.median(y)),
              ("multiclass", {"objective": "multiclass", "num_class": 4},
               lambda y: np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75]))),
              ("zero_as_missing", {"objective": "regression", "zero_as_missing": True}, None),
              ("rf", {"objective": "regression", "boosting": "rf", "bagging_freq": 1,
                      "bagging_fraction": 0.7}, None)]
    for kind, params, label in shapes:
        m = int(rng.integers(3, 12))
        X, y = data(rng, 4000, m, 0.1)
        X[rng.random(X.shape) < 0.1] = 0.0
        y = label(y) if label else y
        cats = with_categories(rng, X, int(rng.integers(1, 3)))
        names = [f"feat_{j}" for j in range(m)]
        rounds = int(rng.integers(5, 30))
        booster = lgb.train({**params, "num_leaves": int(rng.integers(4, 64)), "verbose": -1,
                             "num_threads": 2, "min_data_per_group": 5, "cat_smooth": 1,
                             "seed": int(rng.integers(1000))},
                            lgb.Dataset(X[ROWS:], y[ROWS:], feature_name=names, categorical_feature=cats),
                            rounds)
        Xe = X[:ROWS].astype(np.float64)
        contribs = booster.predict(Xe, pred_contrib=True)
        margin = booster.predict(Xe, raw_score=True)
        if kind == "rf":     # LightGBM sums in raw outputs what it averages in predictions
            contribs, margin = contribs / rounds, margin / rounds
        yield (f"lightgbm {kind}", booster.model_to_string().encode(), X[:ROWS], names, cats,
               contribs, margin)


def main():
    seed = int(os.environ.get("TS_ORACLE_SEED", time.time_ns() % 2**31))
    rng = np.random.default_rng(seed)
    print(f"xgboost {xgb.__version__}, lightgbm {lgb.__version__ if lgb else 'not installed'}, seed {seed}")
    conn = psycopg2.connect("")
    passed = failed = 0
    cases = [xgboost_cases(rng)] + ([lightgbm_cases(rng)] if lgb else [])
    for label, raw, X, names, cats, contribs, margin in (c for gen in cases for c in gen):
        worst, complete = check(conn, "oracle_case", raw, X, names, cats, contribs, margin)
        ok = complete and worst <= TOL
        passed += ok
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} {label}: {X.shape[1]} features ({len(cats)} categorical), "
              f"{'named' if names else 'positional'}, max relative error {worst:.2e}")
    conn.cursor().execute("DROP TABLE IF EXISTS t")
    conn.commit()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
