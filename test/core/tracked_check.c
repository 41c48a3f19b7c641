/*
 * tracked_check.c - tracked allocation (src/base/ts_alloc_tracked.c), built
 * with AddressSanitizer, whose leak check at exit is the oracle: a plan
 * stopped halfway by a jump out of the core frees every block it held, a
 * plan that completes leaves its blocks to their holder, and blocks freed
 * and reallocated in any order are neither leaked nor freed twice.
 *     build/tracked_check MODEL
 */
#include "base/ts_tool.h"
#include "core/ts_paths.h"
#include "model/ts_model.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf stop;
static long checks_left;

/* A cancellation point that jumps out after a number of calls, as the GPU service's planner does. */
static void
stop_after_some(void)
{
	ts_interrupt_work_left = 1;	/* the next unit of work is a cancellation point too */
	if (--checks_left <= 0)
		longjmp(stop, 1);
}

/* Memory exhausted: never expected here. */
static void
exhausted(size_t size)
{
	fprintf(stderr, "tracked_check: exhausted at %zu bytes\n", size);
	abort();
}

/* Read and plan the model, stopped at the n-th cancellation point; whether it stopped. */
static int
plan_stopped_at(const char *buf, size_t len, long n)
{
	int			stopped;

	checks_left = n;
	ts_tracked_begin(exhausted);
	ts_use_interrupt_check(stop_after_some);
	ts_interrupt_work_left = 1;	/* a cancellation point at the first unit of work */
	stopped = setjmp(stop) != 0;
	if (!stopped)
	{
		TsError		err = {0};
		TsModel    *m = ts_model_read(buf, len, &err);

		if (m == NULL)
			exhausted(0);
		ts_paths_build(m);		/* kept by nobody: only the tracked end can free it */
	}
	ts_use_interrupt_check(NULL);
	ts_tracked_end(1);
	return stopped;
}

/* Many blocks allocated, reallocated and freed in mixed order; the rest freed by the end. */
static void
churn(void)
{
	enum {LIVE = 1000, ROUNDS = 200000};
	void	   *slot[LIVE] = {0};

	ts_tracked_begin(exhausted);
	for (long i = 0; i < ROUNDS; i++)
	{
		int			k = (int) ((i * 7919) % LIVE);

		if (slot[k] == NULL)
			slot[k] = ts_alloc((size_t) (i % 97) + 1);
		else if (i % 3 == 0)
			slot[k] = ts_realloc(slot[k], (size_t) (i % 301) + 1);
		else
		{
			ts_free(slot[k]);
			slot[k] = NULL;
		}
	}
	ts_tracked_end(1);
}

/* A completed plan's blocks outlive the tracking and are freed by their holder. */
static void
kept(void)
{
	char	   *p;

	ts_tracked_begin(exhausted);
	p = ts_alloc(64);
	ts_free(NULL);
	ts_tracked_end(0);
	free(p);
}

int
main(int argc, char **argv)
{
	size_t		len;
	char	   *buf = argc > 1 ? ts_tool_read_file(argv[1], &len) : NULL;
	long		stops = 0;
	long		n;

	if (buf == NULL)
	{
		fprintf(stderr, "usage: tracked_check MODEL\n");
		return 2;
	}
	for (n = 1; plan_stopped_at(buf, len, n); n = n * 2 + 1)
		stops++;
	churn();
	kept();
	free(buf);
	printf("tracked-check: %ld plans stopped halfway, one completed (%ld cancellation points), "
		   "a churn of 200,000 blocks, kept blocks; the leak check at exit decides\n", stops, n);
	return 0;
}
