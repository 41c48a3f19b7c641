/*
 * ts_quad_tree.c - quadrature SHAP carried down each tree (see
 * ts_quad_tree.h) for a block of rows in vector lanes (TS_QUAD_LANES, or
 * TS_TREE_LANES where the plan allows and the block has more): a depth-first
 * walk with, per level, the products going down and the sums coming up;
 * per feature, its merged fractions on the current path and the level of
 * the edge that last split on it. The walk itself is ts_quad_tree_body.h,
 * built for each instruction set as ts_quad_lanes.c's body is, and for
 * each of the two lane counts.
 */
#include "core/ts_quad_tree.h"

#include "core/ts_quad_lanes.h"
#include "core/ts_quadrature.h"

#include <string.h>

/* One level of the walk: the node, which child is next, and the edge that led here. */
typedef struct TreeFrame
{
	int32_t		node;			/* local to the tree */
	int32_t		phase;			/* 0: left next, 1: right next, 2: both done */
	uint32_t	left_lanes;		/* the block's rows that go left here (bit per lane) */
	int32_t		feature;		/* the edge's split feature (-1 at the root) */
	double		z;				/* the feature's merged zero fraction below this edge */
	double		prev_z;			/* and above (< 0: not on the path) */
	int32_t		prev_level;		/* the level of the feature's edge above (-1: none) */
	bool		has_tops;		/* whether tops at this level hold anything yet */
} TreeFrame;

/* Most distinct features on a root-to-leaf path of tree t (count: per-feature occurrences, zeroed). */
static int32_t
most_distinct(const TsModel *m, int32_t t, int32_t *count, int32_t *stack_node, int8_t *stack_phase)
{
	int64_t		base = m->tree_offset[t];
	int32_t		top = 0,
				distinct = 0,
				most = 0;

	stack_node[0] = 0;
	stack_phase[0] = 0;
	while (top >= 0)
	{
		int32_t		n = stack_node[top];
		int32_t		f = m->split_feature[base + n];

		ts_check_interrupts_after(1);
		if (m->left[base + n] == -1)
		{
			most = distinct > most ? distinct : most;
			top--;
			continue;
		}
		if (stack_phase[top] == 0)
			distinct += count[f]++ == 0;
		if (stack_phase[top] < 2)
		{
			int32_t		c = stack_phase[top]++ == 0 ? m->left[base + n] : m->right[base + n];

			stack_node[++top] = c;
			stack_phase[top] = 0;
			continue;
		}
		distinct -= --count[f] == 0;
		top--;
	}
	return most;
}

/*
 * Nodes and weights of every point count the trees use beyond the kept
 * ones, computed here once (each costs O(n^2) and would otherwise be
 * computed for every tree of every block).
 */
static void
long_nodes(const TsModel *m, TsQuadTreePlan *plan)
{
	int64_t		total = 0;

	plan->long_offset = ts_alloc(sizeof(int64_t) * (size_t) (plan->max_points + 1));
	for (int32_t n = 0; n <= plan->max_points; n++)
		plan->long_offset[n] = -1;
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int32_t		n = plan->points[t];

		if (n > TS_QUAD_CACHED && plan->long_offset[n] < 0)
		{
			plan->long_offset[n] = total;
			total += 2 * (int64_t) n;
		}
	}
	plan->long_nodes = ts_alloc(sizeof(double) * (size_t) (total + 1));
	for (int32_t n = 0; n <= plan->max_points; n++)
		if (plan->long_offset[n] >= 0)
		{
			ts_check_interrupts_after((int64_t) n * n);
			ts_gauss_legendre(n, plan->long_nodes + plan->long_offset[n], plan->long_nodes + plan->long_offset[n] + n);
		}
}

/* Tree t's points and weights. */
void
ts_quad_tree_nodes(const TsQuadTreePlan *plan, int32_t t, const double **x, const double **w)
{
	int32_t		n = plan->points[t];

	if (plan->long_offset[n] >= 0)
	{
		*x = plan->long_nodes + plan->long_offset[n];
		*w = *x + n;
	}
	else
		ts_quad_nodes(n, x, w, NULL);
}

