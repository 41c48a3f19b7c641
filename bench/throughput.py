#!/usr/bin/env python3
"""Issue 18's output paths against the kernels, measured in one run on a
GPU machine: per model, the quadrature SHAP kernel's and the prediction
kernel's rows/s (bench/build/ts_bench, rows already on the GPU), then through
SQL from a heap table in one warm session: a count(*) scan of the table,
explain_shap_wide, explain_top_features and explain_top_features_wide (k =
10; the wide form's arrays must hold the long form's rows) on the GPU, and predict
on the GPU and on every CPU core (their margins' sums must be equal), each
read from a query and from the table itself (regclass, direct scan; the
results must be equal). Prints one JSON record per model, then the table of
ratios to the kernels.

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
REPS = 3
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
    query, tab = f"'SELECT * FROM {table}'", f"'{table}'::regclass, 'id'"
    wide_sql = "SELECT count(*), sum(base_value + shap_values[1]) FROM treeshap.explain_shap_wide('{}', {})"
    top_sql = ("SELECT count(*), sum(shap_value) FILTER (WHERE rank = 1) "
               "FROM treeshap.explain_top_features('{}', {}, k => {})")
    top_wide_sql = ("SELECT sum(cardinality(features)), sum(shap_values[1]) "
                    "FROM treeshap.explain_top_features_wide('{}', {}, k => {})")
    predict_sql = "SELECT count(*), sum(margin) FROM treeshap.predict('{}', {})"
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', 'SELECT * FROM {table} LIMIT 10')")
        wide, wide_res = best_rate(cur, wide_sql.format(name, query), rows)
        wide_t, wide_t_res = best_rate(cur, wide_sql.format(name, tab), rows)
        top, top_res = best_rate(cur, top_sql.format(name, query, TOP_K), rows)
        top_t, top_t_res = best_rate(cur, top_sql.format(name, tab, TOP_K), rows)
        top_w, top_w_res = best_rate(cur, top_wide_sql.format(name, query, TOP_K), rows)
        top_wt, top_wt_res = best_rate(cur, top_wide_sql.format(name, tab, TOP_K), rows)
        scan, _ = best_rate(cur, f"SELECT count(*) FROM {table}", rows)
        pred, pred_res = best_rate(cur, predict_sql.format(name, query), rows)
        pred_t, pred_t_res = best_rate(cur, predict_sql.format(name, tab), rows)
        # the result tuplestore spills to a temporary file beyond work_mem (4 MB by default)
        cur.execute("SET work_mem = '1GB'")
        pred_t_mem, pred_t_mem_res = best_rate(cur, predict_sql.format(name, tab), rows)
        cur.execute("RESET work_mem")
        cur.execute("SET treeshap.device = cpu")
        pred_cpu, pred_cpu_res = best_rate(cur, predict_sql.format(name, query), rows)
        pred_cpu_t, pred_cpu_t_res = best_rate(cur, predict_sql.format(name, tab), rows)
        cur.execute("SET treeshap.device = gpu")
    conn.close()
    same = {"wide": wide_res == wide_t_res, "top": top_res == top_t_res == top_w_res == top_wt_res,
            "predict": pred_res == pred_t_res == pred_t_mem_res == pred_cpu_res == pred_cpu_t_res}
    return {"kind": "throughput", "name": name, "rows": rows, "features": features, "outputs": outputs,
            "kernel_rows_per_s": kernel, "wide_rows_per_s": wide, "wide_over_kernel": wide / kernel,
            "wide_table_rows_per_s": wide_t, "wide_table_over_kernel": wide_t / kernel,
            "top_k": TOP_K, "top_rows_per_s": top, "top_over_kernel": top / kernel,
            "top_table_rows_per_s": top_t, "top_table_over_kernel": top_t / kernel,
            "top_wide_rows_per_s": top_w, "top_wide_over_kernel": top_w / kernel,
            "top_wide_table_rows_per_s": top_wt, "top_wide_table_over_kernel": top_wt / kernel,
            "scan_rows_per_s": scan, "predict_kernel_rows_per_s": predict_kernel,
            "predict_rows_per_s": pred, "predict_over_kernel": pred / predict_kernel,
            "predict_table_rows_per_s": pred_t, "predict_table_over_kernel": pred_t / predict_kernel,
            "predict_table_work_mem_1gb_rows_per_s": pred_t_mem,
            "predict_cpu_rows_per_s": pred_cpu, "predict_cpu_table_rows_per_s": pred_cpu_t,
            "predict_gpu_over_cpu": pred / pred_cpu, "predict_gpu_equals_cpu": pred_res == pred_cpu_res,
            "table_equals_query": same, "cores": os.cpu_count(),
            "repeatable": all(len(r) == 1 for r in (wide_res, top_res, top_w_res, top_wt_res, pred_res, pred_cpu_res, wide_t_res,
                                                     top_t_res, pred_t_res, pred_t_mem_res, pred_cpu_t_res))}


def main():
    work = sys.argv[1]
    recs = []
    for spec in sys.argv[2:]:
        rec = measure(work, spec)
        print(json.dumps(rec), flush=True)
        recs.append(rec)
    print("\nrows/s through SQL, one warm session, GPU service; SHAP kernel: quadrature, double")
    print("query: the rows read by 'SELECT * FROM t'; table: by 't'::regclass, 'id' (direct scan)")
    print("| model | rows | SHAP kernel | wide, query | / kernel | wide, table | / kernel "
          "| top 10, query | / kernel | top 10, table | / kernel |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        print(f"| {r['name']} | {r['rows']} | {r['kernel_rows_per_s']:.0f} | {r['wide_rows_per_s']:.0f} "
              f"| {r['wide_over_kernel']:.2f} | {r['wide_table_rows_per_s']:.0f} | {r['wide_table_over_kernel']:.2f} "
              f"| {r['top_rows_per_s']:.0f} | {r['top_over_kernel']:.2f} | {r['top_table_rows_per_s']:.0f} "
              f"| {r['top_table_over_kernel']:.2f} |")
    print(f"\npredict: kernel over 1M rows on the GPU; through SQL on the GPU and on {os.cpu_count()} CPU threads")
    print("| model | count(*) scan | predict kernel | GPU, query | GPU, table | GPU, table, work_mem 1GB "
          "| CPU, query | CPU, table | GPU / CPU (table) | same margins |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in recs:
        print(f"| {r['name']} | {r['scan_rows_per_s']:.0f} | {r['predict_kernel_rows_per_s']:.0f} "
              f"| {r['predict_rows_per_s']:.0f} | {r['predict_table_rows_per_s']:.0f} "
              f"| {r['predict_table_work_mem_1gb_rows_per_s']:.0f} | {r['predict_cpu_rows_per_s']:.0f} "
              f"| {r['predict_cpu_table_rows_per_s']:.0f} "
              f"| {r['predict_table_rows_per_s'] / r['predict_cpu_table_rows_per_s']:.2f} "
              f"| {'yes' if r['predict_gpu_equals_cpu'] and all(r['table_equals_query'].values()) else 'NO'} |")
    print(f"\ntop {TOP_K} features, one row per (row, output): explain_top_features_wide")
    print("| model | rows | SHAP kernel | top wide, query | / kernel | top wide, table | / kernel "
          "| long form, table | wide / long | same records |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in recs:
        print(f"| {r['name']} | {r['rows']} | {r['kernel_rows_per_s']:.0f} | {r['top_wide_rows_per_s']:.0f} "
              f"| {r['top_wide_over_kernel']:.2f} | {r['top_wide_table_rows_per_s']:.0f} "
              f"| {r['top_wide_table_over_kernel']:.2f} | {r['top_table_rows_per_s']:.0f} "
              f"| {r['top_wide_table_rows_per_s'] / r['top_table_rows_per_s']:.2f} "
              f"| {'yes' if r['table_equals_query']['top'] else 'NO'} |")
    ok = all(r["repeatable"] and r["predict_gpu_equals_cpu"] and all(r["table_equals_query"].values())
             for r in recs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
