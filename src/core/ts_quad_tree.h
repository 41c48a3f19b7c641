/*
 * ts_quad_tree.h - quadrature SHAP carried down each tree (issue 46): the
 * product of every feature's factor z + t (o - z) at the Gauss-Legendre
 * points goes down the tree once (a feature met again is merged: its factor
 * divided out, the merged one put in), each node's sum of leaf value times
 * product comes back up, and the edge into child c of a split on feature k
 * adds (o - z) sum_q w_q (S(c) - sum S(m)) / (z + t_q (o - z)), m the topmost
 * splits on k below c (the sums of those come up to c's level as they
 * finish). O(nodes x points) per tree and row where the path table's
 * quadrature (ts_quadrature.h) is O(paths x d^2 / 2); the same values to
 * rounding. bench/tree_quadrature_check.py models it in Python.
 */
#ifndef TS_QUAD_TREE_H
#define TS_QUAD_TREE_H

#include "model/ts_model.h"

/* What the walk needs beyond the model: each tree's points. */
typedef struct TsQuadTreePlan
{
	int32_t    *points;			/* per tree: ceil(most distinct features on a path / 2) */
	int32_t		max_points;
	double	   *long_nodes;		/* nodes then weights of each point count over the kept
								 * ones (ts_quad_nodes), computed once */
	int64_t    *long_offset;	/* per point count 0 .. max_points: into long_nodes, or -1 */
	double	   *zero_fraction;	/* per node (as the model's arrays): its cover over its parent's,
								 * 0 where the parent has none; computed once, not per row */
	int32_t		block_rows;		/* rows a walk takes at once, most: TS_TREE_LANES, or
								 * TS_QUAD_LANES where that many lanes' scratch would not fit */
} TsQuadTreePlan;

/*
 * Rows a block walks at once where its scratch fits: a node's bookkeeping
 * (its rows' directions, the edge's coefficients, the frames) is the same
 * for any number of lanes, so more lanes share it (32 walk 1.6-1.7 times
 * as many rows a second as 8 on the development machine). A block of up
 * to 2 x TS_QUAD_LANES rows (one row of shap_values(), a short batch's or
 * a batch's last rows) walks in TS_QUAD_LANES lanes, in one or two passes,
 * where 32 lanes would do more work; a row's values are the same bytes in
 * either, as every lane does the same operations.
 */
#define TS_TREE_LANES 32

/* The plan of a validated model with covers. */
extern TsQuadTreePlan *ts_quad_tree_plan(const TsModel *m);

/* Release a plan. */
extern void ts_quad_tree_plan_free(TsQuadTreePlan *plan);

/* Tree t's points and weights (from the plan, or ts_quad_nodes' kept ones). */
extern void ts_quad_tree_nodes(const TsQuadTreePlan *plan, int32_t t, const double **x, const double **w);

/*
 * Scratch doubles ts_quad_tree_contribs needs for blocks of up to nrows
 * rows (at most plan->block_rows): per level of the deepest tree, lanes of
 * products and sums; and the block's contributions in lanes (outputs x
 * (features + 1) x lanes).
 */
extern size_t ts_quad_tree_rows_scratch_len(const TsModel *m, const TsQuadTreePlan *plan, int32_t nrows);

/*
 * The contributions of rows[0 .. nrows) (1 <= nrows <= plan->block_rows, rows
 * of num_features floats), in vector lanes: the model's bias (a path table's
 * bias, one per output) in each phi row's last column, then every tree's
 * walk added, in the same order for every row (phi: nrows rows of outputs x
 * (features + 1)).
 */
extern void ts_quad_tree_contribs(const TsModel *m, const TsQuadTreePlan *plan, const double *bias,
								  const float *rows, int32_t nrows, double *phi, double *scratch);

/*
 * Scratch doubles per thread past which a model's trees are too deep to walk
 * (a level costs points x lanes doubles): such a model (thousands of levels)
 * takes the path table's lanes, whose scratch follows its merged paths. A
 * model whose walk and lane contributions would pass it in TS_TREE_LANES
 * lanes walks in TS_QUAD_LANES (plan->block_rows).
 */
#define TS_QUAD_TREE_SCRATCH_MAX ((size_t) 1 << 20)

/* Whether the walk's scratch for this model in TS_QUAD_LANES lanes (its levels, not the lane contributions) stays within TS_QUAD_TREE_SCRATCH_MAX doubles. */
extern bool ts_quad_tree_fits(const TsModel *m, const TsQuadTreePlan *plan);

#endif							/* TS_QUAD_TREE_H */
