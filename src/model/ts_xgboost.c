/*
 * ts_xgboost.c - reader for XGBoost models (as saved by XGBoost 1.7, 2.x and
 * 3.x) in JSON or UBJSON: both parse to the DOM of ts_json.h, and one
 * builder turns that into a TsModel.
 */
#include "model/ts_json.h"
#include "model/ts_model.h"
#include "model/ts_xgboost.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Copy a string into core-allocated memory. */
static char *
copy_string(const char *s, size_t len)
{
	char	   *d = ts_alloc(len + 1);

	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

/* Read a member that XGBoost writes as an integer-in-a-string (or a number). */
static bool
get_int_param(const TsJson *obj, const char *key, int64_t dflt, int64_t lo, int64_t hi,
			  int64_t *out, TsError *err)
{
	TsJson	   *v = ts_json_get(obj, key);
	double		d;

	if (v == NULL)
	{
		*out = dflt;
		return true;
	}
	if (v->type == TSJ_NUMBER)
		d = v->u.number;
	else if (v->type == TSJ_STRING)
	{
		char	   *end;

		errno = 0;
		d = strtod(v->u.str.ptr, &end);
		if (end == v->u.str.ptr || *end != '\0' || errno == ERANGE)
			return ts_fail(err, TS_ERR_INVALID, "\"%s\" is not an integer: \"%.40s\"",
						   key, v->u.str.ptr);
	}
	else
		return ts_fail(err, TS_ERR_INVALID, "\"%s\" must be an integer, not %s",
					   key, ts_json_type_name(v));
	if (d != floor(d) || d < (double) lo || d > (double) hi)
		return ts_fail(err, TS_ERR_LIMIT, "\"%s\" = %.15g is out of range %lld..%lld",
					   key, d, (long long) lo, (long long) hi);
	*out = (int64_t) d;
	return true;
}

/* Find a tree's array member and check it has n elements. */
static const TsJson *
tree_array(const TsJson *tree, int32_t t, const char *key, size_t n, TsError *err)
{
	const TsJson *a = ts_json_get(tree, key);

	if (a == NULL || (a->type != TSJ_ARRAY && a->type != TSJ_NUMARRAY))
	{
		ts_fail(err, TS_ERR_INVALID, "tree %d: \"%s\" must be an array, not %s",
				t, key, ts_json_type_name(a));
		return NULL;
	}
	if (ts_json_array_len(a) != n)
	{
		ts_fail(err, TS_ERR_INVALID, "tree %d: \"%s\" has %zu elements, expected %zu",
				t, key, ts_json_array_len(a), n);
		return NULL;
	}
	return a;
}

/* Read an integer array (children, features) into dst with range checks. */
static bool
read_int_array(const TsJson *tree, int32_t t, const char *key, size_t n, int32_t *dst,
			   TsError *err)
{
	const TsJson *a = tree_array(tree, t, key, n, err);

	if (a == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
	{
		double		d;

		if (!ts_json_number_at(a, i, &d) || d != floor(d) || d < -2147483648.0 || d > 2147483647.0)
			return ts_fail(err, TS_ERR_INVALID, "tree %d: \"%s\"[%zu] is not a 32-bit integer",
						   t, key, i);
		dst[i] = (int32_t) d;
	}
	return true;
}

/* Read a floating-point array into dst (finiteness is checked by validation). */
static bool
read_double_array(const TsJson *tree, int32_t t, const char *key, size_t n, double *dst,
				  TsError *err)
{
	const TsJson *a = tree_array(tree, t, key, n, err);

	if (a == NULL)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!ts_json_number_at(a, i, &dst[i]))
			return ts_fail(err, TS_ERR_INVALID, "tree %d: \"%s\"[%zu] is not a number", t, key, i);
	return true;
}

/* A tree's size_leaf_vector: 0 or 1 for scalar leaves, K for vector leaves. */
static bool
leaf_vector_size(const TsJson *tree, int64_t *k, TsError *err)
{
	if (!get_int_param(ts_json_get(tree, "tree_param"), "size_leaf_vector", 1, 0,
					   TS_MAX_OUTPUTS, k, err))
		return false;
	if (*k == 0)
		*k = 1;
	return true;
}

/* Check the declared node count and that the tree's leaves are the model's kind. */
static bool
check_tree_shape(const TsModel *m, const TsJson *tree, int32_t t, size_t n, TsError *err)
{
	int64_t		leaf_size;
	int64_t		declared;

	if (!leaf_vector_size(tree, &leaf_size, err))
		return false;
	if (leaf_size != ts_leaf_size(m))
		return ts_fail(err, TS_ERR_INVALID, "tree %d has leaves of %lld values, tree 0 of %d",
					   t, (long long) leaf_size, ts_leaf_size(m));
	if (!get_int_param(ts_json_get(tree, "tree_param"), "num_nodes", (int64_t) n, 0, INT32_MAX,
					   &declared, err))
		return false;
	if (declared != (int64_t) n)
		return ts_fail(err, TS_ERR_INVALID, "tree %d: num_nodes is %lld but arrays have %zu nodes",
					   t, (long long) declared, n);
	return true;
}

/*
 * Vector leaves (XGBoost's multi_output_tree): a leaf's right_children is
 * its index into leaf_weights, which holds leaf_size values per leaf.
 */
static bool
read_vector_leaves(TsModel *m, const TsJson *tree, int32_t t, int64_t base, size_t n,
				   double weight, TsError *err)
{
	const TsJson *w = ts_json_get(tree, "leaf_weights");
	size_t		k = (size_t) ts_leaf_size(m);

	if (w == NULL || (w->type != TSJ_NUMARRAY && w->type != TSJ_ARRAY))
		return ts_fail(err, TS_ERR_INVALID, "tree %d: vector leaves need a \"leaf_weights\" array", t);
	for (size_t i = 0; i < n; i++)
	{
		int64_t		leaf = m->right[base + i];

		if (m->left[base + i] != -1)
			continue;
		if (leaf < 0 || (size_t) leaf >= ts_json_array_len(w) / k)
			return ts_fail(err, TS_ERR_INVALID, "tree %d leaf %zu: leaf index %lld is out of range",
						   t, i, (long long) leaf);
		for (size_t j = 0; j < k; j++)
			if (!ts_json_number_at(w, (size_t) leaf * k + j, &m->leaf_value[(base + i) * k + j]))
				return ts_fail(err, TS_ERR_INVALID, "tree %d: leaf_weights holds a non-number", t);
			else
				m->leaf_value[(base + i) * k + j] *= weight;
		m->right[base + i] = -1;
	}
	return true;
}

/* One node's category list (the categories that go right) as its left set: the complement. */
static bool
add_category_split(TsModel *m, const TsJson *cats, size_t seg, size_t size, int64_t node,
				   int32_t t, TsError *err)
{
	double		top = -1.0;
	int64_t		offset;
	uint32_t   *set;

	for (size_t i = seg; i < seg + size; i++)
	{
		double		c;

		if (!ts_json_number_at(cats, i, &c) || c != floor(c) || c < 0 || c >= TS_MAX_CATEGORIES)
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d: categories[%zu] is not a category in 0..%d", t, i,
						   TS_MAX_CATEGORIES - 1);
		if (c > top)
			top = c;
	}
	offset = ts_model_add_catset(m, (uint32_t) (top + 1.0), true);
	if (offset < 0)
		return ts_fail(err, TS_ERR_LIMIT, "model's category sets are too large");
	set = m->cat_pool + offset;
	for (uint32_t c = 0; c < set[0]; c++)
		set[2 + c / 32] |= 1u << (c % 32);
	for (size_t i = seg; i < seg + size; i++)
	{
		double		c;

		ts_json_number_at(cats, i, &c);
		set[2 + (uint32_t) c / 32] &= ~(1u << ((uint32_t) c % 32));
	}
	m->cat_set[node] = (int32_t) offset;
	return true;
}

