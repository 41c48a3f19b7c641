/*
 * ts_exec_planner.c - the executor's planner thread (ts_exec_planner.h).
 * The thread blocks every signal, allocates through tracked allocation and
 * checks a cancel flag at the core's cancellation points: a cancelled plan,
 * or one that exhausts memory, jumps back here and frees what it built.
 */
#include "service/ts_exec_planner.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ts_wire.h"
#include "model/ts_model.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static TsPlanJob *current;		/* submitted, not yet taken back */
static bool planned;			/* current is planned */
static int	cancelled;			/* atomic: stop current */
static bool started;
static int	wake_pipe[2] = {-1, -1};

/* the planner thread's way out of a plan (inline plans use it too, never cancelled) */
static jmp_buf stop;
static int	stop_reason;		/* 1: cancelled, 2: memory exhausted */
static size_t exhausted_size;

/* The core's cancellation point in the planner: jump out when the job was cancelled. */
static void
stop_if_cancelled(void)
{
	if (__atomic_load_n(&cancelled, __ATOMIC_RELAXED))
	{
		stop_reason = 1;
		longjmp(stop, 1);
	}
}

/* Tracked allocation found no memory: jump out of the plan. */
static void
stop_exhausted(size_t size)
{
	exhausted_size = size;
	stop_reason = 2;
	longjmp(stop, 1);
}

/* Read the bytes and build what a resident model holds. */
static void
build(TsPlanJob *job)
{
	TsError		err = {0};

	if (ts_cityhash64(job->bytes, job->len) != job->key.digest)
	{
		job->status = TS_REQUEST_INVALID;
		snprintf(job->message, sizeof(job->message), "the model's bytes do not match their digest");
		return;
	}
	job->model = ts_model_read(job->bytes, job->len, &err);
	if (job->model == NULL)
	{
		job->status = TS_REQUEST_BAD_MODEL;
		job->error_class = err.code;
		snprintf(job->message, sizeof(job->message), "%s", err.message);
		return;
	}
	job->paths = ts_paths_build(job->model);
	job->layout = ts_dev_layout(job->model, job->paths);
	job->interface = ts_wire_interface(job->model, job->paths, &job->interface_len);
	job->status = TS_REQUEST_OK;
}

/* Plan one job; whatever it built is freed when it stops halfway. */
static void
plan(TsPlanJob *job)
{
	stop_reason = 0;
	ts_tracked_begin(stop_exhausted);
	ts_use_interrupt_check(stop_if_cancelled);
	if (setjmp(stop) == 0)
		build(job);
	else
	{
		/* the blocks these point into are freed below with every other */
		job->model = NULL;
		job->paths = NULL;
		job->layout = NULL;
		job->interface = NULL;
		job->status = stop_reason == 1 ? TS_REQUEST_CANCELLED : TS_REQUEST_OUT_OF_MEMORY;
		if (stop_reason == 2)
			snprintf(job->message, sizeof(job->message),
					 "the GPU service ran out of host memory planning the model (a request for %zu bytes)",
					 exhausted_size);
	}
	ts_use_interrupt_check(NULL);
	/* a plan that keeps nothing frees all it allocated, a reader's leftovers too */
	ts_tracked_end(job->status != TS_REQUEST_OK);
}

/* The thread: plan each job submitted, then wake the serving thread. */
static void *
planner_main(void *arg)
{
	(void) arg;
	for (;;)
	{
		TsPlanJob  *job;
		ssize_t		n;

		pthread_mutex_lock(&lock);
		while (current == NULL || planned)
			pthread_cond_wait(&wake, &lock);
		job = current;
		pthread_mutex_unlock(&lock);
		plan(job);
		/* the byte goes before the unlock: a take that sees planned then drains it */
		pthread_mutex_lock(&lock);
		planned = true;
		do
			n = write(wake_pipe[1], "p", 1);
		while (n < 0 && errno == EINTR);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

void
ts_planner_start(void)
{
	sigset_t	all,
				old;
	pthread_t	thread;

	if (pipe(wake_pipe) != 0)
		return;
	fcntl(wake_pipe[0], F_SETFL, O_NONBLOCK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);	/* the thread inherits the mask: signals stay ours */
	started = pthread_create(&thread, NULL, planner_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!started)
	{
		close(wake_pipe[0]);
		close(wake_pipe[1]);
		wake_pipe[0] = wake_pipe[1] = -1;
	}
}

bool
ts_planner_busy(void)
{
	return current != NULL;		/* only the serving thread sets and clears it */
}

void
ts_planner_submit(TsPlanJob *job)
{
	__atomic_store_n(&cancelled, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&lock);
	current = job;
	planned = false;
	pthread_mutex_unlock(&lock);
	if (!started)
	{
		plan(job);
		planned = true;
		return;
	}
	pthread_cond_signal(&wake);
}

TsPlanJob *
ts_planner_take(void)
{
	TsPlanJob  *job = NULL;
	char		drain[16];

	pthread_mutex_lock(&lock);
	if (current != NULL && planned)
	{
		job = current;
		current = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (job != NULL && wake_pipe[0] >= 0)
		while (read(wake_pipe[0], drain, sizeof(drain)) > 0)
			;
	return job;
}

void
ts_planner_cancel(int32_t slot, uint64_t seq)
{
	if (current != NULL && current->msg.slot == slot && current->msg.seq == seq)
		__atomic_store_n(&cancelled, 1, __ATOMIC_RELAXED);
}

int
ts_planner_wake_fd(void)
{
	return wake_pipe[0];
}

void
ts_planner_free(TsPlanJob *job)
{
	if (job == NULL)
		return;
	ts_free(job->interface);
	ts_dev_layout_free(job->layout);
	ts_paths_free(job->paths);
	ts_model_free(job->model);
	free(job->bytes);
	ts_free(job);
}