/* Every node's cover over its parent's (the root's is never read). */
static void
zero_fractions(const TsModel *m, TsQuadTreePlan *plan)
{
	plan->zero_fraction = ts_alloc0(sizeof(double) * (size_t) (m->num_nodes > 0 ? m->num_nodes : 1));
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int64_t		base = m->tree_offset[t];

		ts_check_interrupts_after(m->tree_offset[t + 1] - base);
		for (int64_t n = base; n < m->tree_offset[t + 1]; n++)
			if (m->left[n] != -1)
			{
				double		parent = m->cover[n];

				plan->zero_fraction[base + m->left[n]] = parent > 0.0 ? m->cover[base + m->left[n]] / parent : 0.0;
				plan->zero_fraction[base + m->right[n]] = parent > 0.0 ? m->cover[base + m->right[n]] / parent : 0.0;
			}
	}
}

static int32_t plan_block_rows(const TsModel *m, const TsQuadTreePlan *plan);

/* Each tree's points, from its most distinct features on a path, and the rows a block walks at once. */
TsQuadTreePlan *
ts_quad_tree_plan(const TsModel *m)
{
	TsQuadTreePlan *plan = ts_alloc0(sizeof(TsQuadTreePlan));
	int32_t		nf = m->num_features > 0 ? m->num_features : 1;
	int32_t    *count = ts_alloc0(sizeof(int32_t) * (size_t) nf);
	size_t		depth = (size_t) m->max_depth + 2;
	int32_t    *stack = ts_alloc(sizeof(int32_t) * depth);
	int8_t	   *phase = ts_alloc(depth);

	plan->points = ts_alloc(sizeof(int32_t) * (size_t) (m->num_trees > 0 ? m->num_trees : 1));
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int32_t		u = most_distinct(m, t, count, stack, phase);

		plan->points[t] = u > 1 ? (u + 1) / 2 : 1;
		plan->max_points = plan->points[t] > plan->max_points ? plan->points[t] : plan->max_points;
	}
	long_nodes(m, plan);
	zero_fractions(m, plan);
	plan->block_rows = plan_block_rows(m, plan);
	ts_free(count);
	ts_free(stack);
	ts_free(phase);
	return plan;
}

/* Free the plan and its arrays. */
void
ts_quad_tree_plan_free(TsQuadTreePlan *plan)
{
	if (plan == NULL)
		return;
	ts_free(plan->points);
	ts_free(plan->long_nodes);
	ts_free(plan->long_offset);
	ts_free(plan->zero_fraction);
	ts_free(plan);
}

/* A block's walk state: a lane array has a double per lane of the block's walk. */
typedef struct BlockState
{
	double	   *merged_z;		/* per feature: its merged zero fraction, < 0 off the path */
	double	   *merged_o;		/* per feature: its merged one fractions (a lane array) */
	int32_t    *edge_level;		/* per feature: the level of the nearest edge on it above, -1: none */
	double	   *edge_o;			/* per level: the edge's merged one fractions */
	double	   *saved_o;		/* per level: the edge's feature's one fractions above it */
	double	   *prods;			/* per level and point */
	double	   *edge_coef;		/* per level: the edge's coefficients (TREE_COEFS blocks of padded_points) */
	double	   *points;			/* the tree's points, weights, -w / (1 - x) and 1 / (1 - x), each
								 * padded to padded_points */
	int32_t		padded_points;	/* the most points, rounded up to TS_QUAD_LANES (whole vectors on any set) */
	double	   *sums;			/* per level, value and point: the node's leaf values times products */
	double	   *tops;			/* per level, value and point: the same of the topmost splits on the
								 * edge's feature below it, whose leaves it does not take */
	double	   *phi_lanes;		/* per output and column: the block's contributions (a lane array),
								 * added to as whole vectors, not one row at a time */
	TreeFrame  *frames;
} BlockState;

/*
 * An edge's coefficients per point (each a block of padded_points): its
 * factor g = z + x (o - z) for o = 0 and o = 1, their reciprocals and the
 * share's (o - z) w / g for o = 0 and 1 (both 0 where g is). A lane's o is
 * 0 or 1 on the walk, so a lane picks one of two values per point: the
 * divisions are once per edge and point, as vectors over the points, not
 * once per lane.
 */
#define TREE_G0 0
#define TREE_G1 1
#define TREE_R0 2
#define TREE_R1 3
#define TREE_A0 4
#define TREE_A1 5
#define TREE_COEFS 6

/* Work units a walk counts before passing them to ts_check_interrupts_after (1/256 of its interval). */
#define TREE_CHECK_BATCH (TS_INTERRUPT_WORK >> 8)

