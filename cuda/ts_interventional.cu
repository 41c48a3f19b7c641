/*
 * ts_interventional.cu - interventional SHAP against a background, path by
 * path (src/core/ts_interventional.h's path form). For a row x and a path,
 * the elements x does not satisfy (B) are fixed; a background row r reaches
 * the path with x exactly when r satisfies all of B, and then the elements
 * r does not satisfy (A) are the ones only x satisfies. Each such pair adds
 * v (|A|-1)! |B|! / (|A|+|B|)! to every feature of A and takes
 * v |A|! (|B|-1)! / (|A|+|B|)! from every feature of B.
 *
 * A block explains a tile of rows (one per thread) with one chunk of
 * paths. Per path, the block's threads first write the masks of A for a
 * tile of background rows into shared memory (one row each, coalesced over
 * the feature-major background), then every thread runs over those masks
 * for its own row: a broadcast load, one AND, and work only when the pair
 * reaches the path. Slot sums stay in shared memory as in the quadrature
 * kernel.
 *
 * In margin space a pair's terms depend on the background row only through
 * its mask, so the runner groups the rows once per path (of up to
 * kIvGroupMaxD elements: a 2^d histogram in shared memory), and a thread
 * visits the path's distinct masks with their counts instead of every row:
 * at most 2^d visits instead of the background's rows.
 *
 * Determinism: a thread adds its pairs in background order (groups: in mask
 * order) and its paths in chunk order, then rounds each slot to int64 fixed
 * point, added with integer atomics; the result does not depend on
 * scheduling.
 */
#include <cuda_runtime.h>

#include <cub/block/block_scan.cuh>

#include <cmath>
#include <cstring>
#include <vector>

#include "ts_interventional.cuh"

#include "ts_device_array.cuh"

struct TsIvBackground
{
	float	   *x_t;			/* features x nrows */
	double	   *margin;			/* nrows x outputs, probability space only */
	double	   *output;
	double	   *weight;			/* kIvWeightSide^2: (a - 1)! b! / (a + b)! at [a][b] */
	int32_t		nrows;
	int32_t		num_outputs;
	int32_t		link;
	double		link_scale;
	double		rescale_bound;
	int64_t    *group_start;	/* per layout path (num_paths + 1) into groups; nullptr: none */
	uint2	   *groups;			/* (mask of the elements left unsatisfied, rows with it) */
	int64_t		num_groups;
	size_t		group_bytes;	/* both arrays */
};

