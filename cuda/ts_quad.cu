/*
 * ts_quad.cu - SHAP values by Gauss-Legendre quadrature over the chunked
 * layout (ts_cuda.h says what the coefficients are). A thread carries two
 * rows; a block's threads all walk the same paths of one chunk, so every
 * path element and coefficient is a broadcast load shared by both rows, and
 * each thread keeps its rows' sums per chunk slot in its own columns of
 * shared memory. No thread ever reads another's sums, so the kernel needs
 * no barrier.
 *
 * Determinism: a row's slot sums are formed in path order, then rounded to
 * int64 fixed point and added with integer atomics, whose order cannot
 * change the result.
 */
#include <cuda_runtime.h>

#include <cstring>

#include "ts_quad.cuh"

#include "ts_device_array.cuh"
#include "ts_warp_dp.cuh"

namespace
{

constexpr int kQuadThreads = 128;	/* threads of a block */
constexpr int kQuadRowsPerThread = 2;	/* rows each thread carries: shares every broadcast load */

/*
 * Blocks per multiprocessor the register budget allows: paths of up to 8
 * features fit 64 registers; longer ones need 128 not to spill. Measured on
 * an H200 with 1, 2 and 4 rows per thread and both budgets: this pairing
 * was the fastest on every model of the benchmark.
 */
constexpr int
min_blocks(int nmax)
{
	return nmax <= 4 ? 8 : 4;
}

/* w_i / (1 - t_i) of the n-point rule, at [n][i]: compile-time indices in the kernel */
__constant__ double unsat_weight_double[TS_GPU_QUAD_MAX_POINTS + 1][TS_GPU_QUAD_MAX_POINTS];
__constant__ float unsat_weight_single[TS_GPU_QUAD_MAX_POINTS + 1][TS_GPU_QUAD_MAX_POINTS];

template <typename Real>
struct QuadReal;

template <>
struct QuadReal<double>
{
	typedef double2 Pair;
	static __device__ __forceinline__ double unsat_weight(int n, int i)
	{
		return unsat_weight_double[n][i];
	}
};

template <>
struct QuadReal<float>
{
	typedef float2 Pair;
	static __device__ __forceinline__ float unsat_weight(int n, int i)
	{
		return unsat_weight_single[n][i];
	}
};

/* Kernel arguments. */
template <typename Real>
struct QuadArgs
{
	const TsGpuQuadChunk *__restrict__ chunks;
	const TsGpuQuadPath *__restrict__ paths;
	const TsGpuQuadElem *__restrict__ elems;
	const int32_t *__restrict__ elem_cat;
	const Real *__restrict__ coef;
	const int32_t *__restrict__ slot_column;
	const double *__restrict__ values;	/* vector leaves: path i's value k at i * value_width + k */
	int32_t		value_width;
	const uint32_t *__restrict__ cats;
	const float *__restrict__ x_t;	/* feature-major: x_t[feature * nrows + row] */
	int32_t		nrows;
	int64_t		row_tiles;
	double		scale;
	unsigned long long *acc;
};

/* np consecutive coefficients (np even, 2-aligned) into registers. */
template <typename Real, int NP>
__device__ __forceinline__ void
load_coef(Real (&out)[NP], const Real *__restrict__ c)
{
	typedef typename QuadReal<Real>::Pair Pair;
#pragma unroll
	for (int i = 0; i < NP; i += 2)
	{
		Pair		pair = __ldg((const Pair *) (c + i));

		out[i] = pair.x;
		out[i + 1] = pair.y;
	}
}

/*
 * One path of N nodes (so d = 2N - 1 or 2N elements, loops unrolled) for
 * the thread's RPT rows. First every element's test and slot, with all
 * loads independent; then g_i = P_i * prod of r_i over the unsatisfied
 * elements (P_i scaled by v for vector leaves, whose P_i hold 1 for v);
 * then each element adds sum_i g_i A_i (satisfied) or
 * -sum_i g_i w_i / (1 - t_i) (not) to its slot.
 */
template <typename Real, int N, int RPT>
__device__ __forceinline__ void
quad_path(const QuadArgs<Real> &a, const TsGpuQuadPath &p, Real v, const int32_t (&row)[RPT], Real *acc)
{
	constexpr int NP = N + (N & 1);
	constexpr int D = 2 * N;
	const Real *c = a.coef + p.coef;
	const bool	full = p.d == D;
	uint32_t	unsat[RPT];
	uint32_t	slots[(D + 3) / 4];
	Real		g[RPT][NP];
	Real		unsat_sum[RPT];

#pragma unroll
	for (int r = 0; r < RPT; r++)
		unsat[r] = 0;
#pragma unroll
	for (int k = 0; k < D; k++)
	{
		if (k < D - 1 || full)
		{
			const TsGpuQuadElem e = a.elems[p.elem + k];

			if (k % 4 == 0)
				slots[k / 4] = 0;
			slots[k / 4] |= (uint32_t) (e.slot_flags & 0xff) << (8 * (k % 4));
#pragma unroll
			for (int r = 0; r < RPT; r++)
			{
				const float x = __ldg(a.x_t + (size_t) e.feature * a.nrows + row[r]);

				unsat[r] |= (ts_quad_satisfies(e, p.elem + k, x, a.elem_cat, a.cats) ? 0u : 1u) << k;
			}
		}
	}
	load_coef<Real, NP>(g[0], c);
	if (a.values != nullptr)
#pragma unroll
		for (int i = 0; i < N; i++)
			g[0][i] *= v;
#pragma unroll
	for (int r = 1; r < RPT; r++)
#pragma unroll
		for (int i = 0; i < NP; i++)
			g[r][i] = g[0][i];
#pragma unroll
	for (int k = 0; k < D; k++)
	{
		if (k < D - 1 || full)
		{
			Real		ratio[NP];

			load_coef<Real, NP>(ratio, c + NP + 2 * NP * k);
#pragma unroll
			for (int r = 0; r < RPT; r++)
			{
				const bool	u = (unsat[r] >> k) & 1u;

#pragma unroll
				for (int i = 0; i < N; i++)
					g[r][i] = u ? g[r][i] * ratio[i] : g[r][i];
			}
		}
	}
#pragma unroll
	for (int r = 0; r < RPT; r++)
	{
		unsat_sum[r] = Real(0);
#pragma unroll
		for (int i = 0; i < N; i++)
			unsat_sum[r] = fma(g[r][i], QuadReal<Real>::unsat_weight(N, i), unsat_sum[r]);
	}
#pragma unroll
	for (int k = 0; k < D; k++)
	{
		if (k < D - 1 || full)
		{
			const int	slot = (slots[k / 4] >> (8 * (k % 4))) & 0xff;
			Real		coef_a[NP];

			load_coef<Real, NP>(coef_a, c + NP + 2 * NP * k + NP);
#pragma unroll
			for (int r = 0; r < RPT; r++)
			{
				Real		s = Real(0);

#pragma unroll
				for (int i = 0; i < N; i++)
					s = fma(g[r][i], coef_a[i], s);
				acc[(slot * RPT + r) * kQuadThreads] += (unsat[r] >> k) & 1u ? -unsat_sum[r] : s;
			}
		}
	}
}

/* quad_path with N = n, for n in [N, NMAX]; n is the same in every thread. */
template <typename Real, int N, int NMAX, int RPT>
__device__ __forceinline__ void
quad_path_dispatch(const QuadArgs<Real> &a, const TsGpuQuadPath &p, Real v, const int32_t (&row)[RPT],
				   Real *acc)
{
	if (p.n == N || N == NMAX)
		quad_path<Real, N, RPT>(a, p, v, row, acc);
	else if constexpr (N < NMAX)
		quad_path_dispatch<Real, N + 1, NMAX, RPT>(a, p, v, row, acc);
}

/* Value ch.target of vector-leaf path p (1 for other models: P_i holds v). */
template <typename Real>
__device__ __forceinline__ double
path_value(const QuadArgs<Real> &a, const TsGpuQuadChunk &ch, int64_t p)
{
	return a.values != nullptr ? __ldg(a.values + p * a.value_width + ch.target) : 1.0;
}

/*
 * One block: kQuadThreads x RPT rows with one chunk of paths. A thread's
 * rows are kQuadThreads apart; rows past the batch compute on the last row
 * and are not added.
 */
template <typename Real, int NMAX, int RPT>
__global__ void __launch_bounds__(kQuadThreads, min_blocks(NMAX))
quad_kernel(QuadArgs<Real> a)
{
	extern __shared__ __align__(16) unsigned char quad_shared[];
	Real	   *acc = (Real *) quad_shared + threadIdx.x;
	const TsGpuQuadChunk ch = a.chunks[blockIdx.x / a.row_tiles];
	const int32_t first = (int32_t) (blockIdx.x % a.row_tiles) * kQuadThreads * RPT + threadIdx.x;
	int32_t		row[RPT];

	if (first >= a.nrows)
		return;
#pragma unroll
	for (int r = 0; r < RPT; r++)
		row[r] = min(first + r * kQuadThreads, a.nrows - 1);
	for (int s = 0; s < ch.slots * RPT; s++)
		acc[s * kQuadThreads] = Real(0);
	/* the next path's header loads while this one computes */
	TsGpuQuadPath next = a.paths[ch.path_lo];

	for (int64_t p = ch.path_lo; p < ch.path_hi; p++)
	{
		const TsGpuQuadPath path = next;
		const double v = path_value(a, ch, p);

		if (p + 1 < ch.path_hi)
			next = a.paths[p + 1];
		/* a vector leaf's zero value adds nothing to its output */
		if (v != 0.0)
			quad_path_dispatch<Real, 1, NMAX, RPT>(a, path, (Real) v, row, acc);
	}
	for (int s = 0; s < ch.slots; s++)
	{
		const size_t column = (size_t) __ldg(a.slot_column + ch.slot_start + s) * a.nrows;

#pragma unroll
		for (int r = 0; r < RPT; r++)
		{
			long long	q = __double2ll_rn((double) acc[(s * RPT + r) * kQuadThreads] * a.scale);

			if (q != 0 && first + r * kQuadThreads < a.nrows)
				atomicAdd(a.acc + column + first + r * kQuadThreads, (unsigned long long) q);
		}
	}
}

/* x (nrows x features) to x_t (features x nrows) through 32 x 32 tiles. */
__global__ void
transpose_kernel(const float *__restrict__ x, int32_t nrows, int32_t num_features, float *__restrict__ x_t)
{
	__shared__ float tile[32][33];
	const int64_t row0 = (int64_t) blockIdx.x * 32;
	const int64_t f0 = (int64_t) blockIdx.y * 32;

	for (int i = threadIdx.y; i < 32; i += blockDim.y)
		if (row0 + i < nrows && f0 + threadIdx.x < num_features)
			tile[i][threadIdx.x] = x[(row0 + i) * num_features + f0 + threadIdx.x];
	__syncthreads();
	for (int i = threadIdx.y; i < 32; i += blockDim.y)
		if (f0 + i < num_features && row0 + threadIdx.x < nrows)
			x_t[(f0 + i) * nrows + row0 + threadIdx.x] = tile[threadIdx.x][i];
}

template <typename Real, int NMAX, int RPT>
cudaError_t
launch_quad(const TsQuadTable *q, QuadArgs<Real> a, cudaStream_t stream)
{
	size_t		shared = (size_t) (q->max_slots > 0 ? q->max_slots : 1) * RPT * kQuadThreads * sizeof(Real);
	int64_t		blocks;
	cudaError_t rc = cudaFuncSetAttribute(quad_kernel<Real, NMAX, RPT>,
										  cudaFuncAttributeMaxDynamicSharedMemorySize, (int) shared);

	a.row_tiles = (a.nrows + kQuadThreads * RPT - 1) / (kQuadThreads * RPT);
	blocks = a.row_tiles * q->num_chunks;
	if (rc != cudaSuccess)
		return rc;
	if (blocks > 0x7fffffffLL)
		return cudaErrorInvalidConfiguration;
	quad_kernel<Real, NMAX, RPT><<<(unsigned) blocks, kQuadThreads, shared, stream>>>(a);
	return cudaGetLastError();
}

/* The kernel instance for the table's largest n: fewer registers for short paths. */
template <typename Real>
cudaError_t
launch_points(const TsQuadTable *q, const QuadArgs<Real> &a, cudaStream_t stream)
{
	if (q->max_points <= 4)
		return launch_quad<Real, 4, kQuadRowsPerThread>(q, a, stream);
	if (q->max_points <= 8)
		return launch_quad<Real, 8, kQuadRowsPerThread>(q, a, stream);
	return launch_quad<Real, TS_GPU_QUAD_MAX_POINTS, kQuadRowsPerThread>(q, a, stream);
}

/* Coefficients rounded to float, on the device. */
__global__ void
to_single_kernel(const double *__restrict__ in, int64_t count, float *__restrict__ out)
{
	for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < count;
		 i += (int64_t) gridDim.x * blockDim.x)
		out[i] = (float) in[i];
}

}								/* namespace */

