#!/usr/bin/env python3
"""Where the CPU path's scaling goes (issue 46): explain_shap_wide on 1..N threads of one
session (treeshap.cpu_threads), and 1..N sessions of one thread each at once, over the
same distinct rows per thread or session, so that every statement takes about as long.
Scaling = rate / (count x one thread's rate). bench/cpu_scaling.sh measures the same
counts for the walk without PostgreSQL; the two together say whether what is lost is
the host's or the server's.

    python3 bench/cpu_sweep.py WORK_DIR NAME [NAME ...]

WORK_DIR as bench/grid.py writes it; TS_BENCH_COUNTS the counts (default: 1, 2, 4, half
the cores, all but one, all); the server through PG* variables. Best of two per count;
every count's checksum over the same rows must equal one thread's bit for bit.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import connect, features_of, load, queries_at_once  # noqa: E402
from cpu_threads import sessions_rate  # noqa: E402

REPS = 2


def counts():
    cores = os.cpu_count()
    default = sorted({1, 2, 4, cores // 2, cores - 1, cores})
    return [int(c) for c in os.environ.get("TS_BENCH_COUNTS", " ".join(map(str, default))).split()]


def shap_sql(name, table, features, lo, hi):
    return (f"SELECT count(*), sum(shap_values[1 + (row_key % {features})::int] + base_value) "
            f"FROM treeshap.explain_shap_wide('{name}', 'SELECT * FROM {table} WHERE id >= {lo} AND id < {hi}')")


def threads_rate(conn, sql_of, distinct, n):
    """rows/s of one session on n threads over n x distinct rows, and its first row."""
    with conn.cursor() as cur:
        cur.execute(f"SET treeshap.cpu_threads = {n}")
    best, row = 0.0, None
    for _ in range(REPS):
        seconds, results = queries_at_once([conn], [sql_of(0, n * distinct)])
        best, row = max(best, n * distinct / seconds), results[0]
    return best, row


def sweep(work, name):
    table = "s_" + re.sub(r"\W", "_", name)
    features, _outputs = features_of(work, name)
    top = max(counts())
    with open(os.path.join(work, name + ".csv")) as f:
        distinct = sum(1 for _ in f)
    conn = connect("cpu")
    load(conn, work, name, table, features, top * distinct)
    sql_of = lambda lo, hi: shap_sql(name, table, features, lo, hi)  # noqa: E731
    one, expected = threads_rate(conn, sql_of, distinct, 1)
    rows = []
    for n in counts():
        t, _row = threads_rate(conn, sql_of, distinct, n)
        with conn.cursor() as cur:  # n threads over one thread's rows: the same bits
            cur.execute(sql_of(0, distinct))
            same_rows = cur.fetchone() == expected
        s = sessions_rate(lambda rows: sql_of(0, rows), n, distinct, expected)
        rows.append({"kind": "cpu_sweep", "name": name, "count": n, "rows_each": distinct,
                     "threads": t, "threads_scaling": t / (n * one), "sessions": s,
                     "sessions_scaling": s / (n * one), "bitwise_equal": same_rows})
        print(json.dumps(rows[-1]), flush=True)
    conn.close()
    return rows


def main():
    work, names = sys.argv[1], sys.argv[2:]
    recs = [r for name in names for r in sweep(work, name)]
    print(f"\n{os.cpu_count()} cores; rows/s through explain_shap_wide, {REPS} runs each, the best")
    print("| model | count | one session, count threads | scaling | count sessions, 1 thread each | scaling "
          "| bitwise equal |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in recs:
        print(f"| {r['name']} | {r['count']} | {r['threads']:.0f} | {r['threads_scaling']:.2f} "
              f"| {r['sessions']:.0f} | {r['sessions_scaling']:.2f} | {'yes' if r['bitwise_equal'] else 'NO'} |")
    return 0 if all(r["bitwise_equal"] for r in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
