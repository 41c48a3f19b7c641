#!/usr/bin/env python3
"""explain_into under fire, against the throwaway cluster (PG* environment).

1. terminate: a job over several batches is ended by pg_terminate_backend
   while another session watches treeshap.jobs; a second call into the same
   target is refused while it runs; the re-run finishes the remainder.
2. cancel: the same with pg_cancel_backend; the job records the error.
3. sigkill: the job's backend gets SIGKILL, so the whole server restarts;
   the re-run finishes the remainder.
4. pg_cron (when the server preloads it): CALL explain_into scheduled every
   minute; after new source rows arrive the next run explains exactly them.
5. replace: the model is replaced while a job runs; the job stops, and the
   next run explains every row under the new version.
1-3 and 5 run twice: in the calling session alone (workers => 0) and with
TS_JOBS_WORKERS background workers (default 3). With workers also:
6. worker-terminate: one worker is terminated; the job fails saying so, the
   others stop, and the re-run finishes the remainder.
7. worker-sigkill: one worker gets SIGKILL (a server crash); the same.
8. worker-error: a worker's ERROR fails the job with that worker's message
   and SQLSTATE, and every worker is gone.
9. leader-cancel: every worker is gone within 1 s of the leader's cancel.
10. follow-terminate, follow-sigkill: a job with follow => true, after updates
   (features and keys), deletes and inserts on its source; the run that
   consumes the change log is killed after two of its batches, and the next
   run leaves the target equal to a one-shot explain_shap_wide of the source
   as it is.
11. unlogged: an unlogged target, which a crash empties while the job's marks
   of what it wrote survive: a run with workers whose worker gets SIGKILL, and
   a followed job crashed after a complete run; each next run explains every
   row again. The same for a stopped run's target dropped and made again.

After every re-run the target must hold every source key exactly once, with
values equal to a one-shot explain_shap_wide over the same rows.
"""
import os
import signal
import sys
import threading
import time

import psycopg2

ROWS = int(os.environ.get("TS_JOBS_ROWS", "40000"))
BATCH = int(os.environ.get("TS_JOBS_BATCH", "2000"))
KILL_AFTER_BATCHES = 3
PARALLEL = int(os.environ.get("TS_JOBS_WORKERS", "3"))
WORKER = "pg_treeshap job worker"
workers = 0         # the runs' workers argument, set per pass in main
MODEL = "jobs_reg"
failures = []


def connect(retry_seconds=0):
    """An autocommit connection (CALL may then COMMIT), retried while the server restarts."""
    deadline = time.time() + retry_seconds
    while True:
        try:
            conn = psycopg2.connect("")
            conn.autocommit = True
            return conn
        except psycopg2.OperationalError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)


