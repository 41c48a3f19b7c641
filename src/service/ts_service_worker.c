/*
 * ts_service_worker.c - the GPU service's worker, a postmaster child that
 * never touches CUDA: it forks the executor (ts_executor.h), which owns the
 * GPUs, publishes what the executor reports, and forks a new one a second
 * after the last one dies, whatever killed it. It sleeps on its latch, the
 * executor's pipe and postmaster death, never polling. SIGTERM ends it
 * through the usual interrupt path, with status 1, so the postmaster starts
 * a fresh worker a second later; the executor dies with it.
 */
#include "postgres.h"

#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/dsm_impl.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "service/ts_executor.h"
#include "service/ts_pg_compat.h"
#include "service/ts_service.h"
#include "service/ts_service_relay.h"

/* Delay before a dead executor is replaced: a GPU that kills it at once costs little. */
#define EXECUTOR_RESTART_MS 1000

static TsExecutor executor = {0, -1, -1, NULL, NULL, NULL, TS_SEGMENT_POSIX};

/* Requests answered by this worker's executors that are gone. */
static uint64 requests_before = 0;

/* Publish the executor's statistics, its requests added to those of the executors before it. */
static void
publish_stats(void)
{
	TsExecutorStats stats;

	if (!ts_executor_read_stats(executor.stats, &stats))
		return;					/* being rewritten: the next answer publishes */
	stats.requests += requests_before;
	ts_service_publish_stats(&stats);
}

/* On exit: stop the executor; no service runs until the postmaster starts the next. */
static void
service_exit(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	TsServiceStatus st;

	ts_executor_stop(&executor);
	pg_atomic_write_u32(&ts_service_shared()->worker_procno, TS_INVALID_PROC_NUMBER);
	ts_relay_fail_all(ts_service_shared(), "the GPU service stopped during this request");
	ts_service_status(&st);
	st.state = TS_SERVICE_STOPPED;
	st.pid = 0;
	st.executor_pid = 0;
	ts_service_publish(&st);
}

/* Write the settings the executor follows into the memory it shares with this worker. */
static void
write_config(void)
{
	__atomic_store_n(&executor.config->memory_limit, (int64_t) ts_gpu_memory_limit_kb * 1024,
					 __ATOMIC_RELAXED);
	executor.config->emulate = ts_service_emulated_devices;
}

/* Fork an executor; on failure try again after the restart delay. */
static void
start_executor(TsServiceStatus *st, TimestampTz *next_start)
{
	if (!ts_executor_start(&executor))
	{
		elog(LOG, "%s could not start its executor: %m", TS_SERVICE_WORKER_NAME);
		*next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), EXECUTOR_RESTART_MS);
		return;
	}
	st->state = TS_SERVICE_STARTING;
	st->executor_pid = executor.pid;
	st->executor_starts++;
	ts_service_publish(st);
}

/* The executor reported ready: publish its devices. */
static void
executor_ready(TsServiceStatus *st)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	st->found = *executor.report;
	st->state = st->found.num_devices > 0 ? TS_SERVICE_READY : TS_SERVICE_NO_DEVICE;
	ts_service_publish(st);
	elog(LOG, "%s ready (executor pid %d): %d device(s)%s%s", TS_SERVICE_WORKER_NAME,
		 (int) executor.pid, st->found.num_devices, st->found.message[0] ? "; " : "", st->found.message);
}

/* The executor's pipe closed: it died; reap it and schedule the next. */
static void
executor_gone(TsServiceStatus *st, TimestampTz *next_start)
{
	pid_t		pid = executor.pid;
	int			status = ts_executor_reap(&executor);

	if (WIFSIGNALED(status))
		elog(LOG, "%s executor (pid %d) was terminated by signal %d", TS_SERVICE_WORKER_NAME,
			 (int) pid, WTERMSIG(status));
	else
		elog(LOG, "%s executor (pid %d) exited with status %d", TS_SERVICE_WORKER_NAME,
			 (int) pid, WEXITSTATUS(status));
	st->state = TS_SERVICE_STARTING;
	st->executor_pid = 0;
	memset(&st->found, 0, sizeof(st->found));
	ts_service_publish(st);
	/* its models went with it; its answers still count */
	requests_before += executor.stats->requests;
	memset(executor.stats, 0, sizeof(*executor.stats));
	publish_stats();
	ts_relay_fail_all(ts_service_shared(), WIFSIGNALED(status)
					  ? psprintf("the GPU service's executor was killed by signal %d during this request",
								 WTERMSIG(status))
					  : "the GPU service's executor exited during this request");
	*next_start = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), EXECUTOR_RESTART_MS);
}

