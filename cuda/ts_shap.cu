/*
 * ts_shap.cu - the explaining kernels over bin-packed path tables (SHAP
 * values, interaction terms, importance sums, top features), their
 * launchers, and the enqueueing of one batch's device work for every job
 * (ts_explain.cuh); the runner that drives batches lives in ts_runner.cu.
 * One thread per path element; the warp-shuffle dynamic programmes each bin
 * runs are in ts_warp_dp.cuh.
 *
 * Determinism: contributions are summed as int64 fixed point (scale chosen by
 * the host from a bound on |phi|), and integer addition is associative, so
 * the order in which atomics land cannot change the result.
 */
#include <cuda_runtime.h>

#include <cmath>

#include "ts_explain.cuh"
#include "ts_warp_dp.cuh"

namespace
{

using namespace ts_warp;

constexpr int kBlockThreads = 256;
constexpr int kWarps = kBlockThreads / 32;
/* 4 blocks of 256 threads per SM caps registers at 64: measured on an H200, this
 * occupancy beat the 104 registers the compiler otherwise takes by 8% (cal_housing-med) */
constexpr int kMinBlocksPerSM = 4;
constexpr int kMaxRowsPerBlock = 32;
constexpr size_t kSharedBudget = 32 * 1024;	/* for the row tile; w buffers are static */

/* How one batch is cut into blocks: a tile of rows times a slice of bins. */
struct LaunchPlan
{
	int			rows_per_block;
	bool		stage_x;		/* copy the tile's rows to shared memory */
	size_t		shared_bytes;
	int64_t		row_tiles;
	int64_t		bins_per_block;
	int64_t		blocks;
};

/* Largest row tile whose rows fit the shared budget, and a grid that fills the GPU. */
LaunchPlan
plan_launch(const TsGpuTable *t, int32_t nrows)
{
	LaunchPlan	p;
	size_t		x_row = (size_t) t->num_features * sizeof(float);
	int64_t		slices;
	int64_t		target = (int64_t) t->multiprocessors * 16;
	p.rows_per_block = kMaxRowsPerBlock;
	while (p.rows_per_block > 1 && p.rows_per_block * x_row > kSharedBudget)
		p.rows_per_block /= 2;
	p.stage_x = p.rows_per_block * x_row <= kSharedBudget;
	p.shared_bytes = p.stage_x ? p.rows_per_block * x_row : 0;
	p.row_tiles = (nrows + p.rows_per_block - 1) / p.rows_per_block;
	slices = (target + p.row_tiles - 1) / p.row_tiles;
	if (slices > t->num_bins / kWarps)
		slices = t->num_bins / kWarps;
	if (slices < 1)
		slices = 1;
	p.bins_per_block = (t->num_bins + slices - 1) / slices;
	if (p.bins_per_block < 1)
		p.bins_per_block = 1;
	slices = (t->num_bins + p.bins_per_block - 1) / p.bins_per_block;
	p.blocks = p.row_tiles * (slices < 1 ? 1 : slices);
	return p;
}

/* The kernels' per-bin work. */
enum class Mode
{
	kShap,
	kShapley,
	kTaylor
};

/*
 * One block: a tile of rows times a slice of bins; each warp takes every
 * kWarps-th bin of the slice and explains the whole tile with it.
 */
template <typename Real, bool kStageX, Mode kMode>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSM)
shap_kernel(const TsGpuLane *__restrict__ lanes, int64_t num_bins,
			const uint32_t *__restrict__ cats, const float *__restrict__ x,
			int32_t nrows, int32_t num_features, int rows_per_block,
			int64_t row_tiles, int64_t bins_per_block, double scale, Target out)
{
	extern __shared__ __align__(8) unsigned char shared[];
	__shared__ Real rcp[TS_GPU_LANES + 2];
	__shared__ Real w_shared[kWarps][kRowsTogether][TS_GPU_LANES];
	const int64_t row0 = (blockIdx.x % row_tiles) * rows_per_block;
	const int64_t bin_lo = (blockIdx.x / row_tiles) * bins_per_block;
	const int64_t bin_hi = min(num_bins, bin_lo + bins_per_block);
	const int	nr = (int) min((int64_t) rows_per_block, (int64_t) nrows - row0);
	float	   *x_shared = (float *) shared;
	const int	lane = threadIdx.x & 31;
	const int	warp = threadIdx.x / 32;

	for (int i = threadIdx.x; i < TS_GPU_LANES + 2; i += blockDim.x)
		rcp[i] = i == 0 ? Real(0) : Real(1) / Real(i);
	if (kStageX)
		for (size_t i = threadIdx.x; i < (size_t) nr * num_features; i += blockDim.x)
			x_shared[i] = x[row0 * num_features + i];
	__syncthreads();

	{
		const float *rows = kStageX ? x_shared : x + row0 * num_features;
		Target		tile = out;

		tile.acc = out.acc + row0 * out.row_stride;
		for (int64_t bin = bin_lo + warp; bin < bin_hi; bin += kWarps)
		{
			const TsGpuLane e = lanes[bin * TS_GPU_LANES + lane];
			const int	maxlen = warp_max(kFullMask, e.len);

			for (int r = 0; r < nr; r += kRowsTogether)
			{
				if (kMode == Mode::kShap)
					explain_rows<Real>(e, lane, maxlen, rows, r, nr, cats, rcp, w_shared[warp],
									   scale, tile);
				else
					interaction_rows<Real, kMode == Mode::kTaylor>(e, lane, maxlen, rows, r, nr, cats,
																	rcp, w_shared[warp], scale, tile);
			}
		}
	}
}

