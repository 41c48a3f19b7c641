#!/usr/bin/env python3
"""Cancel, statement_timeout and terminate on adversarial models, against a server
with pg_treeshap installed (connection settings from the PG* environment variables):

    python3 test/adversarial/cancel_check.py [--device gpu]

The models come from make_models.py beside this file: chain trees of depth 30,000
and 200,000 over 3 features, one of depth 5,000 over 1,500 features, and a forest of
64 chains of depth 2,000 over 200 features. They once made the backend ignore
every signal for minutes. Each is loaded and given a table of rows (bigint id, one
column per feature; half the rows at the top of the range, which go right at every
split and so walk every level of a chain, the other half pseudo-random in [-1, 1]
with NULLs) and an explain_into target.

Every function runs on every model (load_model, predict, explain_shap,
explain_shap_wide, explain_top_features, explain_interactions, interventional
explain_shap_wide against 50 background rows, feature_importance, CALL
explain_into) and is stopped once by each signal, after 1 to 8 s of work:
  cancel             another session calls pg_cancel_backend(pid);
  statement_timeout  the working session's statement_timeout is the delay;
  terminate          another session calls pg_terminate_backend(pid, 2000), which
                     must return true; the check then reconnects.
Each call must end with the signal's error (57014 for cancel and timeout, the
connection closed or 57P01 for terminate) within 1 s of the signal. A call that
finished before its signal fails, since the check did not test it, except
load_model, which may be quicker than the earliest signal (only chain200k's load
takes about that long). At the end the postmaster must have the start time it had
at the beginning (no backend crashed), and a fresh session must still predict
with every model.

--device sets treeshap.device in every working session (default cpu). The tables
are sized for the CPU path of a 2-core machine. With --device gpu, or --calibrate,
each function's rows are first read over as many times as it takes for an
unsignalled call to run at least twice its longest delay (the GPU explains the
CPU's rows in a fraction of a second); a device that still finishes a call before
its signal makes that call fail, as it should.
"""
import argparse
import math
import os
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_models import KINDS, model_bytes  # noqa: E402

SCHEMA = "adversarial"
SIGNALS = ("cancel", "statement_timeout", "terminate")
LIMIT = 1.0     # seconds from the signal to the call's end
HUNG = 15.0     # seconds after the signal before a call counts as hung and is terminated
# Rows of each model's table, and how many times predict's query reads them over:
# predict walks one path per row and tree, under a millisecond even down a whole chain, so
# reading the rows again is what keeps it busy past its signal without a table of
# millions of rows (chain5k's 1,500 columns make 6 kB a row). Sized for the CPU of
# a 2-core machine: unsignalled, every call runs at least twice its longest delay
# (predict 3.4-4.0 s, every other call longer than three times its delay).
TABLES = {"chain30k": (40000, 5), "chain200k": (10000, 3), "chain5k": (2000, 120), "forest": (4000, 10)}
# The models this check signals: those with a table above (make_models.py also writes
# models for other checks, such as chain90 for test/core/lanes_check.py)
CANCEL_KINDS = [kind for kind in KINDS if kind in TABLES]
DELAYS = (1.0, 1.25, 1.5)
# a few calls are signalled later, up to the 8 s the issue names
LONGER = {
    ("chain5k", "explain_shap_wide", "statement_timeout"): 8.0,
    ("chain5k", "feature_importance", "terminate"): 6.0,
    ("forest", "explain_interactions", "cancel"): 5.0,
    ("chain200k", "interventional", "cancel"): 4.0,
    ("forest", "explain_into", "statement_timeout"): 3.0,
    ("chain30k", "explain_shap", "terminate"): 2.5,
}
failures = []


def connect():
    """An autocommit connection (explain_into commits)."""
    conn = psycopg2.connect("")
    conn.autocommit = True
    return conn


def query(conn, sql, args=None):
    """Run one statement; its rows, if it returns any."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else None


def check(name, ok, detail=""):
    """Print one ok/FAIL line and remember a failure."""
    print(f"{'ok' if ok else 'FAIL'}: {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def features(kind):
    """The feature columns of a model's table, in model order."""
    return ", ".join(f"f{j}" for j in range(KINDS[kind][1]))


