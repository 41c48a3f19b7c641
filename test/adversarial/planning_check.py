#!/usr/bin/env python3
"""The GPU service plans a model off the path that serves requests (issue 43).

While one session's call makes the GPU service read and plan a path-heavy model
(the forest of test/adversarial/make_models.py: 64 chain trees of depth 2,000,
millions of path elements), another session's 200-row requests on a resident
model keep their latency: the median during the plan within 2x the quiet median.
Then a call is cancelled while its model is being planned: it ends within 1 s of
the cancel, and the plan stops too, so a load of another model right after it
is not held up by the abandoned plan.

Every session runs with treeshap.device = gpu: a GPU, or the devices that
treeshap.service_emulated_devices emulates. The latency part (--latency) wants
cores to spare: on two, the planner and the planning session's backend take
both, and the requests wait for a core, not for the service (test/gpu-check.sh
runs it; test/emulated_check.sh the rest). Connection settings come from the
PG* environment variables.
    python3 test/adversarial/planning_check.py [--latency]
"""
import os
import statistics
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import KINDS, model_bytes  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
QUIET_REQUESTS = 40
failures = 0


def check(ok, what):
    global failures
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    failures += 0 if ok else 1


def connect():
    conn = psycopg2.connect("")
    conn.autocommit = True
    conn.cursor().execute("SET treeshap.device = gpu; SET treeshap.match_columns = position")
    return conn


def one_row_query(kind):
    """A query of one row of the model's positional features."""
    features = KINDS[kind][1]
    return "SELECT 1::bigint AS id, " + ", ".join(f"0.25::float8 AS f{j}" for j in range(features))


def timed_request(cur):
    """Seconds of one 200-row explanation of the resident model."""
    t0 = time.monotonic()
    cur.execute("SELECT count(*) FROM treeshap.explain_shap_wide('adv_resident', "
                "'SELECT id, f0, f1, f2, f3, f4, f5, f6, f7 FROM adv_rows')")
    return time.monotonic() - t0


def reload(cur, kind):
    """Load the model again as a new version, which the service must plan anew."""
    cur.execute("SELECT treeshap.drop_model(%s, true)", ("adv_" + kind,))
    cur.execute("SELECT 1 FROM treeshap.load_model(%s, %s)", ("adv_" + kind, model_bytes(kind)))


def first_call(cur, kind):
    """Seconds of a one-row prediction of a model the service has not planned yet:
    its plan, which a GPU call makes whatever it asks, and little else."""
    reload(cur, kind)
    t0 = time.monotonic()
    cur.execute(f"SELECT count(*) FROM treeshap.predict('adv_{kind}', %s)", (one_row_query(kind),))
    return time.monotonic() - t0


def setup(cur):
    with open(os.path.join(HERE, "..", "fixtures", "reg.json"), "rb") as f:
        cur.execute("SELECT 1 FROM treeshap.load_model('adv_resident', %s, replace => true)", (f.read(),))
    cur.execute("DROP TABLE IF EXISTS adv_rows")
    cur.execute("CREATE TABLE adv_rows AS SELECT g::bigint AS id, "
                + ", ".join(f"sin(g * {j + 1})::float8 * 4 + 4 AS f{j}" for j in range(8))
                + " FROM generate_series(1, 200) g")
    reload(cur, "forest")


def latency_while_planning(conn, kind):
    """The resident model's request latency, quiet and while `kind` is planned: a
    new version of it planned again and again for at least a second (one plan of
    the depth-30,000 chain takes milliseconds, the forest's seconds)."""
    cur = conn.cursor()
    reload(cur, kind)
    timed_request(cur)      # resident now
    quiet = statistics.median(timed_request(cur) for _ in range(QUIET_REQUESTS))
    done = threading.Event()
    plans = []

    def plan_again_and_again():
        other = connect()
        while sum(plans) < 1.0:
            plans.append(first_call(other.cursor(), kind))
        other.close()
        done.set()

    worker = threading.Thread(target=plan_again_and_again)
    worker.start()
    during = []
    while not done.is_set():
        during.append(timed_request(cur))
    worker.join()
    busy = statistics.median(during) if during else float("inf")
    print(f"{kind}: quiet median {quiet * 1000:.1f} ms; while it was planned {len(plans)} times "
          f"({sum(plans):.2f} s of first calls, the longest {max(plans):.2f} s): {len(during)} requests, "
          f"median {busy * 1000:.1f} ms, max {max(during) * 1000:.1f} ms")
    check(len(during) >= 3 and busy <= 2 * quiet,
          f"the resident model's requests kept their latency while {kind} was planned: "
          f"median {busy * 1000:.1f} ms within 2x the quiet {quiet * 1000:.1f} ms")


def cancel_while_planning(conn):
    """Cancel a call whose model is being planned; then time another model's first call."""
    victim = connect()
    pid = victim.get_backend_pid()
    cur = conn.cursor()
    alone = first_call(cur, "chain5k")
    reload(cur, "forest")
    ended = {}

    def run():
        try:
            victim.cursor().execute("SELECT count(*) FROM treeshap.predict('adv_forest', %s)",
                                    (one_row_query("forest"),))
            ended["how"] = "finished"
        except psycopg2.Error as e:
            ended["how"] = e.pgcode
        ended["at"] = time.monotonic()

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.3)
    signalled = time.monotonic()
    cur.execute("SELECT pg_cancel_backend(%s)", (pid,))
    worker.join()
    after = ended["at"] - signalled
    check(ended["how"] == "57014" and after < 1.0,
          f"a call cancelled while its model was planned ended within 1 s ({ended['how']}, {after:.3f} s)")
    next_call = first_call(cur, "chain5k")
    # an abandoned plan left running would hold it up for the rest of the forest's plan,
    # seconds on 2 cores (24M path elements); a margin of 1 s leaves room for a busy machine
    check(next_call < alone + 1.0,
          f"the next model's first call did not wait for the abandoned plan ({next_call:.2f} s; "
          f"{alone:.2f} s with the service idle)")
    victim.close()


def main():
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS pg_treeshap")
    cur.execute("SELECT pg_postmaster_start_time()")
    started = cur.fetchone()[0]
    setup(cur)
    if "--latency" in sys.argv:
        for kind in ("chain30k", "forest"):
            latency_while_planning(conn, kind)
    cancel_while_planning(conn)
    cur.execute("SELECT pg_postmaster_start_time()")
    check(cur.fetchone()[0] == started, "the postmaster never restarted")
    print("planning-check: " + ("PASS" if failures == 0 else f"FAIL ({failures})"))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