/* Read one entry of the categories_* arrays: node, segment start and size. */
static bool
category_entry(const TsJson *tree, int32_t t, size_t k, size_t n, size_t ncats, size_t *node,
			   size_t *seg, size_t *size, TsError *err)
{
	const char *keys[3] = {"categories_nodes", "categories_segments", "categories_sizes"};
	double		v[3];

	for (int i = 0; i < 3; i++)
	{
		const TsJson *a = ts_json_get(tree, keys[i]);

		if (k >= ts_json_array_len(a) || !ts_json_number_at(a, k, &v[i]) || v[i] != floor(v[i]) ||
			v[i] < 0 || v[i] > (double) ncats + n)
			return ts_fail(err, TS_ERR_INVALID, "tree %d: %s[%zu] is missing or malformed",
						   t, keys[i], k);
	}
	*node = (size_t) v[0];
	*seg = (size_t) v[1];
	*size = (size_t) v[2];
	if (*node >= n || *seg + *size > ncats)
		return ts_fail(err, TS_ERR_INVALID, "tree %d: category list %zu is out of range", t, k);
	return true;
}

/*
 * Categorical splits: split_type 1 marks them, and categories_nodes,
 * _segments and _sizes slice each node's list out of "categories".
 */
static bool
read_categories(TsModel *m, const TsJson *tree, int32_t t, int64_t base, size_t n, TsError *err)
{
	const TsJson *st = ts_json_get(tree, "split_type");
	const TsJson *cats = ts_json_get(tree, "categories");
	size_t		nlists = ts_json_array_len(ts_json_get(tree, "categories_nodes"));

	for (size_t i = 0; i < n; i++)
		m->cat_set[base + i] = -1;
	if (st == NULL || ts_json_array_len(st) == 0)
		return true;
	if ((st = tree_array(tree, t, "split_type", n, err)) == NULL)
		return false;
	if (nlists > 0 && (cats == NULL || (cats->type != TSJ_NUMARRAY && cats->type != TSJ_ARRAY)))
		return ts_fail(err, TS_ERR_INVALID, "tree %d: \"categories\" must be an array", t);
	for (size_t k = 0; k < nlists; k++)
	{
		size_t		node = 0,
					seg = 0,
					size = 0;

		if (!category_entry(tree, t, k, n, ts_json_array_len(cats), &node, &seg, &size, err))
			return false;
		if (m->cat_set[base + node] != -1)
			return ts_fail(err, TS_ERR_INVALID, "tree %d node %zu has two category lists", t, node);
		if (!add_category_split(m, cats, seg, size, base + (int64_t) node, t, err))
			return false;
	}
	for (size_t i = 0; i < n; i++)
	{
		double		d;

		if (!ts_json_number_at(st, i, &d) || (d != 0.0 && d != 1.0))
			return ts_fail(err, TS_ERR_INVALID, "tree %d: split_type[%zu] is not 0 or 1", t, i);
		if ((d == 1.0) != (m->cat_set[base + i] != -1))
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %zu: split_type and the category lists disagree", t, i);
	}
	return true;
}