cudaError_t
ts_quad_upload(const TsGpuQuadDesc *desc, int32_t num_features, int32_t num_outputs, TsQuadTable **out)
{
	TsQuadTable *q = new TsQuadTable();
	float		single[TS_GPU_QUAD_MAX_POINTS + 1][TS_GPU_QUAD_MAX_POINTS];
	cudaError_t rc;

	*out = nullptr;
	q->num_chunks = desc->num_chunks;
	q->num_paths = desc->num_paths;
	q->max_points = desc->max_points;
	q->value_width = desc->value_width > 1 ? desc->value_width : 1;
	q->num_features = num_features;
	q->num_outputs = num_outputs;
	for (int64_t c = 0; c < desc->num_chunks; c++)
		if (desc->chunks[c].slots > q->max_slots)
			q->max_slots = (int32_t) desc->chunks[c].slots;
	for (int n = 0; n <= TS_GPU_QUAD_MAX_POINTS; n++)
		for (int i = 0; i < TS_GPU_QUAD_MAX_POINTS; i++)
			single[n][i] = (float) desc->unsat_weight[n][i];
	if ((rc = ts_upload_array(&q->chunks, desc->chunks, desc->num_chunks)) != cudaSuccess ||
		(rc = ts_upload_array(&q->paths, desc->paths, desc->num_paths)) != cudaSuccess ||
		(rc = ts_upload_array(&q->elems, desc->elems, desc->num_elems)) != cudaSuccess ||
		(rc = ts_upload_array(&q->elem_cat, desc->elem_cat, desc->elem_cat ? desc->num_elems : 0)) != cudaSuccess ||
		(rc = ts_upload_array(&q->coef, desc->coef, desc->num_coef)) != cudaSuccess ||
		(rc = ts_upload_array(&q->slot_column, desc->slot_column, desc->num_slots)) != cudaSuccess ||
		(desc->values != nullptr &&
		 (rc = ts_upload_array(&q->values, desc->values, desc->num_paths * desc->value_width)) != cudaSuccess) ||
		(desc->leaf_value != nullptr &&
		 (rc = ts_upload_array(&q->leaf_value, desc->leaf_value, desc->num_paths)) != cudaSuccess) ||
		(rc = cudaMalloc(&q->coef_single, (size_t) (desc->num_coef > 0 ? desc->num_coef : 1) * sizeof(float))) != cudaSuccess ||
		(rc = cudaMemcpyToSymbol(unsat_weight_double, desc->unsat_weight, sizeof(desc->unsat_weight))) != cudaSuccess ||
		(rc = cudaMemcpyToSymbol(unsat_weight_single, single, sizeof(single))) != cudaSuccess)
	{
		ts_quad_free(q);
		return rc;
	}
	if (desc->num_coef > 0)
		to_single_kernel<<<1024, 256>>>(q->coef, desc->num_coef, q->coef_single);
	if ((rc = cudaGetLastError()) != cudaSuccess || (rc = cudaDeviceSynchronize()) != cudaSuccess)
	{
		ts_quad_free(q);
		return rc;
	}
	*out = q;
	return cudaSuccess;
}

