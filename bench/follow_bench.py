#!/usr/bin/env python3
"""explain_into(..., follow => true) after a small change, against its first run, through
psql (PG* variables), on the device treeshap.device picks (TS_BENCH_DEVICE, default
auto), with the default workers. The benchmark's 10,000 rows of NAME are repeated to ROWS
rows (a keyed, vacuumed table). Measured in one run, each once:
  first:  the first run, which puts the triggers on the source and explains every row
  update: a CHECKPOINT (as a day between two scheduled runs has), then UPDATE of 1 % of
          the rows' features and DELETE of 0.1 %, with the triggers (and the same UPDATE
          before the first run, without them: what following costs the source's writers)
  next:   the run after those changes
with the WAL each run wrote: after a checkpoint, the first change to a page writes the
whole page, and 1 % of the rows spread over the table touch about 40 % of its pages.
TS_BENCH_TARGET=unlogged makes the target an unlogged table before the first run (a
crash empties it, and the next run then explains every row again).
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


def first_value(out):
    """The first line of psql's output that is a value, not its timing."""
    return [ln for ln in out.splitlines() if ln and not ln.startswith(("Time", "Timing"))][0]


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
    # a row takes the features of a neighbour (another of the benchmark's rows): its
    # explanation changes, as a feature that moves across the model's splits changes it
    with open(os.path.join(work, name + ".json")) as f:
        features = int(json.load(f)["learner"]["learner_model_param"]["num_feature"])
    cols = ", ".join(f"f{j}" for j in range(features))
    def update(step):
        return (f"UPDATE {table} t SET ({cols}) = (SELECT {cols} FROM {table} s WHERE s.id = t.id + {step}) "
                f"WHERE t.id % 100 = 7")
    psql(f"DROP TABLE IF EXISTS {target}", f"DELETE FROM treeshap.job_store WHERE target = 'public.{target}'")
    unlogged = os.environ.get("TS_BENCH_TARGET", "logged") == "unlogged"
    if unlogged:
        out, _, _ = psql(f"SELECT replace(treeshap._target_ddl('{target}', 'wide', 'bigint', ''), "
                         "'CREATE TABLE', 'CREATE UNLOGGED TABLE')")
        psql(first_value(out))
    _, _, t = psql(update(1))
    plain_update = t[-1]
    lsn = "SELECT pg_current_wal_lsn()"
    wal = "SELECT pg_current_wal_lsn() - %s"
    out, _, t = psql(lsn, *settings, call)
    first, start = t[-1], first_value(out)
    out, _, _ = psql(wal % f"'{start}'::pg_lsn")
    first_wal = float(first_value(out))
    _, _, t = psql("CHECKPOINT", update(2), f"DELETE FROM {table} WHERE id % 1000 = 3")
    followed_update, delete = t[-2], t[-1]
    out, _, t = psql(lsn, *settings, call)
    nxt, start = t[-1], first_value(out)
    out, _, _ = psql(wal % f"'{start}'::pg_lsn")
    next_wal = float(first_value(out))
    # the rows the next run wrote: those whose explanation changed (the others stay as they are)
    out, _, _ = psql(f"SELECT count(*) FROM {target} WHERE computed_at >= "
                     f"(SELECT started_at FROM treeshap.jobs WHERE target = 'public.{target}')")
    written = int(first_value(out))
    # where the next run's time went: until its first change range was done (reading the
    # log into ranges, starting workers), the ranges, and after the last
    out, _, _ = psql("SELECT concat_ws(' ', extract(epoch FROM min(x.done_at) - j.started_at), "
                     "extract(epoch FROM max(x.done_at) - min(x.done_at)), "
                     "extract(epoch FROM j.finished_at - max(x.done_at)), count(*)) "
                     "FROM treeshap.job_store j JOIN treeshap.job_range x USING (job) "
                     f"WHERE j.target = 'public.{target}' AND x.keys IS NOT NULL GROUP BY j.job")
    phases = [float(v) for v in first_value(out).split()]
    done, changed, removed = job_counts(target)
    out, _, _ = psql(f"SELECT (SELECT count(*) FROM {target}), (SELECT count(*) FROM {table})")
    target_rows, source_rows = [int(v) for v in [ln for ln in out.splitlines() if "|" in ln][0].split("|")]
    if target_rows != source_rows or removed != rows // 1000:
        raise RuntimeError(f"target {target_rows} rows for {source_rows} source rows, {removed} removed")
    psql(f"DROP TABLE {target}", f"DELETE FROM treeshap.job_store WHERE target = 'public.{target}'", f"DROP TABLE {table}")
    rec = {"kind": "follow", "name": name, "device": device, "rows": rows, "batch": batch, "cores": os.cpu_count(),
           "target": "unlogged" if unlogged else "logged",
           "first_s": first, "next_s": nxt, "next_vs_first": nxt / first, "rows_changed": changed,
           "rows_removed": removed, "rows_written": written, "next_until_first_range_s": phases[0],
           "next_ranges_s": phases[1], "next_after_last_range_s": phases[2], "next_ranges": int(phases[3]), "first_wal_mb": first_wal / 2**20, "next_wal_mb": next_wal / 2**20,
           "update_plain_s": plain_update, "update_followed_s": followed_update,
           "delete_followed_s": delete}
    print(json.dumps(rec), flush=True)
    return rec


def table(r):
    print("\n| model | device | target | rows | first run | its WAL | 1 % updated, 0.1 % deleted: next run | its WAL "
          "| next / first | UPDATE of 1 %: plain | followed |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {r['name']} | {r['device']} | {r['target']} | {r['rows']} | {r['first_s']:.2f} s | {r['first_wal_mb']:.0f} MB "
          f"| {r['next_s']:.2f} s | {r['next_wal_mb']:.0f} MB | {r['next_vs_first']:.3f} "
          f"| {r['update_plain_s']:.2f} s | {r['update_followed_s']:.2f} s |")


if __name__ == "__main__":
    table(main())
