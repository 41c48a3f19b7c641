#!/usr/bin/env python3
"""The block evaluation of quadrature SHAP (src/core/ts_quad_lanes.c: rows in
vector lanes) against the per-row one (ts_quad_path), on every fixture with
rows, under AddressSanitizer (test/core/build/ts_cli_asan, -O1) and in the
optimised build (test/core/build/ts_cli, -O2): on the plain
x86-64 instruction set bit for bit (the lanes do the per-row operations in
the same order), on AVX2 and AVX-512 (which fuse multiply-adds) within 1e-12
relative to max(1, |value|), each where this CPU runs it; and the quadrature
carried down each tree (src/core/ts_quad_tree.c) in lanes on each set,
within 1e-12 (its operations are others). Rows go in
blocks of 8: each fixture's rows are followed by their first five again, so
that the last block is partly filled."""
import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layout_check import CLI, FIXTURES, feature_lines, model_of  # noqa: E402

ISAS = ["x86-64", "avx2", "avx512"]
# the sanitised build (-O1), and the optimised one (-O2: where the compiler fuses multiply-adds)
CLIS = [CLI, os.path.join(os.path.dirname(CLI), "ts_cli")]


def contribs(model, csv_path, algorithm, cli):
    """The rows' contributions, or None when the CLI refuses the algorithm (exit 2: no such ISA here)."""
    res = subprocess.run([cli, "contribs", model, csv_path, algorithm], capture_output=True, text=True)
    if res.returncode == 2:
        return None
    if res.returncode != 0 or "Sanitizer" in res.stderr or "runtime error" in res.stderr:
        raise SystemExit(f"{model} {algorithm}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return [[float(v) for v in line.split(",")] for line in res.stdout.splitlines() if line]


def check(name, ran):
    model = model_of(name)
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as tmp:
        rows = list(feature_lines(os.path.join(FIXTURES, name + ".data.csv")))
        tmp.write("\n".join(rows + rows[:5]) + "\n")     # a last block of 5 rows, whatever the count
    try:
        ok = True
        for cli in CLIS:
            want = contribs(model, tmp.name, "quadrature", cli)
            # the tree walk does other operations than the path's: within 1e-12 on every set
            runs = []
            for isa in ISAS:
                runs += [(isa, "lanes:" + isa, 0.0 if isa == "x86-64" else 1e-12),
                         (isa, "tree-lanes:" + isa, 1e-12)]
            for isa, algorithm, bound in runs:
                got = contribs(model, tmp.name, algorithm, cli)
                if got is None:
                    continue
                ran.add(isa)
                worst = max(abs(a - b) / max(1.0, abs(b)) for g, w in zip(got, want) for a, b in zip(g, w))
                good = len(got) == len(want) and worst <= bound
                ok &= good
                if not good:
                    print(f"BAD {name} {algorithm} ({os.path.basename(cli)}): {len(got)} rows of {len(want)}, "
                          f"worst deviation {worst:.3g} > {bound}")
    finally:
        os.unlink(tmp.name)
    return ok


def main():
    names = sorted({os.path.basename(p)[:-len(".data.csv")]
                    for p in glob.glob(os.path.join(FIXTURES, "*.data.csv"))})
    names = [n for n in names if model_of(n) is not None]
    ran = set()
    bad = [n for n in names if not check(n, ran)]
    if "x86-64" not in ran:
        bad.append("(the plain x86-64 lanes never ran)")
    print(f"lanes-check: {len(names)} fixtures, instruction sets {', '.join(i for i in ISAS if i in ran)}, "
          f"paths and the quadrature carried down each tree: "
          f"{'PASS' if not bad else 'FAIL ' + ', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
