/*
 * ts_shap.cu - the GPU SHAP path: GPUTreeShap's warp-cooperative kernel over
 * bin-packed path tables, its launcher, and the pipelined runner the backend
 * drives. One thread per path element; EXTEND and UNWOUNDSUM are warp-shuffle
 * dynamic programmes over the lanes of a path.
 *
 * Determinism: contributions are summed as int64 fixed point (scale chosen by
 * the host from a bound on |phi|), and integer addition is associative, so
 * the order in which atomics land cannot change the result.
 *
 * Every extern "C" entry point catches everything: only status codes leave.
 */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "ts_cuda_status.h"

struct TsGpuTable
{
	TsGpuLane  *lanes;
	double	   *bias;
	uint32_t   *cat_pool;		/* nullptr when the model has no categorical splits */
	int64_t		num_bins;
	int32_t		num_features;
	int32_t		num_outputs;
	double		scale;
	int			multiprocessors;
};

struct TsGpuSlot
{
	cudaStream_t stream;
	float	   *host_x;
	double	   *host_phi;
	float	   *dev_x;
	unsigned long long *dev_acc;
	double	   *dev_phi;
};

struct TsGpuRunner
{
	const TsGpuTable *table;
	int32_t		max_rows;
	TsGpuPrecision precision;
	TsGpuSlot	slot[2];
};

