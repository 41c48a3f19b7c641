/*
 * ts_row_pool.h - a pool of threads that runs the compute core over the rows
 * of a batch: every row is computed by the same function from the same
 * inputs whichever thread takes it, so results are bitwise those of one
 * thread. The calling thread works too; the others never call back into the
 * process (no allocation, no PostgreSQL) and start with every signal
 * blocked, so the caller's signal handlers keep running where they expect.
 *
 * Cancellation: during a run, ts_check_interrupts() in the caller asks
 * stop_requested (a poll that must not raise), and in the other threads
 * looks at the run's stop flag; a stopped run returns false after every
 * thread has left the task, so the caller may then raise its ERROR and free
 * the buffers the task wrote.
 */
#ifndef TS_ROW_POOL_H
#define TS_ROW_POOL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct TsRowPool TsRowPool;

/* Compute rows [first, first + count) on thread number thread (0 is the caller). */
typedef void (*TsRowTask) (void *arg, int thread, int64_t first, int64_t count);

/* A poll of the caller's pending cancellation, which must return (never raise). */
typedef bool (*TsStopRequested) (void);

/* Threads beyond the caller's, at most. */
#define TS_ROW_POOL_MAX_THREADS 256

/*
 * A pool of threads in all, the caller included (helpers are started
 * threads - 1); NULL when none could be started (run rows on the caller).
 */
extern TsRowPool *ts_row_pool_create(int threads);

/* Threads of the pool, the caller included; 1 for a NULL pool. */
extern int	ts_row_pool_threads(const TsRowPool *pool);

/*
 * Run task over rows [0, nrows) in chunks of at least chunk rows, each a
 * share of the rows left, so that the threads finish close together (a NULL pool runs
 * them on the caller). Returns false when stop_requested said so and the
 * run was abandoned part way.
 */
extern bool ts_row_pool_run(TsRowPool *pool, int64_t nrows, int64_t chunk, TsRowTask task,
							void *arg, TsStopRequested stop_requested);

/*
 * The same run in two halves, so that the caller can do other work while
 * the helpers compute: start wakes the helpers (pool not NULL, at least one
 * helper), finish has the caller take the rows left and wait for the
 * helpers (false as ts_row_pool_run), and abandon, for a caller leaving
 * between the two (an ERROR), stops the run and waits until no helper is
 * in it, so that its buffers may be freed.
 */
extern void ts_row_pool_start(TsRowPool *pool, int64_t nrows, int64_t chunk, TsRowTask task,
							  void *arg, TsStopRequested stop_requested);
extern bool ts_row_pool_finish(TsRowPool *pool);
extern void ts_row_pool_abandon(TsRowPool *pool);

/* Stop and join the threads, free the pool. */
extern void ts_row_pool_destroy(TsRowPool *pool);

#endif							/* TS_ROW_POOL_H */