void
ts_quad_free(TsQuadTable *q)
{
	if (q == nullptr)
		return;
	cudaFree(q->chunks);
	cudaFree(q->paths);
	cudaFree(q->elems);
	cudaFree(q->elem_cat);
	cudaFree(q->coef);
	cudaFree(q->coef_single);
	cudaFree(q->slot_column);
	cudaFree(q->values);
	cudaFree(q->leaf_value);
	cudaGetLastError();
	delete q;
}

cudaError_t
ts_quad_transpose(const float *x, int32_t nrows, int32_t num_features, float *x_t, cudaStream_t stream)
{
	dim3		tgrid((unsigned) ((nrows + 31) / 32), (unsigned) ((num_features + 31) / 32));

	if (nrows <= 0)
		return cudaSuccess;
	if (tgrid.y > 65535 || tgrid.x > 0x7fffffffu)
		return cudaErrorInvalidConfiguration;
	transpose_kernel<<<tgrid, dim3(32, 8), 0, stream>>>(x, nrows, num_features, x_t);
	return cudaGetLastError();
}

size_t
ts_quad_input_len(const TsQuadTable *q, int32_t nrows)
{
	return (size_t) (nrows > 0 ? nrows : 0) * q->num_features;
}

cudaError_t
ts_quad_enqueue(const TsQuadTable *q, const uint32_t *cats, const float *x, float *x_t, int32_t nrows,
				bool single, double scale, unsigned long long *acc, cudaStream_t stream)
{
	cudaError_t rc;

	if (nrows <= 0 || q->num_chunks == 0)
		return cudaSuccess;
	if ((rc = ts_quad_transpose(x, nrows, q->num_features, x_t, stream)) != cudaSuccess)
		return rc;
	if (single)
	{
		QuadArgs<float> a = {q->chunks, q->paths, q->elems, q->elem_cat, q->coef_single,
			q->slot_column, q->values, q->value_width, cats, x_t, nrows, 0, scale, acc};

		return launch_points<float>(q, a, stream);
	}
	else
	{
		QuadArgs<double> a = {q->chunks, q->paths, q->elems, q->elem_cat, q->coef,
			q->slot_column, q->values, q->value_width, cats, x_t, nrows, 0, scale, acc};

		return launch_points<double>(q, a, stream);
	}
}