/* Each lane's index, loaded a vector at a time to pick a lane's bit out of a mask of rows. */
static const int64_t ts_tree_lane_index[TS_TREE_LANES] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
};
_Static_assert(TS_TREE_LANES == 32 && TS_QUAD_LANES <= TS_TREE_LANES, "ts_tree_lane_index names every lane");

typedef void (*TreeFn) (const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const float *rows, int32_t nrows,
						BlockState *st);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
#define TREE_NAME tree_avx512
#define TREE_WIDTH 8
#define TREE_LANES TS_QUAD_LANES
#include "core/ts_quad_tree_body.h"
#define TREE_NAME tree_avx512_wide
#define TREE_WIDTH 8
#define TREE_LANES TS_TREE_LANES
#include "core/ts_quad_tree_body.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define TREE_NAME tree_avx2
#define TREE_WIDTH 4
#define TREE_LANES TS_QUAD_LANES
#include "core/ts_quad_tree_body.h"
#define TREE_NAME tree_avx2_wide
#define TREE_WIDTH 4
#define TREE_LANES TS_TREE_LANES
#include "core/ts_quad_tree_body.h"
#pragma GCC pop_options
#define TS_TREE_WIDE 1
#endif
#define TREE_NAME tree_plain
#define TREE_WIDTH 2
#define TREE_LANES TS_QUAD_LANES
#include "core/ts_quad_tree_body.h"
#define TREE_NAME tree_plain_wide
#define TREE_WIDTH 2
#define TREE_LANES TS_TREE_LANES
#include "core/ts_quad_tree_body.h"

/* The walk for the instruction set ts_quad_lanes uses, in lanes lanes. */
static TreeFn
tree_fn(int32_t lanes)
{
	const char *isa = ts_quad_lanes_isa_in_use();
	bool		wide = lanes == TS_TREE_LANES;

	(void) isa;
#ifdef TS_TREE_WIDE
	if (strcmp(isa, "avx512") == 0)
		return wide ? tree_avx512_wide : tree_avx512;
	if (strcmp(isa, "avx2") == 0)
		return wide ? tree_avx2_wide : tree_avx2;
#endif
	return wide ? tree_plain_wide : tree_plain;
}

/*
 * The lanes a block of nrows rows walks in: the fewer where they do less
 * work (up to two passes of TS_QUAD_LANES cost less than one of
 * TS_TREE_LANES).
 */
static int32_t
block_lanes(const TsQuadTreePlan *plan, int32_t nrows)
{
	return nrows <= 2 * TS_QUAD_LANES ? TS_QUAD_LANES : plan->block_rows;
}

/* The walk's lane arrays and frames in lanes lanes, for the deepest tree and most points. */
static size_t
walk_scratch_len(const TsModel *m, const TsQuadTreePlan *plan, size_t lanes)
{
	size_t		q = (size_t) plan->max_points;
	size_t		depth = (size_t) m->max_depth + 2;
	size_t		nf = (size_t) (m->num_features > 0 ? m->num_features : 1);
	size_t		values = (size_t) ts_leaf_size(m);

	size_t		padded = (q + TS_QUAD_LANES - 1) / TS_QUAD_LANES * TS_QUAD_LANES;

	return TS_LANE_ALIGN_SLACK + nf + nf * lanes + (nf + 1) / 2 + 2 * depth * lanes + depth * q * lanes + TREE_COEFS * depth * padded
		+ 4 * padded + 2 * depth * values * q * lanes
		+ (sizeof(TreeFrame) * depth + sizeof(double) - 1) / sizeof(double);
}

/* The walk's scratch, then the block's contributions in lanes lanes. */
static size_t
scratch_len(const TsModel *m, const TsQuadTreePlan *plan, size_t lanes)
{
	return walk_scratch_len(m, plan, lanes) + (size_t) m->num_outputs * ((size_t) m->num_features + 1) * lanes;
}

size_t
ts_quad_tree_rows_scratch_len(const TsModel *m, const TsQuadTreePlan *plan, int32_t nrows)
{
	return scratch_len(m, plan, (size_t) block_lanes(plan, nrows));
}

