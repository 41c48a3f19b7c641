/*
 * ts_interventional.cuh - interventional SHAP on a GPU (TS_GPU_JOB_INTERVENTIONAL):
 * a background's device copy and the kernel's launcher, over the
 * quadrature layout's chunks, paths and slots (ts_quad.cuh). Internal to
 * cuda/; ts_shap.cu's runner uploads the background with the runner and
 * enqueues the kernel per batch.
 */
#ifndef TS_INTERVENTIONAL_CUH
#define TS_INTERVENTIONAL_CUH

#include <cuda_runtime.h>

#include "ts_cuda.h"
#include "ts_quad.cuh"

struct TsIvBackground;

/*
 * Copy a background to the current GPU, its rows feature-major, and in
 * margin space group its rows per path of q (bg->group_budget); on failure
 * nothing stays allocated.
 */
cudaError_t ts_iv_upload(const TsGpuBackground *bg, const TsQuadTable *q, const uint32_t *cats,
						 int32_t num_features, int32_t num_outputs, TsIvBackground **out);

/* Device bytes of a background's groups (0 without them). */
size_t		ts_iv_group_bytes(const TsIvBackground *bg);

void		ts_iv_free(TsIvBackground *bg);

/* Whether the job works in probability space (and so needs each row's margins). */
bool		ts_iv_probability(const TsIvBackground *bg);

/* The fixed-point scale of its sums: the table's, lowered by the background's bound on shap's factor. */
double		ts_iv_scale(const TsIvBackground *bg, double table_scale);

/*
 * Enqueue one batch: every row's values (x_t feature-major, its margins in
 * x_margin when in probability space) added as round(phi * ts_iv_scale())
 * to acc (zeroed, column-major as the quadrature kernel's).
 */
cudaError_t ts_iv_enqueue(const TsQuadTable *q, const TsIvBackground *bg, const uint32_t *cats,
						  const float *x_t, int32_t nrows, const double *x_margin, double table_scale,
						  unsigned long long *acc, cudaStream_t stream);

#endif							/* TS_INTERVENTIONAL_CUH */
