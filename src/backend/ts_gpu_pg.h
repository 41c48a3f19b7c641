/*
 * ts_gpu_pg.h - the GPU path of a backend, through the GPU service:
 * choosing the device, shipping a model to the service, and the pipelined
 * run of one call, whose shared memory belongs to a memory context.
 */
#ifndef TS_GPU_PG_H
#define TS_GPU_PG_H

#include "backend/ts_catalog.h"
#include "core/ts_interactions.h"
#include "core/ts_interventional.h"
#include "core/ts_wire.h"

typedef struct TsGpuRun TsGpuRun;

/* What a run computes. */
typedef enum TsRunKind
{
	TS_RUN_SHAP,				/* per row: outputs x (features + 1), bias last */
	TS_RUN_INTERACTIONS,		/* per row: outputs x selected x features */
	TS_RUN_IMPORTANCE,			/* per batch: outputs x features sums of |phi|, then of phi */
	TS_RUN_TOP_FEATURES,		/* per row: outputs x ts_topk_width(top_k) (core/ts_topk.h) */
	TS_RUN_PREDICT				/* per row: outputs margins */
} TsRunKind;

typedef struct TsRunSpec
{
	TsRunKind	kind;
	TsInteractionMethod method; /* interactions only */
	const TsFeatureSelection *selection;	/* interactions only; must outlive the run */
	int32		top_k;			/* top features: 1 to the model's features */
	const TsBackground *background; /* SHAP, importance, top features: interventional against
									 * it (must outlive the run); NULL for path-dependent */
} TsRunSpec;

/* Whether the GPU can explain against a background in the space asked for (the link's factor is bounded). */
extern bool ts_gpu_interventional_ok(const TsModel *m, bool probability);

/*
 * Whether SHAP values go to the GPU. auto: when the GPU service is ready
 * with a GPU and the call explains batches of rows; gpu: always, and an
 * ERROR when the service is not preloaded or has no GPU; cpu: never.
 */
extern bool ts_device_use_gpu(bool batches);

/*
 * Make the model resident in the GPU service (shipping its bytes unless
 * the service holds that version): its paths, whether this call loaded it,
 * and, when in is not NULL, its interface (core/ts_wire.h) read into
 * CurrentMemoryContext.
 */
extern void ts_gpu_load(TsCachedModel *entry, TsInterface *in, int64 *paths, bool *loaded);

/*
 * Start a run over batches of up to max_rows rows (builds the model's plan on
 * first use); spec NULL means SHAP values.
 */
extern TsGpuRun *ts_gpu_run_start(TsCachedModel *entry, int32 max_rows, const TsRunSpec *spec);

/* Input area of a slot, in shared memory (max_rows x num_features float32). */
extern float *ts_gpu_run_input(TsGpuRun *run, int slot);

extern void ts_gpu_run_submit(TsGpuRun *run, int slot, int32 nrows);

/*
 * Wait for a slot's batch, answering cancel meanwhile; returns its result in
 * the run kind's layout, long paths included (interactions finished). NULL
 * under treeshap.device = auto when the GPU service failed the batch and did
 * not come back: the caller computes it (and the rest) on the CPU.
 */
extern double *ts_gpu_run_wait(TsGpuRun *run, int slot, int32 nrows);

/* End the run: its request dropped, its segment unmapped (also done by ERROR cleanup). */
extern void ts_gpu_run_end(TsGpuRun *run);

#endif							/* TS_GPU_PG_H */
