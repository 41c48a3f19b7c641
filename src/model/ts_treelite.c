/*
 * ts_treelite.c - reader for Treelite's serialized checkpoint, format v4
 * (Model.serialize / serialize_bytes; the fields in the order of Treelite's
 * docs/serialization/v4.rst, little-endian, arrays as a uint64 count then
 * their elements). It is how scikit-learn's and cuML's forests arrive.
 *
 * A first pass checks every count against the bytes left and remembers
 * where each tree's arrays lie; only then are the node arrays allocated and
 * filled. Treelite's semantics become the model's own: each operator turns
 * into "x < threshold" on float32 (swapping the children for > and >=), a
 * category list becomes the left set, averaged ensembles (random forests)
 * have their leaves divided by the trees of each output, and the covers
 * are the nodes' hessian sums (scikit-learn's weighted sample counts), else
 * their data counts.
 */
#include "model/ts_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum
{
	TL_FLOAT32 = 2, TL_FLOAT64 = 3,		/* TypeInfo */
	TL_LEAF = 0, TL_NUMERICAL = 1, TL_CATEGORICAL = 2,	/* TreeNodeType */
	TL_LT = 2, TL_LE = 3, TL_GT = 4, TL_GE = 5	/* Operator */
};

/* The bytes being read and the position in them. */
typedef struct TlReader
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	TsError    *err;
} TlReader;

/* An array in the buffer: its elements and their count. */
typedef struct TlArray
{
	const uint8_t *at;
	uint64_t	n;
} TlArray;

/* Where one tree's arrays lie (pass one), for filling the model (pass two). */
typedef struct TlTree
{
	int32_t		num_nodes;
	TlArray		node_type, cleft, cright, split_index, default_left, leaf_value, threshold, cmp,
				cat_right, leaf_vector, lv_begin, lv_end, cat_list, cat_begin, cat_end,
				data_count, data_count_present, sum_hess, sum_hess_present;
} TlTree;

/* The model-wide fields the trees are read against. */
typedef struct TlHeader
{
	size_t		thr_size;		/* 4 or 8 */
	size_t		leaf_size;		/* 4 or 8 */
	int32_t		num_class;
	int32_t		vector_len;		/* values per leaf vector: 1 or num_class */
	bool		average;
	TlArray		class_id;
	TlArray		base_scores;
	char		postprocessor[64];
	float		sigmoid_alpha;
	int64_t		cat_words;		/* category set words the checkpoint's size allows */
} TlHeader;

/* Take n bytes at the position; false (a syntax error) past the end. */
static bool
take(TlReader *r, void *dst, size_t n)
{
	if (r->len - r->pos < n)
		return ts_fail(r->err, TS_ERR_SYNTAX, "Treelite checkpoint is truncated at byte %zu", r->pos);
	memcpy(dst, r->p + r->pos, n);
	r->pos += n;
	return true;
}

/* An array of elements of elem bytes: its count, checked against the bytes left, then skipped. */
static bool
take_array(TlReader *r, size_t elem, TlArray *a)
{
	if (!take(r, &a->n, sizeof(a->n)))
		return false;
	if (a->n > (r->len - r->pos) / elem)
		return ts_fail(r->err, TS_ERR_SYNTAX,
					   "Treelite checkpoint is truncated: an array of %llu elements at byte %zu",
					   (unsigned long long) a->n, r->pos);
	a->at = r->p + r->pos;
	r->pos += (size_t) a->n * elem;
	return true;
}

/* A name (an array of chars) into dst: no longer than size - 1 bytes, no NUL inside. */
static bool
take_string(TlReader *r, char *dst, size_t size)
{
	TlArray		a;

	if (!take_array(r, 1, &a))
		return false;
	if (a.n >= size || memchr(a.at, '\0', (size_t) a.n) != NULL)
		return ts_fail(r->err, TS_ERR_INVALID, "Treelite checkpoint has a malformed name at byte %zu", r->pos);
	memcpy(dst, a.at, (size_t) a.n);
	dst[a.n] = '\0';
	return true;
}

/* Element i of an array of int32, uint32, uint64, or of float or double by size. */
static int32_t
get_i32(const TlArray *a, uint64_t i)
{
	int32_t		v;

	memcpy(&v, a->at + i * sizeof(v), sizeof(v));
	return v;
}

