#!/usr/bin/env python3
"""The GPU quadrature layout, checked where CI has no GPU: for every fixture,
ts_cli (built with AddressSanitizer) evaluates the layout of src/gpu/ts_gpu_quad.c
on the host exactly as cuda/ts_quad.cu does per row (chunks, slots,
coefficients, nodes), and each row is compared with the fixture's oracle
(XGBoost pred_contribs, LightGBM pred_contrib, or the numpy quadrature oracle
of the long-path fixtures), relative to max(1, |margin|), and for additivity.
Then every model has at most one path per leaf: a vector leaf's values share it.

    test/core/layout_check.py [BOUND]      default bound 1e-5
"""
import csv
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CLI = os.path.join(HERE, "build", "ts_cli_asan")


def model_of(name):
    for ext in (".json", ".ubj", ".txt", ".tl"):
        path = os.path.join(FIXTURES, name + ext)
        if os.path.exists(path):
            return path
    return None


def feature_lines(data_csv):
    """The fixture's rows as ts_cli CSV lines (feature values only, empty = missing)."""
    with open(data_csv, newline="") as f:
        for row in csv.reader(f):
            values = row[1].strip("{}").split(",")
            yield ",".join("" if v == "NULL" else v for v in values)


def check(name, bound):
    model = model_of(name)
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as tmp:
        tmp.write("\n".join(feature_lines(os.path.join(FIXTURES, name + ".data.csv"))) + "\n")
    try:
        out = subprocess.run([CLI, "contribs", model, tmp.name, "gpu-layout"], check=True,
                             capture_output=True, text=True).stdout.split("\n")
    finally:
        os.unlink(tmp.name)
    got = [[float(v) for v in line.split(",")] for line in out if line]
    worst = worst_sum = 0.0
    with open(os.path.join(FIXTURES, name + ".expected.csv"), newline="") as f:
        expected = list(csv.reader(f))
    outputs = len(expected) // len(got)
    for row_index, (ident, output, margin, contribs) in enumerate(expected):
        want = [float(v) for v in contribs.strip("{}").split(",")]
        row = got[row_index // outputs]
        have = row[(row_index % outputs) * len(want):(row_index % outputs + 1) * len(want)]
        scale = max(1.0, abs(float(margin)))
        worst = max([worst] + [abs(a - b) / scale for a, b in zip(have, want)])
        worst_sum = max(worst_sum, abs(sum(have) - float(margin)) / scale)
    ok = worst <= bound and worst_sum <= bound
    print(f"{'ok ' if ok else 'BAD'} {name}: {len(got)} rows x {outputs} outputs, worst deviation "
          f"{worst:.3g}, additivity {worst_sum:.3g}")
    return ok


def check_paths_per_leaf():
    """One path per leaf, also for vector leaves (its K values share the path's
    elements, in the table and both GPU layouts): paths <= leaves for every model."""
    models = sorted(p for ext in ("json", "ubj", "txt")
                    for p in glob.glob(os.path.join(FIXTURES, "*." + ext)))
    out = subprocess.run([CLI, "load"] + models, capture_output=True, text=True).stdout
    ok = True
    for line in out.splitlines():
        if not line.startswith("ok "):
            continue
        fields = dict(f.split("=", 1) for f in line.split()[2:])
        leaves, paths, width = int(fields["leaves"]), int(fields["paths"]), int(fields["values/path"])
        if paths > leaves:
            ok = False
            print(f"BAD {os.path.basename(line.split()[1])}: {paths} paths for {leaves} leaves")
        elif width > 1:
            print(f"ok  {os.path.basename(line.split()[1])}: {leaves} vector leaves of {width} values "
                  f"in {paths} paths, {fields['bytes']} bytes of path table")
    return ok


def main():
    bound = float(sys.argv[1]) if len(sys.argv) > 1 else 1e-5
    names = sorted(os.path.basename(p)[:-len(".expected.csv")]
                   for p in glob.glob(os.path.join(FIXTURES, "*.expected.csv")))
    # a CatBoost model with one-hot splits takes category names, which it hashes; its rows
    # come as names (NAME.text.csv, checked in t10_models.sql on the CPU and the GPU)
    names = [n for n in names if not (n.startswith("cb_") and
                                      os.path.exists(os.path.join(FIXTURES, n + ".text.csv")))]
    results = [check(n, bound) for n in names if model_of(n)]
    print(f"gpu layout on the host: {sum(results)}/{len(results)} fixtures within {bound:g}")
    shared = check_paths_per_leaf()
    return 0 if all(results) and shared else 1


if __name__ == "__main__":
    sys.exit(main())
