/*
 * ts_gpu_info.c - treeshap.gpu_info(): the GPUs this backend can use. The
 * CUDA runtime is initialised here, lazily, in the backend that asks; a build
 * without CUDA or a machine without a GPU gives an empty set.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#ifdef TS_WITH_CUDA
#include "cuda/ts_cuda.h"
#endif

PG_FUNCTION_INFO_V1(treeshap_gpu_info);

#ifdef TS_WITH_CUDA
/* Append one row per visible GPU; no GPU or no driver gives no rows. */
static void
emit_devices(ReturnSetInfo *rsinfo)
{
	char		msg[256] = "";
	int			count = 0;
	TsGpuStatus rc = ts_gpu_device_count(&count, msg, sizeof(msg));

	if (rc == TS_GPU_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("could not query GPUs: %s", msg)));
	for (int i = 0; rc == TS_GPU_OK && i < count; i++)
	{
		TsGpuDeviceInfo info;
		Datum		values[5];
		bool		nulls[5] = {false, false, false, false, false};

		if (ts_gpu_device_info(i, &info, msg, sizeof(msg)) != TS_GPU_OK)
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("could not query GPU %d: %s", i, msg)));
		values[0] = Int32GetDatum(info.index);
		values[1] = CStringGetTextDatum(info.name);
		values[2] = Int64GetDatum(info.total_memory);
		values[3] = CStringGetTextDatum(psprintf("%d.%d", info.compute_major, info.compute_minor));
		values[4] = Int32GetDatum(info.multiprocessors);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}
#endif

/* treeshap.gpu_info(): index, name, memory, compute capability and SMs per GPU. */
Datum
treeshap_gpu_info(PG_FUNCTION_ARGS)
{
	InitMaterializedSRF(fcinfo, 0);
#ifdef TS_WITH_CUDA
	emit_devices((ReturnSetInfo *) fcinfo->resultinfo);
#endif
	return (Datum) 0;
}
