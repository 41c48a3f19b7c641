#!/usr/bin/env python3
"""Feed mutated fixture models to the compute core built with AddressSanitizer
and UndefinedBehaviorSanitizer (test/core/build/ts_cli_asan): XGBoost JSON,
XGBoost UBJSON, LightGBM text, CatBoost JSON and Treelite checkpoints. A mutant may be refused or accepted; a
sanitizer report or a crash fails the run."""
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CLI = os.path.join(HERE, "build", "ts_cli_asan")
HOSTILE = [-1, 0, 1, 2, -7, 99999, 2**31, 1e308, -0.0, "x", None, [], {}, True, 1.5]
HOSTILE_TOKENS = ["-1", "0", "1", "7", "-7", "1e308", "nan", "inf", "-inf", "2147483648",
                  "-2147483649", "99999999", "", "x", "1.5", "-0", "4294967296", "15", "8", "1e-45"]


def mutate_bytes(raw, rng, kind):
    """Overwrite bytes, truncate, delete a span or duplicate one."""
    b = bytearray(raw)
    pos = rng.randrange(len(b))
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 1:
        return bytes(b[:pos])
    if kind == 2:
        return bytes(b[:pos] + b[pos + rng.randint(1, 200):])
    return bytes(b[:pos] + b[pos:pos + rng.randint(1, 100)] + b[pos:])


def mutate(raw, rng):
    """XGBoost JSON: bytes, or one hostile value in a tree array or learner parameter."""
    kind = rng.randrange(6)
    if kind < 4:
        return mutate_bytes(raw, rng, kind)
    doc = json.loads(raw)
    model = doc["learner"]["gradient_booster"].get("model") or doc["learner"]["gradient_booster"]["gbtree"]["model"]
    if kind == 4 and (model.get("cats") or {}).get("enc") and rng.random() < 0.5:     # a dictionary
        enc = rng.choice(model["cats"]["enc"])
        key = rng.choice(["offsets", "values"])
        if enc.get(key) and rng.random() < 0.5:
            enc[key][rng.randrange(len(enc[key]))] = rng.choice(HOSTILE + [256, -1, 10**6])
        else:
            enc[key] = rng.choice([[], [0], [5, 2], [0, 0, 0], None, "x"])
        return json.dumps(doc).encode()
    if kind == 4:
        trees = model
        tree = rng.choice(trees["trees"])
        key = rng.choice([k for k in ("left_children", "right_children", "split_indices",
                                      "split_conditions", "sum_hessian", "default_left",
                                      "leaf_weights", "tree_param") if k in tree])
        if key == "tree_param":     # vector leaves: a leaf size that does not fit
            tree[key]["size_leaf_vector"] = rng.choice(["0", "1", "2", "4", "-1", "99999", "x"])
            return json.dumps(doc).encode()
        arr = tree[key]
        if rng.random() < 0.2:
            arr.pop(rng.randrange(len(arr)))
        else:
            arr[rng.randrange(len(arr))] = rng.choice(HOSTILE)
    else:
        p = doc["learner"]["learner_model_param"]
        p[rng.choice(["num_feature", "num_class", "base_score", "num_target"])] = rng.choice(
            ["-1", "0", "abc", "1e400", "[0.5,0.5]", "99999999", 3, None, "[]", "[", "0.5,"])
    return json.dumps(doc).encode()


def mutate_catboost(raw, rng):
    """CatBoost JSON: bytes, or a hostile value in a split, a leaf array or a feature's info."""
    if rng.random() < 0.3:
        return mutate_bytes(raw, rng, rng.randrange(4))
    doc = json.loads(raw)
    tree = rng.choice(doc["oblivious_trees"])
    kind = rng.randrange(4)
    if kind == 0:
        split = rng.choice(tree["splits"])
        split[rng.choice(["border", "float_feature_index", "split_type", "cat_feature_index"])] = \
            rng.choice(HOSTILE + ["OnlineCtr", "OneHotFeature", 1e39, float("nan")])
    elif kind == 1:
        arr = tree[rng.choice(["leaf_values", "leaf_weights"])]
        if rng.random() < 0.5:
            arr.pop(rng.randrange(len(arr)))
        else:
            arr[rng.randrange(len(arr))] = rng.choice(HOSTILE)
    elif kind == 2:
        f = rng.choice(doc["features_info"]["float_features"])
        f[rng.choice(["flat_feature_index", "feature_index", "nan_value_treatment", "feature_id"])] = \
            rng.choice(HOSTILE + [4194304, "AsTrue"])
    else:
        tree["splits"] = tree["splits"] * rng.choice([0, 2, 9])
    return json.dumps(doc).encode()


