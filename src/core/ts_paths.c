/*
 * ts_paths.c - path extraction and merging. Paths are independent, which is
 * what lets SHAP run per (path, row) on any device.
 */
#include "core/ts_paths.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One split on the way from the root to a leaf, before merging. */
typedef struct TsEdge
{
	int32_t		feature;
	float		lower;
	float		upper;
	uint8_t		missing;
	int32_t		cat_set;		/* the parent's left set in the model's pool, or -1 */
	bool		right;			/* the edge takes the set's complement */
	double		zero_fraction;
} TsEdge;

/* Growable arrays of the table under construction. */
typedef struct TsPathBuilder
{
	const TsModel *model;
	TsPathTable *pt;
	int64_t		path_cap;
	int64_t		elem_cap;
	int64_t		pool_cap;
} TsPathBuilder;

/* Order edges by feature so repeated features become neighbours. */
static int
edge_cmp(const void *a, const void *b)
{
	int32_t		fa = ((const TsEdge *) a)->feature;
	int32_t		fb = ((const TsEdge *) b)->feature;

	return (fa > fb) - (fa < fb);
}

/* Make room for one more path of up to len elements. */
static void
reserve(TsPathBuilder *b, int64_t len)
{
	TsPathTable *pt = b->pt;

	if (pt->num_paths + 1 >= b->path_cap)
	{
		b->path_cap = b->path_cap * 2 + 64;
		pt->path_start = ts_realloc(pt->path_start, (size_t) (b->path_cap + 1) * sizeof(int64_t));
		pt->path_group = ts_realloc(pt->path_group, (size_t) b->path_cap * sizeof(int32_t));
		pt->path_tree = ts_realloc(pt->path_tree, (size_t) b->path_cap * sizeof(int32_t));
		pt->path_value = ts_realloc(pt->path_value,
									(size_t) b->path_cap * (size_t) pt->value_width * sizeof(double));
	}
	if (pt->num_elements + len > b->elem_cap)
	{
		b->elem_cap = (b->elem_cap + len) * 2;
		pt->feature = ts_realloc(pt->feature, (size_t) b->elem_cap * sizeof(int32_t));
		pt->lower = ts_realloc(pt->lower, (size_t) b->elem_cap * sizeof(float));
		pt->upper = ts_realloc(pt->upper, (size_t) b->elem_cap * sizeof(float));
		pt->missing = ts_realloc(pt->missing, (size_t) b->elem_cap * sizeof(uint8_t));
		pt->cat = ts_realloc(pt->cat, (size_t) b->elem_cap * sizeof(int32_t));
		pt->zero_fraction = ts_realloc(pt->zero_fraction, (size_t) b->elem_cap * sizeof(double));
	}
}

/* Append one element to the table. */
static void
push_element(TsPathTable *pt, const TsEdge *e, int32_t cat)
{
	int64_t		i = pt->num_elements++;

	pt->feature[i] = e->feature;
	pt->lower[i] = e->lower;
	pt->upper[i] = e->upper;
	pt->missing[i] = e->missing;
	pt->cat[i] = cat;
	pt->zero_fraction[i] = e->zero_fraction;
}

/* Word w of an edge's set as the edge sees it (complemented on the right). */
static uint32_t
edge_set_word(const TsModel *m, const TsEdge *e, int64_t w)
{
	const uint32_t *set = m->cat_pool + e->cat_set;
	int64_t		nbits = set[0];
	uint32_t	word;

	if (w * 32 >= nbits)
		word = set[1] ? ~0u : 0u;
	else
	{
		word = set[2 + w];
		if (nbits - w * 32 < 32)	/* bits past the set's end take the outside value */
			word = (word & ((1u << (nbits - w * 32)) - 1u)) |
				(set[1] ? ~0u << (nbits - w * 32) : 0u);
	}
	return e->right ? ~word : word;
}

/*
 * Intersect the category sets of the edges of one feature into a new set in
 * the table's pool; returns its offset, or -1 when no edge is categorical.
 */
