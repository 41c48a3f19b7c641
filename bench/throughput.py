#!/usr/bin/env python3
"""Issue 18's output paths against the kernels, measured in one run on a
GPU machine: per model, the quadrature SHAP kernel's and the prediction
kernel's rows/s (bench/build/ts_bench, rows already on the GPU), then through
SQL from a heap table in one warm session: a count(*) scan of the table,
explain_shap_wide and explain_top_features (k = 10) on the GPU, and predict
on the GPU and on every CPU core (their margins' sums must be equal). Prints
one JSON record per model, then the table of ratios to the kernels.

    python3 bench/throughput.py WORK_DIR NAME[:ROWS] [NAME[:ROWS] ...]

WORK_DIR holds NAME.json, NAME.csv and NAME.rows.f32 (bench/grid.py); the
table repeats the 10,000 rows up to ROWS (default 1,000,000). pg_treeshap
must be preloaded (the GPU service) and bench/build/ts_bench built.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import connect, features_of, load  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPS = 2
TOP_K = 10


def kernel_rates(work, name):
    """The quadrature kernel (double) over the model's 10,000 rows, and the
    prediction kernel over 1,000,000 (those repeated), rows/s."""
    out = subprocess.run([os.path.join(HERE, "build", "ts_bench"), os.path.join(work, name + ".json"),
                          os.path.join(work, name + ".rows.f32"), "10000", "3", "10"],
                         env={**os.environ, "TS_BENCH_QUAD_ONLY": "1"}, capture_output=True, text=True,
                         check=True).stdout
    rec = json.loads(out)
    return rec["kernel_quad_double_rows_per_s"], rec["predict_rows_per_s"]


def best_rate(cur, sql, rows):
    """Best rows/s of REPS runs of a statement, and its (equal) results."""
    best, results = 0.0, set()
    for _ in range(REPS):
        t0 = time.perf_counter()
        cur.execute(sql)
        results.add(cur.fetchone())
        best = max(best, rows / (time.perf_counter() - t0))
    return best, results


def measure(work, spec):
    name, _, rows = spec.partition(":")
    rows = int(rows or 1000000)
    table = "t_" + re.sub(r"\W", "_", name)
    features, outputs = features_of(work, name)
    kernel, predict_kernel = kernel_rates(work, name)
    conn = connect("gpu")
    load(conn, work, name, table, features, rows)
    src = f"'SELECT * FROM {table}'"
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', 'SELECT * FROM {table} LIMIT 10')")
        wide, wide_res = best_rate(cur, f"SELECT count(*), sum(base_value + shap_values[1]) "
                                        f"FROM treeshap.explain_shap_wide('{name}', {src})", rows)
        top, top_res = best_rate(cur, f"SELECT count(*), sum(shap_value * rank) "
                                      f"FROM treeshap.explain_top_features('{name}', {src}, k => {TOP_K})", rows)
        scan, _ = best_rate(cur, f"SELECT count(*) FROM {table}", rows)
        predict_sql = f"SELECT count(*), sum(margin) FROM treeshap.predict('{name}', {src})"
        pred, pred_res = best_rate(cur, predict_sql, rows)
        cur.execute("SET treeshap.device = cpu")
        pred_cpu, pred_cpu_res = best_rate(cur, predict_sql, rows)
        cur.execute("SET treeshap.device = gpu")
    conn.close()
    return {"kind": "throughput", "name": name, "rows": rows, "features": features, "outputs": outputs,
            "kernel_rows_per_s": kernel, "wide_rows_per_s": wide, "wide_over_kernel": wide / kernel,
            "top_k": TOP_K, "top_rows_per_s": top, "top_over_kernel": top / kernel,
            "scan_rows_per_s": scan, "predict_kernel_rows_per_s": predict_kernel,
            "predict_rows_per_s": pred, "predict_over_kernel": pred / predict_kernel,
            "predict_cpu_rows_per_s": pred_cpu, "predict_gpu_over_cpu": pred / pred_cpu,
            "predict_gpu_equals_cpu": pred_res == pred_cpu_res, "cores": os.cpu_count(),
            "repeatable": all(len(r) == 1 for r in (wide_res, top_res, pred_res, pred_cpu_res))}


def main():
    work = sys.argv[1]
    recs = []
    for spec in sys.argv[2:]:
        rec = measure(work, spec)
        print(json.dumps(rec), flush=True)
        recs.append(rec)
    print("\nrows/s through SQL, one warm session, GPU service; SHAP kernel: quadrature, double")
    print("| model | rows | SHAP kernel | explain_shap_wide | / kernel | top 10 features | / kernel |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        print(f"| {r['name']} | {r['rows']} | {r['kernel_rows_per_s']:.0f} | {r['wide_rows_per_s']:.0f} "
              f"| {r['wide_over_kernel']:.2f} | {r['top_rows_per_s']:.0f} | {r['top_over_kernel']:.2f} |")
    print(f"\npredict: kernel over 1M rows on the GPU; through SQL on the GPU and on {os.cpu_count()} CPU threads")
    print("| model | count(*) scan | predict kernel | predict, GPU | / kernel | predict, CPU | GPU / CPU | same margins |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for r in recs:
        print(f"| {r['name']} | {r['scan_rows_per_s']:.0f} | {r['predict_kernel_rows_per_s']:.0f} "
              f"| {r['predict_rows_per_s']:.0f} | {r['predict_over_kernel']:.3f} | {r['predict_cpu_rows_per_s']:.0f} "
              f"| {r['predict_gpu_over_cpu']:.2f} | {'yes' if r['predict_gpu_equals_cpu'] else 'NO'} |")
    ok = all(r["repeatable"] and r["predict_gpu_equals_cpu"] for r in recs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
