/*
 * ts_warp_dp.cuh - internal to cuda/: the warp-cooperative dynamic programmes
 * over one bin of 32 lanes (GPUTreeShap's EXTEND and UNWOUNDSUM with a
 * conditioned element), and the per-bin work built on them: SHAP values and
 * interaction terms of kRowsTogether rows at a time. The kernels, launchers
 * and runner that drive them are in ts_shap.cu.
 */
#ifndef TS_WARP_DP_CUH
#define TS_WARP_DP_CUH

#include <cuda_runtime.h>

#include "ts_cuda.h"

namespace ts_warp
{

constexpr int kRowsTogether = 4;	/* rows a warp carries through the DP at once (ILP) */
constexpr unsigned kFullMask = 0xffffffffu;

/*
 * The largest v of the warp's lanes in mask, on every lane of it: one
 * instruction from sm_80 (Ampere) on, a butterfly of shuffles before (Turing),
 * which needs the whole warp in the mask.
 */
__device__ __forceinline__ int
warp_max(unsigned mask, int v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	return __reduce_max_sync(mask, v);
#else
	for (int offset = 16; offset > 0; offset /= 2)
		v = max(v, __shfl_xor_sync(mask, v, offset));
	return v;
#endif
}

/* Category x (present) in a set of src/base/ts_catset.h: bits, outside flag, words. */
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

/* Per-row state of a lane while a warp carries kRowsTogether rows through a path. */
template <typename Real>
struct RowState
{
	Real		o[kRowsTogether];	/* the lane's element satisfied */
	unsigned	ones[kRowsTogether];	/* ballot of satisfied lanes */
	bool		live[kRowsTogether];	/* row exists and its path has no dead element */
};

/* Test the lane's element against rows first_row.. (missing rows count as satisfied). */
template <typename Real>
__device__ __forceinline__ void
row_state(RowState<Real> &st, const TsGpuLane &e, const float *rows, int first_row, int nrows,
		  int32_t num_features, const uint32_t *cats, unsigned path_mask, bool empty, Real z)
{
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
	{
		int			r = first_row + k;
		bool		valid = r < nrows;
		bool		sat = !valid || satisfies(e, rows + (size_t) r * num_features, cats);
		unsigned	dead = __ballot_sync(kFullMask, !sat && !empty && z == Real(0));

		st.o[k] = sat ? Real(1) : Real(0);
		st.ones[k] = __ballot_sync(kFullMask, sat);
		/* an unsatisfied element with zero cover fraction zeroes its whole path */
		st.live[k] = valid && (dead & path_mask) == 0;
	}
}

/*
 * EXTEND by the path's elements 1..d in lane order, lane r ending with
 * permutation weight w[r]: w[r] <- (w[r] z (depth - r) + w[r-1] o r) / (depth + 1),
 * with the row-independent factors formed once per step for all rows. The
 * element at rank cond (0: none) takes fractions z = 1, o = cond_one: a dummy
 * (Shapley interactions) or a player that never joins (Shapley-Taylor).
 */
template <typename Real>
__device__ __forceinline__ void
extend(Real (&w)[kRowsTogether], const RowState<Real> &st, Real z, int first, int d, int rank,
	   int maxlen, int cond, bool cond_one, const Real *rcp)
{
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
		w[k] = rank == 0 ? Real(1) : Real(0);
	for (int depth = 1; depth < maxlen; depth++)
	{
		int			src = first + min(depth, d);
		bool		is_cond = depth == cond;
		Real		nz = __shfl_sync(kFullMask, z, src);
		Real		keep = (is_cond ? Real(1) : nz) * Real(depth - rank) * rcp[depth + 1];
		Real		shift = rank == 0 || depth > d ? Real(0) : Real(rank) * rcp[depth + 1];
		bool		active = depth <= d;

#pragma unroll
		for (int k = 0; k < kRowsTogether; k++)
		{
			Real		left = __shfl_up_sync(kFullMask, w[k], 1);
			bool		one = is_cond ? cond_one : ((st.ones[k] >> src) & 1u) != 0;
			Real		grown = w[k] * keep + (one ? left * shift : Real(0));

			w[k] = active ? grown : w[k];
		}
	}
}

/*
 * UNWOUNDSUM of the lane's own element over a path of depth d, the weights
 * read from the warp's shared buffer (one load where a double shuffle takes
 * two). Loops run to the longest path in the warp, so every shuffle has all
 * 32 lanes.
 */
template <typename Real>
__device__ __forceinline__ void
unwound_sums(Real (&total)[kRowsTogether], const Real (&w)[kRowsTogether], const RowState<Real> &st,
			 Real z, int first, int d, int lane, int maxlen, const Real *rcp,
			 Real (*w_shared)[TS_GPU_LANES])
{
	const Real	d1 = Real(d + 1);
	const Real	d1_over_z = z != Real(0) ? d1 / z : Real(0);
	const Real	z_over_d1 = z * rcp[d + 1];
	Real		next[kRowsTogether];

	__syncwarp();				/* the previous rows' readers are done */
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
		w_shared[k][lane] = w[k];
	__syncwarp();
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
	{
		next[k] = w_shared[k][first + d];
		total[k] = Real(0);
	}
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
			bool		one = st.o[k] != Real(0);

			total[k] += one ? (active ? tmp : Real(0)) : wi * unsat;
			next[k] = one && active ? wi - tmp * down : next[k];
		}
	}
}

