/*
 * ts_gpu_info.c - treeshap.gpu_info(): the GPUs the GPU service found.
 * Backends never touch CUDA: the service's executor probes the devices and
 * publishes them (treeshap.gpu_status shows the service itself). Without
 * the service, a build without CUDA or a machine without a GPU, the set is
 * empty.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "service/ts_service.h"

PG_FUNCTION_INFO_V1(treeshap_gpu_info);

/* treeshap.gpu_info(): index, name, memory, compute capability and SMs per GPU. */
Datum
treeshap_gpu_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TsServiceStatus st;

	InitMaterializedSRF(fcinfo, 0);
	ts_service_status(&st);
	if (st.state == TS_SERVICE_STARTING)
		st = ts_service_await_start();
	for (int i = 0; st.state == TS_SERVICE_READY && i < st.found.num_devices; i++)
	{
		const TsGpuDeviceInfo *info = &st.found.devices[i];
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		values[0] = Int32GetDatum(info->index);
		values[1] = CStringGetTextDatum(info->name);
		values[2] = Int64GetDatum(info->total_memory);
		values[3] = CStringGetTextDatum(psprintf("%d.%d", info->compute_major, info->compute_minor));
		values[4] = Int32GetDatum(info->multiprocessors);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
