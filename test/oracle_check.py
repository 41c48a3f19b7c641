#!/usr/bin/env python3
"""Oracle check on models that are not in the repository.

Trains fresh XGBoost models (JSON, and UBJSON with categorical features) and,
when the lightgbm module is there, fresh LightGBM models (seeded from the
clock unless TS_ORACLE_SEED is set; the seed is printed), loads each with
treeshap.load_model(..., replace => true), explains `SELECT id, <feature
columns> FROM t` (bigint id, float8 features or bigint category codes, NULL
for missing) with treeshap.explain_shap_wide, and compares with the
library's own pred_contrib(s) within 1e-5 relative to max(1, |margin|).
Then interventional SHAP (background => ...) of fresh XGBoost models, a
regression and a binary one with NaN and a categorical column, in margin
and probability space, against the brute force over all feature subsets
(test/fixtures/make_interventional.py; it needs lightgbm) and, where shap
is installed and reads the model right, shap's interventional
TreeExplainer, within 1e-6, and additivity against the margins of the
model's paths (float64, plus XGBoost's base score). Where treelite,
scikit-learn and shap are installed, fresh scikit-learn forests and boosted
trees (every kind make_treelite.py covers) go in as Treelite checkpoints and
are compared with shap's TreeExplainer on the scikit-learn model.
Connection settings come from the PG* environment variables.
"""
import json
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
try:
    import catboost as cb
except ImportError:
    cb = None
try:
    import pandas as pd
except ImportError:
    pd = None
try:    # the brute-force Shapley values of the fixtures' scripts (they need lightgbm too)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
    from make_interactions import brute_contribs, xgb_paths
    from make_interventional import Fixture, brute as brute_interventional, xgb_cat_paths
except ImportError:
    brute_contribs = xgb_paths = brute_interventional = xgb_cat_paths = None
    Fixture = object
try:
    import shap
except ImportError:
    shap = None
try:    # scikit-learn's models through Treelite checkpoints, against shap on the original model
    import treelite.sklearn
    from sklearn import ensemble
    from make_treelite import explain as sklearn_reference
except ImportError:
    treelite = sklearn_reference = None

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


def load_table(conn, X, names, cats):
    """Table t: a bigint id (the row's index) and X's columns; returns the column names."""
    cur = conn.cursor()
    cols = names or [f"f{j}" for j in range(X.shape[1])]
    text = cats if isinstance(cats, dict) else {}     # column -> category names: a text column
    types = ["text" if j in text else "bigint" if j in cats else "float8" for j in range(X.shape[1])]
    cur.execute("DROP TABLE IF EXISTS t")
    cur.execute("CREATE TABLE t (id bigint, %s)" % ", ".join(f'"{c}" {t}' for c, t in zip(cols, types)))
    rows = [(i,) + tuple(None if np.isnan(v) else text[j][int(v)] if j in text else
                         int(v) if j in cats else float(v)
                         for j, v in enumerate(X[i])) for i in range(len(X))]
    cur.executemany("INSERT INTO t VALUES (%s)" % ", ".join(["%s"] * (len(cols) + 1)), rows)
    return cols


def check(conn, name, raw, X, names, cats, ref, margin):
    """Load raw, explain X from a table and compare with ref / margin (rows x outputs x ...)."""
    cols = load_table(conn, X, names, cats)
    cur = conn.cursor()
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


def edited_inf(booster):
    """The model with node 1 of every tree split at -inf and node 2 at +inf (what XGBoost
    writes for a split of present against missing values when it trains on the GPU)."""
    doc = json.loads(booster.save_raw("json"))
    model = doc["learner"]["gradient_booster"]["model"]
    for t in model["trees"]:
        for node, thr in ((1, -np.inf), (2, np.inf)):
            if len(t["left_children"]) > node and t["left_children"][node] != -1:
                t["split_conditions"][node] = thr
    edited = xgb.Booster()
    edited.load_model(bytearray(json.dumps(doc).encode()))
    return edited


