/*
 * ts_quad_tree.c - quadrature SHAP carried down each tree (see
 * ts_quad_tree.h). A depth-first walk with the products in frames, each
 * node's sums in a per-tree array, the merged fractions of the features on
 * the current path per feature: one row at a time (ts_quad_tree_row), or
 * TS_QUAD_LANES rows in vector lanes (ts_quad_tree_rows, the body in
 * ts_quad_tree_body.h built for each instruction set as ts_quad_lanes.c's).
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
	double		z,
				o;				/* the feature's merged fractions below this edge */
	double		prev_z,
				prev_o;			/* its merged fractions above (z < 0: not on the path) */
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
 * One walk of tree t: each split on feature k is a top of the child below
 * the nearest split on k above it (below[k]: that child, global numbering,
 * -1 at none). Counts them into next[child] (tops NULL), or files them at
 * tops[next[child]++].
 */
static void
walk_tops(const TsModel *m, int32_t t, int64_t *next, int32_t *tops, int64_t *below, int32_t *stack_node,
		  int8_t *stack_phase, int64_t *saved)
{
	int64_t		base = m->tree_offset[t];
	int32_t		top = 0;

	stack_node[0] = 0;
	stack_phase[0] = 0;
	while (top >= 0)
	{
		int64_t		g = base + stack_node[top];
		int32_t		k = m->split_feature[g];

		ts_check_interrupts_after(1);
		if (m->left[g] == -1)
		{
			top--;
			continue;
		}
		if (stack_phase[top] == 0)
		{
			saved[top] = below[k];
			if (below[k] >= 0)
			{
				if (tops != NULL)
					tops[next[below[k]]] = stack_node[top];
				next[below[k]]++;
			}
		}
		if (stack_phase[top] < 2)
		{
			int32_t		c = stack_phase[top]++ == 0 ? m->left[g] : m->right[g];

			below[k] = base + c;
			stack_node[++top] = c;
			stack_phase[top] = 0;
			continue;
		}
		below[k] = saved[top];
		top--;
	}
}

/* Fill tops_start and tops for every node (two walks: count, then file); the number of tops. */
static int64_t
fill_tops(const TsModel *m, TsQuadTreePlan *plan, int32_t *stack_node, int8_t *stack_phase)
{
	int32_t		nf = m->num_features > 0 ? m->num_features : 1;
	size_t		depth = (size_t) m->max_depth + 2;
	int64_t    *next = ts_alloc0(sizeof(int64_t) * (size_t) (m->num_nodes + 1));
	int64_t    *below = ts_alloc(sizeof(int64_t) * (size_t) nf);
	int64_t    *saved = ts_alloc(sizeof(int64_t) * depth);
	int64_t		total = 0;

	for (int32_t f = 0; f < nf; f++)
		below[f] = -1;
	for (int32_t t = 0; t < m->num_trees; t++)
		walk_tops(m, t, next, NULL, below, stack_node, stack_phase, saved);
	for (int64_t g = 0; g < m->num_nodes; g++)
	{
		int64_t		count = next[g];

		plan->tops_start[g] = next[g] = total;
		total += count;
	}
	plan->tops_start[m->num_nodes] = total;
	plan->tops = ts_alloc(sizeof(int32_t) * (size_t) (total + 1));
	for (int32_t t = 0; t < m->num_trees; t++)
		walk_tops(m, t, next, plan->tops, below, stack_node, stack_phase, saved);
	ts_free(next);
	ts_free(below);
	ts_free(saved);
	return total;
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
	plan->tops_start = ts_alloc(sizeof(int64_t) * (size_t) (m->num_nodes + 1));
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int32_t		u = most_distinct(m, t, count, stack, phase);
		int64_t		nodes = m->tree_offset[t + 1] - m->tree_offset[t];

		plan->points[t] = u > 1 ? (u + 1) / 2 : 1;
		plan->max_points = plan->points[t] > plan->max_points ? plan->points[t] : plan->max_points;
		plan->max_tree_nodes = nodes > plan->max_tree_nodes ? nodes : plan->max_tree_nodes;
	}
	fill_tops(m, plan, stack, phase);
	long_nodes(m, plan);
	ts_free(count);
	ts_free(stack);
	ts_free(phase);
	return plan;
}

void
ts_quad_tree_plan_free(TsQuadTreePlan *plan)
{
	if (plan == NULL)
		return;
	ts_free(plan->points);
	ts_free(plan->tops_start);
	ts_free(plan->tops);
	ts_free(plan->long_nodes);
	ts_free(plan->long_offset);
	ts_free(plan);
}

