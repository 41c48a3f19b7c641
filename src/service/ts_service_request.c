/*
 * ts_service_request.c - a backend's side of a request to the GPU service:
 * fill its slot, wake the worker, sleep on its latch until the answer, and
 * end with an ERROR when the request fails, the worker goes, or the wait is
 * interrupted (cancel, statement_timeout), abandoning the request so that
 * its answer is dropped. Nothing here touches CUDA.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/wait_event.h"

#include "service/ts_executor.h"
#include "service/ts_request.h"
#include "service/ts_pg_compat.h"
#include "service/ts_service.h"

/* How often a waiting backend checks that the worker it asked is still there. */
#define WORKER_CHECK_MS 100

/* How long a call that needs the GPU waits for a starting service, and how often it looks. */
#define START_WAIT_MS 10000
#define START_POLL_MS 20

static bool exit_hook_set = false;

/* The service's shared state; ERROR when it is not running. */
static TsServiceShared *
running_service(int *worker_pid)
{
	TsServiceShared *sh = ts_service_shared();
	TsServiceStatus st;

	if (sh == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the GPU service is not running"),
				 errhint("Add pg_treeshap to shared_preload_libraries and restart the server.")));
	ts_service_status(&st);
	if (st.pid == 0 || pg_atomic_read_u32(&sh->worker_procno) == TS_INVALID_PROC_NUMBER)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the GPU service is not running"),
				 errdetail("Its worker is restarting; try again in a second.")));
	*worker_pid = st.pid;
	return sh;
}

/*
 * Fill this backend's slot with a request and queue it; its sequence
 * number. The payload's header is stamped before the request is visible.
 */
static uint64
queue_request(TsServiceSlot *slot, int32 kind, int32 arg, uint32 segment, TsRequestHeader *header)
{
	uint64		seq;

	SpinLockAcquire(&slot->mutex);
	seq = slot->seq + 1;		/* only this backend moves its slot's seq */
	SpinLockRelease(&slot->mutex);
	if (header != NULL)
	{
		header->slot = ts_proc_number(MyProc);
		header->seq = seq;
		pg_write_barrier();
	}
	SpinLockAcquire(&slot->mutex);
	/* the previous request, abandoned, was never cancelled: the worker still must */
	if (slot->state == TS_SLOT_ABANDONED)
		slot->cancel_seq = slot->seq;
	slot->seq = seq;
	slot->kind = kind;
	slot->arg = arg;
	slot->segment = segment;
	slot->state = TS_SLOT_QUEUED;
	SpinLockRelease(&slot->mutex);
	return seq;
}

/* Set the running worker's latch, if a worker runs. */
static void
wake_worker(TsServiceShared *sh)
{
	uint32		procno = pg_atomic_read_u32(&sh->worker_procno);

	if (procno < (uint32) ProcGlobal->allProcCount)
		SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

/*
 * Stop waiting for request seq: unsent, it is dropped here; sent, the
 * worker tells the executor to stop it and drops its answer.
 */
static void
abandon_request(TsServiceShared *sh, TsServiceSlot *slot, uint64 seq)
{
	bool		sent;

	SpinLockAcquire(&slot->mutex);
	sent = slot->seq == seq && slot->state == TS_SLOT_SENT;
	if (slot->seq == seq)
		slot->state = sent ? TS_SLOT_ABANDONED : TS_SLOT_FREE;
	SpinLockRelease(&slot->mutex);
	if (sent)
		wake_worker(sh);
}

/*
 * At exit (terminate goes through FATAL, past any PG_CATCH): abandon the
 * request still in this backend's slot, so the executor stops it.
 */
static void
abandon_at_exit(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	TsServiceShared *sh = ts_service_shared();
	TsServiceSlot *slot;
	uint64		seq;

	if (sh == NULL || MyProc == NULL || ts_proc_number(MyProc) >= sh->num_slots)
		return;
	slot = &sh->slots[ts_proc_number(MyProc)];
	SpinLockAcquire(&slot->mutex);
	seq = slot->seq;
	SpinLockRelease(&slot->mutex);
	abandon_request(sh, slot, seq);
}

/* Take the answer to request seq if it came: true when done; ERROR when it failed. */
static bool
take_answer(TsServiceSlot *slot, uint64 seq, int32 *result)
{
	TsSlotState state;
	char		error[sizeof(slot->error)];

	SpinLockAcquire(&slot->mutex);
	state = slot->seq == seq ? slot->state : TS_SLOT_FREE;
	if (state == TS_SLOT_DONE)
		*result = slot->result;
	else if (state == TS_SLOT_FAILED)
		memcpy(error, slot->error, sizeof(error));
	if (state == TS_SLOT_DONE || state == TS_SLOT_FAILED)
		slot->state = TS_SLOT_FREE;
	SpinLockRelease(&slot->mutex);
	if (state == TS_SLOT_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("%s", error)));
	return state == TS_SLOT_DONE;
}

/* ERROR when the worker that took the request is gone (its failures then come from nobody). */
static void
check_worker(int worker_pid)
{
	TsServiceStatus st;

	ts_service_status(&st);
	if (st.pid != worker_pid)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("the GPU service stopped during this request")));
}

/* The worker that took this backend's last request (checked while waiting). */
static int	request_worker_pid = 0;

uint64
ts_service_submit(int32 kind, int32 arg, uint32 segment, TsRequestHeader *header)
{
	TsServiceShared *sh = running_service(&request_worker_pid);
	uint64		seq;

	if (MyProc == NULL || ts_proc_number(MyProc) >= sh->num_slots)
		elog(ERROR, "this process has no GPU service request slot");
	if (!exit_hook_set)
	{
		before_shmem_exit(abandon_at_exit, (Datum) 0);
		exit_hook_set = true;
	}
	seq = queue_request(&sh->slots[ts_proc_number(MyProc)], kind, arg, segment, header);
	wake_worker(sh);
	return seq;
}

void
ts_service_abandon(uint64 seq)
{
	TsServiceShared *sh = ts_service_shared();

	if (sh != NULL && MyProc != NULL && ts_proc_number(MyProc) < sh->num_slots)
		abandon_request(sh, &sh->slots[ts_proc_number(MyProc)], seq);
}

int32
ts_service_wait(uint64 seq)
{
	TsServiceShared *sh = ts_service_shared();
	TsServiceSlot *slot = &sh->slots[ts_proc_number(MyProc)];
	int32		result = 0;

	PG_TRY();
	{
		while (!take_answer(slot, seq, &result))
		{
			check_worker(request_worker_pid);
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 WORKER_CHECK_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		abandon_request(sh, slot, seq);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return result;
}

TsServiceStatus
ts_service_await_start(void)
{
	TsServiceStatus st;

	for (int waited = 0;; waited += START_POLL_MS)
	{
		ts_service_status(&st);
		if (st.state == TS_SERVICE_READY || st.state == TS_SERVICE_NO_DEVICE ||
			st.state == TS_SERVICE_NOT_LOADED || waited >= START_WAIT_MS)
			return st;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 START_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

double
ts_service_ping(int32 wait_ms)
{
	instr_time	start,
				elapsed;

	if (wait_ms < 0 || wait_ms > 60000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait_ms must be between 0 and 60000")));
	INSTR_TIME_SET_CURRENT(start);
	(void) ts_service_wait(ts_service_submit(TS_EXEC_PING, wait_ms, 0, NULL));
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	return INSTR_TIME_GET_MILLISEC(elapsed);
}