def make_table(conn, kind):
    """The model's rows, its explain_into target, both in SCHEMA."""
    rows = TABLES[kind][0]
    n = KINDS[kind][1]
    # float8, unless a row of them does not fit in a heap page: then real, the
    # float32 the models compare anyway
    ctype = "float8" if n * 8 < 8000 else "real"
    # even ids: 1 everywhere, never below a threshold (all in [-1, 1]), so right at
    # every split down to the deepest leaf; odd ids: about one NULL in 13
    columns = ", ".join(f"(CASE WHEN g % 2 = 0 THEN 1 WHEN hashint8(g * {n} + {j}) % 13 = 0 THEN NULL "
                        f"ELSE sin(g * 0.7 + {j} * 1.3) END)::{ctype} AS f{j}" for j in range(n))
    query(conn, f"""
        CREATE TABLE {SCHEMA}.{kind} AS SELECT g::bigint AS id, {columns} FROM generate_series(1, {rows}) g;
        ALTER TABLE {SCHEMA}.{kind} ADD PRIMARY KEY (id);
        CREATE TABLE {SCHEMA}.{kind}_shap (row_key bigint, output int, base_value float8, shap_values float8[],
                                           model_version bigint, computed_at timestamptz,
                                           PRIMARY KEY (row_key, output, model_version))""")


def source(kind, repeat):
    """The model's rows read `repeat` times over, every id still unique."""
    table = f"{SCHEMA}.{kind}"
    if repeat == 1:
        return f"SELECT * FROM {table}"
    return (f"SELECT t.id * {repeat} + k AS id, {features(kind)} FROM {table} t "
            f"CROSS JOIN generate_series(0, {repeat - 1}) k")


def source_view(control, kind, repeat):
    """A view of source(kind, repeat), for explain_into, which reads a relation."""
    if repeat == 1:
        return f"{SCHEMA}.{kind}"
    view = f"{SCHEMA}.{kind}_x{repeat}"
    query(control, f"CREATE OR REPLACE VIEW {view} AS {source(kind, repeat)}")
    return view


def base_repeat(kind, function):
    """How many times a function reads its model's rows over on the CPU path."""
    return TABLES[kind][1] if function == "predict" else 1


def calls(control, kind, model, repeats):
    """(function, SQL, arguments, SQL to run first) for every function under test;
    repeats: how many times each function reads the rows over (its base if absent)."""
    table = f"{SCHEMA}.{kind}"

    def rows(function):
        return source(kind, repeats.get(function, base_repeat(kind, function)))
    background = f"SELECT {features(kind)} FROM {table} WHERE id <= 50"
    into = source_view(control, kind, repeats.get("explain_into", 1))
    return [
        ("load_model", "SELECT 1 FROM treeshap.load_model(%s, %s, replace => true)", (kind, model), None),
        ("predict", "SELECT count(*) FROM treeshap.predict(%s, %s)", (kind, rows("predict")), None),
        ("explain_shap", "SELECT count(*) FROM treeshap.explain_shap(%s, %s)", (kind, rows("explain_shap")), None),
        ("explain_shap_wide", "SELECT count(*) FROM treeshap.explain_shap_wide(%s, %s)",
         (kind, rows("explain_shap_wide")), None),
        ("explain_top_features", "SELECT count(*) FROM treeshap.explain_top_features(%s, %s, k => 3)",
         (kind, rows("explain_top_features")), None),
        ("explain_interactions", "SELECT count(*) FROM treeshap.explain_interactions(%s, %s, "
         "features => ARRAY['f0', 'f2'])", (kind, rows("explain_interactions")), None),
        ("interventional", "SELECT count(*) FROM treeshap.explain_shap_wide(%s, %s, background => %s)",
         (kind, rows("interventional"), background), None),
        ("feature_importance", "SELECT count(*) FROM treeshap.feature_importance(%s, %s)",
         (kind, rows("feature_importance")), None),
        # emptied first, so that every call has every row to explain
        ("explain_into", "CALL treeshap.explain_into(%s, %s, %s)", (kind, into, f"{table}_shap"),
         f"TRUNCATE {table}_shap"),
    ]


def delay_of(m, f, s, kind, function, signal):
    """The delay before a call's signal: a load gets the earliest, the one chain200k's
    load may still see; a few calls are signalled later."""
    if function == "load_model":
        return DELAYS[0]
    return LONGER.get((kind, function, signal), DELAYS[(m + f + s) % len(DELAYS)])