/* Add value * scale, rounded to int64 fixed point, to one accumulator (RED, no return). */
__device__ __forceinline__ void
add_fixed(unsigned long long *acc, double value, double scale)
{
	/* the conversion rounds and saturates */
	long long	q = __double2ll_rn(value * scale);

	if (q != 0)
		atomicAdd(acc, (unsigned long long) q);
}

/* Where the lanes of one bin write: row stride and the selection of interaction rows. */
struct Target
{
	unsigned long long *acc;	/* row first_row's accumulators */
	size_t		row_stride;
	int32_t		num_features;
	const int32_t *slot;		/* interactions: per feature, selected row or -1 */
	int32_t		selected;
	const double *values;		/* vector leaves: a lane's path's values at value_at */
	int32_t		value_width;	/* values per path (1: the lane holds its value) */
};

/*
 * Add share * v * factor for the lane's leaf value v to acc, the first
 * output's accumulator; a vector leaf adds each value k to the accumulator
 * k outputs (k * stride) further on, all from one run of the DP.
 */
__device__ __forceinline__ void
add_leaf(unsigned long long *acc, size_t stride, double share, double factor, const TsGpuLane &e,
		 const Target &out, double scale)
{
	if (out.value_width == 1)
	{
		add_fixed(acc, share * e.value * factor, scale);
		return;
	}
	for (int k = 0; k < out.value_width; k++)
		add_fixed(acc + k * stride, share * __ldg(out.values + e.value_at + k) * factor, scale);
}

/* SHAP values of up to kRowsTogether rows with one bin: phi = total (o - z) v. */
template <typename Real>
__device__ __forceinline__ void
explain_rows(const TsGpuLane &e, int lane, int maxlen, const float *rows, int first_row,
			 int nrows, const uint32_t *cats, const Real *rcp,
			 Real (*w_shared)[TS_GPU_LANES], double scale, const Target &out)
{
	const int	d = e.len - 1;
	const int	rank = lane - e.first;
	const bool	empty = e.feature == TS_GPU_LANE_EMPTY;
	const Real	z = (Real) e.zero_fraction;
	const unsigned path_mask = e.len == 32 ? kFullMask : ((1u << e.len) - 1u) << e.first;
	RowState<Real> st;
	Real		w[kRowsTogether];
	Real		total[kRowsTogether];

	row_state(st, e, rows, first_row, nrows, out.num_features, cats, path_mask, empty, z);
	extend(w, st, z, e.first, d, rank, maxlen, 0, false, rcp);
	unwound_sums(total, w, st, z, e.first, d, lane, maxlen, rcp, w_shared);
	if (empty || rank == 0)
		return;
#pragma unroll
	for (int k = 0; k < kRowsTogether; k++)
		if (st.live[k])
			add_leaf(out.acc + (size_t) (first_row + k) * out.row_stride +
					 (size_t) e.group * out.num_features + e.feature, out.num_features,
					 (double) total[k] * ((double) st.o[k] - e.zero_fraction), 1.0, e, out, scale);
}

