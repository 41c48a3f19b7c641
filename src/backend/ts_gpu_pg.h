/*
 * ts_gpu_pg.h - the GPU path inside a backend: choosing the device, the
 * per-model plan kept with the cached model, and the pipelined run of one
 * call, whose device and pinned memory belong to a memory context.
 */
#ifndef TS_GPU_PG_H
#define TS_GPU_PG_H

#include "backend/ts_catalog.h"
#include "core/ts_interactions.h"

typedef struct TsGpuRun TsGpuRun;

/* What a run computes. */
typedef enum TsRunKind
{
	TS_RUN_SHAP,				/* per row: outputs x (features + 1), bias last */
	TS_RUN_INTERACTIONS,		/* per row: outputs x selected x features */
	TS_RUN_IMPORTANCE			/* per batch: outputs x features sums of |phi|, then of phi */
} TsRunKind;

typedef struct TsRunSpec
{
	TsRunKind	kind;
	TsInteractionMethod method; /* interactions only */
	const TsFeatureSelection *selection;	/* interactions only; must outlive the run */
} TsRunSpec;

/*
 * Whether SHAP values go to the GPU. auto: when one is present (probed
 * lazily, once per backend) and the call explains batches of rows; gpu:
 * always, and an ERROR when no GPU can be used; cpu: never.
 */
extern bool ts_device_use_gpu(bool batches);

/*
 * Start a run over batches of up to max_rows rows (builds the model's plan on
 * first use); spec NULL means SHAP values.
 */
extern TsGpuRun *ts_gpu_run_start(TsCachedModel *entry, int32 max_rows, const TsRunSpec *spec);

/* Pinned input buffer of a slot (max_rows x num_features float32). */
extern float *ts_gpu_run_input(TsGpuRun *run, int slot);

extern void ts_gpu_run_submit(TsGpuRun *run, int slot, int32 nrows);

/*
 * Wait for a slot's batch, answering cancel meanwhile; returns its result in
 * the run kind's layout, long paths included (interactions finished).
 */
extern double *ts_gpu_run_wait(TsGpuRun *run, int slot, int32 nrows);

/* Free the run's device and pinned memory (also done by ERROR cleanup). */
extern void ts_gpu_run_end(TsGpuRun *run);

#endif							/* TS_GPU_PG_H */