def outlasts(control, session, call, need):
    """Whether an unsignalled call runs `need` seconds (a statement_timeout then
    ends it, so that finding out costs no more than that); else its seconds."""
    function, sql, args, first = call
    if first:
        query(control, first)
    query(session.conn, "SET statement_timeout = %s", (int(need * 1000),))
    started = time.monotonic()
    try:
        query(session.conn, sql, args)
    except psycopg2.errors.QueryCanceled:
        return True
    finally:
        query(session.conn, "RESET statement_timeout")
    return time.monotonic() - started


def calibrate(control, session, m, kind, model):
    """Each function's repeat, grown until an unsignalled call runs at least twice
    the longest delay it will be signalled after."""
    repeats = {}
    for f, call in enumerate(calls(control, kind, model, repeats)):
        function = call[0]
        if function == "load_model":
            continue
        need = 2 * max(delay_of(m, f, s, kind, function, signal) for s, signal in enumerate(SIGNALS))
        repeat = base_repeat(kind, function)
        while True:
            spent = outlasts(control, session, calls(control, kind, model, {function: repeat})[f], need)
            if spent is True:
                break
            # time is not linear in the rows (a call's fixed cost): aim well past the
            # need, which costs nothing more, since the timeout ends the call there
            repeat *= min(32, max(2, math.ceil(3 * need / max(spent, 0.01))))
        repeats[function] = repeat
        print(f"calibrated: {kind:9} {function:20} rows read {repeat} times over "
              f"(unsignalled, longer than {need:.1f} s)", flush=True)
    return repeats


class Session:
    """The working session: a connection and its backend's pid."""

    def __init__(self, device):
        self.conn = connect()
        query(self.conn, "SET treeshap.device = %s", (device,))
        self.pid = query(self.conn, "SELECT pg_backend_pid()")[0][0]


def start_in_thread(conn, sql, args):
    """Run one statement in its own thread; the outcome gets its error, if any, and its end."""
    outcome = {}

    def run():
        try:
            query(conn, sql, args)
        except psycopg2.Error as e:
            outcome["error"] = e
        outcome["ended"] = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def signal_call(control, session, signal, delay, thread, started):
    """Signal the running call `delay` s after it started; when the signal went, and
    pg_terminate_backend's answer (None for the other signals or a call already over)."""
    thread.join(started + delay - time.monotonic())
    if signal == "statement_timeout" or not thread.is_alive():
        return started + delay, None
    sent = time.monotonic()
    if signal == "cancel":
        query(control, "SELECT pg_cancel_backend(%s)", (session.pid,))
        return sent, None
    return sent, query(control, "SELECT pg_terminate_backend(%s, 2000)", (session.pid,))[0][0]


def describe(error):
    """An error's SQLSTATE (or that the connection closed) and the first line of its message."""
    text = str(error).strip()
    return f"{error.pgcode or 'connection closed'}: {text.splitlines()[0] if text else type(error).__name__}"


def judge(name, function, signal, outcome, started, signalled, terminated):
    """One line for a call that ended: its error, and how long after its signal."""
    error, ended = outcome.get("error"), outcome["ended"]
    if error is None:
        check(name, function == "load_model",
              f"finished {ended - started:.2f} s after it started, before its signal"
              + (" (a load may)" if function == "load_model" else ": the check did not test it"))
    elif ended < signalled:
        check(name, False, f"failed {ended - started:.2f} s after it started, before its signal ({describe(error)})")
    elif signal == "terminate":
        expected = isinstance(error, psycopg2.OperationalError) and error.pgcode in (None, "57P01")
        check(name, expected and terminated is True and ended - signalled < LIMIT,
              f"ended {ended - signalled:.3f} s after the signal, pg_terminate_backend {terminated} "
              f"({describe(error)})")
    else:
        check(name, error.pgcode == "57014" and ended - signalled < LIMIT,
              f"ended {ended - signalled:.3f} s after the signal ({describe(error)})")