def query(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall() if cur.description else None


def check(name, ok, detail=""):
    print(f"{'ok' if ok else 'FAIL'}: {name}{' (' + detail + ')' if detail else ''}")
    if not ok:
        failures.append(name)


def setup(conn):
    """The model and a source table of ROWS houses with keys 1..ROWS."""
    with open("test/fixtures/reg.json", "rb") as f:
        query(conn, "SELECT 1 FROM treeshap.load_model(%s, %s, replace => true)", (MODEL, f.read()))
    query(conn, "DROP SCHEMA IF EXISTS jobs CASCADE; CREATE SCHEMA jobs")
    query(conn, """
        CREATE TABLE jobs.houses AS
        SELECT g AS id, (g * 37 %% 1500) / 100.0::float8 AS "MedInc", (g * 11 %% 52)::float8 AS "HouseAge",
               2 + (g * 13 %% 700) / 100.0::float8 AS "AveRooms", 1 + (g %% 7) / 20.0::float8 AS "AveBedrms",
               (g * 101 %% 5000)::float8 AS "Population", 1 + (g * 17 %% 400) / 100.0::float8 AS "AveOccup",
               32.5 + (g * 29 %% 900) / 100.0::float8 AS "Latitude", -124.3 + (g * 31 %% 1000) / 100.0::float8 AS "Longitude"
          FROM generate_series(1, %s) g;
        ALTER TABLE jobs.houses ADD PRIMARY KEY (id);
        CREATE TABLE jobs.reference AS
        SELECT * FROM treeshap.explain_shap_wide(%s, 'SELECT id, * FROM jobs.houses')""", (ROWS, MODEL))
    query(conn, "DELETE FROM treeshap.job_store WHERE target LIKE 'jobs.%'")


def explain_into(conn, target, filter=None):
    query(conn, "CALL treeshap.explain_into(%s, 'jobs.houses', %s, batch_size => %s, workers => %s, filter => %s)",
          (MODEL, target, BATCH, workers, filter))


def worker_pids(conn):
    return [r[0] for r in query(conn, "SELECT pid FROM pg_stat_activity WHERE backend_type = %s", (WORKER,))]


def job(conn, target):
    rows = query(conn, """SELECT state, rows_done, rows_total, batches, rows_per_second, pid, error
                            FROM treeshap.jobs WHERE target = %s""", (target,))
    return dict(zip(["state", "rows_done", "rows_total", "batches", "rate", "pid", "error"], rows[0])) if rows else None


def start_in_thread(target):
    """Run explain_into in its own connection and thread; the error it ends with, if any."""
    outcome = {}

    def run():
        try:
            explain_into(connect(), target)
        except psycopg2.Error as e:
            outcome["error"] = e
    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def start_running(conn, scenario, target):
    """A run in its own thread, once it has committed KILL_AFTER_BATCHES batches;
    (thread, outcome, the job's row), the row None (and a failure) if it finished first."""
    thread, outcome = start_in_thread(target)
    running, _ = wait_for_batches(conn, target, thread, KILL_AFTER_BATCHES)
    if running is None:
        thread.join()
        check(f"{scenario}: the job was still running", False, "it finished first: raise TS_JOBS_ROWS")
    return thread, outcome, running


def wait_for_batches(conn, target, thread, batches):
    """Poll treeshap.jobs from this session until the run has committed `batches` batches."""
    seen = []
    while thread.is_alive():
        j = job(conn, target)
        # a run with workers knows its total once one of them has counted the rows
        if j and j["state"] == "running" and j["batches"] >= batches and j["rows_total"] is not None:
            return j, seen
        if j:
            seen.append(j["rows_done"])
        time.sleep(0.02)
    return None, seen


def verify_target(conn, scenario, target):
    """Every key exactly once, nothing missing, values equal to the one-shot reference."""
    dup, missing, extra, differ = query(conn, f"""
        SELECT (SELECT count(*) FROM (SELECT row_key FROM {target} GROUP BY row_key, output HAVING count(*) > 1) d),
               (SELECT count(*) FROM jobs.houses h WHERE NOT EXISTS (SELECT 1 FROM {target} t WHERE t.row_key = h.id)),
               (SELECT count(*) FROM {target} t WHERE NOT EXISTS (SELECT 1 FROM jobs.houses h WHERE h.id = t.row_key)),
               (SELECT count(*) FROM (SELECT row_key, output, base_value, shap_values FROM {target}
                                      EXCEPT SELECT row_key, output, base_value, shap_values FROM jobs.reference) x)""")[0]
    check(f"{scenario}: duplicates 0, missing 0, extra 0, values equal explain_shap_wide",
          (dup, missing, extra, differ) == (0, 0, 0, 0),
          f"duplicates {dup}, missing {missing}, extra {extra}, differing {differ}")
    return dup, missing


def crash_scenario(conn, scenario, kill, victim="leader"):
    """Kill the running job's leader (or one of its workers), then run it again."""
    target = f"jobs.{scenario.replace('-', '_')}_{workers}"
    scenario = f"{scenario} (workers {workers})"
    thread, outcome = start_in_thread(target)
    running, seen = wait_for_batches(conn, target, thread, KILL_AFTER_BATCHES)
    if running is None:
        thread.join()
        check(f"{scenario}: the job was still running after {KILL_AFTER_BATCHES} batches", False,
              "it finished first: raise TS_JOBS_ROWS")
        return conn
    check(f"{scenario}: another session sees the running job's progress",
          running["rows_done"] >= KILL_AFTER_BATCHES * BATCH and running["rows_total"] == ROWS,
          f"rows_done {running['rows_done']} of {running['rows_total']}, {running['rate']} rows/s")
    if scenario.startswith("terminate"):
        try:
            explain_into(connect(), target)
            check("terminate: a second call into the running target is refused", False, "it ran")
        except psycopg2.Error as e:
            check("terminate: a second call into the running target is refused", e.pgcode == "55P03", e.pgcode)
    pids = worker_pids(conn) if victim == "worker" else [running["pid"]]
    if not pids:
        check(f"{scenario}: the job runs in workers", False, "none found in pg_stat_activity")
        thread.join()
        return conn
    kill(conn, pids[0])
    thread.join()
    check(f"{scenario}: the killed call ended with an error", "error" in outcome,
          outcome["error"].pgcode if "error" in outcome else "")
    if "sigkill" in scenario:
        conn = await_crash_restart(conn)
    after = job(conn, target)
    committed = query(conn, f"SELECT count(*) FROM {target}")[0][0]
    check(f"{scenario}: the interrupted run is reported failed, its committed batches kept",
          after["state"] == "failed"
          # a cancel between the procedure's statements escapes its handler: "interrupted"
          and after["error"].startswith(expected_error(scenario, victim))
          and committed == after["rows_done"] and committed % BATCH == 0 and committed > 0,
          f"state {after['state']}, {committed} rows committed in {committed // BATCH} batches")
    explain_into(conn, target)
    rerun = job(conn, target)
    check(f"{scenario}: the re-run explains exactly the remainder",
          rerun["state"] == "done" and rerun["rows_done"] == ROWS - committed,
          f"{rerun['rows_done']} rows")
    dup, missing = verify_target(conn, scenario, target)
    print(f"crash-test {scenario}: rows {ROWS}, batch {BATCH}, batches committed before the kill "
          f"{committed // BATCH} ({committed} rows), re-run {rerun['rows_done']} rows, "
          f"duplicates {dup}, missing {missing}")
    return conn


def expected_error(scenario, victim):
    """How the job's error begins: a cancel between the procedure's statements escapes
    its handler ("interrupted"); a killed worker is reported by its leader."""
    if victim == "worker" and "sigkill" not in scenario:
        return "explain_into worker"
    return ("canceling", "interrupted") if scenario.startswith("cancel") else "interrupted"


def worker_error_scenario(conn):
    """A worker's ERROR (here: division by zero in the filter, which the leader's plan
    passes) fails the job with its message and SQLSTATE; no worker is left."""
    target = f"jobs.worker_error_{workers}"
    leader = connect()
    try:
        explain_into(leader, target, filter=f"pg_backend_pid() = {leader.get_backend_pid()} OR 1/0 = 1")
        check("worker-error: the job fails", False, "it succeeded")
    except psycopg2.Error as e:
        j = job(conn, target)
        check("worker-error: the job fails with the worker's SQLSTATE and message",
              e.pgcode == "22012" and j["state"] == "failed" and j["error"] == "division by zero",
              f"{e.pgcode}: {j['error']}")
    check("worker-error: no worker is left", worker_pids(conn) == [], str(worker_pids(conn)))


def leader_cancel_scenario(conn):
    """Every worker is gone within 1 s of the leader's cancel."""
    target = f"jobs.leader_cancel_{workers}"
    thread, outcome, running = start_running(conn, "leader-cancel", target)
    if running is None:
        return
    before = worker_pids(conn)
    cancel(conn, running["pid"])
    t0 = time.monotonic()
    while worker_pids(conn) and time.monotonic() - t0 < 5:
        time.sleep(0.01)
    gone = time.monotonic() - t0
    thread.join()
    check("leader-cancel: every worker is gone within 1 s of the leader's cancel",
          len(before) == workers and not worker_pids(conn) and gone <= 1.0,
          f"{len(before)} workers, gone after {gone:.3f} s")
    explain_into(conn, target)
    verify_target(conn, "leader-cancel", target)


def terminate(conn, pid):
    query(conn, "SELECT pg_terminate_backend(%s)", (pid,))


def cancel(conn, pid):
    query(conn, "SELECT pg_cancel_backend(%s)", (pid,))


def sigkill(conn, pid):
    os.kill(pid, signal.SIGKILL)


def await_crash_restart(conn, seconds=60):
    """A fresh connection once the postmaster has reset every backend after the crash.

    The postmaster notices the killed child a moment later; a connection made
    before that would still see the dead backend's locks. Its reset ends this
    session too, which is the sign to reconnect."""
    deadline = time.time() + seconds
    try:
        while time.time() < deadline:
            query(conn, "SELECT 1")
            time.sleep(0.1)
        raise RuntimeError("the server did not restart after the SIGKILL")
    except psycopg2.Error:
        pass
    return connect(retry_seconds=120)


def wait_for_cron_run(conn, jobid, after, seconds=150):
    """The first run of the cron job that started after `after`, once finished."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        rows = query(conn, """SELECT status, return_message, start_time FROM cron.job_run_details
                               WHERE jobid = %s AND start_time > %s AND status IN ('succeeded', 'failed')
                               ORDER BY start_time LIMIT 1""", (jobid, after))
        if rows:
            return rows[0]
        time.sleep(1)
    return None


def cron_scenario(conn):
    if "pg_cron" not in query(conn, "SHOW shared_preload_libraries")[0][0]:
        print("pg_cron is not preloaded: skipping the scheduled run")
        return
    query(conn, "CREATE EXTENSION IF NOT EXISTS pg_cron")
    query(conn, "CREATE TABLE jobs.cron_src AS SELECT * FROM jobs.houses WHERE id <= 500")
    query(conn, "ALTER TABLE jobs.cron_src ADD PRIMARY KEY (id)")
    jobid = query(conn, """SELECT cron.schedule('pg_treeshap-test', '* * * * *',
                               $$CALL treeshap.explain_into('jobs_reg', 'jobs.cron_src', 'jobs.cron_shap', batch_size => 200)$$)""")[0][0]
    try:
        t0 = query(conn, "SELECT now()")[0][0]
        first = wait_for_cron_run(conn, jobid, t0)
        check("pg_cron: the scheduled CALL succeeds", first is not None and first[0] == "succeeded", str(first))
        if first is None or first[0] != "succeeded":
            return
        n = query(conn, "SELECT count(*) FROM jobs.cron_shap")[0][0]
        check("pg_cron: the first run explains the 500 source rows", n == 500, f"{n} rows")
        query(conn, "INSERT INTO jobs.cron_src SELECT * FROM jobs.houses WHERE id BETWEEN 501 AND 537 OR id = 1000")
        t1 = query(conn, "SELECT now()")[0][0]
        second = wait_for_cron_run(conn, jobid, t1)
        check("pg_cron: the next scheduled run succeeds", second is not None and second[0] == "succeeded", str(second))
        j = job(conn, "jobs.cron_shap")
        check("pg_cron: it explains exactly the 38 new rows", j["rows_done"] == 38 and j["state"] == "done",
              f"rows_done {j['rows_done']}, state {j['state']}")
        differ = query(conn, """SELECT count(*) FROM (
            (SELECT row_key, output, base_value, shap_values FROM jobs.cron_shap
             EXCEPT ALL SELECT r.row_key, r.output, r.base_value, r.shap_values FROM jobs.reference r
                         JOIN jobs.cron_src s ON s.id = r.row_key)
            UNION ALL
            (SELECT r.row_key, r.output, r.base_value, r.shap_values FROM jobs.reference r JOIN jobs.cron_src s ON s.id = r.row_key
             EXCEPT ALL SELECT row_key, output, base_value, shap_values FROM jobs.cron_shap)) x""")[0][0]
        check("pg_cron: the target holds every source row once, equal to explain_shap_wide", differ == 0,
              f"{differ} differing rows")
    finally:
        query(conn, "SELECT cron.unschedule(%s)", (jobid,))


def replace_scenario(conn):
    """The model replaced while a run works: the run stops at the end of its batch
    (55000), and the next run explains every row under the new version."""
    target = f"jobs.replace_{workers}"
    thread, outcome, running = start_running(conn, "replace", target)
    if running is None:
        return
    # the first pass replaces reg with reg_v3, the second puts reg back
    with open("test/fixtures/reg.json" if workers else "test/fixtures/reg_v3.json", "rb") as f:
        query(conn, "SELECT 1 FROM treeshap.load_model(%s, %s, replace => true)", (MODEL, f.read()))
    thread.join()
    err = outcome.get("error")
    stopped = job(conn, target)
    check("replace: the running job stops with 55000 and says why",
          err is not None and err.pgcode == "55000" and stopped["state"] == "failed"
          and "replaced" in stopped["error"] and stopped["rows_done"] < ROWS,
          f"{err.pgcode if err else 'no error'}, {stopped['rows_done']} rows done")
    query(conn, """DROP TABLE jobs.reference;
        CREATE TABLE jobs.reference AS
        SELECT * FROM treeshap.explain_shap_wide(%s, 'SELECT id, * FROM jobs.houses')""", (MODEL,))
    explain_into(conn, target)
    rerun = job(conn, target)
    versions = query(conn, f"SELECT array_agg(DISTINCT model_version) FROM {target}")[0][0]
    current = query(conn, "SELECT version FROM treeshap.models WHERE name = %s", (MODEL,))[0][0]
    check("replace: the next run explains every row under the new version, the old rows gone",
          rerun["state"] == "done" and rerun["rows_done"] == ROWS and versions == [current],
          f"{rerun['rows_done']} rows, versions {versions}")
    verify_target(conn, "replace", target)


def follow_scenario(conn, scenario, kill):
    """Kill a followed job's run while it consumes its change log, then run it again."""
    source, target = f"jobs.fsrc_{kill.__name__}", f"jobs.follow_{kill.__name__}"
    query(conn, f"""CREATE TABLE {source} AS SELECT * FROM jobs.houses;
                     ALTER TABLE {source} ADD PRIMARY KEY (id)""")
    call = (f"CALL treeshap.explain_into(%s, '{source}', '{target}', batch_size => %s, workers => 0, "
            "follow => true)")
    query(conn, call, (MODEL, BATCH))
    query(conn, f"""UPDATE {source} SET "MedInc" = "MedInc" + 1, "Latitude" = "Latitude" - 1 WHERE id % 4 = 1;
                     UPDATE {source} SET id = id + 1000000 WHERE id % 97 = 0;
                     DELETE FROM {source} WHERE id % 50 = 0;
                     INSERT INTO {source} SELECT id + 2000000, "MedInc", "HouseAge", "AveRooms", "AveBedrms",
                            "Population", "AveOccup", "Latitude", "Longitude" FROM {source} WHERE id % 10 = 3""")
    outcome = {}

    def run():
        try:
            query(connect(), call, (MODEL, BATCH))
        except psycopg2.Error as e:
            outcome["error"] = e
    thread = threading.Thread(target=run)
    thread.start()
    running, _ = wait_for_batches(conn, target, thread, 2)
    if running is None:
        thread.join()
        check(f"{scenario}: the change run was still running after 2 batches", False, "raise TS_JOBS_ROWS")
        return conn
    kill(conn, running["pid"])
    thread.join()
    check(f"{scenario}: the killed change run ended with an error", "error" in outcome)
    if "sigkill" in scenario:
        conn = await_crash_restart(conn)
    query(conn, call, (MODEL, BATCH))
    missing, extra = query(conn, f"""
        WITH fresh AS (SELECT * FROM treeshap.explain_shap_wide(%s, 'SELECT id, * FROM {source}'))
        SELECT (SELECT count(*) FROM (SELECT * FROM fresh EXCEPT ALL
                                      SELECT row_key, output, base_value, shap_values FROM {target}) m),
               (SELECT count(*) FROM (SELECT row_key, output, base_value, shap_values FROM {target}
                                      EXCEPT ALL SELECT * FROM fresh) x)""", (MODEL,))[0]
    rows = query(conn, f"SELECT count(*) FROM {source}")[0][0]
    check(f"{scenario}: the next run leaves the target equal to explain_shap_wide of the source as it is",
          (missing, extra) == (0, 0), f"{rows} source rows, missing {missing}, extra or different {extra}")
    return conn


def target_ddl(target, persistence=""):
    """CREATE TABLE of a wide target of jobs.houses, made before its first run ("UNLOGGED" or "")."""
    return (f"CREATE {persistence} TABLE {target} (row_key integer NOT NULL, output integer NOT NULL, "
            "base_value double precision NOT NULL, shap_values double precision[] NOT NULL, "
            "model_version bigint NOT NULL, computed_at timestamptz NOT NULL DEFAULT now(), "
            "PRIMARY KEY (row_key, output, model_version))")


def crash_server(conn):
    """SIGKILL an idle session of its own, so the server restarts (and empties unlogged tables)."""
    victim = connect()
    sigkill(conn, victim.get_backend_pid())
    conn = await_crash_restart(conn)
    victim.close()
    return conn


def unlogged_scenario(conn):
    """A crash empties an unlogged target: the next run must not trust the job's marks."""
    target = "jobs.unlogged_workers"
    query(conn, target_ddl(target, "UNLOGGED"))
    thread, outcome, running = start_running(conn, "unlogged (workers)", target)
    if running is not None:
        # a commit that writes and flushes WAL flushes the workers' commits before it
        query(conn, "CREATE TABLE IF NOT EXISTS jobs.flushed (at timestamptz); INSERT INTO jobs.flushed VALUES (now())")
        sigkill(conn, worker_pids(conn)[0])
        thread.join()
        conn = await_crash_restart(conn)
        done = query(conn, """SELECT count(*) FROM treeshap.job_range r JOIN treeshap.job_store j USING (job)
                               WHERE j.target = %s AND r.done""", (target,))[0][0]
        left = query(conn, f"SELECT count(*) FROM {target}")[0][0]
        explain_into(conn, target)
        check("unlogged (workers): after a crash emptied the target, the re-run explains every row",
              done > 0 and left == 0 and job(conn, target)["rows_done"] == ROWS,
              f"{done} ranges marked done, {left} rows left, re-run {job(conn, target)['rows_done']} rows")
        verify_target(conn, "unlogged (workers)", target)
    target = "jobs.unlogged_follow"
    query(conn, target_ddl(target, "UNLOGGED"))
    call = (f"CALL treeshap.explain_into(%s, 'jobs.houses', '{target}', batch_size => %s, workers => %s, "
            "follow => true)")
    query(conn, call, (MODEL, BATCH, workers))
    conn = crash_server(conn)
    left = query(conn, f"SELECT count(*) FROM {target}")[0][0]
    query(conn, call, (MODEL, BATCH, workers))
    check("unlogged (follow): after a crash emptied the in-step target, the next run explains every row",
          left == 0 and job(conn, target)["rows_done"] == ROWS,
          f"{left} rows left, next run {job(conn, target)['rows_done']} rows")
    verify_target(conn, "unlogged (follow)", target)
    return conn


def recreated_scenario(conn):
    """A stopped run's target dropped and made again: its ranges marked done are not the new table's."""
    target = "jobs.recreated"
    query(conn, target_ddl(target))
    thread, outcome, running = start_running(conn, "recreated", target)
    if running is None:
        return
    terminate(conn, running["pid"])
    thread.join()
    query(conn, f"DROP TABLE {target}; " + target_ddl(target))
    explain_into(conn, target)
    check("recreated: a stopped run's target made again is explained whole",
          job(conn, target)["rows_done"] == ROWS, f"re-run {job(conn, target)['rows_done']} rows")
    verify_target(conn, "recreated", target)


def main():
    global workers
    conn = connect()
    setup(conn)
    for workers in (0, PARALLEL):
        conn = crash_scenario(conn, "terminate", terminate)
        conn = crash_scenario(conn, "cancel", cancel)
        conn = crash_scenario(conn, "sigkill", sigkill)
        replace_scenario(conn)
    conn = crash_scenario(conn, "worker-terminate", terminate, victim="worker")
    conn = crash_scenario(conn, "worker-sigkill", sigkill, victim="worker")
    worker_error_scenario(conn)
    leader_cancel_scenario(conn)
    conn = follow_scenario(conn, "follow-terminate", terminate)
    conn = follow_scenario(conn, "follow-sigkill", sigkill)
    conn = unlogged_scenario(conn)
    recreated_scenario(conn)
    cron_scenario(conn)
    query(conn, "DROP SCHEMA jobs CASCADE")
    query(conn, "DELETE FROM treeshap.job_store WHERE target LIKE 'jobs.%'")
    query(conn, "SELECT treeshap.drop_model(%s)", (MODEL,))
    print(f"jobs-check: {'PASS' if not failures else 'FAIL: ' + ', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
