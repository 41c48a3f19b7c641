#!/usr/bin/env python3
"""Concurrent sessions on one model: K sessions (K = 1, 8, 32, 64 by default)
split ROWS rows of a heap table evenly and explain their share at the same
time (explain_shap_wide); prints aggregate rows/s per K and its ratio to
K = 1, measured in this run. Every session's checksum is compared with the
CPU path's: the table repeats the model's 10,000 benchmark rows (row id
modulo 10,000), whose contributions one CPU session computes once. Also
times the first call of a new session on the resident model (1,000 rows)
against that session's second call.

    python3 bench/concurrency.py WORK_DIR NAME [ROWS] [K,K,...]

An empty K list ("") times the first calls alone (no CPU reference: for
models whose CPU path would take minutes).

WORK_DIR holds NAME.json and NAME.csv (bench/grid.py writes them); PG*
variables name the server; TS_BENCH_DEVICE (default gpu) is the device of
the timed sessions. Prints one JSON record.
"""
import json
import math
import os
import re
import sys
import threading
import time

import psycopg2

DISTINCT = 10000


def connect(device):
    conn = psycopg2.connect("")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"SET treeshap.device = {device}")
        cur.execute("SET work_mem = '1GB'")
        cur.execute("SET treeshap.match_columns = position")  # columns f0, f1, ... in model order
    return conn


def features_of(work, name):
    with open(os.path.join(work, name + ".json")) as f:
        param = json.load(f)["learner"]["learner_model_param"]
    return int(param["num_feature"]), max(1, int(param["num_class"]))


def load(conn, work, name, table, features, rows):
    """The model, the distinct rows, and a table of rows rows repeating them."""
    cols = ", ".join(f"f{j} real" for j in range(features))
    with conn.cursor() as cur:
        cur.execute("CREATE EXTENSION IF NOT EXISTS pg_treeshap")
        cur.execute(f"DROP TABLE IF EXISTS {table}_distinct, {table}")
        cur.execute(f"CREATE TABLE {table}_distinct (id bigint PRIMARY KEY, {cols})")
        with open(os.path.join(work, name + ".csv")) as f:
            cur.copy_expert(f"COPY {table}_distinct FROM STDIN CSV", f)
        picks = ", ".join(f"d.f{j}" for j in range(features))
        cur.execute(f"CREATE TABLE {table} AS SELECT g AS id, {picks} FROM generate_series(0, {rows - 1}) g "
                    f"JOIN {table}_distinct d ON d.id = g % (SELECT count(*) FROM {table}_distinct)")
        cur.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")  # a session's share is an index range
        cur.execute(f"VACUUM ANALYZE {table}")
        # read by the server: a bytea parameter of a large model passes 1 GB as text
        cur.execute("SELECT (treeshap.load_model(%s, pg_read_binary_file(%s), true)).version",
                    (name, os.path.abspath(os.path.join(work, name + ".json"))))
        cur.execute(f"SELECT count(*) FROM {table}_distinct")
        return cur.fetchone()[0]


def checksum_query(name, table, features, lo, hi):
    """Rows [lo, hi): their count and the sum of one contribution per row (feature id mod F)."""
    return (f"SELECT count(*), sum(shap_values[1 + (row_key % {features})::int] + base_value) "
            f"FROM treeshap.explain_shap_wide('{name}', "
            f"'SELECT * FROM {table} WHERE id >= {lo} AND id < {hi}')")


def cpu_reference(name, table, features):
    """Per distinct row and output: the CPU's contributions (one session)."""
    conn = connect("cpu")
    with conn.cursor() as cur:
        cur.execute(f"SELECT row_key, output, base_value, shap_values FROM treeshap.explain_shap_wide('{name}', "
                    f"'SELECT * FROM {table}_distinct')")
        ref = {(k, o): (b, v) for k, o, b, v in cur.fetchall()}
    conn.close()
    return ref


def expected(ref, distinct, outputs, features, lo, hi):
    """The CPU's checksum of rows [lo, hi)."""
    terms = []
    for i in range(lo, hi):
        for o in range(outputs):
            base, values = ref[(i % distinct, o)]
            terms.append(values[i % features] + base)
    return math.fsum(terms)


def queries_at_once(conns, queries):
    """Each session runs its query, all started together; (seconds until the last
    ends, each one's first row or the exception it raised)."""
    results = [None] * len(conns)
    barrier = threading.Barrier(len(conns) + 1)

    def work(i):
        barrier.wait()
        try:
            with conns[i].cursor() as cur:
                cur.execute(queries[i])
                results[i] = cur.fetchone()
        except Exception as e:  # noqa: BLE001 (the caller checks the results)
            results[i] = e

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(conns))]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, results


def run_sessions(k, conns, name, table, features, rows):
    """k sessions explain an even share each, started together; (seconds, [(count, sum)])."""
    bounds = [rows * i // k for i in range(k + 1)]
    seconds, results = queries_at_once(
        conns[:k], [checksum_query(name, table, features, bounds[i], bounds[i + 1]) for i in range(k)])
    for r in results:
        if isinstance(r, Exception):
            raise r
    return seconds, results, bounds


def first_call(device, name, table, features):
    """A new session's first and second call on 1,000 rows, in seconds."""
    conn = connect(device)
    times = []
    with conn.cursor() as cur:
        for _ in range(2):
            t0 = time.perf_counter()
            cur.execute(checksum_query(name, table, features, 0, 1000))
            cur.fetchone()
            times.append(time.perf_counter() - t0)
    conn.close()
    return times


def main():
    work, name = sys.argv[1:3]
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
    ks = [int(k) for k in (sys.argv[4] if len(sys.argv) > 4 else "1,8,32,64").split(",") if k]
    device = os.environ.get("TS_BENCH_DEVICE", "gpu")
    table = "c_" + re.sub(r"\W", "_", name)
    features, outputs = features_of(work, name)
    setup = connect("cpu")
    distinct = load(setup, work, name, table, features, rows)
    setup.close()
    ref = cpu_reference(name, table, features) if ks else None

    rec = {"kind": "concurrency", "name": name, "rows": rows, "device": device, "sessions": {}}
    warm = first_call(device, name, table, features)  # makes the model resident
    first = first_call(device, name, table, features)
    rec.update({"first_call_s": first[0], "second_call_s": first[1], "first_call_cold_s": warm[0]})
    ok = True
    for k in ks:
        conns = [connect(device) for _ in range(k)]
        for c in conns:  # each backend reads the model once, outside the timing
            with c.cursor() as cur:
                cur.execute(checksum_query(name, table, features, 0, 1))
        seconds, results, bounds = run_sessions(k, conns, name, table, features, rows)
        for c in conns:
            c.close()
        worst = 0.0
        for i, (count, total) in enumerate(results):
            want = expected(ref, distinct, outputs, features, bounds[i], bounds[i + 1])
            scale = max(1.0, abs(want))
            worst = max(worst, abs(total - want) / scale)
            ok = ok and count == (bounds[i + 1] - bounds[i]) * outputs
        ok = ok and worst < 1e-9
        rec["sessions"][str(k)] = {"seconds": seconds, "rows_per_s": rows / seconds,
                                   "checksum_rel_dev": worst}
    for k in ks:
        rec["sessions"][str(k)]["ratio_to_first"] = rec["sessions"][str(k)]["rows_per_s"] / \
            rec["sessions"][str(ks[0])]["rows_per_s"]
    rec["checksums_match_cpu"] = ok
    print(json.dumps(rec), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