namespace
{

constexpr int kBlockThreads = 256;
constexpr int kWarps = kBlockThreads / 32;
constexpr int kRowsTogether = 4;	/* rows a warp carries through the DP at once (ILP) */
/* 4 blocks of 256 threads per SM caps registers at 64: measured on an H200, this
 * occupancy beat the 104 registers the compiler otherwise takes by 8% (cal_housing-med) */
constexpr int kMinBlocksPerSM = 4;
constexpr int kMaxRowsPerBlock = 32;
constexpr size_t kSharedBudget = 32 * 1024;	/* for the row tile; w buffers are static */
constexpr unsigned kFullMask = 0xffffffffu;

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

/* Category x (present) in a set of src/ts_catset.h: bits, outside flag, words. */
__device__ __forceinline__ bool
category_in(const uint32_t *__restrict__ set, float x)
{
	uint32_t	nbits = __ldg(set);
	uint32_t	c;

	if (!(x >= 0.0f) || x >= (float) nbits)
		return __ldg(set + 1) != 0;
	c = (uint32_t) x;
	return (__ldg(set + 2 + c / 32) >> (c % 32)) & 1u;
}

/* Whether x satisfies the lane's element (root and empty lanes always do). */
__device__ __forceinline__ bool
satisfies(const TsGpuLane &e, const float *row, const uint32_t *__restrict__ cats)
{
	float		x;

	if (e.feature < 0)
		return true;
	x = row[e.feature];
	if (isnan(x))
		return e.missing != 0;
	return e.lower <= x && x < e.upper && (e.cat < 0 || category_in(cats + e.cat, x));
}

/*
 * Explain up to kRowsTogether rows with one bin: per path, EXTEND leaves lane
 * r of the path holding permutation weight w[r]; UNWOUNDSUM then gives each
 * lane its element's share, reading the path's weights from the warp's
 * shared buffer (one load where a double shuffle takes two). Loops run to
 * the longest path in the warp, so every shuffle has all 32 lanes.
 * Contributions go to global memory as int64 reductions (RED, no return).
 */
template <typename Real>
__device__ __forceinline__ void
explain_rows(const TsGpuLane &e, int lane, int maxlen, const float *rows, int first_row,
			 int nrows, int32_t num_features, size_t row_stride, const uint32_t *cats, const Real *rcp,
			 Real (*w_shared)[TS_GPU_LANES], double scale, unsigned long long *acc)
{
	const int	first = e.first;
	const int	d = e.len - 1;
	const int	rank = lane - first;
	const bool	empty = e.feature == TS_GPU_LANE_EMPTY;
	const Real	z = (Real) e.zero_fraction;
	const Real	d1 = Real(d + 1);
	const Real	d1_over_z = z != Real(0) ? d1 / z : Real(0);
	const Real	z_over_d1 = z * rcp[d + 1];
	const unsigned path_mask = e.len == 32 ? kFullMask : ((1u << e.len) - 1u) << first;
	Real		o[kRowsTogether];
	Real		w[kRowsTogether];
	Real		next[kRowsTogether];
	Real		total[kRowsTogether];
	unsigned	ones[kRowsTogether];
	bool		live[kRowsTogether];

#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
	{
		int			r = first_row + k;
		bool		valid = r < nrows;
		bool		sat = !valid || satisfies(e, rows + (size_t) r * num_features, cats);
		unsigned	dead = __ballot_sync(kFullMask, !sat && !empty && z == Real(0));

		o[k] = sat ? Real(1) : Real(0);
		ones[k] = __ballot_sync(kFullMask, sat);
		/* an unsatisfied element with zero cover fraction zeroes its whole path */
		live[k] = valid && (dead & path_mask) == 0;
		w[k] = rank == 0 ? Real(1) : Real(0);
		total[k] = Real(0);
	}

	/*
	 * EXTEND by the path's elements 1..d in lane order:
	 * w[r] <- (w[r] z (depth - r) + w[r-1] o r) / (depth + 1), with the
	 * row-independent factors formed once per step for all rows.
	 */
	for (int depth = 1; depth < maxlen; depth++)
	{
		int			src = first + min(depth, d);
		Real		nz = __shfl_sync(kFullMask, z, src);
		Real		keep = nz * Real(depth - rank) * rcp[depth + 1];
		Real		shift = rank == 0 || depth > d ? Real(0) : Real(rank) * rcp[depth + 1];
		bool		active = depth <= d;

#pragma unroll
		for (int k = 0; k < kRowsTogether; k++)
		{
			Real		left = __shfl_up_sync(kFullMask, w[k], 1);
			Real		grown = w[k] * keep + (((ones[k] >> src) & 1u) ? left * shift : Real(0));

			w[k] = active ? grown : w[k];
		}
	}

	/* UNWOUNDSUM of the lane's own element, the weights read from shared memory */
	__syncwarp();				/* the previous rows' readers are done */
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
		w_shared[k][lane] = w[k];
	__syncwarp();
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
		next[k] = w_shared[k][first + d];
	for (int i = maxlen - 2; i >= 0; i--)
	{
		int			src = first + min(i, d);
		bool		active = i < d;
		/* satisfied: tmp = next (d+1)/(i+1); total += tmp; next = w_i - tmp z (d-i)/(d+1) */
		Real		up = d1 * rcp[i + 1];
		Real		down = z_over_d1 * Real(d - i);
		/* not satisfied: total += w_i (d+1) / (z (d-i)) */
		Real		unsat = active ? d1_over_z * rcp[max(d - i, 0)] : Real(0);

#pragma unroll
		for (int k = 0; k < kRowsTogether; k++)
		{
			Real		wi = w_shared[k][src];
			Real		tmp = next[k] * up;
			bool		one = o[k] != Real(0);

			total[k] += one ? (active ? tmp : Real(0)) : wi * unsat;
			next[k] = one && active ? wi - tmp * down : next[k];
		}
	}

	if (empty || rank == 0)
		return;
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
	{
		/* phi = total (o - z) v, in fixed point; the conversion rounds and saturates */
		long long	q = __double2ll_rn((double) total[k] * ((double) o[k] - e.zero_fraction) *
									   e.value * scale);

		if (live[k] && q != 0)
			atomicAdd(acc + (size_t) (first_row + k) * row_stride +
					  (size_t) e.group * num_features + e.feature,
					  (unsigned long long) q);
	}
}

/*
 * One block: a tile of rows times a slice of bins; each warp takes every
 * kWarps-th bin of the slice and explains the whole tile with it.
 */
template <typename Real, bool kStageX>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocksPerSM)
shap_kernel(const TsGpuLane *__restrict__ lanes, int64_t num_bins,
			const uint32_t *__restrict__ cats, const float *__restrict__ x,
			int32_t nrows, int32_t num_features, int32_t num_outputs, int rows_per_block,
			int64_t row_tiles, int64_t bins_per_block, double scale,
			unsigned long long *__restrict__ acc)
{
	extern __shared__ __align__(8) unsigned char shared[];
	__shared__ Real rcp[TS_GPU_LANES + 2];
	__shared__ Real w_shared[kWarps][kRowsTogether][TS_GPU_LANES];
	const int64_t row0 = (blockIdx.x % row_tiles) * rows_per_block;
	const int64_t bin_lo = (blockIdx.x / row_tiles) * bins_per_block;
	const int64_t bin_hi = min(num_bins, bin_lo + bins_per_block);
	const int	nr = (int) min((int64_t) rows_per_block, (int64_t) nrows - row0);
	const size_t row_stride = (size_t) num_outputs * num_features;
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
		unsigned long long *out = acc + row0 * row_stride;

		for (int64_t bin = bin_lo + warp; bin < bin_hi; bin += kWarps)
		{
			const TsGpuLane e = lanes[bin * TS_GPU_LANES + lane];
			const int	maxlen = __reduce_max_sync(kFullMask, e.len);

			for (int r = 0; r < nr; r += kRowsTogether)
				explain_rows<Real>(e, lane, maxlen, rows, r, nr, num_features, row_stride, cats, rcp,
								   w_shared[warp], scale, out);
		}
	}
}