static uint32_t
get_u32(const TlArray *a, uint64_t i)
{
	uint32_t	v;

	memcpy(&v, a->at + i * sizeof(v), sizeof(v));
	return v;
}

static uint64_t
get_u64(const TlArray *a, uint64_t i)
{
	uint64_t	v;

	memcpy(&v, a->at + i * sizeof(v), sizeof(v));
	return v;
}

static double
get_real(const TlArray *a, uint64_t i, size_t size)
{
	float		f;
	double		d;

	if (size == sizeof(float))
	{
		memcpy(&f, a->at + i * sizeof(f), sizeof(f));
		return f;
	}
	memcpy(&d, a->at + i * sizeof(d), sizeof(d));
	return d;
}

/* Skip the optional fields of an extension slot (a later Treelite's): name, element size, count, bytes. */
static bool
skip_optional_fields(TlReader *r)
{
	int32_t		count = 0;

	if (!take(r, &count, sizeof(count)))
		return false;
	if (count < 0)
		return ts_fail(r->err, TS_ERR_INVALID, "Treelite checkpoint has %d optional fields", count);
	for (int32_t i = 0; i < count; i++)
	{
		TlArray		name;
		uint64_t	elem = 0;
		TlArray		content;

		if (!take_array(r, 1, &name) || !take(r, &elem, sizeof(elem)))
			return false;
		if (elem < 1)
			return ts_fail(r->err, TS_ERR_INVALID, "Treelite optional field has elements of 0 bytes");
		if (!take_array(r, (size_t) elem, &content))
			return false;
	}
	return true;
}

/* The version and the two value types; refuses other major versions. */
static bool
read_versions(TlReader *r, TlHeader *h)
{
	int32_t		ver[3];
	uint8_t		types[2];

	if (!take(r, ver, sizeof(ver)))
		return false;
	if (ver[0] != 4)
		return ts_fail(r->err, TS_ERR_UNSUPPORTED,
					   "Treelite checkpoint version %d.%d is not supported: load it with Treelite 4 and serialize it again",
					   ver[0], ver[1]);
	if (!take(r, types, sizeof(types)))
		return false;
	for (int i = 0; i < 2; i++)
		if (types[i] != TL_FLOAT32 && types[i] != TL_FLOAT64)
			return ts_fail(r->err, TS_ERR_INVALID, "Treelite %s type %d is not float32 or float64",
						   i == 0 ? "threshold" : "leaf output", types[i]);
	h->thr_size = types[0] == TL_FLOAT32 ? 4 : 8;
	h->leaf_size = types[1] == TL_FLOAT32 ? 4 : 8;
	return true;
}

/* The task: one target, its classes, the leaf vector shape, which output each tree feeds. */
static bool
read_task(TlReader *r, TsModel *m, TlHeader *h, uint64_t num_tree)
{
	uint8_t		task_type = 0;
	uint8_t		average = 0;
	int32_t		num_target = 0;
	TlArray		num_class,
				shape,
				target_id;

	if (!take(r, &m->num_features, sizeof(int32_t)) || !take(r, &task_type, 1) ||
		!take(r, &average, 1) || !take(r, &num_target, sizeof(num_target)))
		return false;
	if (task_type > 4 || average > 1)
		return ts_fail(r->err, TS_ERR_INVALID, "Treelite task type %d or averaging flag %d is unknown",
					   task_type, average);
	if (task_type == 4)
		return ts_fail(r->err, TS_ERR_UNSUPPORTED, "isolation forests are not supported");
	if (num_target != 1)
		return ts_fail(r->err, TS_ERR_UNSUPPORTED,
					   "Treelite model has %d targets; models of one target are supported", num_target);
	h->average = average == 1;
	if (!take_array(r, sizeof(int32_t), &num_class) || !take_array(r, sizeof(int32_t), &shape) ||
		!take_array(r, sizeof(int32_t), &target_id) || !take_array(r, sizeof(int32_t), &h->class_id))
		return false;
	if (num_class.n != 1 || shape.n != 2 || target_id.n != num_tree || h->class_id.n != num_tree)
		return ts_fail(r->err, TS_ERR_INVALID, "Treelite task arrays do not match one target and %llu trees",
					   (unsigned long long) num_tree);
	h->num_class = get_i32(&num_class, 0);
	h->vector_len = get_i32(&shape, 1);
	if (h->num_class < 1 || h->num_class > TS_MAX_OUTPUTS)
		return ts_fail(r->err, TS_ERR_LIMIT, "number of classes %d out of range", h->num_class);
	if (get_i32(&shape, 0) != 1 || (h->vector_len != 1 && h->vector_len != h->num_class))
		return ts_fail(r->err, TS_ERR_INVALID, "Treelite leaf vector shape (%d, %d) does not fit %d classes",
					   get_i32(&shape, 0), h->vector_len, h->num_class);
	for (uint64_t t = 0; t < num_tree; t++)
		if ((get_i32(&target_id, t) != 0 && get_i32(&target_id, t) != -1) ||
			get_i32(&h->class_id, t) < -1 || get_i32(&h->class_id, t) >= h->num_class)
			return ts_fail(r->err, TS_ERR_INVALID, "Treelite tree %llu has target %d and class %d",
						   (unsigned long long) t, get_i32(&target_id, t), get_i32(&h->class_id, t));
	m->num_outputs = h->num_class;
	return true;
}

