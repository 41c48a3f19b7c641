/*
 * ts_device.cu - device discovery for treeshap.gpu_info(). Every entry point
 * catches everything, so nothing but a status code leaves this file.
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "ts_cuda_status.h"

extern "C" TsGpuStatus
ts_gpu_device_count(int *count, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaGetDeviceCount(count);

		if (rc != cudaSuccess)
		{
			*count = 0;
			return ts_cuda_status(rc, "cudaGetDeviceCount", msg, msglen);
		}
		return *count > 0 ? TS_GPU_OK : TS_GPU_NO_DEVICE;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_device_count", msg, msglen);
	}
}

extern "C" TsGpuStatus
ts_gpu_device_info(int index, TsGpuDeviceInfo *info, char *msg, size_t msglen)
{
	try
	{
		cudaDeviceProp prop;
		cudaError_t rc = cudaGetDeviceProperties(&prop, index);

		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "cudaGetDeviceProperties", msg, msglen);
		memset(info, 0, sizeof(*info));
		info->index = index;
		snprintf(info->name, sizeof(info->name), "%s", prop.name);
		info->total_memory = (long long) prop.totalGlobalMem;
		info->compute_major = prop.major;
		info->compute_minor = prop.minor;
		info->multiprocessors = prop.multiProcessorCount;
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_device_info", msg, msglen);
	}
}