static int32_t
merge_sets(TsPathBuilder *b, const TsEdge *edges, int32_t n)
{
	TsPathTable *pt = b->pt;
	const TsModel *m = b->model;
	uint32_t	nbits = 0;
	bool		any = false;
	bool		others = true;
	int64_t		offset = pt->cat_pool_len;
	int64_t		len;

	for (int32_t i = 0; i < n; i++)
		if (edges[i].cat_set >= 0)
		{
			const uint32_t *set = m->cat_pool + edges[i].cat_set;

			any = true;
			nbits = set[0] > nbits ? set[0] : nbits;
			others = others && ((set[1] != 0) != edges[i].right);
		}
	if (!any)
		return -1;
	len = ts_catset_len(nbits);
	if (offset + len > b->pool_cap)
	{
		b->pool_cap = (offset + len) * 2;
		pt->cat_pool = ts_realloc(pt->cat_pool, (size_t) b->pool_cap * sizeof(uint32_t));
	}
	pt->cat_pool[offset] = nbits;
	pt->cat_pool[offset + 1] = others ? 1 : 0;
	for (int64_t w = 0; w < len - 2; w++)
	{
		uint32_t	word = ~0u;

		for (int32_t i = 0; i < n; i++)
			if (edges[i].cat_set >= 0)
				word &= edge_set_word(m, &edges[i], w);
		pt->cat_pool[offset + 2 + w] = word;
	}
	pt->cat_pool_len = offset + len;
	return (int32_t) offset;
}

/*
 * Emit the path ending at a leaf with its value_width values v: root
 * element, then the edges merged per feature (bounds intersected, missing
 * flags ANDed, zero fractions multiplied).
 */
static void
emit_path(TsPathBuilder *b, TsEdge *edges, int32_t nedges, int32_t tree, int32_t group,
		  const double *v)
{
	TsPathTable *pt = b->pt;
	int64_t		start = pt->num_elements;
	double		reach = 1.0;

	const TsEdge root = {-1, -INFINITY, INFINITY, 1, -1, false, 1.0};

	qsort(edges, (size_t) nedges, sizeof(TsEdge), edge_cmp);
	reserve(b, nedges + 1);
	push_element(pt, &root, -1);
	for (int32_t i = 0; i < nedges; i++)
	{
		TsEdge		e = edges[i];
		int32_t		first = i;

		while (i + 1 < nedges && edges[i + 1].feature == e.feature)
		{
			i++;
			e.lower = fmaxf(e.lower, edges[i].lower);
			e.upper = fminf(e.upper, edges[i].upper);
			e.missing &= edges[i].missing;
			e.zero_fraction *= edges[i].zero_fraction;
		}
		push_element(pt, &e, merge_sets(b, edges + first, i - first + 1));
		reach *= e.zero_fraction;
	}
	pt->path_start[pt->num_paths] = start;
	pt->path_group[pt->num_paths] = group;
	pt->path_tree[pt->num_paths] = tree;
	memcpy(pt->path_value + pt->num_paths * pt->value_width, v, sizeof(double) * (size_t) pt->value_width);
	pt->num_paths++;
	pt->path_start[pt->num_paths] = pt->num_elements;
	if (pt->num_elements - start > pt->max_path_len)
		pt->max_path_len = (int32_t) (pt->num_elements - start);
	for (int32_t k = 0; k < pt->value_width; k++)
		pt->bias[group + k] += v[k] * reach;
}

/* Whether any of a leaf's n values is non-zero (a leaf of zeros adds nothing). */
static bool
any_nonzero(const double *v, int32_t n)
{
	for (int32_t k = 0; k < n; k++)
		if (v[k] != 0.0)
			return true;
	return false;
}

/* The edge from parent p to child c (indices local to the tree at base). */
static TsEdge
make_edge(const TsModel *m, int64_t base, int32_t p, int32_t c)
{
	TsEdge		e;
	bool		is_left = m->left[base + p] == c;
	float		thr = m->threshold[base + p];
	double		pc = m->cover[base + p];

	e.feature = m->split_feature[base + p];
	e.cat_set = m->cat_set[base + p];
	e.right = !is_left;
	/* a categorical edge leaves the interval open: its set decides */
	e.lower = is_left || e.cat_set >= 0 ? -INFINITY : thr;
	e.upper = !is_left || e.cat_set >= 0 ? INFINITY : thr;
	e.missing = (uint8_t) (m->default_left[base + p] == is_left);
	/* a node nobody reached in training gives its children no weight */
	e.zero_fraction = pc > 0.0 ? m->cover[base + c] / pc : 0.0;
	return e;
}