/* default_left: 0/1 numbers or booleans. */
static bool
read_default_left(TsModel *m, const TsJson *tree, int32_t t, int64_t base, size_t n, TsError *err)
{
	double	   *tmp = ts_alloc(n * sizeof(double));
	bool		ok = read_double_array(tree, t, "default_left", n, tmp, err);

	for (size_t i = 0; ok && i < n; i++)
	{
		if (tmp[i] != 0.0 && tmp[i] != 1.0)
			ok = ts_fail(err, TS_ERR_INVALID, "tree %d: default_left[%zu] is not 0 or 1", t, i);
		else
			m->default_left[base + i] = (uint8_t) tmp[i];
	}
	ts_free(tmp);
	return ok;
}

/* split_conditions: thresholds on numeric splits, values on scalar leaves. */
static bool
read_conditions(TsModel *m, const TsJson *tree, int32_t t, int64_t base, size_t n, double weight,
				TsError *err)
{
	double	   *cond = ts_alloc(n * sizeof(double));
	bool		ok = read_double_array(tree, t, "split_conditions", n, cond, err);

	for (size_t i = 0; ok && i < n; i++)
	{
		double		c = cond[i];

		m->threshold[base + i] = 0.0f;	/* leaves and categorical splits: unused */
		if (m->left[base + i] == -1)
		{
			if (ts_leaf_size(m) == 1)
				m->leaf_value[base + i] = c * weight;
		}
		else if (m->cat_set[base + i] != -1)
			continue;
		/*
		 * XGBoost writes -inf for a split of present against missing values
		 * (trained on the GPU) and may write +inf: both are thresholds; NaN
		 * and finite values beyond float are not.
		 */
		else if (isnan(c))
			ok = ts_fail(err, TS_ERR_INVALID, "tree %d node %zu: split threshold is NaN", t, i);
		else if (isfinite(c) && !ts_rounds_to_float(c))
			ok = ts_fail(err, TS_ERR_INVALID,
						 "tree %d node %zu: split threshold %g is outside float range", t, i, c);
		else
			m->threshold[base + i] = (float) c;
	}
	ts_free(cond);
	return ok;
}