/* The header: versions, trees, task, postprocessor and base scores; optional fields skipped. */
static bool
read_header(TlReader *r, TsModel *m, TlHeader *h, uint64_t *num_tree)
{
	float		ratio_c;
	TlArray		attributes;

	if (!read_versions(r, h) || !take(r, num_tree, sizeof(*num_tree)))
		return false;
	if (*num_tree < 1 || *num_tree > TS_MAX_TREES)
		return ts_fail(r->err, TS_ERR_LIMIT, "number of trees %llu out of range 1..%d",
					   (unsigned long long) *num_tree, TS_MAX_TREES);
	if (!read_task(r, m, h, *num_tree) ||
		!take_string(r, h->postprocessor, sizeof(h->postprocessor)) ||
		!take(r, &h->sigmoid_alpha, sizeof(float)) || !take(r, &ratio_c, sizeof(float)) ||
		!take_array(r, sizeof(double), &h->base_scores) || !take_array(r, 1, &attributes))
		return false;
	if (h->base_scores.n != (uint64_t) h->num_class)
		return ts_fail(r->err, TS_ERR_INVALID, "Treelite model has %llu base scores for %d classes",
					   (unsigned long long) h->base_scores.n, h->num_class);
	return skip_optional_fields(r);
}

/*
 * Leaves are the nodes without children, as Treelite decides (cleft = -1),
 * and their node type must say so. A vector model's leaves each need their
 * own values in the tree's leaf vectors: ranges that overlap would make
 * small bytes ask for num_class values per node.
 */
static bool
check_shape(TlReader *r, const TlHeader *h, int64_t t, const TlTree *tr)
{
	uint64_t	leaves = 0;

	for (int32_t i = 0; i < tr->num_nodes; i++)
	{
		bool		leaf = get_i32(&tr->cleft, i) == -1;

		if (leaf != (tr->node_type.at[i] == TL_LEAF) || leaf != (get_i32(&tr->cright, i) == -1))
			return ts_fail(r->err, TS_ERR_INVALID,
						   "tree %lld node %d: its node type %d does not match its children (%d, %d)",
						   (long long) t, i, (int8_t) tr->node_type.at[i], get_i32(&tr->cleft, i),
						   get_i32(&tr->cright, i));
		leaves += leaf;
	}
	if (h->vector_len > 1 && leaves > tr->leaf_vector.n / (uint64_t) h->vector_len)
		return ts_fail(r->err, TS_ERR_INVALID, "tree %lld has %llu leaves but %llu leaf vector values",
					   (long long) t, (unsigned long long) leaves, (unsigned long long) tr->leaf_vector.n);
	return true;
}

