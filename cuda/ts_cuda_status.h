/*
 * ts_cuda_status.h - internal to cuda/: turning a CUDA error into a status
 * code and message for the plain-C interface.
 */
#ifndef TS_CUDA_STATUS_H
#define TS_CUDA_STATUS_H

#include <cuda_runtime.h>

#include <cstdio>

#include "ts_cuda.h"

/* Describe rc in msg, clear the runtime's last error, classify it. */
static inline TsGpuStatus
ts_cuda_status(cudaError_t rc, const char *what, char *msg, size_t msglen)
{
	cudaGetLastError();
	snprintf(msg, msglen, "%s: %s", what, cudaGetErrorString(rc));
	if (rc == cudaErrorNoDevice || rc == cudaErrorInsufficientDriver)
		return TS_GPU_NO_DEVICE;
	if (rc == cudaErrorMemoryAllocation)
		return TS_GPU_OUT_OF_MEMORY;
	return TS_GPU_ERROR;
}

/* For "return ts_cuda_unexpected(...)" in a catch (...) block. */
static inline TsGpuStatus
ts_cuda_unexpected(const char *what, char *msg, size_t msglen)
{
	snprintf(msg, msglen, "unexpected C++ exception in %s", what);
	return TS_GPU_ERROR;
}

#endif							/* TS_CUDA_STATUS_H */