/* The most rows a block walks at once: TS_TREE_LANES where their scratch fits TS_QUAD_TREE_SCRATCH_MAX. */
static int32_t
plan_block_rows(const TsModel *m, const TsQuadTreePlan *plan)
{
	return scratch_len(m, plan, TS_TREE_LANES) <= TS_QUAD_TREE_SCRATCH_MAX ? TS_TREE_LANES : TS_QUAD_LANES;
}

/* Carve the block state out of scratch: the lane arrays from a 64-byte line (each a whole number of lines), then the rest. */
static void
carve_block_state(const TsModel *m, const TsQuadTreePlan *plan, double *scratch, BlockState *st, size_t lanes)
{
	size_t		q = (size_t) plan->max_points;
	size_t		depth = (size_t) m->max_depth + 2;
	size_t		nf = (size_t) (m->num_features > 0 ? m->num_features : 1);
	size_t		values = (size_t) ts_leaf_size(m);

	st->phi_lanes = ts_lane_align(scratch);
	st->merged_o = st->phi_lanes + (size_t) m->num_outputs * ((size_t) m->num_features + 1) * lanes;
	st->edge_o = st->merged_o + nf * lanes;
	st->saved_o = st->edge_o + depth * lanes;
	st->prods = st->saved_o + depth * lanes;
	st->padded_points = (int32_t) ((q + TS_QUAD_LANES - 1) / TS_QUAD_LANES * TS_QUAD_LANES);
	st->edge_coef = st->prods + depth * q * lanes;
	st->points = st->edge_coef + TREE_COEFS * depth * (size_t) st->padded_points;
	st->sums = st->points + 4 * (size_t) st->padded_points;
	st->tops = st->sums + depth * values * q * lanes;
	st->merged_z = st->tops + depth * values * q * lanes;
	st->edge_level = (int32_t *) (st->merged_z + nf);
	st->frames = (TreeFrame *) (st->merged_z + nf + (nf + 1) / 2);
	for (size_t f = 0; f < nf; f++)
	{
		st->merged_z[f] = -1.0;
		st->edge_level[f] = -1;
	}
	memset(st->merged_o, 0, sizeof(double) * nf * lanes);
}

/*
 * One pass of up to lanes rows: the bias in each output's last column of
 * the lane contributions, every tree walked on the chosen instruction set,
 * then the lanes written out as the rows' phi.
 */
static void
walk_block(const TsModel *m, const TsQuadTreePlan *plan, const double *bias, const float *rows, int32_t nrows,
		   double *phi, double *scratch, size_t lanes)
{
	size_t		columns = (size_t) m->num_features + 1;
	size_t		width = (size_t) m->num_outputs * columns;
	BlockState	st;
	TreeFn		fn = tree_fn((int32_t) lanes);

	carve_block_state(m, plan, scratch, &st, lanes);
	memset(st.phi_lanes, 0, sizeof(double) * width * lanes);
	for (int32_t k = 0; k < m->num_outputs; k++)
		for (size_t l = 0; l < lanes; l++)
			st.phi_lanes[((size_t) k * columns + columns - 1) * lanes + l] = bias[k];
	for (int32_t t = 0; t < m->num_trees; t++)
		fn(m, plan, t, rows, nrows, &st);
	for (int32_t l = 0; l < nrows; l++)
		for (size_t j = 0; j < width; j++)
			phi[(size_t) l * width + j] = st.phi_lanes[j * lanes + (size_t) l];
}

/* The block in passes of the lanes block_lanes picks (two of TS_QUAD_LANES for 9 to 16 rows). */
void
ts_quad_tree_contribs(const TsModel *m, const TsQuadTreePlan *plan, const double *bias, const float *rows,
					  int32_t nrows, double *phi, double *scratch)
{
	size_t		width = (size_t) m->num_outputs * ((size_t) m->num_features + 1);
	int32_t		lanes = block_lanes(plan, nrows);

	for (int32_t i = 0; i < nrows; i += lanes)
		walk_block(m, plan, bias, rows + (size_t) i * (size_t) m->num_features, nrows - i < lanes ? nrows - i : lanes,
				   phi + (size_t) i * width, scratch, (size_t) lanes);
}

/* Whether the walk's scratch stays within TS_QUAD_TREE_SCRATCH_MAX doubles. */
bool
ts_quad_tree_fits(const TsModel *m, const TsQuadTreePlan *plan)
{
	return walk_scratch_len(m, plan, TS_QUAD_LANES) <= TS_QUAD_TREE_SCRATCH_MAX;
}
