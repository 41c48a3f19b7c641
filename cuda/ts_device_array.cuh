/*
 * ts_device_array.cuh - the one helper the kernel files share for their
 * uploads: a device copy of a host array. Internal to cuda/.
 */
#ifndef TS_DEVICE_ARRAY_CUH
#define TS_DEVICE_ARRAY_CUH

#include <cuda_runtime.h>

#include <cstdint>

/* cudaMalloc and copy of count elements (an empty array still gets a small allocation); *dst stays NULL on failure. */
template <typename T>
inline cudaError_t
ts_upload_array(T **dst, const T *src, int64_t count)
{
	void	   *p = nullptr;
	size_t		bytes = (size_t) (count > 0 ? count : 0) * sizeof(T);
	cudaError_t rc = cudaMalloc(&p, bytes > 0 ? bytes : 16);

	*dst = rc == cudaSuccess ? (T *) p : nullptr;
	if (rc != cudaSuccess || bytes == 0)
		return rc;
	return cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice);
}

#endif							/* TS_DEVICE_ARRAY_CUH */