/* Product of the zero fractions of the lane's path, its own element left out. */
template <typename Real>
__device__ __forceinline__ Real
others_zero_product(Real z, int first, int d, int rank, int maxlen)
{
	Real		prod = Real(1);

	for (int r = 1; r < maxlen; r++)
	{
		Real		zr = __shfl_sync(kFullMask, z, first + min(r, d));

		prod *= r <= d && r != rank ? zr : Real(1);
	}
	return prod;
}

/*
 * Interaction terms of up to kRowsTogether rows with one bin. The diagonal
 * gets the SHAP value (Shapley) or v (o - z) prod z of the other elements
 * (Taylor) of every selected element; then, for each rank c of the paths,
 * the path's element c is conditioned and every other lane adds its share
 * to row c's entry for its own feature.
 */
template <typename Real, bool kTaylor>
__device__ __forceinline__ void
interaction_rows(const TsGpuLane &e, int lane, int maxlen, const float *rows, int first_row,
				 int nrows, const uint32_t *cats, const Real *rcp,
				 Real (*w_shared)[TS_GPU_LANES], double scale, const Target &out)
{
	const int	d = e.len - 1;
	const int	rank = lane - e.first;
	const bool	empty = e.feature == TS_GPU_LANE_EMPTY;
	const bool	element = !empty && rank > 0;
	const Real	z = (Real) e.zero_fraction;
	const unsigned path_mask = e.len == 32 ? kFullMask : ((1u << e.len) - 1u) << e.first;
	const int	my_slot = element ? __ldg(out.slot + e.feature) : -1;
	const size_t group_base = (size_t) e.group * out.selected;
	const size_t output_stride = (size_t) out.selected * out.num_features;
	RowState<Real> st;
	Real		w[kRowsTogether];
	Real		total[kRowsTogether];

	row_state(st, e, rows, first_row, nrows, out.num_features, cats, path_mask, empty, z);
	if (kTaylor)
	{
		Real		others = others_zero_product(z, e.first, d, rank, maxlen);

#pragma unroll
		for (int k = 0; k < kRowsTogether; k++)
			total[k] = others;
	}
	else
	{
		extend(w, st, z, e.first, d, rank, maxlen, 0, false, rcp);
		unwound_sums(total, w, st, z, e.first, d, lane, maxlen, rcp, w_shared);
	}
	if (my_slot >= 0)
#pragma unroll
		for (int k = 0; k < kRowsTogether; k++)
			if (st.live[k])
				add_leaf(out.acc + (size_t) (first_row + k) * out.row_stride +
						 (group_base + my_slot) * out.num_features + e.feature, output_stride,
						 (double) total[k] * ((double) st.o[k] - e.zero_fraction), 1.0, e, out, scale);

	for (int c = 1; c < maxlen; c++)
	{
		const int	c_lane = e.first + min(c, d);
		const int	c_slot = __shfl_sync(kFullMask, my_slot, c_lane);
		const double c_zero = __shfl_sync(kFullMask, e.zero_fraction, c_lane);
		const bool	writes = element && c <= d && rank != c && c_slot >= 0;

		/* the whole warp runs the DP when any path's element c is selected */
		if (!__any_sync(kFullMask, c <= d && c_slot >= 0))
			continue;
		extend(w, st, z, e.first, d, rank, maxlen, c, !kTaylor, rcp);
		unwound_sums(total, w, st, z, e.first, d, lane, maxlen, rcp, w_shared);
#pragma unroll
		for (int k = 0; k < kRowsTogether; k++)
		{
			double		c_on = (double) ((st.ones[k] >> c_lane) & 1u);
			double		factor = (kTaylor ? 1.0 : 0.5) * (c_on - c_zero);

			if (writes && st.live[k] && factor != 0.0)
				add_leaf(out.acc + (size_t) (first_row + k) * out.row_stride +
						 (group_base + c_slot) * out.num_features + e.feature, output_stride,
						 (double) total[k] * ((double) st.o[k] - e.zero_fraction), factor, e, out, scale);
		}
	}
}

}								/* namespace ts_warp */

#endif							/* TS_WARP_DP_CUH */