def mutate_ubj(raw, rng):
    """Bytes, or a hostile value in one of the big-endian int64 lengths and counts."""
    if rng.random() < 0.5:
        return mutate_bytes(raw, rng, rng.randrange(4))
    b = bytearray(raw)
    spots = [i for i in range(len(b) - 9) if b[i] == ord("L") and b[i + 1] == 0]
    if not spots:
        return mutate_bytes(raw, rng, rng.randrange(4))
    i = rng.choice(spots)
    value = rng.choice([0, 1, 7, 2**31, 2**62, 2**63 - 1, 2**64 - 1, len(b), len(b) * 8])
    b[i + 1:i + 9] = value.to_bytes(8, "big")
    return bytes(b)


def mutate_lightgbm(raw, rng):
    """Bytes, or one hostile token in a "key=values" line, or a line dropped or doubled."""
    if rng.random() < 0.3:
        return mutate_bytes(raw, rng, rng.randrange(4))
    lines = raw.decode().split("\n")
    i = rng.randrange(len(lines))
    kind = rng.randrange(4)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[i])
    elif "=" in lines[i]:
        key, vals = lines[i].split("=", 1)
        toks = vals.split(" ")
        toks[rng.randrange(len(toks))] = str(rng.choice(HOSTILE_TOKENS))
        lines[i] = key + "=" + " ".join(toks)
    return "\n".join(lines).encode()


def mutate_treelite(raw, rng):
    """Bytes, or a hostile little-endian int32, uint64, float or double at any offset (counts,
    node types, children, features, thresholds, segment offsets)."""
    if rng.random() < 0.4:
        return mutate_bytes(raw, rng, rng.randrange(4))
    b = bytearray(raw)
    i = rng.randrange(len(b) - 8)
    kind = rng.randrange(3)
    if kind == 0:
        value = rng.choice([0, 1, 2, 3, 5, 7, -1, -2, 2**31 - 1, -2**31, len(b)])
        b[i:i + 4] = struct.pack("<i", value)
    elif kind == 1:
        value = rng.choice([0, 1, 7, 2**31, 2**32 - 1, 2**62, 2**63, 2**64 - 1, len(b), len(b) // 8])
        b[i:i + 8] = struct.pack("<Q", value)
    else:
        value = rng.choice([float("nan"), float("inf"), -float("inf"), 1e300, -0.0, 3.4e38, 5e-324])
        if rng.random() < 0.5:
            b[i:i + 8] = struct.pack("<d", value)
        else:
            b[i:i + 4] = struct.pack("<f", value if abs(value) < 3.5e38 or value != value else float("inf"))
    return bytes(b)


def run_mutants(name, mutants):
    """Load every mutant through the sanitised CLI; (accepted, failure output or None)."""
    accepted = 0
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, data in enumerate(mutants):
            path = os.path.join(tmp, f"m{i}")
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        for start in range(0, len(paths), 200):
            res = subprocess.run([CLI, "load"] + paths[start:start + 200], capture_output=True, text=True,
                                 errors="replace")
            if res.returncode not in (0, 1) or "Sanitizer" in res.stderr or "runtime error" in res.stderr:
                return accepted, f"{name}: " + res.stderr[-3000:]
            accepted += res.stdout.count("\nok ") + res.stdout.startswith("ok ")
    return accepted, None


def main():
    rng = random.Random(20261121)

    def source(name):
        with open(os.path.join(FIXTURES, name), "rb") as f:
            return f.read()

    json_sources = [source(f + ".json") for f in ("dart", "poisson", "multiclass_v3", "nan",
                                                  "vector_leaf", "inf_json", "xgb_text_cats")]
    ubj_sources = [source("xgb_cat_ubj.ubj"), source("xgb_reg_ubj.ubj"), source("xgb_text_onehot.ubj")]
    lgb_sources = [source(f + ".txt") for f in ("lgb_multiclass", "lgb_binary", "lgb_rf", "lgb_text_cats")]
    cb_sources = [source(f + ".json") for f in ("cb_multiclass", "cb_binary", "cb_uncertainty", "cb_onehot")]
    tl_sources = [source(f + ".tl") for f in ("tl_ops", "tl_nocover", "tl_rf_multi", "tl_hgb_binary", "tl_gb_reg")]
    runs = [
        ("catboost", [mutate_catboost(cb_sources[i % len(cb_sources)], rng) for i in range(1500)]),
        ("json", [mutate(json_sources[i % len(json_sources)], rng) for i in range(3000)]),
        ("ubjson", [mutate_ubj(ubj_sources[i % len(ubj_sources)], rng) for i in range(1000)]),
        ("lightgbm", [mutate_lightgbm(lgb_sources[i % len(lgb_sources)], rng) for i in range(1200)]),
        ("treelite", [mutate_treelite(tl_sources[i % len(tl_sources)], rng) for i in range(1500)]),
    ]
    for name, mutants in runs:
        accepted, failure = run_mutants(name, mutants)
        if failure is not None:
            print(failure)
            print("0 passed, 1 failed")
            return 1
        print(f"core fuzz ({name}): {len(mutants)} mutants, {accepted} accepted, "
              f"{len(mutants) - accepted} refused, no sanitizer reports")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