/* One tree's arrays, their lengths checked against its node count. */
static bool
read_tree(TlReader *r, const TlHeader *h, int64_t t, TlTree *tr)
{
	uint8_t		has_categorical;
	struct
	{
		TlArray    *a;
		size_t		elem;
		bool		per_node;
	}			fields[] = {
		{&tr->node_type, 1, true}, {&tr->cleft, 4, true}, {&tr->cright, 4, true},
		{&tr->split_index, 4, true}, {&tr->default_left, 1, true},
		{&tr->leaf_value, h->leaf_size, true}, {&tr->threshold, h->thr_size, true},
		{&tr->cmp, 1, true}, {&tr->cat_right, 1, true}, {&tr->leaf_vector, h->leaf_size, false},
		{&tr->lv_begin, 8, true}, {&tr->lv_end, 8, true}, {&tr->cat_list, 4, false},
		{&tr->cat_begin, 8, true}, {&tr->cat_end, 8, true}, {&tr->data_count, 8, false},
		{&tr->data_count_present, 1, false}, {&tr->sum_hess, 8, false},
		{&tr->sum_hess_present, 1, false}
	};
	TlArray		gain,
				gain_present;

	if (!take(r, &tr->num_nodes, sizeof(int32_t)) || !take(r, &has_categorical, 1))
		return false;
	if (tr->num_nodes < 1 || tr->num_nodes > TS_MAX_NODES)
		return ts_fail(r->err, TS_ERR_LIMIT, "tree %lld has %d nodes", (long long) t, tr->num_nodes);
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
	{
		if (!take_array(r, fields[f].elem, fields[f].a))
			return false;
		if (fields[f].per_node && fields[f].a->n != (uint64_t) tr->num_nodes)
			return ts_fail(r->err, TS_ERR_INVALID, "tree %lld: a node array has %llu elements for %d nodes",
						   (long long) t, (unsigned long long) fields[f].a->n, tr->num_nodes);
	}
	if ((tr->data_count.n != 0 && tr->data_count.n != (uint64_t) tr->num_nodes) ||
		tr->data_count_present.n != tr->data_count.n ||
		(tr->sum_hess.n != 0 && tr->sum_hess.n != (uint64_t) tr->num_nodes) ||
		tr->sum_hess_present.n != tr->sum_hess.n)
		return ts_fail(r->err, TS_ERR_INVALID, "tree %lld: node statistics do not match its %d nodes",
					   (long long) t, tr->num_nodes);
	return take_array(r, 8, &gain) && take_array(r, 1, &gain_present) &&
		skip_optional_fields(r) && skip_optional_fields(r) && check_shape(r, h, t, tr);
}

/* Whether every node of every tree has the statistic (present flags all set). */
static bool
all_present(const TlTree *trees, uint64_t num_tree, bool hess)
{
	for (uint64_t t = 0; t < num_tree; t++)
	{
		const TlArray *present = hess ? &trees[t].sum_hess_present : &trees[t].data_count_present;

		if (present->n == 0)
			return false;
		for (uint64_t i = 0; i < present->n; i++)
			if (present->at[i] != 1)
				return false;
	}
	return true;
}

/* A node's segment [begin, end) of an array of len elements, checked. */
static bool
segment(const TlArray *begin, const TlArray *end, uint64_t i, uint64_t len,
		uint64_t *b, uint64_t *e)
{
	*b = get_u64(begin, i);
	*e = get_u64(end, i);
	return *b <= *e && *e <= len;
}

/* A leaf: its value or vector, divided by the trees that share each output. */
static bool
fill_leaf(TsModel *m, const TlHeader *h, const TlTree *tr, int32_t i, int64_t g,
		  const double *divisor, int32_t group, TsError *err)
{
	int32_t		width = ts_leaf_size(m);
	uint64_t	b,
				e;

	m->left[g] = m->right[g] = -1;
	m->split_feature[g] = 0;
	m->threshold[g] = 0.0f;
	m->default_left[g] = 0;
	if (!segment(&tr->lv_begin, &tr->lv_end, i, tr->leaf_vector.n, &b, &e))
		return ts_fail(err, TS_ERR_INVALID, "leaf %d has a leaf vector outside its tree's", i);
	/* a vector leaf has its vector; a scalar leaf its value, or a vector of one */
	if (m->leaf_size > 1 ? e - b != (uint64_t) width : e - b > 1)
		return ts_fail(err, TS_ERR_INVALID, "leaf %d has %llu values, the model %d",
					   i, (unsigned long long) (e - b), width);
	for (int32_t k = 0; k < width; k++)
	{
		double		v = e > b ? get_real(&tr->leaf_vector, b + k, h->leaf_size)
			: get_real(&tr->leaf_value, i, h->leaf_size);

		m->leaf_value[g * width + k] = v / divisor[group + k];
	}
	return true;
}