size_t
ts_quad_tree_scratch_len(const TsModel *m, const TsQuadTreePlan *plan)
{
	size_t		q = (size_t) plan->max_points;
	size_t		depth = (size_t) m->max_depth + 2;
	size_t		nf = (size_t) (m->num_features > 0 ? m->num_features : 1);

	/* merged fractions per feature; each level's products and factors; each node's sums; nodes, weights */
	return 2 * nf + 2 * depth * q + (size_t) plan->max_tree_nodes * (size_t) ts_leaf_size(m) * q + 2 * q
		+ (sizeof(TreeFrame) * depth + sizeof(double) - 1) / sizeof(double);
}

/* The shares of the edge into frame f's node: (o - z) sum_q w_q own_q / g_q per value, into phi. */
static void
edge_share(const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const TreeFrame *f, const double *g,
		   double *sums, int32_t q, const double *w, double *phi)
{
	int32_t		k_values = ts_leaf_size(m);
	int64_t		g0 = m->tree_offset[t] + f->node;
	size_t		width = (size_t) m->num_features + 1;

	for (int32_t k = 0; k < k_values; k++)
	{
		double		acc = 0.0;

		for (int32_t i = 0; i < q; i++)
		{
			double		own = sums[((size_t) f->node * k_values + k) * q + i];

			for (int64_t s = plan->tops_start[g0]; s < plan->tops_start[g0 + 1]; s++)
				own -= sums[((size_t) plan->tops[s] * k_values + k) * q + i];
			if (g[i] != 0.0)
				acc += w[i] * own / g[i];
		}
		phi[(size_t) (m->tree_group[t] + k) * width + f->feature] += (f->o - f->z) * acc;
	}
}

/* Push the frame for child c of frame f's node: the merged fractions, products and factors below the edge. */
static void
push_child(const TsModel *m, int32_t t, const float *row, TreeFrame *f, double *merged, const double *x,
		   int32_t q, const double *prod, double *child_prod, double *child_g)
{
	int64_t		base = m->tree_offset[t];
	int64_t		n = base + f->node;
	int32_t		c = f->phase++ == 0 ? m->left[n] : m->right[n];
	int32_t		k = m->split_feature[n];
	bool		taken = ts_node_goes_left(m, n, row[k]) == (c == m->left[n]);
	double		z0 = merged[2 * k],
				o0 = merged[2 * k + 1];
	bool		seen = z0 >= 0.0;
	double		zc = m->cover[n] > 0.0 ? m->cover[base + c] / m->cover[n] : 0.0;
	TreeFrame  *cf = f + 1;

	*cf = (TreeFrame) {.node = c, .feature = k, .prev_z = z0, .prev_o = o0,
		.z = seen ? z0 * zc : zc, .o = (seen ? o0 : 1.0) * (taken ? 1.0 : 0.0)};
	for (int32_t i = 0; i < q; i++)
	{
		double		g_old = seen ? z0 + x[i] * (o0 - z0) : 1.0;

		child_g[i] = cf->z + x[i] * (cf->o - cf->z);
		/* a factor of 0 (no cover, not taken) merges into 0: so does the product */
		child_prod[i] = g_old == 0.0 ? 0.0 : prod[i] / g_old * child_g[i];
	}
	merged[2 * k] = cf->z;
	merged[2 * k + 1] = cf->o;
}

/* Tree t's contributions for row. */
static void
tree_row(const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const float *row, double *phi,
		 double *merged, TreeFrame *frames, double *prods, double *factors, double *sums, double *nodes)
{
	int64_t		base = m->tree_offset[t];
	int32_t		q = plan->points[t];
	int32_t		k_values = ts_leaf_size(m);
	int32_t		top = 0;
	const double *x,
			   *w;

	(void) nodes;
	ts_quad_tree_nodes(plan, t, &x, &w);
	frames[0] = (TreeFrame) {.node = 0, .feature = -1};
	for (int32_t i = 0; i < q; i++)
		prods[i] = 1.0;
	while (top >= 0)
	{
		TreeFrame  *f = &frames[top];
		int64_t		n = base + f->node;
		double	   *s = sums + (size_t) f->node * k_values * q;

		if (m->left[n] != -1 && f->phase < 2)
		{
			ts_check_interrupts_after(4 + 4 * (int64_t) q * k_values);
			push_child(m, t, row, f, merged, x, q, prods + (size_t) top * q, prods + (size_t) (top + 1) * q,
					   factors + (size_t) (top + 1) * q);
			top++;
			continue;
		}
		ts_check_interrupts_after(1 + (int64_t) k_values * q);
		if (m->left[n] == -1)
			for (int32_t k = 0; k < k_values; k++)
				for (int32_t i = 0; i < q; i++)
					s[k * q + i] = m->leaf_value[n * k_values + k] * prods[(size_t) top * q + i];
		else
			for (int32_t j = 0; j < k_values * q; j++)
				s[j] = sums[(size_t) m->left[n] * k_values * q + j] + sums[(size_t) m->right[n] * k_values * q + j];
		if (f->feature >= 0)
		{
			edge_share(m, plan, t, f, factors + (size_t) top * q, sums, q, w, phi);
			merged[2 * f->feature] = f->prev_z;
			merged[2 * f->feature + 1] = f->prev_o;
		}
		top--;
	}
}

