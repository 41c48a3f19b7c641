/*
 * ts_row_pool.c - the compute core's thread pool (ts_row_pool.h): helper
 * threads wait for a run, take chunks of rows from a shared counter, and
 * report when they have left it; the caller takes chunks too, then waits.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "base/ts_core.h"
#include "core/ts_row_pool.h"

struct TsRowPool
{
	int			threads;		/* the caller included */
	pthread_t  *helpers;		/* threads - 1 */
	int			started;		/* helpers running, joined when the pool closes */
	pthread_mutex_t lock;
	pthread_cond_t start;		/* a run began, or the pool is closing */
	pthread_cond_t finish;		/* the last helper left a run */
	uint64_t	run_number;
	int			helpers_busy;
	bool		closing;
	/* the current run */
	TsRowTask	task;
	void	   *arg;
	int64_t		nrows;
	int64_t		chunk;			/* the smallest chunk a thread claims */
	atomic_int_fast64_t next_row;
	atomic_bool stop;
	TsStopRequested stop_requested;
};

/* A thread's way out of a stopped run, and the run it is in. */
static __thread sigjmp_buf *chunk_exit;
static __thread TsRowPool *current_run;

/* Cancellation point of a helper thread: leave the task once the run is stopped. */
static void
helper_check(void)
{
	if (atomic_load_explicit(&current_run->stop, memory_order_relaxed))
		siglongjmp(*chunk_exit, 1);
}

/* Cancellation point of the caller: stop the run when its owner has an interrupt pending. */
static void
caller_check(void)
{
	if (current_run->stop_requested != NULL && current_run->stop_requested())
		atomic_store(&current_run->stop, true);
	helper_check();
}

/*
 * Claim the next chunk of rows: a share of what is left (guided
 * scheduling), never below the run's smallest chunk, so that the first
 * chunks are large and the last ones small and no thread is left computing
 * a large chunk alone at the end. Returns its size, 0 when no row is left.
 */
static int64_t
claim_chunk(TsRowPool *pool, int64_t *first)
{
	int64_t		start = atomic_load(&pool->next_row);

	for (;;)
	{
		int64_t		left = pool->nrows - start;
		int64_t		count = left / (2 * (int64_t) pool->threads);

		if (left <= 0)
			return 0;
		if (count < pool->chunk)
			count = pool->chunk < left ? pool->chunk : left;
		if (atomic_compare_exchange_weak(&pool->next_row, &start, start + count))
		{
			*first = start;
			return count;
		}
	}
}

/*
 * Take chunks until the rows or the run are over. The jump out of a stopped
 * task is safe: tasks write only into buffers their caller owns and frees.
 */
static void
take_chunks(TsRowPool *pool, int thread, TsInterruptCheck check)
{
	sigjmp_buf	escape;
	TsInterruptCheck saved = ts_interrupt_check;

	chunk_exit = &escape;
	current_run = pool;
	ts_interrupt_check = check;
	if (sigsetjmp(escape, 0) == 0)
	{
		for (;;)
		{
			int64_t		first;
			int64_t		count;

			check();
			count = claim_chunk(pool, &first);
			if (count == 0)
				break;
			pool->task(pool->arg, thread, first, count);
		}
	}
	ts_interrupt_check = saved;
	current_run = NULL;
	chunk_exit = NULL;
}