/*
 * Where the accumulator of (row, column) is, column = output * features +
 * feature: the DP's rows are contiguous, quadrature's columns.
 */
struct AccLayout
{
	size_t		row_stride;
	size_t		column_stride;
};

/* Fixed point to double, in pred_contribs layout with the bias column. */
__global__ void
finalize_kernel(const unsigned long long *__restrict__ acc, AccLayout layout,
				const double *__restrict__ bias, int32_t nrows, int32_t num_features,
				int32_t num_outputs, double inv_scale, double *__restrict__ phi)
{
	size_t		width = (size_t) num_features + 1;
	size_t		total = (size_t) nrows * num_outputs * width;

	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < total;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		size_t		j = i % width;
		size_t		row_group = i / width;
		size_t		group = row_group % num_outputs;
		size_t		row = row_group / num_outputs;

		phi[i] = j == (size_t) num_features ? bias[group]
			: (double) (long long) acc[row * layout.row_stride +
									   (group * num_features + j) * layout.column_stride] * inv_scale;
	}
}

/* Fixed point to double, element by element (interaction terms). */
__global__ void
to_double_kernel(const unsigned long long *__restrict__ acc, size_t count, double inv_scale,
				 double *__restrict__ out)
{
	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (size_t) gridDim.x * blockDim.x)
		out[i] = (double) (long long) acc[i] * inv_scale;
}

/*
 * Per (output, feature) column, the sums over the batch's rows of |phi| and
 * of phi: one block per column, rows strided over the threads, then a tree
 * in shared memory, so the order of additions is fixed and results repeat.
 */
