#!/usr/bin/env python3
"""The block evaluation of quadrature SHAP (src/core/ts_quad_lanes.c: rows in
vector lanes) against the per-row one (ts_quad_path), on every fixture with
rows, under AddressSanitizer (test/core/build/ts_cli_asan, -O1) and in the
optimised build (test/core/build/ts_cli, -O2): on the plain
x86-64 instruction set bit for bit (the lanes do the per-row operations in
the same order), on AVX2 and AVX-512 (which fuse multiply-adds) within 1e-12
relative to max(1, |value|), each where this CPU runs it; and the quadrature
carried down each tree (src/core/ts_quad_tree.c) in lanes on each set,
within 1e-12 (its operations are others); and Shapley interaction values by
quadrature in lanes (src/core/ts_quad_pairs.c) on each set against the dynamic
programme per row (ts_interactions_row), for all features and for a selection
of two, within 1e-9 relative to max(1, |value|); on the fixtures whose
references test/fixtures/make_interactions.py writes by quadrature because
float TreeSHAP loses digits there (41-element paths), against those references
within 1e-12 instead, since the dynamic programme loses digits too (4.4e-8 on
"long"). Rows go in
blocks of 8 (the walk: of its plan's block_rows, 32 where its scratch fits):
each fixture's rows are followed by their first five again, so that the last
block is partly filled. The walk a row at a time (in 8 lanes) must give the
same bytes as in blocks, on each set: a row's values do not depend on its
batch."""
import csv
import glob
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adversarial"))
from layout_check import CLI, FIXTURES, feature_lines, model_of  # noqa: E402
from make_models import model_bytes  # noqa: E402

ISAS = ["x86-64", "avx2", "avx512"]
# fixtures whose Shapley references test/fixtures/make_interactions.py computes by quadrature
QUADRATURE_REFERENCES = {"long", "long24"}
# the sanitised build (-O1), and the optimised one (-O2: where the compiler fuses multiply-adds)
CLIS = [CLI, os.path.join(os.path.dirname(CLI), "ts_cli")]


