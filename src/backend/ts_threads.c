/*
 * ts_threads.c - the session's row pool (ts_threads.h).
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"

#include "backend/ts_settings.h"
#include "backend/ts_threads.h"

/* treeshap.cpu_threads = 0 takes one thread per core, up to this many. */
#define TS_CPU_THREADS_AUTO_MAX 16

static TsRowPool *session_pool;

int
ts_cpu_threads_now(void)
{
	long		cores;

	if (ts_cpu_threads > 0)
		return ts_cpu_threads;
	cores = sysconf(_SC_NPROCESSORS_ONLN);
	return (int) Max(1, Min(cores, TS_CPU_THREADS_AUTO_MAX));
}

/* The pool for the current setting, (re)started when the setting changed. */
static TsRowPool *
session_row_pool(int threads)
{
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
