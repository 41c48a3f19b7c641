#!/usr/bin/env python3
"""One session explaining ROWS rows of a model through the GPU service, in
batches of treeshap.batch_rows (default 10,000), on the GPUs the service
sees: seconds and rows/s of the explanation (count and sum), then, from a
second untimed run, an md5 of every value as text (float8 output is exact,
so equal digests mean bitwise equal results). bench/multi_gpu.sh runs
it with one GPU and with two visible and prints the ratio.

    python3 bench/multi_gpu.py WORK_DIR NAME ROWS [BATCH_ROWS]
"""
import json
import os
import sys
import time

from concurrency import connect, features_of, load


def main():
    work, name, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    table = "m_" + name.replace("-", "_")
    features, _ = features_of(work, name)
    conn = connect("gpu")
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL AND EXISTS (SELECT FROM treeshap.models WHERE name = %s)",
                    (table, name))
        loaded = cur.fetchone()[0]
    if not loaded:  # a reload would make a new model version for the service to read again
        load(conn, work, name, table, features, rows)
    with conn.cursor() as cur:
        cur.execute(f"SET treeshap.batch_rows = {batch}")
        cur.execute("SELECT count(device) FROM treeshap.gpu_status")
        devices = cur.fetchone()[0]
        source = f"treeshap.explain_shap_wide('{name}', 'SELECT * FROM {table} WHERE id < %d')"
        timed = f"SELECT count(*), sum(shap_values[1]) FROM {source}"
        digest = f"SELECT md5(string_agg(shap_values::text, '|' ORDER BY row_key, output)) FROM {source}"
        cur.execute(timed % batch)         # the model resident on every GPU, runners made there
        cur.fetchone()
        t0 = time.perf_counter()
        cur.execute(timed % rows)          # the explanation alone: the digest's text and sort are serial
        count, _ = cur.fetchone()
        seconds = time.perf_counter() - t0
        cur.execute(digest % rows)         # a second run, untimed, for the bitwise comparison
        md5 = cur.fetchone()[0]
    print(json.dumps({"name": name, "devices": devices, "rows": count, "batch_rows": batch,
                      "seconds": round(seconds, 3), "rows_per_s": round(count / seconds),
                      "md5": md5}))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