__global__ void
importance_kernel(const unsigned long long *__restrict__ acc, AccLayout layout, int32_t nrows,
				  size_t columns, double inv_scale, double *__restrict__ out)
{
	__shared__ double abs_sum[kBlockThreads];
	__shared__ double sum[kBlockThreads];
	const size_t col = blockIdx.x;
	double		a = 0.0,
				s = 0.0;

	for (int32_t r = threadIdx.x; r < nrows; r += blockDim.x)
	{
		double		phi = (double) (long long) acc[(size_t) r * layout.row_stride +
												  col * layout.column_stride] * inv_scale;

		a += fabs(phi);
		s += phi;
	}
	abs_sum[threadIdx.x] = a;
	sum[threadIdx.x] = s;
	__syncthreads();
	for (int half = blockDim.x / 2; half > 0; half /= 2)
	{
		if ((int) threadIdx.x < half)
		{
			abs_sum[threadIdx.x] += abs_sum[threadIdx.x + half];
			sum[threadIdx.x] += sum[threadIdx.x + half];
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
	{
		out[col] = abs_sum[0];
		out[columns + col] = sum[0];
	}
}

/*
 * Per (row, output), src/core/ts_topk.c's record: the margin (bias plus
 * every contribution, added in feature order), the bias, then the top_k
 * contributions of largest magnitude and their features, ties to the earlier
 * feature. One thread per record runs the host's selection step by step,
 * with rounded operations that the compiler may not fuse, so records equal
 * the host's bit for bit.
 */
__global__ void
top_features_kernel(const unsigned long long *__restrict__ acc, AccLayout layout,
					const double *__restrict__ bias, int32_t nrows, int32_t num_features,
					int32_t num_outputs, int32_t top_k, double inv_scale, double *__restrict__ out)
{
	size_t		width = 2 + 2 * (size_t) top_k;
	size_t		total = (size_t) nrows * num_outputs;

	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < total;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		size_t		row = i / num_outputs;
		size_t		group = i % num_outputs;
		double	   *value = out + i * width + 2;
		double	   *index = value + top_k;
		double		margin = bias[group];
		int32_t		kept = 0;

		for (int32_t j = 0; j < num_features; j++)
		{
			double		phi = __dmul_rn((double) (long long) acc[row * layout.row_stride +
																 (group * num_features + j) * layout.column_stride],
										inv_scale);
			double		v = fabs(phi);
			int32_t		at;

			margin = __dadd_rn(margin, phi);
			if (kept == top_k && !(v > fabs(value[top_k - 1])))
				continue;
			at = kept < top_k ? kept++ : top_k - 1;
			for (; at > 0 && v > fabs(value[at - 1]); at--)
			{
				value[at] = value[at - 1];
				index[at] = index[at - 1];
			}
			value[at] = phi;
			index[at] = (double) j;
		}
		value[-2] = margin;
		value[-1] = bias[group];
	}
}

template <typename Real, bool kStageX, Mode kMode>
void
launch_shap(const TsGpuTable *t, const LaunchPlan &p, const float *x, int32_t nrows,
			const Target &out, cudaStream_t stream)
{
	shap_kernel<Real, kStageX, kMode>
		<<<(unsigned) p.blocks, kBlockThreads, p.shared_bytes, stream>>>(
			t->lanes, t->num_bins, t->cat_pool, x, nrows, t->num_features, p.rows_per_block,
			p.row_tiles, p.bins_per_block, t->scale, out);
}

template <typename Real, Mode kMode>
void
launch_staged(const TsGpuTable *t, const LaunchPlan &p, const float *x, int32_t nrows,
			  const Target &out, cudaStream_t stream)
{
	if (p.stage_x)
		launch_shap<Real, true, kMode>(t, p, x, nrows, out, stream);
	else
		launch_shap<Real, false, kMode>(t, p, x, nrows, out, stream);
}

template <typename Real>
void
launch_variant(const TsGpuTable *t, const LaunchPlan &p, const float *x, int32_t nrows,
			   const TsGpuJob &job, const Target &out, cudaStream_t stream)
{
	if (job.kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS)
		launch_staged<Real, Mode::kShapley>(t, p, x, nrows, out, stream);
	else if (job.kind == TS_GPU_JOB_TAYLOR_INTERACTIONS)
		launch_staged<Real, Mode::kTaylor>(t, p, x, nrows, out, stream);
	else
		launch_staged<Real, Mode::kShap>(t, p, x, nrows, out, stream);
}

}								/* namespace */