/* Copy one tree's arrays into the model's flat arrays starting at base. */
static bool
read_tree(TsModel *m, const TsJson *tree, int32_t t, int64_t base, size_t n, double weight,
		  TsError *err)
{
	if (tree->type != TSJ_OBJECT)
		return ts_fail(err, TS_ERR_INVALID, "tree %d is not an object", t);
	return check_tree_shape(m, tree, t, n, err) &&
		read_categories(m, tree, t, base, n, err) &&
		read_int_array(tree, t, "left_children", n, m->left + base, err) &&
		read_int_array(tree, t, "right_children", n, m->right + base, err) &&
		read_int_array(tree, t, "split_indices", n, m->split_feature + base, err) &&
		read_double_array(tree, t, "sum_hessian", n, m->cover + base, err) &&
		read_default_left(m, tree, t, base, n, err) &&
		read_conditions(m, tree, t, base, n, weight, err) &&
		(ts_leaf_size(m) == 1 || read_vector_leaves(m, tree, t, base, n, weight, err));
}

/*
 * Turn base_score into a margin as XGBoost's objective does (ProbToMargin):
 * the logit for the logistic objectives, the log for those with an exp link
 * (count:poisson, reg:gamma, reg:tweedie, survival:cox, survival:aft), and
 * unchanged for every other, binary:logitraw included (since XGBoost 1.4).
 */
static bool
base_score_to_margin(const char *objective, double p, double *out, TsError *err)
{
	if (ts_objective_link(objective) == TS_LINK_LOGISTIC)
	{
		if (!(p > 0.0 && p < 1.0))
			return ts_fail(err, TS_ERR_INVALID,
						   "base_score %g must lie in (0, 1) for objective %s", p, objective);
		*out = log(p / (1.0 - p));
		return true;
	}
	if (ts_objective_link(objective) == TS_LINK_EXP)
	{
		if (!(p > 0.0))
			return ts_fail(err, TS_ERR_INVALID,
						   "base_score %g must be positive for objective %s", p, objective);
		*out = log(p);
		return true;
	}
	*out = p;
	return true;
}

/* Parse base_score: "0.5", "5E-1", "[5E-1]" or "[a,b,c]" (one per output). */
static bool
read_base_score(TsModel *m, const TsJson *param, TsError *err)
{
	const TsJson *v = ts_json_get(param, "base_score");
	const char *s;
	char	   *end;
	int32_t		count = 0;

	m->base_margin = ts_alloc0((size_t) m->num_outputs * sizeof(double));
	if (v == NULL)
		return ts_fail(err, TS_ERR_INVALID, "learner_model_param has no base_score");
	if (v->type == TSJ_NUMBER)
	{
		if (!base_score_to_margin(m->objective, v->u.number, &m->base_margin[0], err))
			return false;
		for (int32_t k = 1; k < m->num_outputs; k++)
			m->base_margin[k] = m->base_margin[0];
		return true;
	}
	if (v->type != TSJ_STRING)
		return ts_fail(err, TS_ERR_INVALID, "base_score must be a string, not %s",
					   ts_json_type_name(v));
	s = v->u.str.ptr;
	while (*s == ' ')
		s++;
	if (*s == '[')
		s++;
	for (;;)
	{
		double		p;

		errno = 0;
		p = strtod(s, &end);
		if (end == s || errno == ERANGE)
			return ts_fail(err, TS_ERR_INVALID, "base_score is not a number: \"%.60s\"",
						   v->u.str.ptr);
		if (count >= m->num_outputs)
			return ts_fail(err, TS_ERR_INVALID, "base_score has more values than the model has outputs (%d)",
						   m->num_outputs);
		if (!base_score_to_margin(m->objective, p, &m->base_margin[count], err))
			return false;
		count++;
		s = end;
		while (*s == ' ')
			s++;
		if (*s != ',')
			break;
		s++;
	}
	if (*s == ']')
		s++;
	if (*s != '\0')
		return ts_fail(err, TS_ERR_INVALID, "base_score is malformed: \"%.60s\"", v->u.str.ptr);
	if (count == 1)
		for (int32_t k = 1; k < m->num_outputs; k++)
			m->base_margin[k] = m->base_margin[0];
	else if (count != m->num_outputs)
		return ts_fail(err, TS_ERR_INVALID, "base_score has %d values but the model has %d outputs",
					   count, m->num_outputs);
	return true;
}