namespace
{

constexpr int kIvThreads = 128;
constexpr int kIvMaxElems = TS_GPU_LANES;	/* the layout's paths have at most 31 */
constexpr int kIvWeightSide = kIvMaxElems + 1;
constexpr int kIvGroupMaxD = 10;	/* a path's histogram: 2^10 counters of shared memory */
constexpr int kIvGroupThreads = 256;

/* Kernel arguments. */
struct IvArgs
{
	const TsGpuQuadChunk *__restrict__ chunks;
	const TsGpuQuadPath *__restrict__ paths;
	const TsGpuQuadElem *__restrict__ elems;
	const int32_t *__restrict__ elem_cat;
	const int32_t *__restrict__ slot_column;
	const double *__restrict__ values;	/* vector leaves: path i's value k at i * value_width + k */
	const double *__restrict__ leaf_value;	/* else: path i's value */
	int32_t		value_width;
	int32_t		num_features;
	const uint32_t *__restrict__ cats;
	const float *__restrict__ x_t;
	int32_t		nrows;
	const float *__restrict__ bg_t;
	int32_t		nbg;
	const double *__restrict__ x_margin;
	const double *__restrict__ bg_margin;
	const double *__restrict__ bg_output;
	int32_t		num_outputs;
	int32_t		link;
	double		link_scale;
	const double *__restrict__ weight;
	const int64_t *__restrict__ group_start;
	const uint2 *__restrict__ groups;
	int64_t		row_tiles;
	double		scale;
	double		inv_nbg;
	unsigned long long *acc;
};

/* The model's link of one margin. */
__device__ __forceinline__ double
apply_link(int link, double scale, double m)
{
	if (link == TS_GPU_LINK_LOGISTIC)
		return 1.0 / (1.0 + exp(-scale * m));
	if (link == TS_GPU_LINK_EXP)
		return exp(m);
	return m;
}

/* shap's factor of a pair in probability space: the output's change over the margin's, 1 when equal. */
__device__ __forceinline__ double
pair_rescale(const IvArgs &a, int32_t r, int32_t output, double mx, double gx)
{
	const double mr = __ldg(a.bg_margin + (size_t) r * a.num_outputs + output);
	const double dm = mx - mr;

	if (dm == 0.0)
		return 1.0;
	return (gx - __ldg(a.bg_output + (size_t) r * a.num_outputs + output)) / dm;
}

/* Mask of the path's elements (up to D) that a value source does not satisfy. */
template <int D>
__device__ __forceinline__ uint32_t
unsatisfied(const IvArgs &a, const TsGpuQuadPath &p, const float *__restrict__ src, int32_t stride,
			int32_t at)
{
	uint32_t	mask = 0;

#pragma unroll
	for (int k = 0; k < D; k++)
		if (k < p.d)
		{
			const TsGpuQuadElem e = a.elems[p.elem + k];
			const float x = __ldg(src + (size_t) e.feature * stride + at);

			mask |= (ts_quad_satisfies(e, p.elem + k, x, a.elem_cat, a.cats) ? 0u : 1u) << k;
		}
	return mask;
}

/* Whether a background mask ur pairs with a row's mask ux: some hybrid reaches the leaf, and not all do. */
__device__ __forceinline__ bool
pairs_count(uint32_t ur, uint32_t ux)
{
	return (ur & ux) == 0 && (ur | ux) != 0;
}

/*
 * Add c pairs of background mask ur to the sums of a row whose mask has b
 * elements: each pair adds W[|A|][b] to every element of A (ur's) and
 * W[b][|A|] to sum_b, which every element of B (ux's) loses.
 */
template <int D>
__device__ __forceinline__ void
add_pairs(uint32_t ur, int b, double c, const double *W, double &sum_b, double *sum_a)
{
	const int	na = __popc(ur);

	if (b > 0)
		sum_b = fma(c, W[b * kIvWeightSide + na], sum_b);
	if (na > 0)
	{
		const double wa = c * W[na * kIvWeightSide + b];

#pragma unroll
		for (int k = 0; k < D; k++)
			sum_a[k] += (ur >> k) & 1u ? wa : 0.0;
	}
}

/* A path's sums, times v, into the row's slots of its elements. */
template <int D>
__device__ __forceinline__ void
add_to_slots(const IvArgs &a, const TsGpuQuadPath &p, uint32_t ux, double v, double sum_b,
			 const double *sum_a, double *acc)
{
#pragma unroll
	for (int k = 0; k < D; k++)
		if (k < p.d)
		{
			const int	slot = a.elems[p.elem + k].slot_flags & 0xffff;

			acc[slot * kIvThreads] += v * ((ux >> k) & 1u ? -sum_b : sum_a[k]);
		}
}

/*
 * One path of at most D elements for the thread's row: the pairs' weights
 * summed over the background, tile by tile, then added to the elements'
 * slots, v already divided by the background's rows. Every thread of the
 * block runs it (barriers inside).
 */
template <int D>
__device__ __forceinline__ void
iv_path(const IvArgs &a, const TsGpuQuadPath &p, double v, int32_t row, int32_t output, double mx,
		double gx, const double *W, uint32_t *masks, double *acc)
{
	const uint32_t ux = unsatisfied<D>(a, p, a.x_t, a.nrows, row);
	const int	b = __popc(ux);
	double		sum_b = 0.0;
	double		sum_a[D];

#pragma unroll
	for (int k = 0; k < D; k++)
		sum_a[k] = 0.0;
	for (int32_t r0 = 0; r0 < a.nbg; r0 += kIvThreads)
	{
		const int	n = min(kIvThreads, a.nbg - r0);

		__syncthreads();
		if ((int) threadIdx.x < n)
			masks[threadIdx.x] = unsatisfied<D>(a, p, a.bg_t, a.nbg, r0 + (int32_t) threadIdx.x);
		__syncthreads();
		for (int j = 0; j < n; j++)
			if (pairs_count(masks[j], ux))
				add_pairs<D>(masks[j], b, a.link != TS_GPU_LINK_NONE ? pair_rescale(a, r0 + j, output, mx, gx) : 1.0,
							 W, sum_b, sum_a);
	}
	add_to_slots<D>(a, p, ux, v, sum_b, sum_a, acc);
}

/*
 * iv_path in margin space over layout path pi's groups: a group of n rows
 * that share a mask counts as n pairs. Every thread of the block reads the
 * same group (a broadcast); no barrier.
 */
template <int D>
__device__ __forceinline__ void
iv_path_grouped(const IvArgs &a, const TsGpuQuadPath &p, int64_t pi, double v, int32_t row,
				const double *W, double *acc)
{
	const uint32_t ux = unsatisfied<D>(a, p, a.x_t, a.nrows, row);
	const int	b = __popc(ux);
	const int64_t end = __ldg(a.group_start + pi + 1);
	double		sum_b = 0.0;
	double		sum_a[D];

#pragma unroll
	for (int k = 0; k < D; k++)
		sum_a[k] = 0.0;
	for (int64_t g = __ldg(a.group_start + pi); g < end; g++)
	{
		const uint2 group = __ldg(a.groups + g);

		if (pairs_count(group.x, ux))
			add_pairs<D>(group.x, b, (double) group.y, W, sum_b, sum_a);
	}
	add_to_slots<D>(a, p, ux, v, sum_b, sum_a, acc);
}

/* iv_path with the smallest D of 8, 16, 32 that holds the path, up to DMAX; grouped where it can. */
template <int D, int DMAX>
__device__ __forceinline__ void
iv_path_dispatch(const IvArgs &a, const TsGpuQuadPath &p, int64_t pi, double v, int32_t row,
				 int32_t output, double mx, double gx, const double *W, uint32_t *masks, double *acc)
{
	if ((p.d <= D || D >= DMAX) && a.groups != nullptr && p.d <= kIvGroupMaxD)
		iv_path_grouped<D < 16 ? D : 16>(a, p, pi, v, row, W, acc);
	else if (p.d <= D || D >= DMAX)
		iv_path<D>(a, p, v, row, output, mx, gx, W, masks, acc);
	else if constexpr (D < DMAX)
		iv_path_dispatch<2 * D, DMAX>(a, p, pi, v, row, output, mx, gx, W, masks, acc);
}

/* The value of layout path p that chunk ch adds. */
__device__ __forceinline__ double
path_value(const IvArgs &a, const TsGpuQuadChunk &ch, int64_t p)
{
	return a.values != nullptr ? __ldg(a.values + p * a.value_width + ch.target) : __ldg(a.leaf_value + p);
}

/*
 * One block: kIvThreads rows with one chunk of paths. Rows past the batch
 * compute on the last row (every thread takes part in the barriers) and
 * are not added.
 */
template <int DMAX>
__global__ void __launch_bounds__(kIvThreads)
iv_kernel(IvArgs a)
{
	extern __shared__ __align__(16) unsigned char iv_shared[];
	double	   *W = (double *) iv_shared;
	uint32_t   *masks = (uint32_t *) (W + kIvWeightSide * kIvWeightSide);
	double	   *acc = (double *) (masks + kIvThreads) + threadIdx.x;
	const TsGpuQuadChunk ch = a.chunks[blockIdx.x / a.row_tiles];
	const int32_t first = (int32_t) (blockIdx.x % a.row_tiles) * kIvThreads + threadIdx.x;
	const int32_t row = min(first, a.nrows - 1);

	for (int i = threadIdx.x; i < kIvWeightSide * kIvWeightSide; i += kIvThreads)
		W[i] = a.weight[i];
	__syncthreads();			/* a grouped path reads W with no barrier of its own */
	for (int s = 0; s < ch.slots; s++)
		acc[s * kIvThreads] = 0.0;
	for (int64_t p = ch.path_lo; p < ch.path_hi; p++)
	{
		const TsGpuQuadPath path = a.paths[p];
		const double v = path_value(a, ch, p);
		int32_t		output = 0;
		double		mx = 0.0;

		/* a zero value adds nothing; the test is the same in every thread */
		if (v == 0.0)
			continue;
		if (a.link != TS_GPU_LINK_NONE)
		{
			output = __ldg(a.slot_column + ch.slot_start + (a.elems[path.elem].slot_flags & 0xffff)) /
				a.num_features;
			mx = __ldg(a.x_margin + (size_t) row * a.num_outputs + output);
		}
		iv_path_dispatch<8, DMAX>(a, path, p, v * a.inv_nbg, row, output, mx,
								  apply_link(a.link, a.link_scale, mx), W, masks, acc);
	}
	for (int s = 0; s < ch.slots; s++)
	{
		const size_t column = (size_t) __ldg(a.slot_column + ch.slot_start + s) * a.nrows;
		const long long q = __double2ll_rn(acc[s * kIvThreads] * a.scale);

		if (q != 0 && first < a.nrows)
			atomicAdd(a.acc + column + first, (unsigned long long) q);
	}
}

template <int DMAX>
cudaError_t
launch_iv(const TsQuadTable *q, IvArgs a, cudaStream_t stream)
{
	size_t		shared = sizeof(double) * kIvWeightSide * kIvWeightSide + sizeof(uint32_t) * kIvThreads +
		(size_t) (q->max_slots > 0 ? q->max_slots : 1) * kIvThreads * sizeof(double);
	int64_t		blocks;
	cudaError_t rc = cudaFuncSetAttribute(iv_kernel<DMAX>, cudaFuncAttributeMaxDynamicSharedMemorySize,
										  (int) shared);

	if (rc != cudaSuccess)
		return rc;
	a.row_tiles = (a.nrows + kIvThreads - 1) / kIvThreads;
	blocks = a.row_tiles * q->num_chunks;
	if (blocks > 0x7fffffffLL)
		return cudaErrorInvalidConfiguration;
	iv_kernel<DMAX><<<(unsigned) blocks, kIvThreads, shared, stream>>>(a);
	return cudaGetLastError();
}

/* The weight table, by the recurrence of the CPU's (the same bits). */
void
fill_weights(double *w)
{
	memset(w, 0, sizeof(double) * kIvWeightSide * kIvWeightSide);
	for (int a = 1; a < kIvWeightSide; a++)
	{
		w[a * kIvWeightSide] = 1.0 / a;
		for (int b = 1; b < kIvWeightSide; b++)
			w[a * kIvWeightSide + b] = w[a * kIvWeightSide + b - 1] * b / (double) (a + b);
	}
}

/* The rows feature-major on the device, through a row-major copy. */
cudaError_t
upload_rows(TsIvBackground *d, const float *x, int32_t nrows, int32_t num_features)
{
	float	   *rows = nullptr;
	cudaError_t rc;

	if ((rc = ts_upload_array(&rows, x, (int64_t) nrows * num_features)) != cudaSuccess ||
		(rc = cudaMalloc(&d->x_t, (size_t) nrows * num_features * sizeof(float) + 16)) != cudaSuccess ||
		(rc = ts_quad_transpose(rows, nrows, num_features, d->x_t, 0)) != cudaSuccess)
	{
		cudaFree(rows);
		return rc;
	}
	rc = cudaDeviceSynchronize();
	cudaFree(rows);
	return rc;
}

/* What the grouping kernels read and write. */
struct GroupArgs
{
	const TsGpuQuadPath *__restrict__ paths;
	const TsGpuQuadElem *__restrict__ elems;
	const int32_t *__restrict__ elem_cat;
	const uint32_t *__restrict__ cats;
	const float *__restrict__ bg_t;
	int32_t		nbg;
	int64_t    *count;			/* count pass: per path, its groups */
	const int64_t *start;		/* fill pass: per path, its first group */
	uint2	   *groups;
};

/* Path p's histogram of the background rows' masks, 2^d counters in shared memory (barriers inside). */
__device__ void
mask_histogram(const GroupArgs &a, const TsGpuQuadPath &p, uint32_t *hist)
{
	for (int i = threadIdx.x; i < (1 << p.d); i += blockDim.x)
		hist[i] = 0;
	__syncthreads();
	for (int32_t r = threadIdx.x; r < a.nbg; r += blockDim.x)
	{
		uint32_t	mask = 0;

		for (int k = 0; k < p.d; k++)
		{
			const TsGpuQuadElem e = a.elems[p.elem + k];
			const float x = __ldg(a.bg_t + (size_t) e.feature * a.nbg + r);

			mask |= (ts_quad_satisfies(e, p.elem + k, x, a.elem_cat, a.cats) ? 0u : 1u) << k;
		}
		atomicAdd(hist + mask, 1u);
	}
	__syncthreads();
}

/* One block per path: how many distinct masks its background rows have (0: a path too long to group). */
__global__ void __launch_bounds__(kIvGroupThreads)
group_count_kernel(GroupArgs a)
{
	__shared__ uint32_t hist[1 << kIvGroupMaxD];
	__shared__ int	total;
	const TsGpuQuadPath p = a.paths[blockIdx.x];
	int			n = 0;

	if (p.d > kIvGroupMaxD)
	{
		if (threadIdx.x == 0)
			a.count[blockIdx.x] = 0;
		return;
	}
	if (threadIdx.x == 0)
		total = 0;
	mask_histogram(a, p, hist);
	for (int i = threadIdx.x; i < (1 << p.d); i += blockDim.x)
		n += hist[i] != 0;
	atomicAdd(&total, n);
	__syncthreads();
	if (threadIdx.x == 0)
		a.count[blockIdx.x] = total;
}

/* One block per path: its groups written at its start, in mask order (each thread a run of masks). */
__global__ void __launch_bounds__(kIvGroupThreads)
group_fill_kernel(GroupArgs a)
{
	using Scan = cub::BlockScan<int, kIvGroupThreads>;
	__shared__ uint32_t hist[1 << kIvGroupMaxD];
	__shared__ typename Scan::TempStorage scan;
	const TsGpuQuadPath p = a.paths[blockIdx.x];
	int			size,
				per,
				lo,
				hi,
				n = 0,
				at;
	uint2	   *out;

	if (p.d > kIvGroupMaxD)
		return;
	mask_histogram(a, p, hist);
	size = 1 << p.d;
	per = (size + kIvGroupThreads - 1) / kIvGroupThreads;
	lo = min(size, (int) threadIdx.x * per);
	hi = min(size, lo + per);
	for (int i = lo; i < hi; i++)
		n += hist[i] != 0;
	Scan(scan).ExclusiveSum(n, at);
	out = a.groups + a.start[blockIdx.x] + at;
	for (int i = lo; i < hi; i++)
		if (hist[i] != 0)
			*out++ = make_uint2((unsigned) i, hist[i]);
}

/* Forget a grouping that was not kept (and CUDA's last error with it). */
void
drop_groups(TsIvBackground *d)
{
	cudaFree(d->group_start);
	cudaFree(d->groups);
	cudaGetLastError();
	d->group_start = nullptr;
	d->groups = nullptr;
	d->num_groups = 0;
	d->group_bytes = 0;
}

/*
 * Group the background's rows per path of q: count each path's masks,
 * then, when the groups fit the budget and, unless always, at least halve
 * the visits (otherwise the kernel visits rows), write them. Out of memory
 * is not an error: the rows serve.
 */
cudaError_t
group_rows(TsIvBackground *d, const TsQuadTable *q, const uint32_t *cats, size_t budget, bool always)
{
	GroupArgs	a = {q->paths, q->elems, q->elem_cat, cats, d->x_t, d->nrows, nullptr, nullptr, nullptr};
	const int64_t n = q->num_paths;
	std::vector<int64_t> start((size_t) n + 1);
	size_t		bytes;
	cudaError_t rc;

	if (n <= 0 || n > 0x7fffffff || d->nrows <= 0 || budget < sizeof(int64_t) * (size_t) (n + 1))
		return cudaSuccess;
	if (cudaMalloc(&d->group_start, sizeof(int64_t) * (size_t) (n + 1)) != cudaSuccess)
	{
		drop_groups(d);
		return cudaSuccess;
	}
	a.count = d->group_start;
	group_count_kernel<<<(unsigned) n, kIvGroupThreads>>>(a);
	if ((rc = cudaGetLastError()) != cudaSuccess ||
		(rc = cudaMemcpy(start.data(), d->group_start, sizeof(int64_t) * (size_t) n, cudaMemcpyDeviceToHost)) != cudaSuccess)
		return rc;
	d->num_groups = 0;
	for (int64_t p = 0; p < n; p++)
	{
		int64_t		c = start[(size_t) p];

		start[(size_t) p] = d->num_groups;
		d->num_groups += c;
	}
	start[(size_t) n] = d->num_groups;
	bytes = sizeof(int64_t) * (size_t) (n + 1) + sizeof(uint2) * (size_t) d->num_groups;
	if (bytes > budget || (!always && (double) d->num_groups * 2.0 > (double) n * d->nrows) ||
		cudaMalloc(&d->groups, sizeof(uint2) * (size_t) (d->num_groups > 0 ? d->num_groups : 1)) != cudaSuccess)
	{
		drop_groups(d);
		return cudaSuccess;
	}
	if ((rc = cudaMemcpy(d->group_start, start.data(), sizeof(int64_t) * (size_t) (n + 1), cudaMemcpyHostToDevice)) != cudaSuccess)
		return rc;
	d->group_bytes = bytes;
	a.start = d->group_start;
	a.groups = d->groups;
	group_fill_kernel<<<(unsigned) n, kIvGroupThreads>>>(a);
	if ((rc = cudaGetLastError()) != cudaSuccess)
		return rc;
	return cudaDeviceSynchronize();
}

}								/* namespace */

