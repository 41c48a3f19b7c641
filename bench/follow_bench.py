#!/usr/bin/env python3
"""explain_into(..., follow => true) after a small change, against its first run, through
psql (PG* variables), on the device treeshap.device picks (TS_BENCH_DEVICE, default
auto), with the default workers. The benchmark's 10,000 rows of NAME are repeated to ROWS
rows (a keyed, vacuumed table). Measured in one run, each once:
  first:  the first run, which puts the triggers on the source and explains every row
  update: UPDATE of 1 % of the rows' features, then DELETE of 0.1 %, with the triggers
          (and the same UPDATE before the first run, without them: what following costs
          the source's writers)
  next:   the run after those changes
Prints one JSON record (next / first among them), then a table.

    python3 bench/follow_bench.py WORK_DIR NAME [ROWS [BATCH]]
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jobs_bench import make_table  # noqa: E402
from sql_bench import psql  # noqa: E402


def job_counts(target):
    """rows_done, rows_changed, rows_removed of the target's job."""
    out, _, _ = psql(f"SELECT rows_done, rows_changed, rows_removed FROM treeshap.jobs WHERE target = 'public.{target}'")
    return [int(v) for v in [ln for ln in out.splitlines() if "|" in ln][0].split("|")]


def main():
    work, name = sys.argv[1:3]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
    batch = int(sys.argv[4]) if len(sys.argv) > 4 else 10000
    device = os.environ.get("TS_BENCH_DEVICE", "auto")
    table = "b_" + re.sub(r"\W", "_", name) + "_follow"
    target = table + "_shap"
    make_table(work, name, table, rows)
    settings = [f"SET treeshap.device = {device}"]
    call = f"CALL treeshap.explain_into('{name}', '{table}', '{target}', batch_size => {batch}, follow => true)"
    update = f"UPDATE {table} SET f0 = f0 + 1 WHERE id % 100 = 7"
    psql(f"DROP TABLE IF EXISTS {target}", f"DELETE FROM treeshap.job_store WHERE target = 'public.{target}'")
    _, _, t = psql(update)
    plain_update = t[-1]
    _, _, t = psql(*settings, call)
    first = t[-1]
    _, _, t = psql(update, f"DELETE FROM {table} WHERE id % 1000 = 3")
    followed_update, delete = t[-2], t[-1]
    _, _, t = psql(*settings, call)
    nxt = t[-1]
    done, changed, removed = job_counts(target)
    out, _, _ = psql(f"SELECT (SELECT count(*) FROM {target}), (SELECT count(*) FROM {table})")
    target_rows, source_rows = [int(v) for v in [ln for ln in out.splitlines() if "|" in ln][0].split("|")]
    if target_rows != source_rows or removed != rows // 1000:
        raise RuntimeError(f"target {target_rows} rows for {source_rows} source rows, {removed} removed")
    psql(f"DROP TABLE {target}", f"DELETE FROM treeshap.job_store WHERE target = 'public.{target}'", f"DROP TABLE {table}")
    rec = {"kind": "follow", "name": name, "device": device, "rows": rows, "batch": batch, "cores": os.cpu_count(),
           "first_s": first, "next_s": nxt, "next_vs_first": nxt / first, "rows_changed": changed,
           "rows_removed": removed, "update_plain_s": plain_update, "update_followed_s": followed_update,
           "delete_followed_s": delete}
    print(json.dumps(rec), flush=True)
    return rec


def table(r):
    print("\n| model | device | rows | first run | 1 % updated, 0.1 % deleted: next run | next / first "
          "| UPDATE of 1 %: plain | followed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    print(f"| {r['name']} | {r['device']} | {r['rows']} | {r['first_s']:.2f} s | {r['next_s']:.2f} s "
          f"| {r['next_vs_first']:.3f} | {r['update_plain_s']:.2f} s | {r['update_followed_s']:.2f} s |")


if __name__ == "__main__":
    table(main())