def contribs(model, csv_path, algorithm, cli, what="contribs", extra=()):
    """The rows' contributions (or interaction values: what = "interactions"), or None when
    the CLI refuses the algorithm (exit 2: no such ISA here)."""
    res = subprocess.run([cli, what, model, csv_path, algorithm, *extra], capture_output=True, text=True)
    if res.returncode == 2:
        return None
    if res.returncode != 0 or "Sanitizer" in res.stderr or "runtime error" in res.stderr:
        raise SystemExit(f"{model} {algorithm}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return [[float(v) for v in line.split(",")] for line in res.stdout.splitlines() if line]


def printed(model, csv_path, algorithm, cli):
    """The CLI's contributions exactly as printed."""
    return subprocess.run([cli, "contribs", model, csv_path, algorithm], capture_output=True, text=True).stdout


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
                if algorithm.startswith("tree-lanes"):  # compared as printed (%.17g): -0 is not 0
                    if printed(model, tmp.name, "tree-row:" + isa, cli) != printed(model, tmp.name, algorithm, cli):
                        ok = False
                        print(f"BAD {name} tree-row:{isa} ({os.path.basename(cli)}): a row alone is not the "
                              f"same bytes as in its block")
                ran.add(isa)
                worst = max(abs(a - b) / max(1.0, abs(b)) for g, w in zip(got, want) for a, b in zip(g, w))
                good = len(got) == len(want) and worst <= bound
                ok &= good
                if not good:
                    print(f"BAD {name} {algorithm} ({os.path.basename(cli)}): {len(got)} rows of {len(want)}, "
                          f"worst deviation {worst:.3g} > {bound}")
        ok &= check_interactions(name, model, tmp.name)
    finally:
        os.unlink(tmp.name)
    return ok


def quadrature_references(name, selected):
    """By row position, the fixture's Shapley matrices' rows of the selected features (all when
    None), output after output, where make_interactions.py computed them by quadrature; else None."""
    if name not in QUADRATURE_REFERENCES:
        return None
    with open(os.path.join(FIXTURES, name + ".data.csv"), newline="") as f:
        position = {row[0]: i for i, row in enumerate(csv.reader(f))}
    refs = {}
    with open(os.path.join(FIXTURES, name + ".interactions.csv"), newline="") as f:
        for row_id, _output, matrix in csv.reader(f):
            values = [float(v) for v in matrix.strip("{}").split(",")]
            nf = round(len(values) ** 0.5)
            for a in selected if selected is not None else range(nf):
                refs.setdefault(position[row_id], []).extend(values[a * nf:(a + 1) * nf])
    return refs


def check_interactions(name, model, csv_path):
    """Interaction values by quadrature in lanes against the dynamic programme (or the
    fixture's quadrature references), on each set, for every feature and for features 0 and 2
    (the optimised build: the sanitised one runs the SHAP checks above)."""
    ok = True
    for extra, selected in (((), None), ((",0,2,",), (0, 2))):
        refs = quadrature_references(name, selected)
        want = contribs(model, csv_path, "shapley", CLIS[1], "interactions", extra)
        for isa in ISAS:
            got = contribs(model, csv_path, "lanes:" + isa, CLIS[1], "interactions", extra)
            if got is None:
                continue
            if refs is not None:
                pairs, bound = [(a, b) for i, w in refs.items() for a, b in zip(got[i], w)], 1e-12
            else:
                pairs, bound = [(a, b) for g, w in zip(got, want) for a, b in zip(g, w)], 1e-9
            worst = max((abs(a - b) / max(1.0, abs(b)) for a, b in pairs), default=0.0)
            good = len(got) == len(want) and all(len(g) == len(w) for g, w in zip(got, want)) and worst <= bound
            ok &= good
            if not good:
                print(f"BAD {name} interactions lanes:{isa} {' '.join(extra)}: {len(got)} rows of {len(want)}, "
                      f"worst deviation {worst:.3g} > {bound}")
    return ok


def check_long_paths(ran):
    """Interaction values of a model whose paths pass TS_QUAD_PAIRS_MAX (64) merged features
    (test/adversarial/make_models.py chain90): those paths through the dynamic programme
    beside the shorter ones in lanes, against the dynamic programme alone, on each set and both
    builds (the sanitised one too: the scratch past the lanes' arrays). Within 1e-7: on the
    shorter paths, of up to 64 features, the dynamic programme loses digits (9.8e-9 here, as
    4.4e-8 on "long"); a path lost, doubled or misplaced would be off by the leaf values."""
    rng = random.Random(90)
    with tempfile.TemporaryDirectory() as tmp:
        model, rows = os.path.join(tmp, "chain90.json"), os.path.join(tmp, "rows.csv")
        with open(model, "wb") as f:
            f.write(model_bytes("chain90"))
        with open(rows, "w") as f:      # 13 rows: a block and a partial one; some values missing
            f.write("\n".join(",".join("" if rng.random() < 0.05 else f"{rng.uniform(-1, 1):.4f}"
                                       for _ in range(80)) for _ in range(13)) + "\n")
        ok = True
        for cli in CLIS:
            want = contribs(model, rows, "shapley", cli, "interactions")
            for isa in ISAS:
                got = contribs(model, rows, "lanes:" + isa, cli, "interactions")
                if got is None:
                    continue
                ran.add(isa)
                worst = max(abs(a - b) / max(1.0, abs(b)) for g, w in zip(got, want) for a, b in zip(g, w))
                good = len(got) == len(want) == 13 and worst <= 1e-7
                ok &= good
                if not good:
                    print(f"BAD chain90 interactions lanes:{isa} ({os.path.basename(cli)}): {len(got)} rows, "
                          f"worst deviation {worst:.3g} > 1e-7")
    return ok


def main():
    names = sorted({os.path.basename(p)[:-len(".data.csv")]
                    for p in glob.glob(os.path.join(FIXTURES, "*.data.csv"))})
    names = [n for n in names if model_of(n) is not None]
    ran = set()
    bad = [n for n in names if not check(n, ran)]
    if not check_long_paths(ran):
        bad.append("chain90")
    if "x86-64" not in ran:
        bad.append("(the plain x86-64 lanes never ran)")
    print(f"lanes-check: {len(names)} fixtures, instruction sets {', '.join(i for i in ISAS if i in ran)}, "
          f"paths, the quadrature carried down each tree, and interaction values: "
          f"{'PASS' if not bad else 'FAIL ' + ', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