namespace ts_explain
{

bool
is_interaction(const TsGpuJob &job)
{
	return job.kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS || job.kind == TS_GPU_JOB_TAYLOR_INTERACTIONS;
}

bool
uses_quadrature(const TsGpuTable *t, const TsGpuJob &job)
{
	return job.algorithm == TS_GPU_ALG_QUADRATURE && t->quad != nullptr && !is_interaction(job) &&
		job.kind != TS_GPU_JOB_PREDICT;
}

bool
column_major(const TsGpuTable *t, const TsGpuJob &job)
{
	return uses_quadrature(t, job) || job.kind == TS_GPU_JOB_INTERVENTIONAL;
}

size_t
acc_per_row(const TsGpuTable *t, const TsGpuJob &job)
{
	if (job.kind == TS_GPU_JOB_PREDICT)
		return 0;
	size_t		per_output = (size_t) t->num_features * (is_interaction(job) ? job.selected : 1);

	return per_output * t->num_outputs;
}

/* Grid of a grid-stride loop over count elements. */
static unsigned
stride_blocks(size_t count)
{
	size_t		blocks = (count + 255) / 256;

	return (unsigned) (blocks < 1 ? 1 : blocks < 65536 ? blocks : 65536);
}

/* Enqueue the seed's DP kernel over the packed bins (row-major accumulators). */
static cudaError_t
enqueue_dp(const TsGpuTable *t, const float *x, int32_t nrows, TsGpuPrecision precision,
		   const TsGpuJob &job, const int32_t *slot, unsigned long long *acc, cudaStream_t stream)
{
	LaunchPlan	p = plan_launch(t, nrows);
	Target		target = {acc, acc_per_row(t, job), t->num_features, slot, job.selected,
		t->values, t->value_width};

	if (p.blocks > 0x7fffffffLL)
		return cudaErrorInvalidConfiguration;
	if (t->num_bins == 0)
		return cudaSuccess;
	if (precision == TS_GPU_FLOAT32)
		launch_variant<float>(t, p, x, nrows, job, target, stream);
	else
		launch_variant<double>(t, p, x, nrows, job, target, stream);
	return cudaGetLastError();
}

/*
 * Interventional values of a batch: its rows feature-major, in probability
 * space their margins from the trees, then the kernel.
 */
static cudaError_t
enqueue_interventional(const TsGpuTable *t, const TsIvBackground *bg, const float *x, float *x_t,
					   int32_t nrows, double *margin, unsigned long long *acc, cudaStream_t stream)
{
	cudaError_t rc = ts_quad_transpose(x, nrows, t->num_features, x_t, stream);

	if (rc == cudaSuccess && ts_iv_probability(bg))
		rc = ts_forest_enqueue(t->forest, x, nrows, t->num_features, margin, stream);
	if (rc == cudaSuccess)
		rc = ts_iv_enqueue(t->quad, bg, t->cat_pool, x_t, nrows, margin, t->scale, acc, stream);
	return rc;
}

cudaError_t
enqueue_explain(const TsGpuTable *t, const float *x, float *x_t, int32_t nrows,
				TsGpuPrecision precision, const TsGpuJob &job, const int32_t *slot,
				const TsIvBackground *bg, double *margin, unsigned long long *acc, double *out,
				cudaStream_t stream)
{
	size_t		acc_count = (size_t) nrows * acc_per_row(t, job);
	bool		quad = column_major(t, job);
	AccLayout	layout = {quad ? 1 : acc_per_row(t, job), quad ? (size_t) nrows : 1};
	cudaError_t rc;

	if (nrows <= 0)
		return cudaSuccess;
	if (job.kind == TS_GPU_JOB_PREDICT)
		return ts_forest_enqueue(t->forest, x, nrows, t->num_features, out, stream);
	rc = cudaMemsetAsync(acc, 0, acc_count * sizeof(*acc), stream);
	if (rc != cudaSuccess)
		return rc;
	if (job.kind == TS_GPU_JOB_INTERVENTIONAL)
		rc = enqueue_interventional(t, bg, x, x_t, nrows, margin, acc, stream);
	else if (quad)
		rc = ts_quad_enqueue(t->quad, t->cat_pool, x, x_t, nrows, precision == TS_GPU_FLOAT32,
							 t->scale, acc, stream);
	else
		rc = enqueue_dp(t, x, nrows, precision, job, slot, acc, stream);
	if (rc != cudaSuccess)
		return rc;
	if (is_interaction(job))
		to_double_kernel<<<stride_blocks(acc_count), 256, 0, stream>>>(acc, acc_count, 1.0 / t->scale, out);
	else if (job.kind == TS_GPU_JOB_IMPORTANCE)
		importance_kernel<<<(unsigned) acc_per_row(t, job), kBlockThreads, 0, stream>>>(
			acc, layout, nrows, acc_per_row(t, job), 1.0 / t->scale, out);
	else if (job.kind == TS_GPU_JOB_TOP_FEATURES)
		top_features_kernel<<<stride_blocks((size_t) nrows * t->num_outputs), 256, 0, stream>>>(
			acc, layout, t->bias, nrows, t->num_features, t->num_outputs, job.top_k, 1.0 / t->scale, out);
	else
	{
		size_t		phi_count = (size_t) nrows * t->num_outputs * (t->num_features + 1);
		double		scale = job.kind == TS_GPU_JOB_INTERVENTIONAL ? ts_iv_scale(bg, t->scale) : t->scale;

		finalize_kernel<<<stride_blocks(phi_count), 256, 0, stream>>>(
			acc, layout, t->bias, nrows, t->num_features, t->num_outputs, 1.0 / scale, out);
	}
	return cudaGetLastError();
}

}								/* namespace ts_explain */