/* Read optional feature names; they must be distinct, non-empty strings. */
static bool
read_feature_names(TsModel *m, const TsJson *learner, TsError *err)
{
	const TsJson *names = ts_json_get(learner, "feature_names");
	size_t		n = ts_json_array_len(names);

	if (names == NULL || n == 0)
		return true;
	if (names->type != TSJ_ARRAY)
		return ts_fail(err, TS_ERR_INVALID, "feature_names must be an array of strings");
	if (n != (size_t) m->num_features)
		return ts_fail(err, TS_ERR_INVALID, "feature_names has %zu names but num_feature is %d",
					   n, m->num_features);
	m->feature_names = ts_alloc0(n * sizeof(char *));
	for (size_t i = 0; i < n; i++)
	{
		const TsJson *s = names->u.arr.items[i];

		if (s->type != TSJ_STRING || s->u.str.len == 0 || strlen(s->u.str.ptr) != s->u.str.len)
			return ts_fail(err, TS_ERR_INVALID, "feature_names[%zu] is not a non-empty string", i);
		m->feature_names[i] = copy_string(s->u.str.ptr, s->u.str.len);
		ts_check_interrupts_after((int64_t) i + 1);
		for (size_t j = 0; j < i; j++)
			if (strcmp(m->feature_names[j], m->feature_names[i]) == 0)
				return ts_fail(err, TS_ERR_INVALID, "feature name \"%s\" appears twice",
							   m->feature_names[i]);
	}
	return true;
}

/* Locate the gbtree model object and dart weights inside gradient_booster. */
static bool
find_booster(const TsJson *learner, const TsJson **model, const TsJson **weights, TsError *err)
{
	const TsJson *gb = ts_json_get(learner, "gradient_booster");
	const TsJson *name = ts_json_get(gb, "name");

	if (gb == NULL || name == NULL || name->type != TSJ_STRING)
		return ts_fail(err, TS_ERR_INVALID, "learner has no gradient_booster with a name");
	*weights = NULL;
	if (strcmp(name->u.str.ptr, "gbtree") == 0)
		*model = ts_json_get(gb, "model");
	else if (strcmp(name->u.str.ptr, "dart") == 0)
	{
		*model = ts_json_get(ts_json_get(gb, "gbtree"), "model");
		*weights = ts_json_get(gb, "weight_drop");
		if (*weights == NULL)
			return ts_fail(err, TS_ERR_INVALID, "dart booster has no weight_drop");
	}
	else if (strcmp(name->u.str.ptr, "gblinear") == 0)
		return ts_fail(err, TS_ERR_UNSUPPORTED, "gblinear models have no trees to explain");
	else
		return ts_fail(err, TS_ERR_UNSUPPORTED, "unknown booster \"%.40s\"", name->u.str.ptr);
	if (*model == NULL || (*model)->type != TSJ_OBJECT)
		return ts_fail(err, TS_ERR_INVALID, "gradient_booster has no model object");
	return true;
}