/* Extract the paths of one tree by walking from each leaf up to the root. */
static void
tree_paths(TsPathBuilder *b, const TsModel *m, int32_t t, int32_t *parent, TsEdge *edges)
{
	int64_t		base = m->tree_offset[t];
	int32_t		n = (int32_t) (m->tree_offset[t + 1] - base);

	parent[0] = -1;
	for (int32_t i = 0; i < n; i++)
		if (m->left[base + i] != -1)
		{
			parent[m->left[base + i]] = i;
			parent[m->right[base + i]] = i;
		}
	for (int32_t leaf = 0; leaf < n; leaf++)
	{
		int32_t		nedges = 0;
		const double *v = m->leaf_value + (base + leaf) * ts_leaf_size(m);

		if (m->left[base + leaf] != -1)
			continue;
		for (int32_t c = leaf; parent[c] != -1; c = parent[c])
			edges[nedges++] = make_edge(m, base, parent[c], c);
		/* a vector leaf is one path whose values share its elements */
		if (any_nonzero(v, ts_leaf_size(m)))
			emit_path(b, edges, nedges, t, m->tree_group[t], v);
	}
}

/* Build the table for every tree; the model must have passed validation. */
TsPathTable *
ts_paths_build(const TsModel *m)
{
	TsPathBuilder b = {0};
	TsPathTable *pt = ts_alloc0(sizeof(TsPathTable));
	int64_t		largest = 1;
	int32_t    *parent;
	TsEdge	   *edges;

	pt->num_features = m->num_features;
	pt->num_outputs = m->num_outputs;
	pt->value_width = ts_leaf_size(m);
	pt->bias = ts_alloc0((size_t) m->num_outputs * sizeof(double));
	b.model = m;
	b.pt = pt;
	reserve(&b, 1);
	pt->path_start[0] = 0;
	for (int32_t t = 0; t < m->num_trees; t++)
		if (m->tree_offset[t + 1] - m->tree_offset[t] > largest)
			largest = m->tree_offset[t + 1] - m->tree_offset[t];
	parent = ts_alloc((size_t) largest * sizeof(int32_t));
	edges = ts_alloc((size_t) largest * sizeof(TsEdge));
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		ts_check_interrupts();
		tree_paths(&b, m, t, parent, edges);
	}
	ts_free(parent);
	ts_free(edges);
	for (int32_t k = 0; k < m->num_outputs; k++)
		pt->bias[k] += m->base_margin[k];
	return pt;
}

/* Free a path table. */
void
ts_paths_free(TsPathTable *pt)
{
	if (pt == NULL)
		return;
	ts_free(pt->path_start);
	ts_free(pt->path_group);
	ts_free(pt->path_tree);
	ts_free(pt->path_value);
	ts_free(pt->feature);
	ts_free(pt->lower);
	ts_free(pt->upper);
	ts_free(pt->missing);
	ts_free(pt->cat);
	ts_free(pt->cat_pool);
	ts_free(pt->zero_fraction);
	ts_free(pt->bias);
	ts_free(pt);
}

size_t
ts_paths_bytes(const TsPathTable *pt)
{
	size_t		per_path = sizeof(int64_t) + 2 * sizeof(int32_t) + (size_t) pt->value_width * sizeof(double);
	size_t		per_element = sizeof(int32_t) + 2 * sizeof(float) + sizeof(uint8_t) + sizeof(int32_t) +
		sizeof(double);

	return sizeof(TsPathTable) + (size_t) pt->num_paths * per_path + (size_t) pt->num_elements * per_element +
		(size_t) pt->cat_pool_len * sizeof(uint32_t) + (size_t) pt->num_outputs * sizeof(double);
}