/* A numerical test: its operator as "x < threshold", children swapped for > and >=. */
static bool
fill_numerical(TsModel *m, const TlHeader *h, const TlTree *tr, int32_t i, int64_t g, TsError *err)
{
	double		t = get_real(&tr->threshold, i, h->thr_size);
	int8_t		op = (int8_t) tr->cmp.at[i];
	bool		swap = op == TL_GT || op == TL_GE;

	if (isnan(t))
		return ts_fail(err, TS_ERR_INVALID, "node %d has a NaN threshold", i);
	if (op < TL_LT || op > TL_GE)
		return ts_fail(err, TS_ERR_UNSUPPORTED, "node %d compares with operator %d; <, <=, > and >= are supported",
					   i, op);
	/* x > t is not x <= t: the children trade places, and so does the missing value's */
	m->threshold[g] = op == TL_LE || op == TL_GT ? ts_threshold_le(t) : ts_threshold_lt(t);
	if (swap)
	{
		int32_t		l = m->left[g];

		m->left[g] = m->right[g];
		m->right[g] = l;
		m->default_left[g] = !m->default_left[g];
	}
	return true;
}

/*
 * A categorical test: the categories that go left, Treelite's list or its
 * complement. A set takes words for its largest category, so the sets'
 * words are held to what the checkpoint's size allows (lists may share
 * one large value).
 */
static bool
fill_categorical(TsModel *m, const TlHeader *h, const TlTree *tr, int32_t i, int64_t g, TsError *err)
{
	bool		listed_right = tr->cat_right.at[i] == 1;
	uint64_t	b,
				e;
	uint32_t	nbits = 0;
	int64_t		set;

	if (!segment(&tr->cat_begin, &tr->cat_end, i, tr->cat_list.n, &b, &e))
		return ts_fail(err, TS_ERR_INVALID, "node %d has a category list outside its tree's", i);
	for (uint64_t c = b; c < e; c++)
	{
		uint32_t	v = get_u32(&tr->cat_list, c);

		if (v >= TS_MAX_CATEGORIES)
			return ts_fail(err, TS_ERR_LIMIT, "node %d lists category %u", i, v);
		if (v + 1 > nbits)
			nbits = v + 1;
	}
	/* a value outside 0..nbits-1 (negative, unseen, NaN aside) is in no list */
	if (m->cat_pool_len + ts_catset_len(nbits) > h->cat_words ||
		(set = ts_model_add_catset(m, nbits, listed_right)) < 0)
		return ts_fail(err, TS_ERR_LIMIT, "model's category sets are too large for its size");
	ts_check_interrupts_after(1 + nbits / 32 + (int64_t) (e - b));
	if (listed_right && nbits > 0)
	{
		memset(m->cat_pool + set + 2, 0xff, sizeof(uint32_t) * (size_t) ((nbits + 31) / 32));
		if (nbits % 32 != 0)	/* no bit past the set's last category */
			m->cat_pool[set + 2 + nbits / 32] = (1u << (nbits % 32)) - 1;
	}
	for (uint64_t c = b; c < e; c++)
	{
		uint32_t	v = get_u32(&tr->cat_list, c);

		if (listed_right)
			m->cat_pool[set + 2 + v / 32] &= ~(1u << (v % 32));
		else
			m->cat_pool[set + 2 + v / 32] |= 1u << (v % 32);
	}
	m->cat_set[g] = (int32_t) set;
	return true;
}

