/*
 * ts_threads.c - the session's row pool (ts_threads.h).
 */
#include "postgres.h"

#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"

#include "backend/ts_settings.h"
#include "backend/ts_threads.h"

/* treeshap.cpu_threads = 0 takes one thread per core, up to this many. */
#define TS_CPU_THREADS_AUTO_MAX 16

static TsRowPool *session_pool;

/*
 * Whether the pool is running rows while the backend does other work: a
 * call nested in that work (a treeshap function in the user's query) then
 * runs on the backend alone, and the pool is not replaced under the run.
 */
static bool pool_overlapping;

static bool exit_hook_set = false;

/* The cores this process may run on (ts_threads.h). */
long
ts_usable_cores(void)
{
#ifdef __linux__
	cpu_set_t	set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
#endif
	return sysconf(_SC_NPROCESSORS_ONLN);
}

PG_FUNCTION_INFO_V1(treeshap_cpu_threads_shared);

/*
 * treeshap._cpu_threads_shared(sessions int) returns int: the threads each of
 * that many sessions computing at once takes so that together they use the
 * cores this server may run on, and no more (at least 1 each, at most what
 * treeshap.cpu_threads = 0 takes).
 */
Datum
treeshap_cpu_threads_shared(PG_FUNCTION_ARGS)
{
	long		sessions = PG_ARGISNULL(0) ? 1 : Max(1, PG_GETARG_INT32(0));
	long		cores = ts_usable_cores();

	PG_RETURN_INT32((int32) Max(1, Min((cores + sessions - 1) / sessions, TS_CPU_THREADS_AUTO_MAX)));
}

int
ts_cpu_threads_now(void)
{
	if (ts_cpu_threads > 0)
		return ts_cpu_threads;
	return (int) Max(1, Min(ts_usable_cores(), TS_CPU_THREADS_AUTO_MAX));
}

/* The pool for the current setting, (re)started when the setting changed. */
static TsRowPool *
session_row_pool(int threads)
{
	if (pool_overlapping)
		return NULL;
	if (ts_row_pool_threads(session_pool) == threads)
		return session_pool;
	ts_row_pool_destroy(session_pool);
	session_pool = ts_row_pool_create(threads);
	if (session_pool == NULL && threads > 1)
		ereport(DEBUG1,
				(errmsg_internal("treeshap could not start %d threads; rows run on the backend alone",
								 threads)));
	return session_pool;
}

/*
 * The run's stop poll: whether CHECK_FOR_INTERRUPTS would act now. It only
 * reads the flags the signal handlers set (they run in this thread alone:
 * the pool's threads block every signal).
 */
static bool
interrupt_pending(void)
{
	return InterruptPending && InterruptHoldoffCount == 0 && CritSectionCount == 0;
}

void
ts_cpu_rows_compute(TsCpuRows *r, int64 nrows)
{
	/* an interrupt that raises nothing (a reload, say) costs a rerun of the rows */
	while (!ts_cpu_rows_run(r, session_row_pool(r->threads), nrows, interrupt_pending))
		CHECK_FOR_INTERRUPTS();
}

void
ts_cpu_tasks_compute(int threads, int64 nitems, int64 chunk, TsRowTask task, void *arg)
{
	while (!ts_row_pool_run(session_row_pool(threads), nitems, chunk, task, arg, interrupt_pending))
		CHECK_FOR_INTERRUPTS();
}

bool
ts_cpu_rows_can_overlap(const TsCpuRows *r)
{
	return r->threads >= 2 && !pool_overlapping &&
		ts_row_pool_threads(session_row_pool(r->threads)) == r->threads;
}

/*
 * At exit: stop a run that overlaps the backend's work. A terminate is a
 * FATAL, which exits past every PG_CATCH, and the transaction's abort then
 * frees the rows the threads read (they ran on into freed memory: a
 * segfault that restarted the server, test/adversarial/cancel_check.py on
 * PostgreSQL 16). Registered after InitPostgres's own callback, so it runs
 * before that abort.
 */
static void
abandon_at_exit(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	ts_cpu_rows_abandon();
}

void
ts_cpu_rows_begin(TsCpuRows *r, int64 nrows)
{
	Assert(!pool_overlapping);
	if (!exit_hook_set)
	{
		before_shmem_exit(abandon_at_exit, (Datum) 0);
		exit_hook_set = true;
	}
	ts_cpu_rows_start(r, session_pool, nrows, interrupt_pending);
	pool_overlapping = true;
}

void
ts_cpu_rows_end(TsCpuRows *r, int64 nrows)
{
	bool		done = ts_row_pool_finish(session_pool);

	pool_overlapping = false;
	if (done)
		return;
	CHECK_FOR_INTERRUPTS();
	ts_cpu_rows_compute(r, nrows);
}

void
ts_cpu_rows_abandon(void)
{
	if (!pool_overlapping)
		return;
	ts_row_pool_abandon(session_pool);
	pool_overlapping = false;
}
