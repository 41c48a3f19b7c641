/*
 * ts_quad.cu - SHAP values by Gauss-Legendre quadrature over the chunked
 * layout (ts_cuda.h says what the coefficients are). One thread per row: a
 * block's threads all walk the same paths of one chunk, so every path
 * element and coefficient is a broadcast load, and each thread keeps its
 * row's sums per chunk slot in its own column of shared memory. No thread
 * ever reads another's sums, so the kernel needs no barrier.
 *
 * Determinism: a row's slot sums are formed in path order, then rounded to
 * int64 fixed point and added with integer atomics, whose order cannot
 * change the result.
 */
#include <cuda_runtime.h>

#include <cstring>

#include "ts_quad.cuh"
#include "ts_warp_dp.cuh"

namespace
{

constexpr int kQuadRows = 128;	/* rows, i.e. threads, of a block */

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

/* Whether the row's x satisfies element e (index ei). */
__device__ __forceinline__ bool
quad_satisfies(const TsGpuQuadElem &e, int64_t ei, float x, const int32_t *__restrict__ elem_cat,
			   const uint32_t *__restrict__ cats)
{
	if (isnan(x))
		return (e.slot_flags & TS_GPU_QUAD_MISSING) != 0;
	if (!(e.lower <= x && x < e.upper))
		return false;
	return (e.slot_flags & TS_GPU_QUAD_CATEGORICAL) == 0 ||
		ts_warp::category_in(cats + __ldg(elem_cat + ei), x);
}

/*
 * One path of N nodes for the thread's row: g_i = P_i * prod of r_i over
 * the unsatisfied elements, then each element adds sum_i g_i A_i
 * (satisfied) or -sum_i g_i w_i / (1 - t_i) (not) to its slot.
 */
template <typename Real, int N>
__device__ __forceinline__ void
quad_path(const QuadArgs<Real> &a, const TsGpuQuadPath &p, int32_t row, Real *acc)
{
	constexpr int NP = N + (N & 1);
	const Real *c = a.coef + p.coef;
	Real		g[NP];
	Real		unsat_sum = Real(0);
	uint32_t	unsat = 0;

	load_coef<Real, NP>(g, c);
	c += NP;
	for (int k = 0; k < p.d; k++, c += 2 * NP)
	{
		const TsGpuQuadElem e = a.elems[p.elem + k];
		const float x = __ldg(a.x_t + (size_t) e.feature * a.nrows + row);
		const bool	o = quad_satisfies(e, p.elem + k, x, a.elem_cat, a.cats);
		Real		r[NP];

		load_coef<Real, NP>(r, c);
		unsat |= (o ? 0u : 1u) << k;
#pragma unroll
		for (int i = 0; i < N; i++)
			g[i] = o ? g[i] : g[i] * r[i];
	}
#pragma unroll
	for (int i = 0; i < N; i++)
		unsat_sum = fma(g[i], QuadReal<Real>::unsat_weight(N, i), unsat_sum);
	c = a.coef + p.coef + 2 * NP;
	for (int k = 0; k < p.d; k++, c += 2 * NP)
	{
		const int	slot = __ldg(&a.elems[p.elem + k].slot_flags) & 0xffff;
		Real		coef_a[NP];
		Real		s = Real(0);

		load_coef<Real, NP>(coef_a, c);
#pragma unroll
		for (int i = 0; i < N; i++)
			s = fma(g[i], coef_a[i], s);
		acc[slot * kQuadRows] += (unsat >> k) & 1u ? -unsat_sum : s;
	}
}

/* quad_path with N = n, for n in [N, NMAX]; n is the same in every thread. */
template <typename Real, int N, int NMAX>
__device__ __forceinline__ void
quad_path_dispatch(const QuadArgs<Real> &a, const TsGpuQuadPath &p, int32_t row, Real *acc)
{
	if (p.n == N || N == NMAX)
		quad_path<Real, N>(a, p, row, acc);
	else if constexpr (N < NMAX)
		quad_path_dispatch<Real, N + 1, NMAX>(a, p, row, acc);
}

/* One block: kQuadRows rows with one chunk of paths. */
template <typename Real, int NMAX>
__global__ void __launch_bounds__(kQuadRows)
quad_kernel(QuadArgs<Real> a)
{
	extern __shared__ __align__(16) unsigned char quad_shared[];
	Real	   *acc = (Real *) quad_shared + threadIdx.x;
	const TsGpuQuadChunk ch = a.chunks[blockIdx.x / a.row_tiles];
	const int32_t row = (int32_t) (blockIdx.x % a.row_tiles) * kQuadRows + threadIdx.x;

	if (row >= a.nrows)
		return;
	for (int s = 0; s < ch.slots; s++)
		acc[s * kQuadRows] = Real(0);
	for (int64_t p = ch.path_lo; p < ch.path_hi; p++)
	{
		const TsGpuQuadPath path = a.paths[p];

		quad_path_dispatch<Real, 1, NMAX>(a, path, row, acc);
	}
	for (int s = 0; s < ch.slots; s++)
	{
		long long	q = __double2ll_rn((double) acc[s * kQuadRows] * a.scale);

		if (q != 0)
			atomicAdd(a.acc + (size_t) __ldg(a.slot_column + ch.slot_start + s) * a.nrows + row,
					  (unsigned long long) q);
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

template <typename Real, int NMAX>
cudaError_t
launch_quad(const QuadArgs<Real> &a, int64_t blocks, size_t shared, cudaStream_t stream)
{
	cudaError_t rc = cudaFuncSetAttribute(quad_kernel<Real, NMAX>,
										  cudaFuncAttributeMaxDynamicSharedMemorySize, (int) shared);

	if (rc != cudaSuccess)
		return rc;
	quad_kernel<Real, NMAX><<<(unsigned) blocks, kQuadRows, shared, stream>>>(a);
	return cudaGetLastError();
}

/* The kernel instance for the table's largest n: fewer registers for short paths. */
template <typename Real>
cudaError_t
launch_points(const TsQuadTable *q, const QuadArgs<Real> &a, int64_t blocks, cudaStream_t stream)
{
	size_t		shared = (size_t) (q->max_slots > 0 ? q->max_slots : 1) * kQuadRows * sizeof(Real);

	if (q->max_points <= 4)
		return launch_quad<Real, 4>(a, blocks, shared, stream);
	if (q->max_points <= 8)
		return launch_quad<Real, 8>(a, blocks, shared, stream);
	return launch_quad<Real, TS_GPU_QUAD_MAX_POINTS>(a, blocks, shared, stream);
}

template <typename T>
cudaError_t
upload_array(T **dst, const T *src, int64_t count)
{
	void	   *p = nullptr;
	size_t		bytes = (size_t) (count > 0 ? count : 0) * sizeof(T);
	cudaError_t rc = cudaMalloc(&p, bytes > 0 ? bytes : 16);

	*dst = (T *) p;
	if (rc != cudaSuccess || bytes == 0)
		return rc;
	return cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice);
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
	q->max_points = desc->max_points;
	q->num_features = num_features;
	q->num_outputs = num_outputs;
	for (int64_t c = 0; c < desc->num_chunks; c++)
		if (desc->chunks[c].slots > q->max_slots)
			q->max_slots = (int32_t) desc->chunks[c].slots;
	for (int n = 0; n <= TS_GPU_QUAD_MAX_POINTS; n++)
		for (int i = 0; i < TS_GPU_QUAD_MAX_POINTS; i++)
			single[n][i] = (float) desc->unsat_weight[n][i];
	if ((rc = upload_array(&q->chunks, desc->chunks, desc->num_chunks)) != cudaSuccess ||
		(rc = upload_array(&q->paths, desc->paths, desc->num_paths)) != cudaSuccess ||
		(rc = upload_array(&q->elems, desc->elems, desc->num_elems)) != cudaSuccess ||
		(rc = upload_array(&q->elem_cat, desc->elem_cat, desc->elem_cat ? desc->num_elems : 0)) != cudaSuccess ||
		(rc = upload_array(&q->coef, desc->coef, desc->num_coef)) != cudaSuccess ||
		(rc = upload_array(&q->slot_column, desc->slot_column, desc->num_slots)) != cudaSuccess ||
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
	cudaGetLastError();
	delete q;
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
	int64_t		row_tiles = (nrows + kQuadRows - 1) / kQuadRows;
	int64_t		blocks = row_tiles * q->num_chunks;
	dim3		tgrid((unsigned) row_tiles * (kQuadRows / 32), (unsigned) ((q->num_features + 31) / 32));

	if (nrows <= 0 || q->num_chunks == 0)
		return cudaSuccess;
	if (blocks > 0x7fffffffLL || tgrid.y > 65535)
		return cudaErrorInvalidConfiguration;
	transpose_kernel<<<tgrid, dim3(32, 8), 0, stream>>>(x, nrows, q->num_features, x_t);
	if (single)
	{
		QuadArgs<float> a = {q->chunks, q->paths, q->elems, q->elem_cat, q->coef_single,
			q->slot_column, cats, x_t, nrows, row_tiles, scale, acc};

		return launch_points<float>(q, a, blocks, stream);
	}
	else
	{
		QuadArgs<double> a = {q->chunks, q->paths, q->elems, q->elem_cat, q->coef,
			q->slot_column, cats, x_t, nrows, row_tiles, scale, acc};

		return launch_points<double>(q, a, blocks, stream);
	}
}