void
ts_quad_tree_row(const TsModel *m, const TsQuadTreePlan *plan, const float *row, double *phi, double *scratch)
{
	size_t		q = (size_t) plan->max_points;
	size_t		depth = (size_t) m->max_depth + 2;
	size_t		nf = (size_t) (m->num_features > 0 ? m->num_features : 1);
	double	   *merged = scratch;
	double	   *prods = merged + 2 * nf;
	double	   *factors = prods + depth * q;
	double	   *sums = factors + depth * q;
	double	   *nodes = sums + (size_t) plan->max_tree_nodes * (size_t) ts_leaf_size(m) * q;
	TreeFrame  *frames = (TreeFrame *) (nodes + 2 * q);

	for (size_t f = 0; f < 2 * nf; f++)
		merged[f] = -1.0;
	for (int32_t t = 0; t < m->num_trees; t++)
		tree_row(m, plan, t, row, phi, merged, frames, prods, factors, sums, nodes);
}

/* A block's walk state: lane arrays of TS_QUAD_LANES doubles each. */
typedef struct BlockState
{
	double	   *merged_z;		/* per feature: its merged zero fraction, < 0 off the path */
	double	   *merged_o;		/* per feature: its merged one fractions */
	double	   *edge_o;			/* per level: the edge's merged one fractions */
	double	   *saved_o;		/* per level: the edge's feature's one fractions above it */
	double	   *prods;			/* per level and point */
	double	   *factors;		/* per level and point: the edge's factor */
	double	   *sums;			/* per node, value and point */
	double	   *nodes;
	TreeFrame  *frames;
} BlockState;

typedef void (*TreeFn) (const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const float *rows, int32_t nrows,
						double *phi, BlockState *st);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
#define TREE_NAME tree_avx512
#define TREE_WIDTH 8
#include "core/ts_quad_tree_body.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define TREE_NAME tree_avx2
#define TREE_WIDTH 4
#include "core/ts_quad_tree_body.h"
#pragma GCC pop_options
#define TS_TREE_WIDE 1
#endif
#define TREE_NAME tree_plain
#define TREE_WIDTH 2
#include "core/ts_quad_tree_body.h"

/* The walk for the instruction set ts_quad_lanes uses. */
static TreeFn
tree_fn(void)
{
	const char *isa = ts_quad_lanes_isa_in_use();

	(void) isa;
#ifdef TS_TREE_WIDE
	if (strcmp(isa, "avx512") == 0)
		return tree_avx512;
	if (strcmp(isa, "avx2") == 0)
		return tree_avx2;
#endif
	return tree_plain;
}

size_t
ts_quad_tree_rows_scratch_len(const TsModel *m, const TsQuadTreePlan *plan)
{
	size_t		q = (size_t) plan->max_points;
	size_t		depth = (size_t) m->max_depth + 2;
	size_t		nf = (size_t) (m->num_features > 0 ? m->num_features : 1);
	size_t		lanes = TS_QUAD_LANES;

	return nf + nf * lanes + 2 * depth * lanes + 2 * depth * q * lanes
		+ (size_t) plan->max_tree_nodes * (size_t) ts_leaf_size(m) * q * lanes + 2 * q
		+ (sizeof(TreeFrame) * depth + sizeof(double) - 1) / sizeof(double);
}

void
ts_quad_tree_rows(const TsModel *m, const TsQuadTreePlan *plan, const float *rows, int32_t nrows, double *phi,
				  double *scratch)
{
	size_t		q = (size_t) plan->max_points;
	size_t		depth = (size_t) m->max_depth + 2;
	size_t		nf = (size_t) (m->num_features > 0 ? m->num_features : 1);
	size_t		lanes = TS_QUAD_LANES;
	BlockState	st;
	TreeFn		fn = tree_fn();

	st.merged_z = scratch;
	st.merged_o = st.merged_z + nf;
	st.edge_o = st.merged_o + nf * lanes;
	st.saved_o = st.edge_o + depth * lanes;
	st.prods = st.saved_o + depth * lanes;
	st.factors = st.prods + depth * q * lanes;
	st.sums = st.factors + depth * q * lanes;
	st.nodes = st.sums + (size_t) plan->max_tree_nodes * (size_t) ts_leaf_size(m) * q * lanes;
	st.frames = (TreeFrame *) (st.nodes + 2 * q);
	for (size_t f = 0; f < nf; f++)
		st.merged_z[f] = -1.0;
	memset(st.merged_o, 0, sizeof(double) * nf * lanes);
	for (int32_t t = 0; t < m->num_trees; t++)
		fn(m, plan, t, rows, nrows, phi, &st);
}