cudaError_t
ts_iv_upload(const TsGpuBackground *bg, const TsQuadTable *q, const uint32_t *cats, int32_t num_features,
			 int32_t num_outputs, TsIvBackground **out)
{
	TsIvBackground *d = new TsIvBackground();
	double		weight[kIvWeightSide * kIvWeightSide];
	bool		probability = bg->link != TS_GPU_LINK_NONE;
	int64_t		values = probability ? (int64_t) bg->nrows * num_outputs : 0;
	cudaError_t rc;

	*out = nullptr;
	d->nrows = bg->nrows;
	d->num_outputs = num_outputs;
	d->link = bg->link;
	d->link_scale = bg->link_scale;
	d->rescale_bound = bg->rescale_bound > 1.0 ? bg->rescale_bound : 1.0;
	fill_weights(weight);
	if ((rc = upload_rows(d, bg->x, bg->nrows, num_features)) != cudaSuccess ||
		(rc = ts_upload_array(&d->weight, (const double *) weight, kIvWeightSide * kIvWeightSide)) != cudaSuccess ||
		(probability && (rc = ts_upload_array(&d->margin, bg->margin, values)) != cudaSuccess) ||
		(probability && (rc = ts_upload_array(&d->output, bg->output, values)) != cudaSuccess) ||
		(!probability && q != nullptr && bg->grouping != TS_GPU_GROUP_NEVER &&
		 (rc = group_rows(d, q, cats, bg->group_budget, bg->grouping == TS_GPU_GROUP_ALWAYS)) != cudaSuccess))
	{
		ts_iv_free(d);
		return rc;
	}
	*out = d;
	return cudaSuccess;
}

