/*
 * ts_gpu_quad.h - builds the quadrature layout of a path table that the GPU
 * kernel family of cuda/ts_quad.cu walks (TsGpuQuadDesc in cuda/ts_cuda.h).
 * No PostgreSQL here.
 */
#ifndef TS_GPU_QUAD_H
#define TS_GPU_QUAD_H

#include "cuda/ts_cuda.h"
#include "core/ts_paths.h"

/*
 * The layout of every path of 1 to 31 unique features (longer ones take the
 * CPU route, shorter ones add nothing), in host memory from ts_alloc.
 */
extern TsGpuQuadDesc *ts_gpu_quad_build(const TsPathTable *pt);

/* Overrides of the layout's automatic choices, for measurements (0: automatic). */
extern int32_t ts_gpu_quad_slot_cap;
extern int32_t ts_gpu_quad_chunk_elems;

extern void ts_gpu_quad_free(TsGpuQuadDesc *q);

#endif							/* TS_GPU_QUAD_H */
