/*
 * ts_service.c - the GPU service's registration and shared state. The
 * postmaster runs this part only: it asks for a few kilobytes of shared
 * memory and one lock, and registers the worker, which the postmaster
 * restarts one second after it exits abnormally.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/guc.h"

#include "service/ts_pg_compat.h"
#include "service/ts_service.h"

int			ts_gpu_memory_limit_kb = 0;
int			ts_service_emulated_devices = 0;

#define TS_SERVICE_SHMEM_NAME "pg_treeshap service"

static TsServiceShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Bytes of the shared state: a slot per backend (MaxBackends is known by now). */
static Size
shared_size(void)
{
	return add_size(offsetof(TsServiceShared, slots), mul_size(MaxBackends, sizeof(TsServiceSlot)));
}

/* Ask for the shared state and its lock (postmaster, while preloading). */
static void
service_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(shared_size()));
	RequestNamedLWLockTranche(TS_SERVICE_SHMEM_NAME, 1);
}

/* Create the shared state, or find it (every start of the shared memory). */
static void
service_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct(TS_SERVICE_SHMEM_NAME, shared_size(), &found);
	if (!found)
	{
		memset(shared, 0, shared_size());
		shared->lock = &(GetNamedLWLockTranche(TS_SERVICE_SHMEM_NAME))->lock;
		shared->status.state = TS_SERVICE_STARTING;
		pg_atomic_init_u32(&shared->worker_procno, TS_INVALID_PROC_NUMBER);
		pg_atomic_init_u64(&shared->retried, 0);
		shared->num_slots = MaxBackends;
		for (int i = 0; i < shared->num_slots; i++)
			SpinLockInit(&shared->slots[i].mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

void
ts_service_define_settings(void)
{
	DefineCustomIntVariable("treeshap.gpu_memory_limit",
							"GPU memory the service's models and batch buffers may take on each GPU.",
							"Least recently used models beyond it leave the GPU; 0 means the GPU's whole memory.",
							&ts_gpu_memory_limit_kb, 0, 0, INT_MAX,
							PGC_SIGHUP, GUC_UNIT_KB, NULL, NULL, NULL);
	/*
	 * A setting read at server start exists only where the library is
	 * preloaded: defining it from a backend that loads the library later
	 * is a FATAL error (and it would mean nothing there).
	 */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("treeshap.service_emulated_devices",
							"Emulated devices the GPU service uses instead of the GPUs, for tests.",
							"Each computes with the CPU's arithmetic behind the service's device calls; 0 uses the GPUs; "
							"-1 emulates one GPU this build has no code for.",
							&ts_service_emulated_devices, 0, -1, 16,
							PGC_POSTMASTER, GUC_NOT_IN_SAMPLE, NULL, NULL, NULL);
}

void
ts_service_register(void)
{
	BackgroundWorker worker;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = service_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = service_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	/* a connection to no database: it shows in pg_stat_activity and takes signals */
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* a hot standby explains read-only queries too */
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_treeshap");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "ts_service_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, TS_SERVICE_WORKER_NAME);
	snprintf(worker.bgw_type, BGW_MAXLEN, TS_SERVICE_WORKER_NAME);
	RegisterBackgroundWorker(&worker);
}

TsServiceShared *
ts_service_shared(void)
{
	return shared;
}

void
ts_service_status(TsServiceStatus *out)
{
	if (shared == NULL)
	{
		memset(out, 0, sizeof(*out));
		out->state = TS_SERVICE_NOT_LOADED;
		return;
	}
	LWLockAcquire(shared->lock, LW_SHARED);
	*out = shared->status;
	LWLockRelease(shared->lock);
}

void
ts_service_publish(const TsServiceStatus *st)
{
	int			starts;

	Assert(shared != NULL);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	starts = shared->status.starts + (st->pid != 0 && st->pid != shared->status.pid ? 1 : 0);
	shared->status = *st;
	shared->status.starts = starts;
	LWLockRelease(shared->lock);
}

const char *
ts_service_state_name(TsServiceState state)
{
	switch (state)
	{
		case TS_SERVICE_NOT_LOADED:
			return "not loaded";
		case TS_SERVICE_STARTING:
			return "starting";
		case TS_SERVICE_READY:
			return "ready";
		case TS_SERVICE_NO_DEVICE:
			return "no device";
		case TS_SERVICE_STOPPED:
			return "stopped";
	}
	return "unknown";
}

void
ts_service_stats(TsExecutorStats *out)
{
	memset(out, 0, sizeof(*out));
	if (shared == NULL)
		return;
	LWLockAcquire(shared->lock, LW_SHARED);
	*out = shared->stats;
	LWLockRelease(shared->lock);
}

void
ts_service_publish_stats(const TsExecutorStats *stats)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->stats = *stats;
	LWLockRelease(shared->lock);
}

int
ts_service_queue_depth(void)
{
	int			depth = 0;

	for (int i = 0; shared != NULL && i < shared->num_slots; i++)
	{
		TsServiceSlot *slot = &shared->slots[i];

		SpinLockAcquire(&slot->mutex);
		depth += slot->state == TS_SLOT_QUEUED || slot->state == TS_SLOT_SENT;
		SpinLockRelease(&slot->mutex);
	}
	return depth;
}
