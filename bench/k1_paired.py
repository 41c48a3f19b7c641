#!/usr/bin/env python3
"""One session explaining 1,000,000 rows on this build and on an older one,
alternated round by round: two servers run side by side (this one, named by
the PG* variables, and the old one, named by the libpq string TS_OLD_DSN),
each with the same frozen table, and each round times one call on each,
the order swapped every round, so that a drift of the machine falls on
both builds alike. Prints one JSON record per model with every round's
rows/s, and the median, lowest and highest of the per-round ratios
this / old, with the backend's own phase clock (DEBUG1: fetching and
converting rows, waiting for the GPU, emitting) so that a difference can be
placed. Every call's checksum must equal the CPU path's. TS_BENCH_CPU pins
both builds' backends to that CPU (they never run at once), which removes
the swing of a backend moved between cores. bench/k1_paired.sh starts the
old server and runs this.

    TS_OLD_DSN='host=... port=...' python3 bench/k1_paired.py WORK_DIR ROUNDS NAME...
"""
import json
import os
import re
import statistics
import sys
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import checksum_query, cpu_reference, expected, features_of, load  # noqa: E402

ROWS = 1000000


def session(dsn):
    """A warm-up-ready session on the GPU, as bench/concurrency.py's."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"SET treeshap.device = {os.environ.get('TS_BENCH_DEVICE', 'gpu')}")
        cur.execute("SET work_mem = '1GB'")
        cur.execute("SET treeshap.match_columns = position")
        cur.execute("SET client_min_messages = debug1")  # the run's phase clock
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    if os.environ.get("TS_BENCH_CPU"):
        os.sched_setaffinity(pid, {int(os.environ["TS_BENCH_CPU"])})
    return conn


def prepare(dsn, work, name, table, features):
    """The model and the table on one server, frozen, and autovacuum kept off it."""
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    distinct = load(conn, work, name, table, features, ROWS)
    with conn.cursor() as cur:
        cur.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
        cur.execute(f"VACUUM (FREEZE, ANALYZE) {table}")
    conn.close()
    return distinct


PHASES = re.compile(r"fetch\+convert ([\d.]+) ms, waiting for gpu ([\d.]+) ms, emit ([\d.]+) ms")


def timed(conn, query):
    """One call: (seconds, count, sum, [fetch, wait, emit] ms summed over its runs)."""
    del conn.notices[:]
    with conn.cursor() as cur:
        t0 = time.perf_counter()
        cur.execute(query)
        count, total = cur.fetchone()
        seconds = time.perf_counter() - t0
    phases = [0.0, 0.0, 0.0]
    for notice in conn.notices:
        m = PHASES.search(notice)
        if m:
            phases = [a + float(b) for a, b in zip(phases, m.groups())]
    return seconds, count, total, phases


def measure(work, name, rounds, dsns):
    features, outputs = features_of(work, name)
    table = "k_" + re.sub(r"\W", "_", name)
    for dsn in dsns.values():
        distinct = prepare(dsn, work, name, table, features)
    want = expected(cpu_reference(name, table, features), distinct, outputs, features, 0, ROWS)
    query = checksum_query(name, table, features, 0, ROWS)
    conns = {build: session(dsn) for build, dsn in dsns.items()}
    ok = True
    rates = {build: [] for build in dsns}
    phases = {build: [] for build in dsns}

    def call(build):
        nonlocal ok
        seconds, count, total, clock = timed(conns[build], query)
        ok = ok and count == ROWS * outputs and abs(total - want) <= 1e-9 * max(1.0, abs(want))
        phases[build].append(clock)
        return ROWS / seconds

    for build in dsns:  # model read, table in shared buffers, runners made: twice, untimed
        call(build)
        call(build)
        phases[build].clear()
    for r in range(rounds):
        for build in (["old", "this"] if r % 2 == 0 else ["this", "old"]):
            rates[build].append(call(build))
    for conn in conns.values():
        conn.close()
    ratios = [t / o for t, o in zip(rates["this"], rates["old"])]
    return {"kind": "k1_paired", "name": name, "rows": ROWS, "rounds": rounds,
            "old_rows_per_s": [round(x) for x in rates["old"]],
            "this_rows_per_s": [round(x) for x in rates["this"]],
            "median_old": round(statistics.median(rates["old"])),
            "median_this": round(statistics.median(rates["this"])),
            "ratio_median": round(statistics.median(ratios), 4),
            "ratio_min": round(min(ratios), 4), "ratio_max": round(max(ratios), 4),
            "rounds_this_faster": sum(x > 1 for x in ratios),
            "phase_ms_median": {build: {k: round(statistics.median(c[i] for c in phases[build]), 1)
                                        for i, k in enumerate(("fetch_convert", "wait_gpu", "emit"))}
                                for build in dsns},
            "checksums_match_cpu": ok}


def main():
    work, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    dsns = {"old": os.environ["TS_OLD_DSN"], "this": ""}
    ok = True
    for name in names:
        rec = measure(work, name, rounds, dsns)
        ok = ok and rec["checksums_match_cpu"]
        print(json.dumps(rec), flush=True)
        print(f"{name}: K = 1, {rounds} rounds alternated: median {rec['median_this']:,} rows/s with the service, "
              f"{rec['median_old']:,} before it; per-round ratio median x{rec['ratio_median']:.3f} "
              f"(lowest {rec['ratio_min']:.3f}, highest {rec['ratio_max']:.3f}; service faster in "
              f"{rec['rounds_this_faster']} of {rounds}); checksums equal the CPU's: "
              f"{'yes' if rec['checksums_match_cpu'] else 'NO'}; backend phases, median ms: "
              f"{rec['phase_ms_median']['this']} with the service, {rec['phase_ms_median']['old']} before it",
              flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
