/*
 * ts_service.h - the GPU service: a background worker, registered when
 * pg_treeshap is in shared_preload_libraries, and the executor process it
 * forks, which owns the server's GPUs (issue 16 moves every backend's GPU
 * work into it). Their state lives in a small shared-memory struct that
 * any backend can read. The postmaster only registers the worker and the
 * memory: CUDA is initialised in the executor, never in the postmaster,
 * _PG_init or the worker.
 */
#ifndef TS_SERVICE_H
#define TS_SERVICE_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "service/ts_executor.h"

#define TS_SERVICE_WORKER_NAME "pg_treeshap gpu service"

/* What the service is doing, as treeshap.gpu_status shows it. */
typedef enum TsServiceState
{
	TS_SERVICE_NOT_LOADED = 0,	/* pg_treeshap is not in shared_preload_libraries */
	TS_SERVICE_STARTING,		/* no executor has reported its GPUs yet */
	TS_SERVICE_READY,			/* running, with at least one GPU */
	TS_SERVICE_NO_DEVICE,		/* running, but no usable GPU (or a build without CUDA) */
	TS_SERVICE_STOPPED			/* exited; the postmaster restarts it */
} TsServiceState;

/* A consistent copy of the service's shared state. */
typedef struct TsServiceStatus
{
	TsServiceState state;
	int			pid;			/* 0 while no worker runs */
	TimestampTz started_at;		/* when the running worker started */
	int			starts;			/* workers started since the server started */
	int			executor_pid;	/* the process that owns the GPUs (0: none) */
	int			executor_starts;	/* executors the running worker has started */
	TsExecutorReport found;		/* the running executor's devices, or why there are none */
} TsServiceStatus;

/*
 * A backend's request, in the slot of its PGPROC (its ProcNumber): the backend
 * fills it and queues it, the worker sends it to the executor and marks
 * it done or failed, and sets the backend's latch. A backend that stops
 * waiting (cancel, timeout, terminate) abandons it; a reply to an
 * abandoned or older request (seq) is dropped.
 */
typedef enum TsSlotState
{
	TS_SLOT_FREE = 0,
	TS_SLOT_QUEUED,				/* filled by its backend, not yet sent */
	TS_SLOT_SENT,				/* with the executor */
	TS_SLOT_DONE,				/* result valid */
	TS_SLOT_FAILED,				/* error valid */
	TS_SLOT_ABANDONED,			/* its backend stopped waiting while it was sent */
	TS_SLOT_CANCELLING			/* the executor was told; its answer will be dropped */
} TsSlotState;

typedef struct TsServiceSlot
{
	slock_t		mutex;			/* guards every field: held for a few copies */
	TsSlotState state;
	uint64		seq;			/* the backend's request number */
	uint64		cancel_seq;		/* an abandoned request the next one replaced before the worker saw it, or 0 */
	int32		kind;			/* TsExecMsgKind of the request */
	int32		arg;
	uint32		segment;		/* its payload (ts_request.h), or 0 */
	int32		result;
	char		error[160];
} TsServiceSlot;

/* The shared state: status, the worker's PGPROC, one request slot per PGPROC. */
typedef struct TsServiceShared
{
	LWLock	   *lock;			/* guards status */
	TsServiceStatus status;
	pg_atomic_uint32 worker_procno; /* the running worker's ProcNumber, or TS_INVALID_PROC_NUMBER */
	TsExecutorStats stats;		/* guarded by lock: requests since the worker started, resident models */
	pg_atomic_uint64 retried;	/* requests sent again after the service failed them, since the server started */
	int			num_slots;
	TsServiceSlot slots[FLEXIBLE_ARRAY_MEMBER];
} TsServiceShared;

/* The shared state, NULL when pg_treeshap is not preloaded. */
extern TsServiceShared *ts_service_shared(void);

/* Round trip to the executor, which waits wait_ms first: milliseconds; ERROR on any failure. */
extern double ts_service_ping(int32 wait_ms);

/*
 * Queue a request of this backend (one at a time) with its payload
 * segment (0: none) and wake the worker; header, when given, is the
 * segment's, stamped with the request's slot and sequence number first.
 * Returns the sequence number. ERROR when the service is not running.
 */
struct TsRequestHeader;
extern uint64 ts_service_submit(int32 kind, int32 arg, uint32 segment, struct TsRequestHeader *header);

/*
 * Wait for the answer to request *seq: the executor's result. A request
 * the service failed (its executor or worker died, or was restarting) is
 * sent once more, as it was, when the service is back (within 10 s; *seq
 * is then the new request's): requests are read-only and deterministic.
 * ERROR when it fails again, the service does not come back (unless gone
 * is given: then *gone is set and 0 returned, the caller computing without
 * the service), or the wait is interrupted (cancel, statement_timeout,
 * terminate), abandoning the request.
 */
extern int32 ts_service_wait(uint64 *seq, bool *gone);

/*
 * The service's state once it has started (ready, or no device), waiting
 * up to 10 s while its worker or executor starts; cancel interrupts it.
 */
extern TsServiceStatus ts_service_await_start(void);

/* Stop waiting for request seq (a run that ends early); its answer is dropped. */
extern void ts_service_abandon(uint64 seq);

/* treeshap.gpu_memory_limit (kB, 0: none) and treeshap.service_emulated_devices. */
extern int	ts_gpu_memory_limit_kb;
extern int	ts_service_emulated_devices;

/* From _PG_init: define the service's settings (they show, and do nothing, without the service). */
extern void ts_service_define_settings(void);

/* From _PG_init while preloading: ask for shared memory and register the worker. */
extern void ts_service_register(void);

/* The service's state now (TS_SERVICE_NOT_LOADED when not preloaded). */
extern void ts_service_status(TsServiceStatus *out);

/* The state's name: "not loaded", "starting", "ready", "no device", "stopped". */
extern const char *ts_service_state_name(TsServiceState state);

/* The worker's entry point (bgw_function_name). */
extern PGDLLEXPORT void ts_service_main(Datum arg);

/* The service's requests served and resident models now (none when not preloaded). */
extern void ts_service_stats(TsExecutorStats *out);

/* Publish them (the worker, after each answer and when its executor goes). */
extern void ts_service_publish_stats(const TsExecutorStats *stats);

/* Requests queued or with the executor now. */
extern int	ts_service_queue_depth(void);

/* Publish the worker's state (ts_service_worker.c); a new pid counts as one more start. */
extern void ts_service_publish(const TsServiceStatus *st);

#endif							/* TS_SERVICE_H */
