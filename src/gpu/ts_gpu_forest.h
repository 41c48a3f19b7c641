/*
 * ts_gpu_forest.h - a model's trees laid out for the GPU's predictions
 * (cuda/ts_cuda.h's TsGpuForestDesc), in host memory. No PostgreSQL.
 */
#ifndef TS_GPU_FOREST_H
#define TS_GPU_FOREST_H

#include "cuda/ts_cuda.h"
#include "model/ts_model.h"

/* Lay out the model's trees (the model must outlive the layout for base margins). */
extern TsGpuForestDesc *ts_gpu_forest_build(const TsModel *m);

/* Device bytes the layout takes, about. */
extern size_t ts_gpu_forest_bytes(const TsGpuForestDesc *f);

extern void ts_gpu_forest_free(TsGpuForestDesc *f);

#endif							/* TS_GPU_FOREST_H */
