/*
 * ts_threads.h - the session's CPU threads (treeshap.cpu_threads): the row
 * pool of the compute core, started on first use in a backend (never in the
 * postmaster), and the way a stopped run becomes the pending ERROR.
 */
#ifndef TS_THREADS_H
#define TS_THREADS_H

#include "core/ts_cpu_rows.h"

/* Threads a CPU run uses now, the backend's own included. */
extern int	ts_cpu_threads_now(void);

/*
 * Compute nrows rows of r on r->threads threads (from ts_cpu_threads_now()
 * when the call began: the user's query may change the setting between
 * batches); a cancel, timeout or terminate stops every thread and is raised
 * once they have all left the rows.
 */
extern void ts_cpu_rows_compute(TsCpuRows *r, int64 nrows);

#endif							/* TS_THREADS_H */
