/*
 * ts_cuda.h - plain-C interface to the CUDA side. Functions return a status
 * code and fill a message buffer; no C++ exception and no PostgreSQL longjmp
 * crosses this boundary. No CUDA header is needed to include this file.
 */
#ifndef TS_CUDA_H
#define TS_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef enum TsGpuStatus
{
	TS_GPU_OK = 0,
	TS_GPU_NO_DEVICE = 1,		/* no usable GPU or driver: not an error for callers */
	TS_GPU_ERROR = 2
} TsGpuStatus;

typedef struct TsGpuDeviceInfo
{
	int			index;
	char		name[256];
	long long	total_memory;	/* bytes */
	int			compute_major;
	int			compute_minor;
	int			multiprocessors;
} TsGpuDeviceInfo;

/* Number of visible GPUs; initialises the CUDA runtime in the calling process. */
TsGpuStatus ts_gpu_device_count(int *count, char *msg, size_t msglen);

/* Properties of one GPU. */
TsGpuStatus ts_gpu_device_info(int index, TsGpuDeviceInfo *info, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif

#endif							/* TS_CUDA_H */