/* Fill node i of a tree (global index g): its cover, then a leaf or a test. */
static bool
fill_node(TsModel *m, const TlHeader *h, const TlTree *tr, int32_t i, int64_t g, int32_t group,
		  bool hess, const double *divisor, TsError *err)
{
	int8_t		type = (int8_t) tr->node_type.at[i];

	m->cover[g] = hess ? get_real(&tr->sum_hess, i, 8)
		: !m->covers_missing ? (double) get_u64(&tr->data_count, i) : 0.0;
	if (tr->default_left.at[i] > 1 || tr->cat_right.at[i] > 1)
		return ts_fail(err, TS_ERR_INVALID, "node %d has a flag not 0 or 1", i);
	if (type == TL_LEAF)
		return fill_leaf(m, h, tr, i, g, divisor, group, err);
	m->left[g] = get_i32(&tr->cleft, i);
	m->right[g] = get_i32(&tr->cright, i);
	m->split_feature[g] = get_i32(&tr->split_index, i);
	m->default_left[g] = tr->default_left.at[i];
	m->threshold[g] = 0.0f;
	if (type == TL_NUMERICAL)
		return fill_numerical(m, h, tr, i, g, err);
	if (type == TL_CATEGORICAL)
		return fill_categorical(m, h, tr, i, g, err);
	return ts_fail(err, TS_ERR_INVALID, "node %d has node type %d", i, type);
}

/* Fill every tree's nodes (pass two). */
static bool
fill_trees(TsModel *m, const TlHeader *h, const TlTree *trees, bool hess, const double *divisor,
		   TsError *err)
{
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		for (int32_t i = 0; i < trees[t].num_nodes; i++)
			if (!fill_node(m, h, &trees[t], i, m->tree_offset[t] + i, m->tree_group[t], hess, divisor, err))
			{
				char		node[sizeof(err->message)];

				snprintf(node, sizeof(node), "%s", err->message);
				snprintf(err->message, sizeof(err->message), "tree %d %.480s", t, node);
				return false;
			}
		ts_check_interrupts_after(4 * (int64_t) trees[t].num_nodes);
	}
	return true;
}

/*
 * Which output each tree adds to, and values per leaf: a vector-leaf model
 * (scikit-learn's forest classifiers: class distributions) has every tree
 * feed every class; otherwise each tree feeds its class.
 */
static bool
assign_outputs(TsModel *m, const TlHeader *h, TsError *err)
{
	m->leaf_size = h->vector_len > 1 ? h->vector_len : 1;
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int32_t		c = get_i32(&h->class_id, t);

		if (h->vector_len > 1 ? c != -1 : (c == -1 && h->num_class > 1))
			return ts_fail(err, TS_ERR_INVALID,
						   "Treelite tree %d has class %d in a model with leaf vectors of %d values",
						   t, c, h->vector_len);
		m->tree_group[t] = c < 0 ? 0 : c;
	}
	return true;
}

/*
 * Each output's divisor: the trees that feed it when the model averages
 * them (a random forest predicts their mean), else 1. Treelite adds the
 * base scores after averaging; so does the model's base margin.
 */
static double *
output_divisors(const TsModel *m, const TlHeader *h)
{
	double	   *divisor = ts_alloc((size_t) m->num_outputs * sizeof(double));

	for (int32_t k = 0; k < m->num_outputs; k++)
		divisor[k] = h->average ? 0.0 : 1.0;
	for (int32_t t = 0; h->average && t < m->num_trees; t++)
		for (int32_t k = 0; k < ts_leaf_size(m); k++)
			divisor[m->tree_group[t] + k] += 1.0;
	for (int32_t k = 0; k < m->num_outputs; k++)
		if (divisor[k] == 0.0)
			divisor[k] = 1.0;
	return divisor;
}

/*
 * The postprocessor as the model's link; false for one without a SHAP-
 * compatible link. Treelite's sigmoid, exponential and hinge transform the
 * first output alone, so they come with one output only.
 */
static bool
set_link(TsModel *m, const TlHeader *h, TsError *err)
{
	const char *pp = h->postprocessor;
	bool		one = strcmp(pp, "sigmoid") == 0 || strcmp(pp, "exponential") == 0 || strcmp(pp, "hinge") == 0;

	m->link_scale = 1.0;
	if (one && h->num_class > 1)
		return ts_fail(err, TS_ERR_UNSUPPORTED,
					   "Treelite postprocessor \"%s\" transforms one output; the model has %d", pp, h->num_class);
	if (strcmp(pp, "identity") == 0 || strcmp(pp, "identity_multiclass") == 0)
		m->link = TS_LINK_IDENTITY;
	else if (strcmp(pp, "sigmoid") == 0 || strcmp(pp, "multiclass_ova") == 0)
	{
		m->link = TS_LINK_LOGISTIC;
		m->link_scale = h->sigmoid_alpha;
	}
	else if (strcmp(pp, "softmax") == 0)
		m->link = TS_LINK_SOFTMAX;
	else if (strcmp(pp, "exponential") == 0)
		m->link = TS_LINK_EXP;
	else if (strcmp(pp, "hinge") == 0)
		m->link = TS_LINK_HINGE;
	else
		return ts_fail(err, TS_ERR_UNSUPPORTED, "Treelite postprocessor \"%s\" is not supported", pp);
	m->objective = ts_alloc(strlen(pp) + 1);
	strcpy(m->objective, pp);
	return true;
}

