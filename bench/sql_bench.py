#!/usr/bin/env python3
"""End-to-end SQL timings of one benchmark model, through psql (PG* variables):
explain_shap_wide and explain_shap on the GPU from a heap table, and
explain_shap_wide on the CPU path; prints one JSON record. Sessions use
work_mem = 1GB so the materialised result stays in memory.

    python3 bench/sql_bench.py WORK_DIR NAME
"""
import json
import os
import re
import subprocess
import sys
import time

TIME = re.compile(r"^Time: ([0-9.]+) ms", re.M)


def psql(*commands):
    """Run commands in one session; return (stdout, stderr, [seconds per command])."""
    args = ["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", "\\timing on"]
    for c in commands:
        args += ["-c", c]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr)
    return p.stdout, p.stderr, [float(t) / 1e3 for t in TIME.findall(p.stdout)]


def load(work, name, table, features):
    cols = ", ".join(f"f{j} real" for j in range(features))
    psql("CREATE EXTENSION IF NOT EXISTS pg_treeshap",
         f"DROP TABLE IF EXISTS {table}",
         f"CREATE TABLE {table} (id bigint PRIMARY KEY, {cols})",
         f"\\copy {table} FROM '{work}/{name}.csv' CSV",
         f"VACUUM ANALYZE {table}",
         f"SELECT (treeshap.load_model('{name}', pg_read_binary_file('{work}/{name}.json'), true)).name")


def explain(fn, name, table, n):
    return f"SELECT count(*) FROM treeshap.{fn}('{name}', 'SELECT * FROM {table} WHERE id < {n}')"


def main():
    work, name = sys.argv[1:3]
    with open(os.path.join(work, name + ".json")) as f:
        learner = json.load(f)["learner"]
    features = int(learner["learner_model_param"]["num_feature"])
    outputs = max(1, int(learner["learner_model_param"]["num_class"]))
    table = "b_" + re.sub(r"\W", "_", name)
    rows = sum(1 for _ in open(os.path.join(work, name + ".csv")))
    t0 = time.perf_counter()
    load(work, name, table, features)
    load_s = time.perf_counter() - t0

    # GPU: the first call parses, builds the path table, packs and uploads
    long_rows = min(rows, max(100, int(2e7 / (features * outputs))))
    gpu = os.environ.get("TS_BENCH_GPU_SETTING", "gpu")  # "cpu" for a dry run without a GPU
    _, err, t = psql(f"SET treeshap.device = {gpu}", "SET work_mem = '1GB'", "SET client_min_messages = debug1",
                     explain("explain_shap_wide", name, table, rows),
                     explain("explain_shap_wide", name, table, rows),
                     explain("explain_shap_wide", name, table, rows),
                     explain("explain_shap", name, table, long_rows))
    phases = [ln.split("DEBUG:", 1)[1].strip() for ln in err.splitlines() if "treeshap gpu run" in ln]
    t = t[3:]  # after the SETs
    rec = {"kind": "sql", "name": name, "rows": rows, "load_model_s": load_s,
           "cold_wide_s": t[0], "wide_rows_per_s": rows / min(t[1], t[2]),
           "long_rows": long_rows, "long_rows_per_s": long_rows / t[3],
           "gpu_phases": phases[2] if len(phases) > 2 else None}

    if os.environ.get("TS_BENCH_INTERACTIONS"):
        # global importance against the wide form over the same rows, both warm
        _, _, t = psql(f"SET treeshap.device = {gpu}", "SET work_mem = '1GB'",
                       explain("explain_shap_wide", name, table, rows),
                       explain("feature_importance", name, table, rows),
                       explain("feature_importance", name, table, rows),
                       explain("explain_shap_wide", name, table, rows))
        t = t[2:]
        rec.update({"importance_rows_per_s": rows / t[2], "importance_wide_rows_per_s": rows / t[3]})

    # CPU path: a probe on 5 rows sizes a run of about 8 s
    _, _, t = psql("SET treeshap.device = cpu", "SET work_mem = '1GB'",
                   explain("explain_shap_wide", name, table, 1), explain("explain_shap_wide", name, table, 5))
    t = t[1:]
    n = int(min(rows, max(5, 5 * 8.0 / max(t[2], 1e-6))))
    _, _, t = psql("SET treeshap.device = cpu", "SET work_mem = '1GB'",
                   explain("explain_shap_wide", name, table, 1), explain("explain_shap_wide", name, table, n))
    t = t[1:]
    rec.update({"cpu_rows": n, "cpu_rows_per_s": n / t[2]})
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
