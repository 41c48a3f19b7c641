/*
 * ts_executor.c - forking and reaping the CUDA executor (ts_executor.h),
 * and its request loop.
 * The child runs plain C only: async-signal-safe calls until it resets its
 * signals, then the CUDA runtime through cuda/ts_cuda.h, never PostgreSQL.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/ts_core.h"
#include "service/ts_exec_device.h"
#include "service/ts_exec_models.h"
#include "service/ts_exec_planner.h"
#include "service/ts_exec_segments.h"
#include "service/ts_exec_serve.h"
#include "service/ts_executor.h"
#include "service/ts_request.h"

void *
ts_executor_map_shared(size_t size)
{
	void	   *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

bool
ts_executor_read_stats(const TsExecutorStats *src, TsExecutorStats *dst)
{
	for (int attempt = 0; attempt < 1000; attempt++)
	{
		uint64_t	before = __atomic_load_n(&src->version, __ATOMIC_ACQUIRE);

		if (before & 1)
			continue;
		memcpy(dst, src, sizeof(*dst));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&src->version, __ATOMIC_RELAXED) == before)
			return true;
	}
	return false;
}

/* The child's signals back to their defaults, none blocked: SIGTERM and SIGKILL end it. */
static void
reset_signals(void)
{
	sigset_t	none;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Write one whole message; false when the reader is gone. */
static bool
send_msg(int fd, const TsExecMsg *msg)
{
	ssize_t		n;

	do
		n = write(fd, msg, sizeof(*msg));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t) sizeof(*msg);
}

/* Read one whole message; false at end of file (the worker is gone). */
static bool
read_msg(int fd, TsExecMsg *msg)
{
	size_t		got = 0;

	while (got < sizeof(*msg))
	{
		ssize_t		n = read(fd, (char *) msg + got, sizeof(*msg) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		got += (size_t) n;
	}
	return true;
}

/*
 * Requests read but not yet served: the executor reads its pipe while it
 * works, to see cancellations, so others that arrive meanwhile wait here.
 */
#define BACKLOG 4096

typedef struct Backlog
{
	TsExecMsg	msg[BACKLOG];
	int			head;
	int			count;
	bool		closed;			/* the worker is gone */
} Backlog;

static Backlog backlog;

/* Read one message into the backlog, or note a cancellation of the current request. */
static void
take_message(int in_fd, const TsExecMsg *current, bool *cancelled)
{
	TsExecMsg	msg;

	if (!read_msg(in_fd, &msg))
	{
		backlog.closed = true;
		return;
	}
	if (msg.kind == TS_EXEC_CANCEL)
	{
		if (current != NULL && msg.slot == current->slot && msg.seq == current->seq)
			*cancelled = true;
		ts_exec_cancel(msg.slot, msg.seq);	/* a run being served: stop it */
		ts_exec_load_cancel(msg.slot, msg.seq); /* a load being planned, or waiting to be */
		/* a cancellation of a request still in the backlog: answer it unserved */
		for (int i = 0; i < backlog.count; i++)
		{
			TsExecMsg  *m = &backlog.msg[(backlog.head + i) % BACKLOG];

			if (m->slot == msg.slot && m->seq == msg.seq)
			{
				m->arg = 0;
				m->result = TS_REQUEST_CANCELLED;
			}
		}
		return;
	}
	if (backlog.count < BACKLOG)
		backlog.msg[(backlog.head + backlog.count++) % BACKLOG] = msg;
}

/* A ping: wait ms milliseconds, reading the pipe meanwhile; false when cancelled. */
static bool
ping_wait(int in_fd, const TsExecMsg *current, int ms)
{
	struct timespec now,
				end;
	bool		cancelled = false;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long) (ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L)
	{
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;)
	{
		struct pollfd pfd = {in_fd, POLLIN, 0};
		long		left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		/* milliseconds left, rounded up: never answer early */
		left = ((end.tv_sec - now.tv_sec) * 1000000000L + (end.tv_nsec - now.tv_nsec) + 999999L) / 1000000L;
		if (left <= 0 || cancelled || backlog.closed)
			return !cancelled;
		/* stop reading when the backlog is full: the pipe holds the rest */
		if (backlog.count < BACKLOG && poll(&pfd, 1, (int) left) > 0)
			take_message(in_fd, current, &cancelled);
		else if (backlog.count >= BACKLOG)
			poll(NULL, 0, (int) left);
	}
}

/* Read what the pipe holds now, without waiting. */
static void
take_available(int in_fd)
{
	struct pollfd pfd = {in_fd, POLLIN, 0};
	bool		unused;

	while (!backlog.closed && backlog.count < BACKLOG && poll(&pfd, 1, 0) > 0)
		take_message(in_fd, NULL, &unused);
}

/* Wait up to 20 microseconds for a message while launches run (a launch's end wakes nothing). */
static void
pause_briefly(int in_fd)
{
	struct pollfd pfd = {in_fd, POLLIN, 0};
	struct timespec ts = {0, 20000};

	if (backlog.closed || backlog.count >= BACKLOG)
		nanosleep(&ts, NULL);
	else
		ppoll(&pfd, 1, &ts, NULL);
}

/*
 * Nothing to do but wait, while a model is planned: for a message, or the
 * planner's wake-up (read by ts_exec_load_progress).
 */
