/*
 * ts_threads.h - the session's CPU threads (treeshap.cpu_threads): the row
 * pool of the compute core, started on first use in a backend (never in the
 * postmaster), and the way a stopped run becomes the pending ERROR.
 */
#ifndef TS_THREADS_H
#define TS_THREADS_H

#include "core/ts_cpu_rows.h"

/* Threads a CPU run uses now, the backend's own included. */
/*
 * The cores this process may run on: those of its CPU affinity where the
 * system tells (a server pinned to a share of the machine, as a container's
 * cpuset or taskset pins it, counts the cores of its share), else every core
 * online.
 */
extern long ts_usable_cores(void);

extern int	ts_cpu_threads_now(void);

/*
 * Compute nrows rows of r on r->threads threads (from ts_cpu_threads_now()
 * when the call began: the user's query may change the setting between
 * batches); a cancel, timeout or terminate stops every thread and is raised
 * once they have all left the rows.
 */
extern void ts_cpu_rows_compute(TsCpuRows *r, int64 nrows);

/*
 * Run task over items [0, nitems) on threads threads, in chunks of at
 * least chunk, with the same cancellation; an interrupt that raises nothing
 * reruns the items, so task must give the same result when run twice.
 */
extern void ts_cpu_tasks_compute(int threads, int64 nitems, int64 chunk, TsRowTask task, void *arg);

/*
 * Overlapping a run with the backend's own work: whether r's threads are
 * running (at least one besides the backend); begin starts nrows rows of r
 * on the other threads and returns; end has the backend join and waits,
 * with ts_cpu_rows_compute's cancellation; a caller that leaves between
 * them by an ERROR must call abandon before r's buffers are freed.
 */
extern bool ts_cpu_rows_can_overlap(const TsCpuRows *r);
extern void ts_cpu_rows_begin(TsCpuRows *r, int64 nrows);
extern void ts_cpu_rows_end(TsCpuRows *r, int64 nrows);
extern void ts_cpu_rows_abandon(void);

#endif							/* TS_THREADS_H */
