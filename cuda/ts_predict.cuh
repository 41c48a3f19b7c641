/*
 * ts_predict.cuh - the trees on a GPU, for predictions: their upload and the
 * traversal kernel's launcher (ts_predict.cu). Internal to cuda/: the table
 * of ts_shap.cu holds a forest next to its path layouts.
 */
#ifndef TS_PREDICT_CUH
#define TS_PREDICT_CUH

#include <cuda_runtime.h>

#include "ts_cuda.h"

struct TsGpuForest;

/* Copy the trees (TsGpuForestDesc) to the current GPU. */
cudaError_t ts_forest_upload(const TsGpuForestDesc *desc, int32_t num_outputs, TsGpuForest **out);

/* Free a forest's device memory; safe on NULL and on a half-built one. */
void		ts_forest_free(TsGpuForest *forest);

/* Enqueue the margins of nrows rows (row-major float32 x) into out (nrows x outputs). */
cudaError_t ts_forest_enqueue(const TsGpuForest *forest, const float *x, int32_t nrows,
							  int32_t num_features, double *out, cudaStream_t stream);

#endif							/* TS_PREDICT_CUH */
