#!/usr/bin/env python3
"""explain_into against explain_shap_wide on the same rows, through psql (PG*
variables), on the device treeshap.device picks (TS_BENCH_DEVICE, default
auto). The benchmark's 10,000 rows of NAME are repeated to ROWS rows; all
calls are warm. Measured in one run, each once:
  wide: SELECT count(*) FROM explain_shap_wide(...)   (compute only)
  ctas: CREATE TABLE AS SELECT * FROM explain_shap_wide(...)  (compute + write, one backend)
  ctas+key: the same CTAS, then ALTER TABLE ... ADD PRIMARY KEY (row_key, output): the
        unique key a job keeps in its target (which adds model_version to it)
  into: CALL explain_into(...) into an empty target, once per number of
        workers in TS_BENCH_JOB_WORKERS (default "0,auto": the calling session
        alone, then treeshap.job_workers' default)
Prints one JSON record per model (explain_into's rate and its ratios to wide,
ctas and ctas+key per number of workers), then the table of them.

    python3 bench/jobs_bench.py WORK_DIR NAME [ROWS [BATCH]]
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sql_bench import load, psql  # noqa: E402


def make_table(work, name, table, rows):
    """NAME's 10,000 rows repeated to `rows`, keyed, vacuumed (as autovacuum leaves a table)."""
    with open(os.path.join(work, name + ".json")) as f:
        features = int(json.load(f)["learner"]["learner_model_param"]["num_feature"])
    base = "b_" + re.sub(r"\W", "_", name)
    load(work, name, base, features)
    cols = ", ".join(f"b.f{j}" for j in range(features))
    psql(f"DROP TABLE IF EXISTS {table}, {table}_ctas",
         f"CREATE TABLE {table} AS SELECT b.id + k * 10000 AS id, {cols} FROM {base} b, "
         f"generate_series(0, {rows} / 10000 - 1) k",
         f"ALTER TABLE {table} ADD PRIMARY KEY (id)", f"VACUUM ANALYZE {table}")


def into_rate(settings, name, table, rows, batch, workers):
    """explain_into's rows/s into a fresh target with `workers` ('auto': the default)."""
    target = f"{table}_into"
    arg = "" if workers == "auto" else f", workers => {workers}"
    psql(f"DROP TABLE IF EXISTS {target}", f"DELETE FROM treeshap.job_store WHERE target = 'public.{target}'")
    _, _, t = psql(*settings, f"CALL treeshap.explain_into('{name}', '{table}', '{target}', batch_size => {batch}{arg})")
    out, _, _ = psql(f"SELECT rows_done, workers FROM treeshap.jobs WHERE target = 'public.{target}'")
    done, used = [ln for ln in out.splitlines() if "|" in ln][0].split("|")
    if int(done) != rows:
        raise RuntimeError(f"explain_into with {workers} workers wrote {done} rows of {rows}")
    psql(f"DROP TABLE {target}", f"DELETE FROM treeshap.job_store WHERE target = 'public.{target}'")
    return int(used), rows / t[-1]


def main():
    work, name = sys.argv[1:3]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    device = os.environ.get("TS_BENCH_DEVICE", "auto")
    worker_counts = os.environ.get("TS_BENCH_JOB_WORKERS", "0,auto").split(",")
    table = "b_" + re.sub(r"\W", "_", name) + "_jobs"
    make_table(work, name, table, rows)
    query = f"SELECT * FROM {table}"
    settings = [f"SET treeshap.device = {device}", "SET work_mem = '1GB'"]
    _, _, t = psql(*settings,
                   f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', '{query} WHERE id < 100')",
                   f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', '{query}')",
                   f"CREATE TABLE {table}_ctas AS SELECT * FROM treeshap.explain_shap_wide('{name}', '{query}')",
                   f"ALTER TABLE {table}_ctas ADD PRIMARY KEY (row_key, output)",
                   f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', '{query}')")
    t = t[2:]
    out, _, _ = psql("SELECT string_agg(name || '=' || current_setting(name), ' ' ORDER BY name) FROM pg_settings "
                     "WHERE name IN ('shared_buffers', 'max_wal_size', 'wal_buffers', 'max_worker_processes', "
                     "'server_version_num')")
    rec = {"kind": "jobs", "name": name, "device": device, "rows": rows, "batch": batch, "cores": os.cpu_count(),
           "server": [ln for ln in out.splitlines() if "=" in ln][0].strip(),
           "wide_rows_per_s": rows / min(t[1], t[4]), "ctas_rows_per_s": rows / t[2],
           "ctas_key_rows_per_s": rows / (t[2] + t[3]), "into": []}
    psql(f"DROP TABLE {table}_ctas")
    for workers in worker_counts:
        used, rate = into_rate(settings, name, table, rows, batch, workers)
        rec["into"].append({"workers": used, "rows_per_s": rate, "vs_wide": rate / rec["wide_rows_per_s"],
                            "vs_ctas": rate / rec["ctas_rows_per_s"],
                            "vs_ctas_key": rate / rec["ctas_key_rows_per_s"]})
    psql(f"DROP TABLE {table}")
    print(json.dumps(rec), flush=True)
    return rec


def table(recs):
    print("\n| model | device | rows | count(*) of wide | one backend's CTAS | CTAS + key | workers "
          "| explain_into | into / wide | into / CTAS | into / (CTAS + key) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in recs:
        for i in r["into"]:
            print(f"| {r['name']} | {r['device']} | {r['rows']} | {r['wide_rows_per_s']:.0f} "
                  f"| {r['ctas_rows_per_s']:.0f} | {r['ctas_key_rows_per_s']:.0f} | {i['workers']} "
                  f"| {i['rows_per_s']:.0f} | {i['vs_wide']:.2f} | {i['vs_ctas']:.2f} | {i['vs_ctas_key']:.2f} |")


if __name__ == "__main__":
    table([main()])