/*
 * One message from the executor (written whole, so read whole): ready, or
 * an answer; end of file (or an error) is a dead executor.
 */
static void
executor_event(TsServiceStatus *st, TimestampTz *next_start)
{
	TsExecMsg	msg;
	ssize_t		n = read(executor.pipe_fd, &msg, sizeof(msg));

	if (n == (ssize_t) sizeof(msg) && msg.kind == TS_EXEC_READY)
		executor_ready(st);
	else if (n == (ssize_t) sizeof(msg))
	{
		publish_stats();		/* before the backend wakes: it sees its own request counted */
		ts_relay_complete(ts_service_shared(), &msg);
	}
	else if (n >= 0 || (errno != EINTR && errno != EAGAIN))
		executor_gone(st, next_start);
}

/* Sleep until the latch, the executor's pipe, the restart time or postmaster death. */
static void
wait_for_event(TsServiceStatus *st, TimestampTz *next_start)
{
	WaitEventSet *set = ts_create_wait_event_set(3);
	WaitEvent	event;
	long		timeout = -1;

	AddWaitEventToSet(set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, NULL);
	AddWaitEventToSet(set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, NULL, NULL);
	if (executor.pid > 0)
		AddWaitEventToSet(set, WL_SOCKET_READABLE, executor.pipe_fd, NULL, NULL);
	else
		timeout = Max(0, TimestampDifferenceMilliseconds(GetCurrentTimestamp(), *next_start));
	if (WaitEventSetWait(set, timeout, &event, 1, PG_WAIT_EXTENSION) == 1)
	{
		if (event.events & WL_LATCH_SET)
		{
			ResetLatch(MyLatch);
			ts_relay_dispatch(ts_service_shared(), &executor,
							  executor.pid > 0 && st->state != TS_SERVICE_STARTING);
		}
		if (event.events & WL_SOCKET_READABLE)
			executor_event(st, next_start);
	}
	FreeWaitEventSet(set);
}

void
ts_service_main(Datum arg pg_attribute_unused())
{
	TsServiceStatus st;
	TimestampTz next_start = 0;

	pqsignal(SIGTERM, die);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGPIPE, SIG_IGN);	/* a dead executor's pipe is an error to handle, not a signal */
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	memset(&st, 0, sizeof(st));
	st.state = TS_SERVICE_STARTING;
	st.pid = MyProcPid;
	st.started_at = GetCurrentTimestamp();
	ts_service_publish(&st);
	executor.report = ts_executor_map_shared(sizeof(TsExecutorReport));
	executor.stats = ts_executor_map_shared(sizeof(TsExecutorStats));
	executor.config = ts_executor_map_shared(sizeof(TsExecutorConfig));
	executor.segment_type = dynamic_shared_memory_type == DSM_IMPL_MMAP ? TS_SEGMENT_MMAP : TS_SEGMENT_POSIX;
	if (executor.report == NULL || executor.stats == NULL || executor.config == NULL)
		ereport(FATAL,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("%s could not map the memory it shares with its executor: %m", TS_SERVICE_WORKER_NAME)));
	write_config();
	publish_stats();			/* a previous worker's models are gone */
	before_shmem_exit(service_exit, (Datum) 0);
	pg_atomic_write_u32(&ts_service_shared()->worker_procno, ts_proc_number(MyProc));
	/* requests a previous worker left queued will never be answered */
	ts_relay_fail_all(ts_service_shared(), "the GPU service restarted during this request");

	for (;;)
	{
		if (executor.pid == 0 && GetCurrentTimestamp() >= next_start)
			start_executor(&st, &next_start);
		wait_for_event(&st, &next_start);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			write_config();		/* treeshap.gpu_memory_limit applies from the next request */
		}
	}
}