/* Fixed point to double, in pred_contribs layout with the bias column. */
__global__ void
finalize_kernel(const unsigned long long *__restrict__ acc, const double *__restrict__ bias,
				int32_t nrows, int32_t num_features, int32_t num_outputs, double inv_scale,
				double *__restrict__ phi)
{
	size_t		width = (size_t) num_features + 1;
	size_t		total = (size_t) nrows * num_outputs * width;

	for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < total;
		 i += (size_t) gridDim.x * blockDim.x)
	{
		size_t		j = i % width;
		size_t		row_group = i / width;

		phi[i] = j == (size_t) num_features ? bias[row_group % num_outputs]
			: (double) (long long) acc[row_group * num_features + j] * inv_scale;
	}
}

template <typename Real, bool kStageX>
void
launch_shap(const TsGpuTable *t, const LaunchPlan &p, const float *x, int32_t nrows,
			unsigned long long *acc, cudaStream_t stream)
{
	shap_kernel<Real, kStageX>
		<<<(unsigned) p.blocks, kBlockThreads, p.shared_bytes, stream>>>(
			t->lanes, t->num_bins, t->cat_pool, x, nrows, t->num_features, t->num_outputs, p.rows_per_block,
			p.row_tiles, p.bins_per_block, t->scale, acc);
}

template <typename Real>
void
launch_variant(const TsGpuTable *t, const LaunchPlan &p, const float *x, int32_t nrows,
			   unsigned long long *acc, cudaStream_t stream)
{
	if (p.stage_x)
		launch_shap<Real, true>(t, p, x, nrows, acc, stream);
	else
		launch_shap<Real, false>(t, p, x, nrows, acc, stream);
}