size_t
ts_iv_group_bytes(const TsIvBackground *bg)
{
	return bg != nullptr ? bg->group_bytes : 0;
}

void
ts_iv_free(TsIvBackground *bg)
{
	if (bg == nullptr)
		return;
	cudaFree(bg->x_t);
	cudaFree(bg->margin);
	cudaFree(bg->output);
	cudaFree(bg->weight);
	drop_groups(bg);
	delete bg;
}

double
ts_iv_scale(const TsIvBackground *bg, double table_scale)
{
	int			exponent;

	/* the pairs' factors multiply a bound on |phi| by at most rescale_bound <= 2^exponent */
	frexp(bg->rescale_bound, &exponent);
	return ldexp(table_scale, -exponent);
}

bool
ts_iv_probability(const TsIvBackground *bg)
{
	return bg->link != TS_GPU_LINK_NONE;
}

cudaError_t
ts_iv_enqueue(const TsQuadTable *q, const TsIvBackground *bg, const uint32_t *cats, const float *x_t,
			  int32_t nrows, const double *x_margin, double table_scale, unsigned long long *acc,
			  cudaStream_t stream)
{
	IvArgs		a = {q->chunks, q->paths, q->elems, q->elem_cat, q->slot_column, q->values,
		q->leaf_value, q->value_width, q->num_features, cats, x_t, nrows, bg->x_t, bg->nrows,
		x_margin, bg->margin, bg->output, bg->num_outputs, bg->link, bg->link_scale, bg->weight,
		bg->group_start, bg->groups, 0, ts_iv_scale(bg, table_scale), 1.0 / bg->nrows, acc};

	if (nrows <= 0 || q->num_chunks == 0 || bg->nrows <= 0)
		return cudaSuccess;
	if (q->max_points <= 4)
		return launch_iv<8>(q, a, stream);
	if (q->max_points <= 8)
		return launch_iv<16>(q, a, stream);
	return launch_iv<kIvMaxElems>(q, a, stream);
}
