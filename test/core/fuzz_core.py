#!/usr/bin/env python3
"""Feed mutated fixture models to the compute core built with AddressSanitizer
and UndefinedBehaviorSanitizer (test/core/build/ts_cli_asan). A mutant may be
refused or accepted; a sanitizer report or a crash fails the run."""
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CLI = os.path.join(HERE, "build", "ts_cli_asan")
HOSTILE = [-1, 0, 1, 2, -7, 99999, 2**31, 1e308, -0.0, "x", None, [], {}, True, 1.5]


def mutate(raw, rng):
    kind = rng.randrange(6)
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
    if kind == 3:
        return bytes(b[:pos] + b[pos:pos + rng.randint(1, 100)] + b[pos:])
    doc = json.loads(raw)
    if kind == 4:
        trees = doc["learner"]["gradient_booster"].get("model") or doc["learner"]["gradient_booster"]["gbtree"]["model"]
        tree = rng.choice(trees["trees"])
        key = rng.choice(["left_children", "right_children", "split_indices", "split_conditions",
                          "sum_hessian", "default_left"])
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


def main():
    rng = random.Random(20261121)
    sources = [open(os.path.join(FIXTURES, f + ".json"), "rb").read()
               for f in ("dart", "poisson", "multiclass_v3", "nan")]
    total = 2000
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(total):
            path = os.path.join(tmp, f"m{i}.json")
            with open(path, "wb") as f:
                f.write(mutate(sources[i % len(sources)], rng))
            paths.append(path)
        accepted = 0
        for start in range(0, total, 200):
            res = subprocess.run([CLI, "load"] + paths[start:start + 200], capture_output=True, text=True)
            if res.returncode not in (0, 1) or "Sanitizer" in res.stderr or "runtime error" in res.stderr:
                print(res.stderr[-3000:])
                print("0 passed, 1 failed")
                return 1
            accepted += res.stdout.count("\nok ") + res.stdout.startswith("ok ")
    print(f"core fuzz: {total} mutants, {accepted} accepted, {total - accepted} refused, no sanitizer reports")
    print("1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
