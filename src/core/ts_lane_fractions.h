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
		int32_t		j = pt->feature[g];
		double	   *oe = o + (size_t) e * TS_QUAD_LANES;

		for (int32_t l = 0; l < TS_QUAD_LANES; l++)
		{
			bool		sat = l < nrows && ts_paths_satisfied(pt, g, x[(size_t) l * pt->num_features + j]);

			oe[l] = sat ? 1.0 : 0.0;
			/* z = 0 and unsatisfied: every subset reaches the leaf with weight 0 */
			if (!sat && pt->zero_fraction[g] == 0.0)
				live &= ~(1u << l);
		}
	}
	return live;
}

#endif							/* TS_LANE_FRACTIONS_H */
