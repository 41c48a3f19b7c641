#!/usr/bin/env python3
"""Render bench/RESULTS.md from the records of bench/run.sh (results.jsonl).

    python3 bench/report.py RESULTS.jsonl MACHINE_LINE > RESULTS.md
    python3 bench/report.py --quadrature RESULTS.jsonl   the kernel families' table alone
"""
import json
import sys

# GPUTreeShap's kernel rows/s and its models' leaves, H200, same shapes (issue 3)
REFERENCE = {
    "cal_housing-med": (0.73e6, 18984),
    "adult-med": (0.79e6, 11083),
    "fashion_mnist-med": (45.5e3, 136806),
    "adult-large": (14.8e3, 395279),
    "cal_housing-large": (2.66e3, 3.12e6),
}


def rate(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return f"{v / 1e6:.2f}M"
    if v >= 1e4:
        return f"{v / 1e3:.1f}k"
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def quadrature_table(recs, order):
    """Both GPU kernel families per model: rows/s in each precision, the ratio
    quadrature / DP, against GPUTreeShap, deviation and determinism."""
    out = ["| model | paths | DP double | quadrature double | ratio | DP single | quadrature single | ratio | "
           "GPUTreeShap | quadrature double / GPUTreeShap | same, per leaf | dev quadrature double | "
           "dev quadrature single | deterministic |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for n in order:
        r = recs[n]
        q = r.get("kernel.kernel_quad_double_rows_per_s")
        if q is None:
            continue
        d, qs, ds = (r.get("kernel.kernel_double_rows_per_s"), r.get("kernel.kernel_quad_single_rows_per_s"),
                     r.get("kernel.kernel_single_rows_per_s"))
        ref, ref_leaves = REFERENCE.get(n, (None, None))
        leaves = r.get("kernel.leaves")
        per_leaf = q * leaves / ref_leaves if ref and leaves else None
        det = r.get("kernel.deterministic_quad_double") and r.get("kernel.deterministic_quad_single")
        out.append(f"| {n} | {r.get('kernel.paths', '-')} | {rate(d)} | {rate(q)} | {ratio(q, d)} | {rate(ds)} | "
                   f"{rate(qs)} | {ratio(qs, ds)} | {rate(ref)} | {ratio(q, ref)} | {ratio(per_leaf, ref)} | "
                   f"{r.get('kernel.max_dev_quad_double', '-')} | {r.get('kernel.max_dev_quad_single', '-')} | "
                   f"{'yes' if det else 'NO'} |")
    return out


def read(path):
    recs, order, jobs = {}, [], []
    for line in open(path):
        r = json.loads(line)
        if r["kind"] == "jobs":  # several per model (batch sizes): a table of their own
            jobs.append(r)
            continue
        name = r["name"]
        if name not in recs:
            recs[name] = {}
            order.append(name)
        recs[name].update({f"{r['kind']}.{k}": v for k, v in r.items()})
    return recs, order, jobs


def main():
    if sys.argv[1] == "--quadrature":
        recs, order, _ = read(sys.argv[2])
        print("\n".join(quadrature_table(recs, order)))
        return
    recs, order, jobs = read(sys.argv[1])
    out = ["# Benchmark results", "", sys.argv[2], "",
           "Produced by `bench/run.sh` (see its header). Models: XGBoost " +
           next(iter(recs.values())).get("xgboost.xgboost_version", "?") +
           " (Debian's libxgboost), eta 0.01, tree_method=hist, other parameters default; "
           "10,000 rows explained per model. covtype_synthetic is a synthetic stand-in "
           "with covtype's shape (54 features, 8 classes), not the real data set.", "",
           "## Throughput (rows/s)", "",
           "(b) kernel only, data already on the GPU (zeroing + SHAP kernel + finalise), "
           "double-precision DP (the default) and single; "
           "(c) end to end from a heap table, `treeshap.device = gpu`, warm model cache, work_mem 1GB; "
           "(d) CPU path, `explain_shap_wide` with `treeshap.device = cpu` (one backend); "
           "(e) XGBoost CPU `pred_contribs` on all cores of this machine. "
           "GPUTreeShap: its kernel on an H200 (from the issue), on models of the same shape "
           "whose leaf counts differ from ours; the last column scales our rate by "
           "our leaves / its leaves (work is proportional to path elements).", "",
           "| model | trees | leaves | (b) kernel double | (b) kernel single | (c) wide | (c) long | (d) CPU | (e) XGBoost | (c)/(b) | (b)/(e) | (c)/(e) | GPUTreeShap | (b)/GPUTreeShap | same, per leaf |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in order:
        r = recs[n]
        b = r.get("kernel.kernel_double_rows_per_s")
        c = r.get("sql.wide_rows_per_s")
        e = r.get("xgboost.xgboost_rows_per_s")
        ref, ref_leaves = REFERENCE.get(n, (None, None))
        leaves = r.get("kernel.leaves")
        per_leaf = b * leaves / ref_leaves if ref and b and leaves else None
        out.append(f"| {n} | {r.get('kernel.trees', '-')} | {r.get('kernel.leaves', '-')} | {rate(b)} | "
                   f"{rate(r.get('kernel.kernel_single_rows_per_s'))} | {rate(c)} | "
                   f"{rate(r.get('sql.long_rows_per_s'))} | {rate(r.get('sql.cpu_rows_per_s'))} | "
                   f"{rate(e)} | {ratio(c, b)} | {ratio(b, e)} | {ratio(c, e)} | {rate(ref)} | {ratio(b, ref)} | "
                   f"{ratio(per_leaf, ref)} |")
    if any("kernel.kernel_quad_double_rows_per_s" in r for r in recs.values()):
        out += ["", "## GPU kernel families: quadrature against the seed's DP", "",
                "Kernel only, as (b): the quadrature family (the default) and the seed's "
                "EXTEND/UNWOUNDSUM DP on the same path table; GPUTreeShap as in the first table.", ""]
        out += quadrature_table(recs, order)
    out += ["", "## Bin packing (the paper's Table 5 columns)", "",
            "| model | paths | NF ms | NF util | NF bins | FFD ms | FFD util | FFD bins | BFD ms | BFD util | BFD bins |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in order:
        r = recs[n]
        cells = []
        for a in ("nf", "ffd", "bfd"):
            p = r.get(f"kernel.pack_{a}") or {}
            cells += [f"{p.get('ms', 0):.2f}", f"{p.get('utilisation', 0):.4f}", str(p.get("bins", "-"))]
        out.append(f"| {n} | {r.get('kernel.paths', '-')} | " + " | ".join(cells) + " |")
    if any("kernel.interactions_rows_per_s" in r for r in recs.values()):
        out += ["", "## Interaction values and global importance (TS_BENCH_INTERACTIONS=1)", "",
                "(f) GPU Shapley interaction kernel, double, all features, 200 rows (data on the GPU); "
                "(g) XGBoost CPU `pred_interactions` on all cores, over as many of the 200 rows as fit "
                "about 10 s (rows in brackets); deviation: worst |GPU - CPU| / max(1, |entry|) over two "
                "rows. (h) `feature_importance` end to end over the 10,000 rows, GPU, against (c) "
                "`explain_shap_wide` over the same rows in the same session.", "",
                "| model | (f) GPU interactions | (g) XGBoost interactions | (f)/(g) | dev | (h) importance | (c) wide | (h)/(c) |",
                "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for n in order:
            r = recs[n]
            f = r.get("kernel.interactions_rows_per_s")
            g = r.get("xgboost.xgboost_interaction_rows_per_s")
            h = r.get("sql.importance_rows_per_s")
            c = r.get("sql.importance_wide_rows_per_s")
            out.append(f"| {n} | {rate(f)} | {rate(g)} ({r.get('xgboost.xgboost_interaction_rows', '-')}) | "
                       f"{ratio(f, g)} | {r.get('kernel.max_dev_interactions', '-')} | {rate(h)} | "
                       f"{rate(c)} | {ratio(h, c)} |")
    if jobs:
        out += ["", "## Scheduled jobs: explain_into (TS_BENCH_JOBS=1)", "",
                "The model's 10,000 rows repeated to `rows` rows (keys unique, primary key), all calls "
                "warm. (c) `SELECT count(*) FROM explain_shap_wide(...)`: compute only; "
                "(i) `CREATE TABLE AS SELECT * FROM explain_shap_wide(...)`: compute and write, one backend; (j) "
                "`CALL explain_into(...)` into a new target with the given workers (0: the calling "
                "session alone, batch by batch): compute, write, the unique key and a commit per "
                "batch or key range (wall time of the CALL).", "",
                "| model | device | rows | batch | workers | (c) wide | (i) CTAS | (j) explain_into | (j)/(c) | (j)/(i) |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in jobs:
            for i in r["into"]:
                out.append(f"| {r['name']} | {r['device']} | {r['rows']} | {r['batch']} | {i['workers']} | "
                           f"{rate(r['wide_rows_per_s'])} | {rate(r['ctas_rows_per_s'])} | "
                           f"{rate(i['rows_per_s'])} | {ratio(i['rows_per_s'], r['wide_rows_per_s'])} | "
                           f"{ratio(i['rows_per_s'], r['ctas_rows_per_s'])} |")
    out += ["", "## Accuracy, determinism and where the end-to-end time goes", "",
            "Deviation: worst |GPU - CPU double path| / max(1, |margin|) over the checked rows. "
            "Deterministic: two kernel runs bitwise identical. Phases: the backend's own "
            "accounting of the warm `explain_shap_wide` run (DEBUG1).", "",
            "| model | checked rows | dev double | dev single | deterministic | first call s | rows (d) | rows (e) | phases |",
            "|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for n in order:
        r = recs[n]
        det = r.get("kernel.deterministic_double") and r.get("kernel.deterministic_single")
        out.append(f"| {n} | {r.get('kernel.check_rows', '-')} | {r.get('kernel.max_dev_double', '-')} | "
                   f"{r.get('kernel.max_dev_single', '-')} | {'yes' if det else 'NO'} | "
                   f"{r.get('sql.cold_wide_s', 0):.2f} | {r.get('sql.cpu_rows', '-')} | "
                   f"{r.get('xgboost.xgboost_rows', '-')} | {r.get('sql.gpu_phases') or '-'} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
