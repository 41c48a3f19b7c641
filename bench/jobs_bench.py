#!/usr/bin/env python3
"""explain_into against explain_shap_wide on the same rows, through psql (PG*
variables), on the device treeshap.device picks (TS_BENCH_DEVICE, default
auto). The benchmark's 10,000 rows of NAME are repeated to ROWS rows; all
calls are warm. Prints one JSON record:
  wide: SELECT count(*) FROM explain_shap_wide(...)   (compute only)
  ctas: CREATE TABLE AS SELECT * FROM explain_shap_wide(...)  (compute + write)
  into: CALL explain_into(...) into an empty target   (compute + write + a commit per batch)
and explain_into's own steady-state rate from treeshap.jobs.

    python3 bench/jobs_bench.py WORK_DIR NAME [ROWS [BATCH]]
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sql_bench import load, psql  # noqa: E402


def main():
    work, name = sys.argv[1:3]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 200000
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    device = os.environ.get("TS_BENCH_DEVICE", "auto")
    with open(os.path.join(work, name + ".json")) as f:
        features = int(json.load(f)["learner"]["learner_model_param"]["num_feature"])
    base = "b_" + re.sub(r"\W", "_", name)
    table = base + "_jobs"
    load(work, name, base, features)
    cols = ", ".join(f"b.f{j}" for j in range(features))
    psql(f"DROP TABLE IF EXISTS {table}, {table}_ctas, {table}_into",
         f"CREATE TABLE {table} AS SELECT b.id + k * 10000 AS id, {cols} FROM {base} b, "
         f"generate_series(0, {rows} / 10000 - 1) k",
         f"ALTER TABLE {table} ADD PRIMARY KEY (id)", f"VACUUM ANALYZE {table}",
         f"DELETE FROM treeshap.job_store WHERE target = 'public.{table}_into'")
    query = f"SELECT * FROM {table}"
    settings = [f"SET treeshap.device = {device}", "SET work_mem = '1GB'"]
    _, _, t = psql(*settings,
                   f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', '{query} WHERE id < 100')",
                   f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', '{query}')",
                   f"CREATE TABLE {table}_ctas AS SELECT * FROM treeshap.explain_shap_wide('{name}', '{query}')",
                   f"CALL treeshap.explain_into('{name}', '{table}', '{table}_into', batch_size => {batch})",
                   f"SELECT count(*) FROM treeshap.explain_shap_wide('{name}', '{query}')")
    t = t[2:]
    out, _, _ = psql(f"SELECT rows_done, batches, rows_per_second FROM treeshap.jobs WHERE target = 'public.{table}_into'")
    done, batches, steady = [ln for ln in out.splitlines() if "|" in ln][0].split("|")
    wide = rows / min(t[1], t[4])
    rec = {"kind": "jobs", "name": name, "device": device, "rows": rows, "batch": batch,
           "rows_done": int(done), "batches": int(batches),
           "wide_rows_per_s": wide, "ctas_rows_per_s": rows / t[2], "into_rows_per_s": rows / t[3],
           "into_steady_rows_per_s": float(steady)}
    rec["into_vs_wide"] = rec["into_rows_per_s"] / wide
    rec["into_vs_ctas"] = rec["into_rows_per_s"] / rec["ctas_rows_per_s"]
    psql(f"DROP TABLE {table}, {table}_ctas, {table}_into",
         f"DELETE FROM treeshap.job_store WHERE target = 'public.{table}_into'")
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
