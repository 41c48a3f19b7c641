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
	ts_check_interrupts_after((int64_t) n * len);
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
 * The walk: a depth-first visit of each tree that keeps, per feature, the
 * merge of the edges on the way down (bounds intersected, missing flags
 * ANDed, zero fractions multiplied), so a leaf's path costs its unique
 * features, never its depth: a chain of depth d has paths of d edges in all
 * d^2 / 2, but of at most num_features merged elements.
 */
typedef struct TsFeatureMerge
{
	TsEdge		merged;			/* the merge of the feature's edges on the current path */
	int32_t		count;			/* its edges on the path; 0: not on it */
	int32_t		last;			/* its deepest edge (a frame), -1 when none */
	int32_t		active_pos;		/* where the feature sits in active */
} TsFeatureMerge;

/* A node on the walk's stack, with the edge into it and what that edge replaced. */
typedef struct TsFrame
{
	int32_t		node;
	int32_t		phase;			/* 0: arrived, 1: left child visited, 2: both */
	bool		has_edge;		/* every frame but the root's */
	TsEdge		edge;
	TsEdge		saved;			/* its feature's merge before the edge */
	int32_t		saved_last;
	int32_t		prev_same;		/* the feature's edge above this one, -1 when none */
} TsFrame;

/* What a walk keeps across trees: per-feature merges, active features, the stack. */
typedef struct TsWalk
{
	TsFeatureMerge *feat;
	int32_t    *active;			/* features with count > 0, in no order */
	int32_t		num_active;
	TsFrame    *frames;
	int32_t    *order;			/* scratch: active sorted by feature */
	TsEdge	   *same;			/* scratch: one feature's edges, for category sets */
} TsWalk;

/* Work units a leaf's path of k unique features costs to sort and emit. */
static inline int64_t
leaf_work(int32_t k)
{
	return 16 + (int64_t) k * 8;
}

/* Add edge e (frame f's) to its feature's merge. */
static void
walk_push(TsWalk *w, TsFrame *f)
{
	TsFeatureMerge *fm = &w->feat[f->edge.feature];

	f->saved = fm->merged;
	f->saved_last = fm->last;
	f->prev_same = fm->last;
	if (fm->count++ == 0)
	{
		fm->merged = f->edge;
		fm->active_pos = w->num_active;
		w->active[w->num_active++] = f->edge.feature;
	}
	else
	{
		fm->merged.lower = fmaxf(fm->merged.lower, f->edge.lower);
		fm->merged.upper = fminf(fm->merged.upper, f->edge.upper);
		fm->merged.missing &= f->edge.missing;
		fm->merged.zero_fraction *= f->edge.zero_fraction;
		if (f->edge.cat_set >= 0)
			fm->merged.cat_set = f->edge.cat_set;	/* any categorical edge: the sets decide */
	}
	fm->last = (int32_t) (f - w->frames);
}

/* Take frame f's edge back out of its feature's merge. */
static void
walk_pop(TsWalk *w, const TsFrame *f)
{
	TsFeatureMerge *fm = &w->feat[f->edge.feature];

	fm->merged = f->saved;
	fm->last = f->saved_last;
	if (--fm->count == 0)
	{
		int32_t		moved = w->active[--w->num_active];

		w->active[fm->active_pos] = moved;
		w->feat[moved].active_pos = fm->active_pos;
	}
}

/* Order feature numbers ascending. */
static int
feature_cmp(const void *a, const void *b)
{
	int32_t		fa = *(const int32_t *) a;
	int32_t		fb = *(const int32_t *) b;

	return (fa > fb) - (fa < fb);
}

/* The category set of feature f's merged edges on the current path, or -1. */
static int32_t
walk_cat_set(TsPathBuilder *b, TsWalk *w, int32_t f)
{
	const TsFeatureMerge *fm = &w->feat[f];
	int32_t		n = 0;

	if (fm->merged.cat_set < 0)
		return -1;
	for (int32_t i = fm->last; i >= 0; i = w->frames[i].prev_same)
		w->same[n++] = w->frames[i].edge;
	return merge_sets(b, w->same, n);
}

/*
 * Emit the path ending at a leaf with its value_width values v: the root
 * element, then one merged element per feature, in feature order.
 */