static void
wait_while_planning(int in_fd)
{
	struct pollfd pfd[2] = {{in_fd, POLLIN, 0}, {ts_planner_wake_fd(), POLLIN, 0}};
	bool		unused;

	if (poll(pfd, pfd[1].fd >= 0 ? 2 : 1, pfd[1].fd >= 0 ? -1 : 1) > 0 && pfd[0].revents != 0)
		take_message(in_fd, NULL, &unused);
}

/* Where answers go, and what the executor has counted. */
typedef struct Answering
{
	int			out_fd;
	TsExecutorStats *stats;
	uint64_t	requests;
	bool		broken;			/* the worker is gone */
} Answering;

/* Send the answer to a request, after publishing the statistics that count it. */
static void
send_answer(const TsExecMsg *in, int32_t result, void *arg)
{
	Answering  *a = (Answering *) arg;
	TsExecMsg	out = *in;
	uint64_t	launches,
				merged;

	out.kind = TS_EXEC_DONE;
	out.result = result;
	ts_exec_counts(&launches, &merged);
	ts_resident_publish(a->stats, ++a->requests, launches, merged);
	if (!send_msg(a->out_fd, &out))
		a->broken = true;
}

/* Serve a message of the backlog: a ping or a load now, a run by queueing it. */
static void
serve(int in_fd, const TsExecMsg *in, Answering *a, bool *fatal)
{
	int32_t		result = 0;

	if (in->result == TS_REQUEST_CANCELLED)
		result = TS_REQUEST_CANCELLED;
	else if (in->kind == TS_EXEC_PING && in->arg > 0 && !ping_wait(in_fd, in, in->arg))
		result = TS_REQUEST_CANCELLED;
	else if (in->kind == TS_EXEC_LOAD && (result = ts_exec_load(in, fatal)) == TS_EXEC_PENDING)
		return;
	else if (in->kind == TS_EXEC_RUN && (result = ts_exec_run(in)) == TS_EXEC_PENDING)
		return;
	send_answer(in, result, a);
}

/*
 * The child: probe, report ready, then take requests and keep the devices
 * busy until its parent goes, or until a CUDA fault, after which its
 * parent starts a fresh executor. Its memory is malloc's: no PostgreSQL
 * code runs here.
 */
static void
executor_main(TsExecutor *ex, int out_fd, int in_fd, pid_t parent)
{
	TsExecMsg	msg = {TS_EXEC_READY, -1, 0, 0, 0, 0, 0};
	Answering	a = {out_fd, ex->stats, 0, false};
	bool		unused;
	bool		fatal = false;
	int			devices;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	reset_signals();
	signal(SIGPIPE, SIG_IGN);
	ts_use_allocator(&ts_malloc_allocator);
	ts_use_interrupt_check(NULL);	/* no PostgreSQL here: cancellation comes by message */
	devices = ts_dev_probe(ex->config->emulate, ex->report);
	ts_exec_serve_init(ex->segment_type, devices, ex->config);
	ts_resident_publish(ex->stats, 0, 0, 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!send_msg(out_fd, &msg))
		_exit(1);
	while (!fatal && !a.broken)
	{
		if (backlog.count == 0 && !ts_exec_busy() && !backlog.closed)
		{
			ts_segments_sweep();
			if (ts_planner_busy())
				wait_while_planning(in_fd);
			else
				take_message(in_fd, NULL, &unused);
		}
		take_available(in_fd);
		if (backlog.closed && backlog.count == 0 && !ts_exec_busy())
			break;
		while (backlog.count > 0 && !fatal && !a.broken)
		{
			msg = backlog.msg[backlog.head];
			backlog.head = (backlog.head + 1) % BACKLOG;
			backlog.count--;
			serve(in_fd, &msg, &a, &fatal);
		}
		if (!fatal)
			ts_exec_load_progress(send_answer, &a, &fatal);
		if (!fatal && !ts_exec_progress(send_answer, &a, &fatal) && ts_exec_busy())
			pause_briefly(in_fd);
	}
	_exit(fatal ? 2 : 0);
}

bool
ts_executor_start(TsExecutor *ex)
{
	int			up[2];			/* executor -> worker */
	int			down[2];		/* worker -> executor */
	pid_t		parent = getpid();
	pid_t		pid;

	if (pipe(up) != 0)
		return false;
	if (pipe(down) != 0)
	{
		close(up[0]);
		close(up[1]);
		return false;
	}
	pid = fork();
	if (pid < 0)
	{
		int			saved = errno;

		close(up[0]);
		close(up[1]);
		close(down[0]);
		close(down[1]);
		errno = saved;
		return false;
	}
	if (pid == 0)
	{
		close(up[0]);
		close(down[1]);
		executor_main(ex, up[1], down[0], parent);
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	ex->pid = pid;
	ex->pipe_fd = up[0];
	ex->request_fd = down[1];
	return true;
}

bool
ts_executor_send(TsExecutor *ex, const TsExecMsg *msg)
{
	return ex->pid > 0 && send_msg(ex->request_fd, msg);
}

int
ts_executor_reap(TsExecutor *ex)
{
	int			status = 0;

	if (ex->pid > 0)
		while (waitpid(ex->pid, &status, 0) < 0 && errno == EINTR)
			;
	if (ex->pipe_fd >= 0)
		close(ex->pipe_fd);
	if (ex->request_fd >= 0)
		close(ex->request_fd);
	ex->pid = 0;
	ex->pipe_fd = -1;
	ex->request_fd = -1;
	return status;
}

void
ts_executor_stop(TsExecutor *ex)
{
	if (ex->pid > 0)
		kill(ex->pid, SIGKILL);
	ts_executor_reap(ex);
}