def run_call(control, session, device, kind, call, signal, delay):
    """One call on one model, stopped by one signal; the working session to go on with."""
    function, sql, args, first = call
    name = f"{kind:9} {function:20} {signal:17} delay {delay:4.2f} s"
    if first:
        query(control, first)
    if signal == "statement_timeout":
        query(session.conn, "SET statement_timeout = %s", (int(delay * 1000),))
    started = time.monotonic()
    thread, outcome = start_in_thread(session.conn, sql, args)
    signalled, terminated = signal_call(control, session, signal, delay, thread, started)
    thread.join(max(0.0, signalled + HUNG - time.monotonic()))
    if thread.is_alive():
        check(name, False, f"still running {HUNG:.0f} s after the signal: terminated")
        query(control, "SELECT pg_terminate_backend(%s, 60000)", (session.pid,))
        return Session(device)
    judge(name, function, signal, outcome, started, signalled, terminated)
    if signal == "terminate" or session.conn.closed:
        # a terminate sent to a call that had just finished still ends the session
        session.conn.close()
        return Session(device)
    if signal == "statement_timeout":
        query(session.conn, "RESET statement_timeout")
    return session


def setup(conn, models):
    """The extension, the models and their tables, in a fresh SCHEMA."""
    query(conn, "CREATE EXTENSION IF NOT EXISTS pg_treeshap")
    query(conn, f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}")
    query(conn, "DELETE FROM treeshap.job_store WHERE target LIKE %s", (SCHEMA + ".%",))
    for kind, model in models.items():
        query(conn, "SELECT 1 FROM treeshap.load_model(%s, %s, replace => true)", (kind, model))
        make_table(conn, kind)


def final_checks(control, device, postmaster_started, kinds):
    """The postmaster never restarted, and a fresh session predicts with every model."""
    now = query(control, "SELECT pg_postmaster_start_time()")[0][0]
    check("the postmaster never restarted", now == postmaster_started,
          f"started at {postmaster_started}, now {now}")
    session = Session(device)
    for kind in kinds:
        name = f"a fresh session predicts 10 rows with {kind}"
        try:
            n = query(session.conn, "SELECT count(*) FROM treeshap.predict(%s, %s)",
                      (kind, f"SELECT * FROM {SCHEMA}.{kind} WHERE id <= 10"))[0][0]
            check(name, n == 10, f"{n} rows")
        except psycopg2.Error as e:
            check(name, False, describe(e))
    session.conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--kinds", default=",".join(CANCEL_KINDS),
                        help="the models to run on, comma-separated (default: all)")
    parser.add_argument("--calibrate", action="store_true",
                        help="grow each function's rows until it outlasts its signals (always with gpu)")
    options = parser.parse_args()
    device = options.device
    calibrating = options.calibrate or device == "gpu"
    kinds = options.kinds.split(",")
    unknown = set(kinds) - set(CANCEL_KINDS)
    if unknown:
        parser.error(f"unknown models {', '.join(sorted(unknown))}; there are {', '.join(CANCEL_KINDS)}")
    begun = time.monotonic()
    control = connect()
    postmaster_started = query(control, "SELECT pg_postmaster_start_time()")[0][0]
    models = {kind: model_bytes(kind) for kind in kinds}
    setup(control, models)
    print(f"device {device}; models and tables ready after {time.monotonic() - begun:.1f} s", flush=True)
    session = Session(device)
    count = 0
    for m, kind in enumerate(CANCEL_KINDS):
        if kind not in kinds:
            continue
        repeats = calibrate(control, session, m, kind, models[kind]) if calibrating else {}
        for f, call in enumerate(calls(control, kind, models[kind], repeats)):
            for s, signal in enumerate(SIGNALS):
                delay = delay_of(m, f, s, kind, call[0], signal)
                session = run_call(control, session, device, kind, call, signal, delay)
                count += 1
    session.conn.close()
    final_checks(control, device, postmaster_started, kinds)
    query(control, f"DROP SCHEMA {SCHEMA} CASCADE")
    query(control, "DELETE FROM treeshap.job_store WHERE target LIKE %s", (SCHEMA + ".%",))
    for kind in kinds:
        query(control, "SELECT treeshap.drop_model(%s)", (kind,))
    print(f"cancel-check: {count} calls in {time.monotonic() - begun:.0f} s: "
          f"{'PASS' if not failures else f'FAIL ({len(failures)} failed, marked FAIL above)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
