/*
 * ts_quad.cuh - internal to cuda/: the quadrature kernel family over the
 * chunked layout of ts_cuda.h (TsGpuQuadDesc), as ts_shap.cu drives it.
 * Results go to column-major int64 fixed-point accumulators,
 * acc[column * nrows + row] with column = output * num_features + feature,
 * so the sums a block adds for one column are 32 consecutive rows.
 */
#ifndef TS_QUAD_CUH
#define TS_QUAD_CUH

#include <cuda_runtime.h>

#include "ts_cuda.h"
#include "ts_warp_dp.cuh"

/* Device copy of a quadrature layout. */
struct TsQuadTable
{
	TsGpuQuadChunk *chunks;
	TsGpuQuadPath *paths;
	TsGpuQuadElem *elems;
	int32_t    *elem_cat;
	double	   *coef;
	float	   *coef_single;	/* the coefficients rounded to float, for single precision */
	int32_t    *slot_column;
	double	   *values;			/* vector leaves: per layout path, its values; else nullptr */
	double	   *leaf_value;		/* K = 1: per layout path, its value; else nullptr */
	int32_t		value_width;
	int64_t		num_chunks;
	int64_t		num_paths;
	int32_t		max_points;
	int32_t		max_slots;		/* most slots of any chunk */
	int32_t		num_features;
	int32_t		num_outputs;
};

/* Whether a row's x satisfies element e of the layout (index ei). */
__device__ __forceinline__ bool
ts_quad_satisfies(const TsGpuQuadElem &e, int64_t ei, float x, const int32_t *__restrict__ elem_cat,
				  const uint32_t *__restrict__ cats)
{
	if (isnan(x))
		return (e.slot_flags & TS_GPU_QUAD_MISSING) != 0;
	if (!(e.lower <= x && x < e.upper))
		return false;
	return (e.slot_flags & TS_GPU_QUAD_CATEGORICAL) == 0 ||
		ts_warp::category_in(cats + __ldg(elem_cat + ei), x);
}

/* The row-major x (nrows x features) as x_t (features x nrows), enqueued. */
cudaError_t ts_quad_transpose(const float *x, int32_t nrows, int32_t num_features, float *x_t,
							  cudaStream_t stream);

/* Copy a layout to the current GPU; on failure nothing stays allocated. */
cudaError_t ts_quad_upload(const TsGpuQuadDesc *desc, int32_t num_features, int32_t num_outputs,
						   TsQuadTable **out);

void		ts_quad_free(TsQuadTable *q);

/* Floats of transposed input (x_t) a batch of nrows rows needs. */
size_t		ts_quad_input_len(const TsQuadTable *q, int32_t nrows);

/*
 * Enqueue one batch: transpose x (nrows x features, row-major) into x_t,
 * then add every row's contributions, round(phi * scale), to acc (zeroed,
 * column-major as above). Category sets are at cats.
 */
cudaError_t ts_quad_enqueue(const TsQuadTable *q, const uint32_t *cats, const float *x, float *x_t,
							int32_t nrows, bool single, double scale, unsigned long long *acc,
							cudaStream_t stream);

#endif							/* TS_QUAD_CUH */
