/*
 * ts_service_request.c - a backend's side of a request to the GPU service:
 * fill its slot, wake the worker, sleep on its latch until the answer. A
 * request the service failed (its executor or worker died) is sent once
 * more when the service is back, so a client sees a slower answer, not an
 * error: every request is read-only and deterministic. A second failure,
 * a service that does not come back, or an interrupted wait (cancel,
 * statement_timeout) ends with an ERROR, abandoning the request so that its
 * answer is dropped. Nothing here touches CUDA.
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

/* How long a failed request waits for the service to come back before it is sent again. */
#define RETRY_WAIT_MS 10000

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

/* What became of a request: no answer yet, answered, or failed by the service. */
typedef enum TsAnswer
{
	TS_ANSWER_NONE,
	TS_ANSWER_DONE,
	TS_ANSWER_FAILED
} TsAnswer;

/* Take the answer to request seq if it came (the result, or the service's error message). */
static TsAnswer
take_answer(TsServiceSlot *slot, uint64 seq, int32 *result, char *error)
{
	TsSlotState state;

	SpinLockAcquire(&slot->mutex);
	state = slot->seq == seq ? slot->state : TS_SLOT_FREE;
	if (state == TS_SLOT_DONE)
		*result = slot->result;
	else if (state == TS_SLOT_FAILED)
		memcpy(error, slot->error, sizeof(slot->error));
	if (state == TS_SLOT_DONE || state == TS_SLOT_FAILED)
		slot->state = TS_SLOT_FREE;
	SpinLockRelease(&slot->mutex);
	return state == TS_SLOT_DONE ? TS_ANSWER_DONE : state == TS_SLOT_FAILED ? TS_ANSWER_FAILED : TS_ANSWER_NONE;
}

/* This backend's last request, as submitted: sent again, as it was, after a failure. */
typedef struct TsLastRequest
{
	int32		kind;
	int32		arg;
	uint32		segment;
	TsRequestHeader *header;
	int			worker_pid;		/* the worker and executor that took it */
	int			executor_pid;
} TsLastRequest;

static TsLastRequest last_request;

/* Queue the last request (again) with the service that runs now; its sequence number. */
static uint64
send_last_request(void)
{
	TsServiceShared *sh = running_service(&last_request.worker_pid);
	TsServiceStatus st;
	uint64		seq;

	if (MyProc == NULL || ts_proc_number(MyProc) >= sh->num_slots)
		elog(ERROR, "this process has no GPU service request slot");
	if (!exit_hook_set)
	{
		before_shmem_exit(abandon_at_exit, (Datum) 0);
		exit_hook_set = true;
	}
	/* a starting executor may fail the request unseen: any ready one may take it again */
	ts_service_status(&st);
	last_request.executor_pid = st.state == TS_SERVICE_READY ? st.executor_pid : 0;
	seq = queue_request(&sh->slots[ts_proc_number(MyProc)], last_request.kind, last_request.arg,
						last_request.segment, last_request.header);
	wake_worker(sh);
	return seq;
}

uint64
ts_service_submit(int32 kind, int32 arg, uint32 segment, TsRequestHeader *header)
{
	last_request.kind = kind;
	last_request.arg = arg;
	last_request.segment = segment;
	last_request.header = header;
	return send_last_request();
}

/* Whether the service runs the worker and executor that took the last request. */
static bool
same_service(void)
{
	TsServiceStatus st;

	ts_service_status(&st);
	return st.pid == last_request.worker_pid && st.executor_pid == last_request.executor_pid;
}

/* Whether the worker that took the last request is gone (its requests then fail for nobody). */
static bool
worker_gone(void)
{
	TsServiceStatus st;

	ts_service_status(&st);
	return st.pid != last_request.worker_pid;
}

/*
 * Wait (cancel and statement_timeout still reach it) until a new worker or
 * executor has replaced those that failed the last request and is ready,
 * then send the request again; its new sequence number. When the service
 * is not back within RETRY_WAIT_MS, or (where gone is given: the caller can
 * compute without it) is back without a device: 0 with *gone set, else
 * ERROR with the failure's message.
 */
static uint64
send_again(const char *failure, bool *gone)
{
	TsServiceShared *sh = ts_service_shared();
	TsServiceStatus st;
	uint64		seq;

	for (int waited = 0;; waited += START_POLL_MS)
	{
		bool		back;

		ts_service_status(&st);
		back = (st.state == TS_SERVICE_READY || st.state == TS_SERVICE_NO_DEVICE) &&
			!same_service() && pg_atomic_read_u32(&sh->worker_procno) != TS_INVALID_PROC_NUMBER;

		/* an executor without a device still answers (a ping; any other request with its error) */
		if (back && (st.state == TS_SERVICE_READY || gone == NULL))
			break;
		if ((back || waited >= RETRY_WAIT_MS) && gone != NULL)
		{
			*gone = true;
			return 0;
		}
		if (waited >= RETRY_WAIT_MS)
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("%s", failure),
					 errdetail("The GPU service was not back within %d s to take the request again.",
							   RETRY_WAIT_MS / 1000)));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 START_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	seq = send_last_request();
	pg_atomic_fetch_add_u64(&sh->retried, 1);
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
ts_service_wait(uint64 *seq, bool *gone)
{
	TsServiceShared *sh = ts_service_shared();
	TsServiceSlot *slot = &sh->slots[ts_proc_number(MyProc)];
	int32		result = 0;
	bool		sent_again = false;
	char		error[sizeof(slot->error)];

	PG_TRY();
	{
		for (;;)
		{
			TsAnswer	answer = take_answer(slot, *seq, &result, error);

			if (answer == TS_ANSWER_DONE)
				break;
			if (answer == TS_ANSWER_NONE && worker_gone())
			{
				strlcpy(error, "the GPU service stopped during this request", sizeof(error));
				answer = TS_ANSWER_FAILED;
			}
			if (answer == TS_ANSWER_FAILED)
			{
				if (sent_again)
					ereport(ERROR,
							(errcode(ERRCODE_SYSTEM_ERROR),
							 errmsg("%s", error),
							 errdetail("The request had been sent again once already.")));
				sent_again = true;
				*seq = send_again(error, gone);
				if (*seq == 0)
					break;		/* not back: the caller goes on without it */
				continue;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 WORKER_CHECK_MS, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		abandon_request(sh, slot, *seq);
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
	uint64		seq;

	if (wait_ms < 0 || wait_ms > 60000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait_ms must be between 0 and 60000")));
	INSTR_TIME_SET_CURRENT(start);
	seq = ts_service_submit(TS_EXEC_PING, wait_ms, 0, NULL);
	(void) ts_service_wait(&seq, NULL);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	return INSTR_TIME_GET_MILLISEC(elapsed);
}
