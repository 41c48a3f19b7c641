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
#include "model/ts_model.h"

/*
 * A path table laid out for the GPUs: the host copy of the lanes and of the
 * quadrature layout, kept so that each GPU can take its own upload.
 */
typedef struct TsGpuPlan
{
	const TsPathTable *paths;
	TsPacking  *packing;
	double		fixed_scale;
	TsGpuTableDesc desc;		/* lanes and quadrature layout in host memory */
	size_t		device_bytes;	/* what an upload takes on a GPU, about */
	TsGpuTable *table;			/* ts_gpu_plan_build's upload; NULL otherwise */
} TsGpuPlan;

/* Scale for int64 fixed-point sums: 2^k with k as large as a bound on |phi| allows. */
extern double ts_gpu_fixed_scale(const TsPathTable *pt);

/* Lane array (num_bins x 32) of a packing, empty lanes filled in. */
extern TsGpuLane *ts_gpu_lanes(const TsPathTable *pt, const TsPacking *pk);

/* Pack and lay out in host memory; with the model (or NULL) also its trees, for predictions. */
extern TsGpuPlan *ts_gpu_plan_layout(const TsPathTable *pt, const TsModel *model, TsPackAlgo algo);

/* Upload a layout to the current GPU; *out is the caller's to free (ts_gpu_table_free). */
extern TsGpuStatus ts_gpu_plan_upload(const TsGpuPlan *plan, TsGpuTable **out, char *msg, size_t msglen);

/* Free a plan: its own upload, if any, and its host memory. */
extern void ts_gpu_plan_free(TsGpuPlan *plan);

/* Pack, lay out and upload; on failure *out is NULL and nothing stays on the device. */
extern TsGpuStatus ts_gpu_plan_build(const TsPathTable *pt, const TsModel *model, TsPackAlgo algo,
									 TsGpuPlan **out, char *msg, size_t msglen);

/* Free the device table (host memory belongs to the caller's allocator). */
extern void ts_gpu_plan_release_device(TsGpuPlan *plan);

#endif							/* TS_GPU_H */