/* Read the learner-level parameters: outputs, features, objective, base score. */
static bool
read_learner_params(TsModel *m, const TsJson *learner, TsError *err)
{
	const TsJson *param = ts_json_get(learner, "learner_model_param");
	const TsJson *obj = ts_json_get(ts_json_get(learner, "objective"), "name");
	int64_t		num_class,
				num_target,
				num_feature;

	if (param == NULL || param->type != TSJ_OBJECT)
		return ts_fail(err, TS_ERR_INVALID, "learner has no learner_model_param object");
	if (!get_int_param(param, "num_class", 0, 0, TS_MAX_OUTPUTS, &num_class, err) ||
		!get_int_param(param, "num_target", 1, 1, TS_MAX_OUTPUTS, &num_target, err) ||
		!get_int_param(param, "num_feature", -1, 1, TS_MAX_FEATURES, &num_feature, err))
		return false;
	if (num_feature < 1)
		return ts_fail(err, TS_ERR_INVALID, "learner_model_param has no num_feature");
	m->num_features = (int32_t) num_feature;
	m->num_outputs = (int32_t) (num_class > 0 ? num_class : num_target);
	if (obj != NULL && obj->type == TSJ_STRING)
		m->objective = copy_string(obj->u.str.ptr, strlen(obj->u.str.ptr));
	m->link = ts_objective_link(m->objective);
	return read_base_score(m, param, err) && read_feature_names(m, learner, err);
}

/*
 * The model's leaf size, from its first tree: vector leaves (XGBoost's
 * multi_output_tree) carry one value per target, so every tree adds to all
 * outputs from output 0.
 */
static bool
read_leaf_size(TsModel *m, const TsJson *tree0, TsError *err)
{
	int64_t		k;

	if (tree0->type != TSJ_OBJECT)
		return ts_fail(err, TS_ERR_INVALID, "tree 0 is not an object");
	if (!leaf_vector_size(tree0, &k, err))
		return false;
	if (k > 1 && k != m->num_outputs)
		return ts_fail(err, TS_ERR_INVALID, "leaves have %lld values but the model has %d outputs",
					   (long long) k, m->num_outputs);
	for (int32_t t = 0; k > 1 && t < m->num_trees; t++)
		if (m->tree_group[t] != 0)
			return ts_fail(err, TS_ERR_INVALID, "tree_info[%d] must be 0 for vector leaves", t);
	if ((int64_t) m->num_nodes * k > TS_MAX_NODES)
		return ts_fail(err, TS_ERR_LIMIT, "model has too many leaf values");
	m->leaf_size = (int32_t) k;
	return true;
}

/* Read tree_info (output per tree) and dart weights, and size the node arrays. */
static bool
read_tree_index(TsModel *m, const TsJson *model, const TsJson *weight_json, double **weights,
				TsError *err)
{
	const TsJson *trees = ts_json_get(model, "trees");
	const TsJson *info = ts_json_get(model, "tree_info");
	int64_t		declared;
	size_t		nt = ts_json_array_len(trees);

	if (trees == NULL || (trees->type != TSJ_ARRAY && nt != 0))
		return ts_fail(err, TS_ERR_INVALID, "model has no \"trees\" array of objects");
	if (nt > TS_MAX_TREES)
		return ts_fail(err, TS_ERR_LIMIT, "model has too many trees (%zu)", nt);
	if (!get_int_param(ts_json_get(model, "gbtree_model_param"), "num_trees", (int64_t) nt, 0,
					   TS_MAX_TREES, &declared, err))
		return false;
	if (declared != (int64_t) nt)
		return ts_fail(err, TS_ERR_INVALID, "num_trees is %lld but %zu trees are stored",
					   (long long) declared, nt);
	if (info == NULL || ts_json_array_len(info) != nt || (info->type != TSJ_NUMARRAY && nt != 0))
		return ts_fail(err, TS_ERR_INVALID, "tree_info must list one output per tree (%zu)", nt);
	m->num_trees = (int32_t) nt;
	m->tree_group = ts_alloc((nt + 1) * sizeof(int32_t));
	m->tree_offset = ts_alloc((nt + 1) * sizeof(int64_t));
	*weights = ts_alloc((nt + 1) * sizeof(double));
	m->tree_offset[0] = 0;
	for (size_t t = 0; t < nt; t++)
	{
		const TsJson *tree = trees->u.arr.items[t];
		double		g = info->u.nums.vals[t];
		size_t		n = ts_json_array_len(ts_json_get(tree, "left_children"));

		if (g != floor(g) || g < 0 || g >= m->num_outputs)
			return ts_fail(err, TS_ERR_INVALID, "tree_info[%zu] = %g is not an output index", t, g);
		m->tree_group[t] = (int32_t) g;
		(*weights)[t] = 1.0;
		if (n == 0)
			return ts_fail(err, TS_ERR_INVALID, "tree %zu has no left_children", t);
		if (m->tree_offset[t] + (int64_t) n > TS_MAX_NODES)
			return ts_fail(err, TS_ERR_LIMIT, "model has too many nodes");
		m->tree_offset[t + 1] = m->tree_offset[t] + (int64_t) n;
	}
	if (weight_json != NULL)
	{
		if (ts_json_array_len(weight_json) != nt || (weight_json->type != TSJ_NUMARRAY && nt != 0))
			return ts_fail(err, TS_ERR_INVALID, "dart weight_drop must have one weight per tree (%zu)", nt);
		for (size_t t = 0; t < nt; t++)
		{
			(*weights)[t] = weight_json->u.nums.vals[t];
			if (!isfinite((*weights)[t]))
				return ts_fail(err, TS_ERR_INVALID, "dart weight_drop[%zu] is not finite", t);
		}
	}
	m->num_nodes = m->tree_offset[nt];
	return nt == 0 || read_leaf_size(m, trees->u.arr.items[0], err);
}

