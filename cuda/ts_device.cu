/*
 * ts_device.cu - device discovery for treeshap.gpu_info(). Every entry point
 * catches everything, so nothing but a status code leaves this file.
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "ts_cuda_status.h"

#ifndef TS_CUDA_TARGETS
#define TS_CUDA_TARGETS "(unknown targets)"
#endif

/* Nothing: asking for its attributes tells whether the build has code for a device. */
__global__ void
ts_probe_kernel()
{
}

/* Say which CUDA the driver supports and which the build's runtime needs (a driver of none: no GPU). */
static TsGpuStatus
old_driver(int *count, char *msg, size_t msglen)
{
	int			driver = 0,
				runtime = 0;

	cudaGetLastError();
	*count = 0;
	cudaDriverGetVersion(&driver);
	cudaRuntimeGetVersion(&runtime);
	if (driver == 0)
	{
		snprintf(msg, msglen, "no NVIDIA driver is installed");
		return TS_GPU_NO_DEVICE;
	}
	snprintf(msg, msglen,
			 "the NVIDIA driver supports CUDA %d.%d, older than the CUDA %d.%d runtime this build links needs: update the driver",
			 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
	return TS_GPU_UNUSABLE;
}

extern "C" TsGpuStatus
ts_gpu_device_count(int *count, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaGetDeviceCount(count);

		if (rc == cudaErrorInsufficientDriver)
			return old_driver(count, msg, msglen);
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
ts_gpu_device_runnable(int index, char *msg, size_t msglen)
{
	try
	{
		cudaFuncAttributes attr;
		cudaError_t rc = cudaSetDevice(index);

		if (rc == cudaSuccess)
			rc = cudaFuncGetAttributes(&attr, ts_probe_kernel);
		if (rc == cudaErrorNoKernelImageForDevice || rc == cudaErrorInvalidDeviceFunction
			|| rc == cudaErrorUnsupportedPtxVersion)
		{
			cudaGetLastError();
			snprintf(msg, msglen, "this build has no code it can run (built for %s)", TS_CUDA_TARGETS);
			return TS_GPU_UNUSABLE;
		}
		return rc == cudaSuccess ? TS_GPU_OK : ts_cuda_status(rc, "cudaFuncGetAttributes", msg, msglen);
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_device_runnable", msg, msglen);
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
