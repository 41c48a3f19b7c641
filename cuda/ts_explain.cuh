/*
 * ts_explain.cuh - what the runner (ts_runner.cu) takes from the explaining
 * kernels' file (ts_shap.cu): the uploaded table, the job's shape, and the
 * enqueueing of one batch's device work. Internal to cuda/.
 */
#ifndef TS_EXPLAIN_CUH
#define TS_EXPLAIN_CUH

#include <cuda_runtime.h>

#include "ts_cuda.h"
#include "ts_interventional.cuh"
#include "ts_predict.cuh"
#include "ts_quad.cuh"

struct TsGpuTable
{
	TsGpuLane  *lanes;
	double	   *bias;
	uint32_t   *cat_pool;		/* nullptr when the model has no categorical splits */
	TsQuadTable *quad;			/* nullptr without a quadrature layout */
	TsGpuForest *forest;		/* the trees, for predictions; nullptr without them */
	double	   *values;			/* vector leaves: every path's values; else nullptr */
	int32_t		value_width;
	int64_t		num_bins;
	int32_t		num_features;
	int32_t		num_outputs;
	double		scale;
	int			multiprocessors;
	int			device;			/* the GPU it lives on: current for every call on it */
};


namespace ts_explain
{

/* Whether a job computes interaction values (Shapley or Taylor). */
bool		is_interaction(const TsGpuJob &job);

/* Whether a job runs the quadrature kernel: SHAP or importance, asked for, laid out. */
bool		uses_quadrature(const TsGpuTable *t, const TsGpuJob &job);

/* Whether a job's accumulators take the quadrature kernel's column-major layout. */
bool		column_major(const TsGpuTable *t, const TsGpuJob &job);

/* int64 accumulators a job needs per row (predictions sum in doubles: none). */
size_t		acc_per_row(const TsGpuTable *t, const TsGpuJob &job);

/*
 * Enqueue the device work of one batch: zero, the job's kernel, then
 * finalise into out (SHAP with the bias column, interaction terms, or
 * importance sums). slot is the device copy of job.feature_slot; x_t the
 * quadrature kernel's transposed input; bg and margin an interventional
 * job's background and room for the rows' margins.
 */
cudaError_t enqueue_explain(const TsGpuTable *t, const float *x, float *x_t, int32_t nrows,
							TsGpuPrecision precision, const TsGpuJob &job, const int32_t *slot,
							const TsIvBackground *bg, double *margin, unsigned long long *acc,
							double *out, cudaStream_t stream);

}								/* namespace ts_explain */

#endif							/* TS_EXPLAIN_CUH */
