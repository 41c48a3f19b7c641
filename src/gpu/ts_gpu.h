/*
 * ts_gpu.h - host side of the GPU path, without PostgreSQL: turns a path
 * table into a packed lane table on the device (a "plan"), and completes GPU
 * results with the paths too long for one warp, which take the CPU route.
 */
#ifndef TS_GPU_H
#define TS_GPU_H

#include "cuda/ts_cuda.h"
#include "core/ts_interactions.h"
#include "core/ts_pack.h"
#include "core/ts_shap_cpu.h"

typedef struct TsGpuPlan
{
	const TsPathTable *paths;
	TsPacking  *packing;
	TsGpuTable *table;			/* device copy; NULL until uploaded */
	double		fixed_scale;
} TsGpuPlan;

/* Scale for int64 fixed-point sums: 2^k with k as large as a bound on |phi| allows. */
extern double ts_gpu_fixed_scale(const TsPathTable *pt);

/* Lane array (num_bins x 32) of a packing, empty lanes filled in. */
extern TsGpuLane *ts_gpu_lanes(const TsPathTable *pt, const TsPacking *pk);

/* Pack, lay out and upload; on failure *out is NULL and nothing stays on the device. */
extern TsGpuStatus ts_gpu_plan_build(const TsPathTable *pt, TsPackAlgo algo, TsGpuPlan **out,
									 char *msg, size_t msglen);

/* Free the device table (host memory belongs to the caller's allocator). */
extern void ts_gpu_plan_release_device(TsGpuPlan *plan);

#endif							/* TS_GPU_H */