/* Build a model from a parsed XGBoost JSON document. */
static bool
build_model(TsModel *m, const TsJson *root, TsError *err)
{
	const TsJson *learner = ts_json_get(root, "learner");
	const TsJson *model = NULL;
	const TsJson *weight_json = NULL;
	double	   *weights = NULL;
	bool		ok;

	if (learner == NULL || learner->type != TSJ_OBJECT)
		return ts_fail(err, TS_ERR_SYNTAX, "not an XGBoost JSON model: no \"learner\" object");
	if (!read_learner_params(m, learner, err) ||
		!find_booster(learner, &model, &weight_json, err))
		return false;
	ok = read_tree_index(m, model, weight_json, &weights, err);
	if (ok)
	{
		const TsJson *trees = ts_json_get(model, "trees");

		ts_model_alloc_nodes(m);
		for (int32_t t = 0; ok && t < m->num_trees; t++)
			ok = read_tree(m, trees->u.arr.items[t], t, m->tree_offset[t],
						   (size_t) (m->tree_offset[t + 1] - m->tree_offset[t]), weights[t], err);
	}
	ts_free(weights);
	return ok && ts_xgboost_read_categories(m, learner, model, err) && ts_model_validate(m, err);
}

/* Build from a parsed document; on failure everything is freed. */
static TsModel *
model_from_doc(TsJsonDoc *doc, const char *format, TsError *err)
{
	TsModel    *m;

	if (doc == NULL)
		return NULL;
	m = ts_alloc0(sizeof(TsModel));
	m->format = format;
	m->link_scale = 1.0;
	if (!build_model(m, ts_json_root(doc), err))
	{
		ts_model_free(m);
		m = NULL;
	}
	ts_json_free(doc);
	return m;
}

/*
 * Parse, build and validate a JSON model: CatBoost's when the document has
 * oblivious_trees at the top (no XGBoost model does), XGBoost's otherwise.
 */
TsModel *
ts_json_model_read(const char *buf, size_t len, TsError *err)
{
	TsJsonDoc  *doc = ts_json_parse(buf, len, err);
	TsModel    *m;

	if (doc == NULL || ts_json_get(ts_json_root(doc), "oblivious_trees") == NULL)
		return model_from_doc(doc, "xgboost-json", err);
	m = ts_catboost_from_doc(doc, err);
	ts_json_free(doc);
	return m;
}

/* Parse, build and validate an XGBoost UBJSON model. */
TsModel *
ts_xgboost_ubj_read(const char *buf, size_t len, TsError *err)
{
	return model_from_doc(ts_ubjson_parse(buf, len, err), "xgboost-ubj", err);
}