/* Body of a helper thread: serve runs until the pool closes. */
static void *
helper_main(void *arg)
{
	TsRowPool  *pool = arg;
	uint64_t	seen = 0;
	int			thread;

	pthread_mutex_lock(&pool->lock);
	/* helpers are numbered in the order they come up: any order is fine */
	thread = pool->threads - pool->helpers_busy--;
	for (;;)
	{
		if (pool->helpers_busy == 0)
			pthread_cond_signal(&pool->finish);
		while (pool->run_number == seen && !pool->closing)
			pthread_cond_wait(&pool->start, &pool->lock);
		if (pool->closing)
			break;
		seen = pool->run_number;
		pthread_mutex_unlock(&pool->lock);
		take_chunks(pool, thread, helper_check);
		pthread_mutex_lock(&pool->lock);
		pool->helpers_busy--;
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* How often a caller waiting for its helpers polls for cancellation. */
#define TS_ROW_POOL_POLL_NS (5 * 1000 * 1000)

/*
 * Wait until every helper has left the current run (or come up, after
 * creation). A caller whose own chunks are done keeps polling stop_requested
 * meanwhile: the helpers may be rows of seconds away from their next chunk.
 */
static void
wait_for_helpers(TsRowPool *pool, TsStopRequested stop_requested)
{
	pthread_mutex_lock(&pool->lock);
	while (pool->helpers_busy > 0)
	{
		struct timespec until;

		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += TS_ROW_POOL_POLL_NS;
		if (until.tv_nsec >= 1000000000L)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&pool->finish, &pool->lock, &until);
		if (stop_requested != NULL && stop_requested())
			atomic_store(&pool->stop, true);
	}
	pthread_mutex_unlock(&pool->lock);
}

/* Start the helpers with every signal blocked; false when not all of them started. */
static bool
start_helpers(TsRowPool *pool)
{
	sigset_t	all,
				saved;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	pool->helpers_busy = pool->threads - 1;
	while (pool->started < pool->threads - 1 &&
		   pthread_create(&pool->helpers[pool->started], NULL, helper_main, pool) == 0)
		pool->started++;
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return pool->started == pool->threads - 1;
}

TsRowPool *
ts_row_pool_create(int threads)
{
	TsRowPool  *pool;
	pthread_condattr_t monotonic;

	if (threads < 2)
		return NULL;
	if (threads > TS_ROW_POOL_MAX_THREADS + 1)
		threads = TS_ROW_POOL_MAX_THREADS + 1;
	pool = calloc(1, sizeof(TsRowPool));
	if (pool == NULL || (pool->helpers = calloc(threads, sizeof(pthread_t))) == NULL)
	{
		free(pool);
		return NULL;
	}
	pool->threads = threads;
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->start, NULL);
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&pool->finish, &monotonic);
	pthread_condattr_destroy(&monotonic);
	if (!start_helpers(pool))
	{
		ts_row_pool_destroy(pool);
		return NULL;
	}
	wait_for_helpers(pool, NULL);
	return pool;
}

int
ts_row_pool_threads(const TsRowPool *pool)
{
	return pool == NULL ? 1 : pool->threads;
}

/* Set up a run of task over rows [0, nrows) and wake the helpers (a NULL pool is the caller alone). */
static void
begin_run(TsRowPool *run, TsRowPool *pool, int64_t nrows, int64_t chunk, TsRowTask task,
		  void *arg, TsStopRequested stop_requested)
{
	run->task = task;
	run->arg = arg;
	run->nrows = nrows;
	run->chunk = chunk > 0 ? chunk : 1;
	run->stop_requested = stop_requested;
	atomic_store(&run->next_row, 0);
	atomic_store(&run->stop, false);
	if (pool != NULL)
	{
		pthread_mutex_lock(&pool->lock);
		pool->helpers_busy = pool->threads - 1;
		pool->run_number++;
		pthread_cond_broadcast(&pool->start);
		pthread_mutex_unlock(&pool->lock);
	}
}

bool
ts_row_pool_run(TsRowPool *pool, int64_t nrows, int64_t chunk, TsRowTask task, void *arg,
				TsStopRequested stop_requested)
{
	TsRowPool	alone = {.threads = 1};
	TsRowPool  *run = pool != NULL ? pool : &alone;

	begin_run(run, pool, nrows, chunk, task, arg, stop_requested);
	take_chunks(run, 0, caller_check);
	if (pool != NULL)
		wait_for_helpers(pool, stop_requested);
	return !atomic_load(&run->stop);
}

void
ts_row_pool_start(TsRowPool *pool, int64_t nrows, int64_t chunk, TsRowTask task, void *arg,
				  TsStopRequested stop_requested)
{
	begin_run(pool, pool, nrows, chunk, task, arg, stop_requested);
}

bool
ts_row_pool_finish(TsRowPool *pool)
{
	take_chunks(pool, 0, caller_check);
	wait_for_helpers(pool, pool->stop_requested);
	return !atomic_load(&pool->stop);
}

void
ts_row_pool_abandon(TsRowPool *pool)
{
	atomic_store(&pool->stop, true);
	wait_for_helpers(pool, NULL);
}

void
ts_row_pool_destroy(TsRowPool *pool)
{
	if (pool == NULL)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->closing = true;
	pthread_cond_broadcast(&pool->start);
	pthread_mutex_unlock(&pool->lock);
	for (int i = 0; i < pool->started; i++)
		pthread_join(pool->helpers[i], NULL);
	pthread_mutex_destroy(&pool->lock);
	pthread_cond_destroy(&pool->start);
	pthread_cond_destroy(&pool->finish);
	free(pool->helpers);
	free(pool);
}