def new_kinds(rng):
    """Models of the kinds users bring as saved today: +-inf thresholds, logitraw with any
    base score, vector leaves (brute force: XGBoost has no contributions for them), string
    categories from pandas explained from text columns, a 70-byte feature name, CatBoost."""
    version = tuple(int(v) for v in xgb.__version__.split(".")[:2])
    m = int(rng.integers(3, 7))
    X, y = data(rng, 3000, m, 0.15)
    names = [f"feat_{j}" for j in range(m)]
    dm = xgb.DMatrix(X[:ROWS], missing=np.nan)
    booster = edited_inf(xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 2,
                                    "seed": int(rng.integers(1000))},
                                   xgb.DMatrix(X[ROWS:], label=y[ROWS:] > np.median(y), missing=np.nan), 10))
    fmt = str(rng.choice(["json", "ubj"]))
    yield (f"xgboost +-inf thresholds ({fmt})", bytes(booster.save_raw(fmt)), X[:ROWS], None, [],
           booster.predict(dm, pred_contribs=True), booster.predict(dm, output_margin=True))
    base = float(rng.uniform(-1.0, 1.5))
    booster = xgb.train({"objective": "binary:logitraw", "base_score": base, "max_depth": 4, "nthread": 2},
                        xgb.DMatrix(X[ROWS:], label=y[ROWS:] > np.median(y), missing=np.nan), 10)
    yield (f"xgboost binary:logitraw, base_score {base:.3f}", bytes(booster.save_raw("json")), X[:ROWS],
           None, [], booster.predict(dm, pred_contribs=True), booster.predict(dm, output_margin=True))
    long_names = names[:]
    long_names[0] = "a_feature_name_longer_than_any_postgresql_identifier_can_be_" + "x" * 9
    booster = xgb.train({"objective": "reg:squarederror", "max_depth": 4, "nthread": 2},
                        xgb.DMatrix(X[ROWS:], label=y[ROWS:], feature_names=long_names, missing=np.nan), 10)
    dm = xgb.DMatrix(X[:ROWS], feature_names=long_names, missing=np.nan)
    yield ("xgboost 70-byte feature name", bytes(booster.save_raw("json")), X[:ROWS], long_names, [],
           booster.predict(dm, pred_contribs=True), booster.predict(dm, output_margin=True))
    if version >= (2, 0) and brute_contribs is not None:
        k = int(rng.integers(2, 4))
        Y = np.c_[[np.nan_to_num(X[:, j % m]) * (j + 1) for j in range(k)]].T
        booster = xgb.train({"tree_method": "hist", "multi_strategy": "multi_output_tree", "max_depth": 3,
                             "nthread": 2}, xgb.DMatrix(X[ROWS:], label=Y[ROWS:], missing=np.nan), 6)
        learner = json.loads(booster.save_raw("json"))["learner"]
        Xs = X[:60]
        margin = booster.predict(xgb.DMatrix(Xs, missing=np.nan), output_margin=True)
        phi = brute_contribs(list(xgb_paths(learner)), Xs.astype(np.float64), k)
        phi[:, :, -1] += (margin - phi.sum(axis=-1))[0]     # the base margin, beyond the trees
        yield (f"xgboost vector leaves ({k} targets, brute force)", bytes(booster.save_raw("ubj")), Xs,
               None, [], phi, margin)
    if cb is not None and pd is not None:
        yield from catboost_cases(rng, X, y)
    if version >= (3, 1) and pd is not None:
        for label, raw, Xc, cols, names_of, ref, margin in text_category_cases(rng, X, y):
            yield label, raw, Xc, cols, names_of, ref, margin


