/*
 * ts_gpu_pg.h - the GPU path inside a backend: choosing the device, the
 * per-model plan kept with the cached model, and the pipelined run of one
 * call, whose device and pinned memory belong to a memory context.
 */
#ifndef TS_GPU_PG_H
#define TS_GPU_PG_H

#include "ts_catalog.h"

typedef struct TsGpuRun TsGpuRun;

/*
 * Whether SHAP values go to the GPU. auto: when one is present (probed
 * lazily, once per backend) and the call explains batches of rows; gpu:
 * always, and an ERROR when no GPU can be used; cpu: never.
 */
extern bool ts_device_use_gpu(bool batches);

/* Start a run over batches of up to max_rows rows (builds the model's plan on first use). */
extern TsGpuRun *ts_gpu_run_start(TsCachedModel *entry, int32 max_rows);

/* Pinned input buffer of a slot (max_rows x num_features float32). */
extern float *ts_gpu_run_input(TsGpuRun *run, int slot);

extern void ts_gpu_run_submit(TsGpuRun *run, int slot, int32 nrows);

/*
 * Wait for a slot's batch, answering cancel meanwhile; returns its
 * contributions (nrows x outputs x (features + 1)), long paths included.
 */
extern double *ts_gpu_run_wait(TsGpuRun *run, int slot, int32 nrows);

/* Free the run's device and pinned memory (also done by ERROR cleanup). */
extern void ts_gpu_run_end(TsGpuRun *run);

#endif							/* TS_GPU_PG_H */
