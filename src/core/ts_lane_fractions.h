/*
 * ts_lane_fractions.h - a path's one fractions for a block of rows in
 * vector lanes (TS_QUAD_LANES doubles per element), shared by the blocks
 * that evaluate paths by quadrature: SHAP values (ts_quad_lanes.c) and
 * interaction values (ts_quad_pairs.c).
 */
#ifndef TS_LANE_FRACTIONS_H
#define TS_LANE_FRACTIONS_H

#include "core/ts_quad_lanes.h"
#include "core/ts_shap_cpu.h"

/* a block's lanes as float32 values, as int32 masks, as int64 masks and as doubles */
typedef float TsLaneFloats __attribute__((vector_size(TS_QUAD_LANES * sizeof(float))));
typedef int32_t TsLaneInts __attribute__((vector_size(TS_QUAD_LANES * sizeof(int32_t))));
typedef int64_t TsLaneMasks __attribute__((vector_size(TS_QUAD_LANES * sizeof(int64_t)), aligned(8), may_alias));
typedef double TsLaneDoubles __attribute__((vector_size(TS_QUAD_LANES * sizeof(double)), aligned(8), may_alias));

/*
 * Whether each lane's x satisfies element g (-1 or 0 in *sat; a vector is
 * not returned by value, whose ABI depends on the instruction set): a
 * category split's lane by lane, a bounds split's as vectors.
 */
static inline __attribute__((always_inline)) void
ts_lane_satisfied(const TsPathTable *pt, int64_t g, const float *x, int32_t nrows, TsLaneInts *sat)
{
	int32_t		j = pt->feature[g];
	TsLaneFloats v = {0};

	*sat = (TsLaneInts) {0};
	if (pt->cat[g] >= 0)
	{
		for (int32_t l = 0; l < nrows; l++)
			(*sat)[l] = ts_paths_satisfied(pt, g, x[(size_t) l * pt->num_features + j]) ? -1 : 0;
		return;
	}
	for (int32_t l = 0; l < nrows; l++)
		v[l] = x[(size_t) l * pt->num_features + j];
	/* NaN (missing) fails both bounds; it satisfies the element when its missing rows go this way */
	*sat = (v >= pt->lower[g]) & (v < pt->upper[g]);
	if (pt->missing[g] != 0)
		*sat |= v != v;
	for (int32_t l = nrows; l < TS_QUAD_LANES; l++)
		(*sat)[l] = 0;
}

/* Bit l set for each row l that can reach path p's leaf; its one fractions in o. */
static inline __attribute__((always_inline)) uint32_t
ts_lane_fractions(const TsPathTable *pt, int64_t p, const float *x, int32_t nrows, double *o)
{
	int64_t		start = pt->path_start[p];
	int32_t		d = (int32_t) (pt->path_start[p + 1] - start) - 1;
	uint32_t	live = nrows >= 32 ? ~0u : (1u << nrows) - 1;

	for (int32_t e = 1; e <= d; e++)
	{
		int64_t		g = start + e;
		TsLaneInts	sat;

		ts_lane_satisfied(pt, g, x, nrows, &sat);

		*(TsLaneDoubles *) (o + (size_t) e * TS_QUAD_LANES) =
			(TsLaneDoubles) (__builtin_convertvector(sat, TsLaneMasks) & (TsLaneMasks) ((TsLaneDoubles) {0} + 1.0));
		/* z = 0 and unsatisfied: every subset reaches the leaf with weight 0 */
		if (pt->zero_fraction[g] == 0.0)
			for (int32_t l = 0; l < TS_QUAD_LANES; l++)
				if (sat[l] == 0)
					live &= ~(1u << l);
	}
	return live;
}

#endif							/* TS_LANE_FRACTIONS_H */