def catboost_cases(rng, X, y):
    """Fresh CatBoost models of float features (regression, binary, multiclass) as JSON,
    against CatBoost's ShapValues and raw formula values."""
    import tempfile
    shapes = [("RMSE", cb.CatBoostRegressor, y), ("Logloss", cb.CatBoostClassifier, y > np.median(y)),
              ("MultiClass", cb.CatBoostClassifier, np.digitize(y, np.quantile(y, [0.3, 0.7])))]
    for loss, kind, target in shapes:
        model = kind(iterations=int(rng.integers(5, 20)), depth=int(rng.integers(2, 7)), verbose=0,
                     loss_function=loss, nan_mode=str(rng.choice(["Min", "Max"])), thread_count=2,
                     random_seed=int(rng.integers(1000)), allow_writing_files=False).fit(X[ROWS:], target[ROWS:])
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            model.save_model(f.name, format="json")
            raw = open(f.name, "rb").read()
        pool = cb.Pool(X[:ROWS])
        yield (f"catboost {loss}", raw, X[:ROWS], None, [],
               model.get_feature_importance(pool, type="ShapValues"),
               model.predict(pool, prediction_type="RawFormulaVal"))
    # one-hot categorical splits, explained from a text column (CatBoost hashes the names)
    m = X.shape[1]
    levels = [f"kind {c}" * int(rng.integers(1, 12)) for c in range(int(rng.integers(2, 9)))]
    codes = rng.integers(0, len(levels), len(X)).astype(float)
    cols = [f"feat_{j}" for j in range(m)] + ["kind"]
    frame = pd.DataFrame(X, columns=cols[:m])
    frame["kind"] = [levels[int(c)] for c in codes]
    target = np.nan_to_num(y) + np.isin(codes, [0, 1]) * 2
    model = cb.CatBoostRegressor(iterations=10, depth=int(rng.integers(2, 6)), verbose=0, thread_count=2,
                                 one_hot_max_size=255, allow_writing_files=False,
                                 random_seed=int(rng.integers(1000))).fit(frame.iloc[ROWS:], target[ROWS:],
                                                                          cat_features=["kind"])
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        model.save_model(f.name, format="json")
        raw = open(f.name, "rb").read()
    pool = cb.Pool(frame.iloc[:ROWS], cat_features=["kind"])
    yield ("catboost one-hot categories from a text column", raw, np.c_[X, codes][:ROWS], cols, {m: levels},
           model.get_feature_importance(pool, type="ShapValues"),
           model.predict(pool, prediction_type="RawFormulaVal"))


def text_category_cases(rng, X, y):
    """XGBoost and LightGBM trained on pandas string categories; explained from text columns."""
    m = X.shape[1]
    levels = [f"level {c}" for c in range(int(rng.integers(3, 12)))]
    codes = rng.integers(0, len(levels), len(X)).astype(float)
    codes[rng.random(len(X)) < 0.05] = np.nan
    Xc = np.c_[X, codes]
    yc = np.nan_to_num(y) + np.isin(codes, [0, 2]) * 3
    cols = [f"feat_{j}" for j in range(m)] + ["kind"]
    frame = pd.DataFrame(Xc[:, :m], columns=cols[:m])
    frame["kind"] = pd.Categorical([None if np.isnan(c) else levels[int(c)] for c in codes],
                                   categories=levels)
    booster = xgb.train({"tree_method": "hist", "max_depth": 4, "nthread": 2,
                         "max_cat_to_onehot": int(rng.choice([1, 64]))},
                        xgb.DMatrix(frame.iloc[ROWS:], label=yc[ROWS:], enable_categorical=True), 10)
    dm = xgb.DMatrix(frame.iloc[:ROWS], enable_categorical=True)
    yield ("xgboost pandas string categories from a text column", bytes(booster.save_raw("json")),
           Xc[:ROWS], cols, {m: levels}, booster.predict(dm, pred_contribs=True),
           booster.predict(dm, output_margin=True))
    if lgb is not None:
        booster = lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1, "num_threads": 2,
                             "min_data_per_group": 5, "cat_smooth": 1},
                            lgb.Dataset(frame.iloc[ROWS:], yc[ROWS:]), 10)
        ev = frame.iloc[:ROWS]
        yield ("lightgbm pandas_categorical from a text column", booster.model_to_string().encode(),
               Xc[:ROWS], cols, {m: levels}, booster.predict(ev, pred_contrib=True),
               booster.predict(ev, raw_score=True))
        booster = lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1, "num_threads": 2},
                            lgb.Dataset(X[ROWS:], y[ROWS:]), 10)
        Xe = X[:ROWS].astype(np.float64)
        yield ("lightgbm without names (Column_<j>), by position", booster.model_to_string().encode(),
               X[:ROWS], None, [], booster.predict(Xe, pred_contrib=True), booster.predict(Xe, raw_score=True))


IV_ROWS, IV_BG = 4, 12     # interventional: rows explained, background rows (brute force per pair)


