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

extern "C" TsGpuStatus
ts_gpu_use_device(int index, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaSetDevice(index);

		return rc == cudaSuccess ? TS_GPU_OK : ts_cuda_status(rc, "cudaSetDevice", msg, msglen);
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_use_device", msg, msglen);
	}
}

extern "C" TsGpuStatus
ts_gpu_memory_free(int index, long long *free_bytes, char *msg, size_t msglen)
{
	try
	{
		size_t		free_now = 0,
					total = 0;
		cudaError_t rc = cudaSetDevice(index);

		if (rc == cudaSuccess)
			rc = cudaMemGetInfo(&free_now, &total);
		*free_bytes = (long long) free_now;
		return rc == cudaSuccess ? TS_GPU_OK : ts_cuda_status(rc, "cudaMemGetInfo", msg, msglen);
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_memory_free", msg, msglen);
	}
}