/* Enqueue the device work of one batch: zero, SHAP kernel, finalise. */
cudaError_t
enqueue_explain(const TsGpuTable *t, const float *x, int32_t nrows, TsGpuPrecision precision,
				unsigned long long *acc, double *phi, cudaStream_t stream)
{
	size_t		acc_bytes = (size_t) nrows * t->num_outputs * t->num_features * sizeof(*acc);
	size_t		phi_count = (size_t) nrows * t->num_outputs * (t->num_features + 1);
	LaunchPlan	p = plan_launch(t, nrows);
	cudaError_t rc;

	if (nrows <= 0)
		return cudaSuccess;
	if (p.blocks > 0x7fffffffLL)
		return cudaErrorInvalidConfiguration;
	rc = cudaMemsetAsync(acc, 0, acc_bytes, stream);
	if (rc != cudaSuccess)
		return rc;
	if (t->num_bins > 0)
	{
		if (precision == TS_GPU_FLOAT32)
			launch_variant<float>(t, p, x, nrows, acc, stream);
		else
			launch_variant<double>(t, p, x, nrows, acc, stream);
		rc = cudaGetLastError();
		if (rc != cudaSuccess)
			return rc;
	}
	finalize_kernel<<<(unsigned) ((phi_count + 255) / 256 < 65536 ? (phi_count + 255) / 256 : 65536), 256, 0, stream>>>(
		acc, t->bias, nrows, t->num_features, t->num_outputs, 1.0 / t->scale, phi);
	return cudaGetLastError();
}

/* cudaMalloc that leaves *ptr NULL on failure. */
template <typename T>
cudaError_t
device_alloc(T **ptr, size_t count)
{
	void	   *p = nullptr;
	cudaError_t rc = cudaMalloc(&p, count * sizeof(T) + (count == 0 ? 8 : 0));

	*ptr = rc == cudaSuccess ? (T *) p : nullptr;
	return rc;
}

/* Copy the category sets, if the model has any, next to the lanes. */
cudaError_t
upload_cat_pool(TsGpuTable *t, const TsGpuTableDesc *desc)
{
	cudaError_t rc;

	if (desc->cat_pool_len == 0)
		return cudaSuccess;
	if ((rc = device_alloc(&t->cat_pool, (size_t) desc->cat_pool_len)) != cudaSuccess)
		return rc;
	return cudaMemcpy(t->cat_pool, desc->cat_pool, (size_t) desc->cat_pool_len * sizeof(uint32_t),
					  cudaMemcpyHostToDevice);
}

static_assert(sizeof(TsGpuLane) == 40, "a lane is 40 bytes: five 8-byte loads");

/* Pinned host allocation that leaves *ptr NULL on failure. */
template <typename T>
cudaError_t
pinned_alloc(T **ptr, size_t count)
{
	void	   *p = nullptr;
	cudaError_t rc = cudaHostAlloc(&p, count * sizeof(T) + (count == 0 ? 8 : 0), cudaHostAllocDefault);

	*ptr = rc == cudaSuccess ? (T *) p : nullptr;
	return rc;
}

/* Allocate one slot of a runner. */
cudaError_t
slot_create(TsGpuSlot *s, const TsGpuTable *t, int32_t max_rows)
{
	size_t		rows = (size_t) max_rows;
	size_t		acc = rows * t->num_outputs * t->num_features;
	size_t		phi = rows * t->num_outputs * (t->num_features + 1);
	cudaError_t rc;

	if ((rc = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
		(rc = pinned_alloc(&s->host_x, rows * t->num_features)) != cudaSuccess ||
		(rc = pinned_alloc(&s->host_phi, phi)) != cudaSuccess ||
		(rc = device_alloc(&s->dev_x, rows * t->num_features)) != cudaSuccess ||
		(rc = device_alloc(&s->dev_acc, acc)) != cudaSuccess ||
		(rc = device_alloc(&s->dev_phi, phi)) != cudaSuccess)
		return rc;
	return cudaSuccess;
}

/* Free one slot after its stream drained; tolerates missing parts. */
void
slot_free(TsGpuSlot *s)
{
	if (s->stream != nullptr)
	{
		cudaStreamSynchronize(s->stream);
		cudaStreamDestroy(s->stream);
	}
	cudaFreeHost(s->host_x);
	cudaFreeHost(s->host_phi);
	cudaFree(s->dev_x);
	cudaFree(s->dev_acc);
	cudaFree(s->dev_phi);
	memset(s, 0, sizeof(*s));
	cudaGetLastError();
}

}								/* namespace */

