/*
 * ts_service_worker.c - the GPU service's process: it probes the GPUs
 * (initialising CUDA here, in its own process), publishes what it found,
 * then sleeps on its latch until it is told to stop or the postmaster dies.
 * SIGTERM ends it through the usual interrupt path; it exits with status 1,
 * so the postmaster starts a fresh one a second later.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "service/ts_service.h"

/* Fill st's devices, or say why there are none. */
static void
probe_devices(TsServiceStatus *st)
{
#ifdef TS_WITH_CUDA
	int			count = 0;
	TsGpuStatus rc = ts_gpu_device_count(&count, st->message, sizeof(st->message));

	for (int i = 0; rc == TS_GPU_OK && i < count && st->num_devices < TS_SERVICE_MAX_DEVICES; i++)
	{
		if (ts_gpu_device_info(i, &st->devices[st->num_devices], st->message, sizeof(st->message)) != TS_GPU_OK)
			break;
		st->num_devices++;
	}
	/* no driver, or a driver that sees no GPU, is not an error: say which */
	if (st->num_devices == 0 && st->message[0] == '\0')
		snprintf(st->message, sizeof(st->message), "no GPU is visible to the CUDA runtime");
#else
	snprintf(st->message, sizeof(st->message), "pg_treeshap was built without CUDA");
#endif
	st->state = st->num_devices > 0 ? TS_SERVICE_READY : TS_SERVICE_NO_DEVICE;
	if (st->num_devices > 0)
		st->message[0] = '\0';
}

/* On exit: no worker runs until the postmaster starts the next one. */
static void
service_exit(int code pg_attribute_unused(), Datum arg pg_attribute_unused())
{
	TsServiceStatus st;

	ts_service_status(&st);
	st.state = TS_SERVICE_STOPPED;
	st.pid = 0;
	ts_service_publish(&st);
}

void
ts_service_main(Datum arg pg_attribute_unused())
{
	TsServiceStatus st;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	memset(&st, 0, sizeof(st));
	st.state = TS_SERVICE_STARTING;
	st.pid = MyProcPid;
	st.started_at = GetCurrentTimestamp();
	ts_service_publish(&st);
	before_shmem_exit(service_exit, (Datum) 0);

	probe_devices(&st);
	ts_service_publish(&st);
	elog(LOG, "%s started: %s, %d device(s)%s%s", TS_SERVICE_WORKER_NAME,
		 ts_service_state_name(st.state), st.num_devices, st.message[0] ? ": " : "", st.message);

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}