class FreshForest(Fixture):
    """A fresh XGBoost model as make_interventional.py's brute force reads it. Margins come from
    its paths and base_score in float64 (checked against XGBoost's): XGBoost's float32 margins
    put rounding into the brute force's probability rescaling, up to 4.15e-06 once in CI."""

    def __init__(self, booster, dm_args, link):   # noqa: super().__init__ reads a fixture file
        learner = json.loads(booster.save_raw("json"))["learner"]
        self.paths = list(xgb_cat_paths(learner))
        self.outputs, self.link, self.scale = 1, link, 1.0
        p = float(learner["learner_model_param"]["base_score"].strip("[]"))
        self.base = np.array([np.log(p / (1 - p)) if link == "logistic" else p])
        self.booster, self.dm_args = booster, dm_args

    def margins(self, X):
        ours = self.path_margins(X) + self.base
        theirs = self.booster.predict(xgb.DMatrix(X, **self.dm_args), output_margin=True)
        assert np.abs(ours[:, 0] - theirs).max() <= 1e-5 * max(1.0, np.abs(theirs).max())
        return ours


def treelite_cases(rng):
    """Fresh scikit-learn forests and boosted trees, saved as Treelite checkpoints."""
    kinds = [("RandomForestRegressor", None, "predict"), ("RandomForestClassifier", 2, "predict_proba"),
             ("ExtraTreesClassifier", 3, "predict_proba"), ("ExtraTreesRegressor", None, "predict"),
             ("GradientBoostingRegressor", None, "predict"),
             ("GradientBoostingClassifier", 2, "decision_function"),
             ("HistGradientBoostingRegressor", None, "predict"),
             ("HistGradientBoostingClassifier", 2, "decision_function")]
    for kind, classes, raw in kinds:
        m = int(rng.integers(3, 10))
        X, y = data(rng, 3000, m, 0.1 if kind.startswith("Hist") else 0.0)
        if classes:
            y = np.digitize(y, np.quantile(y, np.linspace(0, 1, classes + 1)[1:-1]))
        params = {"random_state": int(rng.integers(1000))}
        if kind.startswith("Hist"):
            params.update(max_iter=int(rng.integers(5, 30)), max_leaf_nodes=int(rng.integers(4, 32)))
        else:
            params.update(n_estimators=int(rng.integers(2, 12)), max_depth=int(rng.integers(2, 12)))
        model = getattr(ensemble, kind)(**params).fit(X[ROWS:], y[ROWS:])
        contribs, margin = sklearn_reference(model, X[:ROWS], raw)
        yield (f"scikit-learn {kind} (treelite)", bytes(treelite.sklearn.import_model(model).serialize_bytes()),
               X[:ROWS], None, [], contribs.reshape(ROWS, -1), margin)


def interventional_cases(rng):
    """(label, raw, X: rows then background, cats, model, {space: (values, base)}, {space: shap's})
    per fresh model; shap's only where it is installed and reads the model right."""
    shapes = [("regression", {"objective": "reg:squarederror"}, None, 0),
              ("binary", {"objective": "binary:logistic"}, lambda y: y > np.median(y), 1)]
    for kind, params, label, ncat in shapes:
        m = int(rng.integers(3, 7))
        X, y = data(rng, 2000, m, 0.1)
        y = label(y) if label else y
        cats = with_categories(rng, X, ncat) if ncat else []
        types = ["c" if j in cats else "q" for j in range(m)]
        dm_args = {"feature_types": types, "enable_categorical": True, "missing": np.nan}
        params = {**params, "max_depth": 4, "eta": 0.3, "seed": int(rng.integers(1000)), "nthread": 2,
                  **({"tree_method": "hist", "max_cat_to_onehot": 1} if cats else {})}
        booster = xgb.train(params, xgb.DMatrix(X[ROWS:], label=y[ROWS:], **dm_args), 15)
        fx = FreshForest(booster, dm_args, "logistic" if label else "identity")
        Xr, R = X[:IV_ROWS].astype(np.float64), X[IV_ROWS:IV_ROWS + IV_BG].astype(np.float64)
        spaces = ["margin"] + (["probability"] if label else [])
        refs = {sp: brute_interventional(fx, Xr, R, sp == "probability") for sp in spaces}
        theirs = {}
        if shap is not None and not cats:   # shap reads XGBoost's categorical splits wrongly
            for sp in spaces:
                e = shap.TreeExplainer(booster, data=shap.maskers.Independent(R, max_samples=len(R)),
                                       feature_perturbation="interventional",
                                       model_output="probability" if sp == "probability" else "raw")
                theirs[sp] = np.asarray(e.shap_values(Xr, check_additivity=False), dtype=float)
        yield (f"xgboost {kind} interventional ({'categorical, ' if cats else ''}NaN; "
               f"brute force{', shap' if theirs else ''})", bytes(booster.save_raw("ubj")),
               X[:IV_ROWS + IV_BG], cats, fx, refs, theirs)


