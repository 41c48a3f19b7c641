/*
 * ts_executor.c - forking and reaping the CUDA executor (ts_executor.h).
 * The child runs plain C only: async-signal-safe calls until it resets its
 * signals, then the CUDA runtime through cuda/ts_cuda.h, never PostgreSQL.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "service/ts_executor.h"

TsExecutorReport *
ts_executor_map_report(void)
{
	void	   *p = mmap(NULL, sizeof(TsExecutorReport), PROT_READ | PROT_WRITE,
						 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : (TsExecutorReport *) p;
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

/* Fill the report with the visible GPUs, or say why there are none. */
static void
probe(TsExecutorReport *r)
{
	memset(r, 0, sizeof(*r));
#ifdef TS_WITH_CUDA
	{
		int			count = 0;
		TsGpuStatus rc = ts_gpu_device_count(&count, r->message, sizeof(r->message));

		for (int i = 0; rc == TS_GPU_OK && i < count && r->num_devices < TS_EXECUTOR_MAX_DEVICES; i++)
		{
			if (ts_gpu_device_info(i, &r->devices[r->num_devices], r->message, sizeof(r->message)) != TS_GPU_OK)
				break;
			r->num_devices++;
		}
		/* no driver, or a driver that sees no GPU, is not an error: say which */
		if (r->num_devices == 0 && r->message[0] == '\0')
			snprintf(r->message, sizeof(r->message), "no GPU is visible to the CUDA runtime");
		if (r->num_devices > 0)
			r->message[0] = '\0';
	}
#else
	snprintf(r->message, sizeof(r->message), "pg_treeshap was built without CUDA");
#endif
}

/* The child: probe, report ready, wait to be killed (requests come in a later part). */
static void
executor_main(TsExecutorReport *r, int fd, pid_t parent)
{
	char		ready = 'R';

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	reset_signals();
	probe(r);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (write(fd, &ready, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

bool
ts_executor_start(TsExecutor *ex)
{
	int			fds[2];
	pid_t		parent = getpid();
	pid_t		pid;

	if (pipe(fds) != 0)
		return false;
	pid = fork();
	if (pid < 0)
	{
		int			saved = errno;

		close(fds[0]);
		close(fds[1]);
		errno = saved;
		return false;
	}
	if (pid == 0)
	{
		close(fds[0]);
		executor_main(ex->report, fds[1], parent);
		_exit(0);
	}
	close(fds[1]);
	ex->pid = pid;
	ex->pipe_fd = fds[0];
	return true;
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
	ex->pid = 0;
	ex->pipe_fd = -1;
	return status;
}

void
ts_executor_stop(TsExecutor *ex)
{
	if (ex->pid > 0)
		kill(ex->pid, SIGKILL);
	ts_executor_reap(ex);
}