static void
emit_path(TsPathBuilder *b, TsWalk *w, int32_t tree, int32_t group, const double *v)
{
	TsPathTable *pt = b->pt;
	int64_t		start = pt->num_elements;
	double		reach = 1.0;
	const TsEdge root = {-1, -INFINITY, INFINITY, 1, -1, false, 1.0};

	memcpy(w->order, w->active, sizeof(int32_t) * (size_t) w->num_active);
	qsort(w->order, (size_t) w->num_active, sizeof(int32_t), feature_cmp);
	reserve(b, w->num_active + 1);
	push_element(pt, &root, -1);
	for (int32_t i = 0; i < w->num_active; i++)
	{
		const TsEdge *e = &w->feat[w->order[i]].merged;

		push_element(pt, e, walk_cat_set(b, w, w->order[i]));
		reach *= e->zero_fraction;
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

/* At a leaf: emit its path (b != NULL), or count its path and elements. */
static void
visit_leaf(TsPathBuilder *b, TsWalk *w, const TsModel *m, int32_t t, int32_t leaf, int64_t *counts)
{
	const double *v = m->leaf_value + (m->tree_offset[t] + leaf) * ts_leaf_size(m);

	/* a vector leaf is one path whose values share its elements */
	if (!any_nonzero(v, ts_leaf_size(m)))
		return;
	ts_check_interrupts_after(leaf_work(w->num_active));
	if (b != NULL)
		emit_path(b, w, t, m->tree_group[t], v);
	else
	{
		counts[0]++;
		counts[1] += w->num_active + 1;
	}
}

/* Walk tree t depth first, visiting each leaf with its merged path. */
static void
walk_tree(TsPathBuilder *b, TsWalk *w, const TsModel *m, int32_t t, int64_t *counts)
{
	int64_t		base = m->tree_offset[t];
	int32_t		top = 0;

	w->frames[0] = (TsFrame) {.node = 0};
	while (top >= 0)
	{
		TsFrame    *f = &w->frames[top];
		int32_t		left = m->left[base + f->node];

		ts_check_interrupts_after(1);
		if (left != -1 && f->phase < 2)
		{
			int32_t		child = f->phase++ == 0 ? left : m->right[base + f->node];
			TsFrame    *c = &w->frames[++top];

			*c = (TsFrame) {.node = child, .has_edge = true, .edge = make_edge(m, base, f->node, child)};
			walk_push(w, c);
			continue;
		}
		if (left == -1)
			visit_leaf(b, w, m, t, f->node, counts);
		if (f->has_edge)
			walk_pop(w, f);
		top--;
	}
}

/* Walk every tree: build b's table, or count paths and elements into counts. */
static void
walk_trees(TsPathBuilder *b, const TsModel *m, int64_t *counts)
{
	TsWalk		w = {0};
	int32_t		nf = m->num_features > 0 ? m->num_features : 1;
	size_t		depth = (size_t) m->max_depth + 1;	/* frames on a path: its root and one per edge */

	w.feat = ts_alloc0(sizeof(TsFeatureMerge) * (size_t) nf);
	w.active = ts_alloc(sizeof(int32_t) * (size_t) nf);
	w.order = ts_alloc(sizeof(int32_t) * (size_t) nf);
	w.frames = ts_alloc(sizeof(TsFrame) * depth);
	w.same = ts_alloc(sizeof(TsEdge) * depth);
	for (int32_t f = 0; f < nf; f++)
		w.feat[f].last = -1;
	for (int32_t t = 0; t < m->num_trees; t++)
		walk_tree(b, &w, m, t, counts);
	ts_free(w.feat);
	ts_free(w.active);
	ts_free(w.order);
	ts_free(w.frames);
	ts_free(w.same);
}

/* Build the table for every tree; the model must have passed validation. */
TsPathTable *
ts_paths_build(const TsModel *m)
{
	TsPathBuilder b = {0};
	TsPathTable *pt = ts_alloc0(sizeof(TsPathTable));

	pt->num_features = m->num_features;
	pt->num_outputs = m->num_outputs;
	pt->value_width = ts_leaf_size(m);
	pt->bias = ts_alloc0((size_t) m->num_outputs * sizeof(double));
	b.model = m;
	b.pt = pt;
	reserve(&b, 1);
	pt->path_start[0] = 0;
	walk_trees(&b, m, NULL);
	for (int32_t k = 0; k < m->num_outputs; k++)
		pt->bias[k] += m->base_margin[k];
	return pt;
}

void
ts_paths_count(const TsModel *m, int64_t *paths, int64_t *elements)
{
	int64_t		counts[2] = {0, 0};

	walk_trees(NULL, m, counts);
	*paths = counts[0];
	*elements = counts[1];
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