extern "C" TsGpuStatus
ts_gpu_table_upload(const TsGpuTableDesc *desc, TsGpuTable **out, char *msg, size_t msglen)
{
	TsGpuTable *t = nullptr;

	*out = nullptr;
	try
	{
		size_t		nlanes = (size_t) desc->num_bins * TS_GPU_LANES;
		int			dev = 0;
		cudaError_t rc;

		t = new TsGpuTable();
		t->num_bins = desc->num_bins;
		t->num_features = desc->num_features;
		t->num_outputs = desc->num_outputs;
		t->scale = desc->fixed_scale;
		if ((rc = cudaGetDevice(&dev)) != cudaSuccess ||
			(rc = cudaDeviceGetAttribute(&t->multiprocessors, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
			(rc = device_alloc(&t->lanes, nlanes)) != cudaSuccess ||
			(rc = device_alloc(&t->bias, (size_t) desc->num_outputs)) != cudaSuccess ||
			(rc = cudaMemcpy(t->lanes, desc->lanes, nlanes * sizeof(TsGpuLane), cudaMemcpyHostToDevice)) != cudaSuccess ||
			(rc = cudaMemcpy(t->bias, desc->bias, desc->num_outputs * sizeof(double), cudaMemcpyHostToDevice)) != cudaSuccess ||
			(rc = upload_cat_pool(t, desc)) != cudaSuccess)
		{
			ts_gpu_table_free(t);
			return ts_cuda_status(rc, "uploading the path table", msg, msglen);
		}
		*out = t;
		return TS_GPU_OK;
	}
	catch (...)
	{
		ts_gpu_table_free(t);
		return ts_cuda_unexpected("ts_gpu_table_upload", msg, msglen);
	}
}

extern "C" void
ts_gpu_table_free(TsGpuTable *table)
{
	try
	{
		if (table == nullptr)
			return;
		cudaFree(table->lanes);
		cudaFree(table->bias);
		cudaFree(table->cat_pool);
		cudaGetLastError();
		delete table;
	}
	catch (...)
	{
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_create(const TsGpuTable *table, int32_t max_rows, TsGpuPrecision precision,
					 TsGpuRunner **out, char *msg, size_t msglen)
{
	TsGpuRunner *r = nullptr;

	*out = nullptr;
	try
	{
		r = new TsGpuRunner();
		r->table = table;
		r->max_rows = max_rows;
		r->precision = precision;
		for (int s = 0; s < 2; s++)
		{
			cudaError_t rc = slot_create(&r->slot[s], table, max_rows);

			if (rc != cudaSuccess)
			{
				ts_gpu_runner_free(r);
				return ts_cuda_status(rc, "allocating batch buffers", msg, msglen);
			}
		}
		*out = r;
		return TS_GPU_OK;
	}
	catch (...)
	{
		ts_gpu_runner_free(r);
		return ts_cuda_unexpected("ts_gpu_runner_create", msg, msglen);
	}
}

extern "C" float *
ts_gpu_runner_input(TsGpuRunner *runner, int slot)
{
	return runner->slot[slot].host_x;
}

extern "C" TsGpuStatus
ts_gpu_runner_submit(TsGpuRunner *runner, int slot, int32_t nrows, char *msg, size_t msglen)
{
	try
	{
		TsGpuSlot  *s = &runner->slot[slot];
		const TsGpuTable *t = runner->table;
		size_t		x_bytes = (size_t) nrows * t->num_features * sizeof(float);
		size_t		phi_bytes = (size_t) nrows * t->num_outputs * (t->num_features + 1) * sizeof(double);
		cudaError_t rc;

		if (nrows < 0 || nrows > runner->max_rows)
		{
			snprintf(msg, msglen, "batch of %d rows exceeds the runner's %d", nrows, runner->max_rows);
			return TS_GPU_ERROR;
		}
		if ((rc = cudaMemcpyAsync(s->dev_x, s->host_x, x_bytes, cudaMemcpyHostToDevice, s->stream)) != cudaSuccess ||
			(rc = enqueue_explain(t, s->dev_x, nrows, runner->precision, s->dev_acc, s->dev_phi, s->stream)) != cudaSuccess ||
			(rc = cudaMemcpyAsync(s->host_phi, s->dev_phi, phi_bytes, cudaMemcpyDeviceToHost, s->stream)) != cudaSuccess)
			return ts_cuda_status(rc, "starting a batch", msg, msglen);
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_runner_submit", msg, msglen);
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_wait(TsGpuRunner *runner, int slot, double **phi, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaStreamSynchronize(runner->slot[slot].stream);

		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "computing a batch", msg, msglen);
		*phi = runner->slot[slot].host_phi;
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_runner_wait", msg, msglen);
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_poll(TsGpuRunner *runner, int slot, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaStreamQuery(runner->slot[slot].stream);

		if (rc == cudaErrorNotReady)
			return TS_GPU_NOT_READY;
		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "computing a batch", msg, msglen);
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_runner_poll", msg, msglen);
	}
}

extern "C" void
ts_gpu_runner_free(TsGpuRunner *runner)
{
	try
	{
		if (runner == nullptr)
			return;
		slot_free(&runner->slot[0]);
		slot_free(&runner->slot[1]);
		delete runner;
	}
	catch (...)
	{
	}
}

extern "C" TsGpuStatus
ts_gpu_time_kernel(const TsGpuTable *table, const float *x, int32_t nrows,
				   TsGpuPrecision precision, int reps, double *seconds, double *phi,
				   char *msg, size_t msglen)
{
	TsGpuSlot	s;

	memset(&s, 0, sizeof(s));
	try
	{
		size_t		phi_count = (size_t) nrows * table->num_outputs * (table->num_features + 1);
		cudaEvent_t start = nullptr,
					stop = nullptr;
		cudaError_t rc;
		float		best = -1.0f;

		if ((rc = device_alloc(&s.dev_x, (size_t) nrows * table->num_features)) != cudaSuccess ||
			(rc = device_alloc(&s.dev_acc, (size_t) nrows * table->num_outputs * table->num_features)) != cudaSuccess ||
			(rc = device_alloc(&s.dev_phi, phi_count)) != cudaSuccess ||
			(rc = cudaMemcpy(s.dev_x, x, (size_t) nrows * table->num_features * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
			(rc = cudaEventCreate(&start)) != cudaSuccess ||
			(rc = cudaEventCreate(&stop)) != cudaSuccess)
		{
			slot_free(&s);
			return ts_cuda_status(rc, "preparing the kernel benchmark", msg, msglen);
		}
		for (int i = 0; i <= reps && rc == cudaSuccess; i++)
		{
			float		ms = 0.0f;

			cudaEventRecord(start, 0);
			rc = enqueue_explain(table, s.dev_x, nrows, precision, s.dev_acc, s.dev_phi, 0);
			cudaEventRecord(stop, 0);
			if (rc == cudaSuccess)
				rc = cudaEventSynchronize(stop);
			if (rc == cudaSuccess)
				rc = cudaEventElapsedTime(&ms, start, stop);
			if (i > 0 && (best < 0 || ms < best))
				best = ms;	/* run 0 warms up */
		}
		if (rc == cudaSuccess && phi != nullptr)
			rc = cudaMemcpy(phi, s.dev_phi, phi_count * sizeof(double), cudaMemcpyDeviceToHost);
		cudaEventDestroy(start);
		cudaEventDestroy(stop);
		slot_free(&s);
		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "running the kernel benchmark", msg, msglen);
		*seconds = best / 1000.0;
		return TS_GPU_OK;
	}
	catch (...)
	{
		slot_free(&s);
		return ts_cuda_unexpected("ts_gpu_time_kernel", msg, msglen);
	}
}