def check_interventional(conn, raw, X, cats, fx, refs, theirs):
    """Ours against the background rows of X (ids IV_ROWS on) for every space of refs:
    worst difference from the brute force and shap, and additivity, relative to max(1, |output|)."""
    load_table(conn, X, None, cats)
    cur = conn.cursor()
    cur.execute("SELECT num_trees FROM treeshap.load_model('oracle_iv', %s, replace => true)",
                (psycopg2.Binary(raw),))
    cols = ", ".join(f'"f{j}"' for j in range(X.shape[1]))
    margin = fx.margins(X[:IV_ROWS].astype(np.float64))[:, 0]
    worst, complete = 0.0, True
    for space, (ref, base) in refs.items():
        cur.execute("SELECT row_key, base_value, shap_values FROM treeshap.explain_shap_wide("
                    "'oracle_iv', %s, model_output => %s, background => %s) ORDER BY row_key",
                    (f"SELECT id, {cols} FROM t WHERE id < {IV_ROWS}", space,
                     f"SELECT {cols} FROM t WHERE id >= {IV_ROWS}"))
        got = cur.fetchall()
        complete = complete and len(got) == IV_ROWS
        for i, b, phi in got:
            out = margin[i] if space == "margin" else 1.0 / (1.0 + np.exp(-margin[i]))
            scale = max(1.0, abs(out))
            worst = max(worst, np.abs(np.array(phi) - ref[i, 0]).max() / scale, abs(b - base[0]) / scale,
                        abs(sum(phi) + b - out) / scale)
            if space in theirs:
                worst = max(worst, np.abs(np.array(phi) - theirs[space][i]).max() / scale)
    conn.commit()
    return worst, complete


def main():
    seed = int(os.environ.get("TS_ORACLE_SEED", time.time_ns() % 2**31))
    rng = np.random.default_rng(seed)
    print(f"xgboost {xgb.__version__}, lightgbm {lgb.__version__ if lgb else 'not installed'}, seed {seed}")
    conn = psycopg2.connect("")
    passed = failed = 0
    cases = [xgboost_cases(rng)] + ([lightgbm_cases(rng)] if lgb else []) + [new_kinds(rng)]
    if sklearn_reference is None:
        print("treelite, scikit-learn or shap not installed: no fresh Treelite models")
    else:
        cases.append(treelite_cases(rng))
    for label, raw, X, names, cats, contribs, margin in (c for gen in cases for c in gen):
        worst, complete = check(conn, "oracle_case", raw, X, names, cats, contribs, margin)
        ok = complete and worst <= TOL
        passed += ok
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} {label}: {X.shape[1]} features ({len(cats)} categorical), "
              f"{'named' if names else 'positional'}, max relative error {worst:.2e}")
    if brute_interventional is None:
        print("interventional: no brute force here (the fixtures' scripts need lightgbm): skipped")
    for label, raw, X, cats, fx, refs, theirs in interventional_cases(rng) if brute_interventional else ():
        worst, complete = check_interventional(conn, raw, X, cats, fx, refs, theirs)
        ok = complete and worst <= 1e-6
        passed += ok
        failed += not ok
        print(f"{'ok' if ok else 'FAIL'} {label}: {X.shape[1]} features, {', '.join(refs)}, "
              f"max relative error {worst:.2e}")
    conn.cursor().execute("DROP TABLE IF EXISTS t")
    conn.commit()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