/* A tree's fixed bytes (counts of its 21 arrays, its node count, flags): no tree is smaller. */
#define TL_MIN_TREE_BYTES	(4 + 1 + 21 * 8 + 2 * 4)

/* Pass one: where every tree's arrays lie; the node offsets, checked against the limit. */
static bool
index_trees(TlReader *r, TsModel *m, const TlHeader *h, TlTree *trees, TsError *err)
{
	m->tree_offset[0] = 0;
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		if (!read_tree(r, h, t, &trees[t]))
			return false;
		if (m->tree_offset[t] + trees[t].num_nodes > TS_MAX_NODES)
			return ts_fail(err, TS_ERR_LIMIT, "model has too many nodes");
		m->tree_offset[t + 1] = m->tree_offset[t] + trees[t].num_nodes;
		ts_check_interrupts_after(trees[t].num_nodes);
	}
	if (r->pos != r->len)
		return ts_fail(err, TS_ERR_SYNTAX, "Treelite checkpoint has %zu bytes after its last tree",
					   r->len - r->pos);
	m->num_nodes = m->tree_offset[m->num_trees];
	return true;
}

/* Build the model from the checkpoint; the caller frees it on failure. */
static bool
build_model(TsModel *m, TlReader *r, TsError *err)
{
	TlHeader	h;
	uint64_t	num_tree = 0;
	TlTree	   *trees;
	double	   *divisor;
	bool		hess;
	bool		ok;

	if (!read_header(r, m, &h, &num_tree))
		return false;
	/* sixteen set words per four bytes of checkpoint, and 64K words besides */
	h.cat_words = 16 * (int64_t) (r->len / 4) + 65536;
	if (num_tree > (r->len - r->pos) / TL_MIN_TREE_BYTES)
		return ts_fail(err, TS_ERR_SYNTAX, "Treelite checkpoint is too short for %llu trees",
					   (unsigned long long) num_tree);
	m->num_trees = (int32_t) num_tree;
	m->tree_offset = ts_alloc(((size_t) num_tree + 1) * sizeof(int64_t));
	m->tree_group = ts_alloc(((size_t) num_tree + 1) * sizeof(int32_t));
	trees = ts_alloc((size_t) num_tree * sizeof(TlTree));
	ok = index_trees(r, m, &h, trees, err) && assign_outputs(m, &h, err) && set_link(m, &h, err);
	if (ok)
	{
		ts_model_alloc_nodes(m);
		m->base_margin = ts_alloc((size_t) m->num_outputs * sizeof(double));
		for (int32_t k = 0; k < m->num_outputs; k++)
			m->base_margin[k] = get_real(&h.base_scores, k, 8);
		/* scikit-learn's hessian sums are its weighted sample counts, the covers shap takes */
		hess = all_present(trees, num_tree, true);
		m->covers_missing = !hess && !all_present(trees, num_tree, false);
		divisor = output_divisors(m, &h);
		ok = fill_trees(m, &h, trees, hess, divisor, err);
		ts_free(divisor);
	}
	ts_free(trees);
	return ok && ts_model_validate(m, err);
}

/* Read a Treelite checkpoint (format v4); on failure everything is freed. */
TsModel *
ts_treelite_read(const char *buf, size_t len, TsError *err)
{
	TsModel    *m = ts_alloc0(sizeof(TsModel));
	TlReader	r = {(const uint8_t *) buf, len, 0, err};

	m->format = "treelite";
	if (!build_model(m, &r, err))
	{
		ts_model_free(m);
		m = NULL;
	}
	return m;
}
