/*
 * ts_catboost.c - reader for CatBoost models saved as JSON
 * (save_model(..., format="json")). CatBoost grows oblivious trees: every
 * node of a level splits on the same condition, and bit i of a leaf's index
 * is whether the row passed splits[i] (value > border). Each tree becomes a
 * full binary tree whose root tests the last split, so that the leaves lie
 * in index order, as CatBoost's own SHAP values order them; a node's cover
 * is the sum of the leaf_weights below it. Leaves of models with several
 * outputs (MultiClass, RMSEWithUncertainty) are vectors, one value per
 * output. A one-hot split tests a categorical feature's CatBoost hash of its
 * name (CityHash64's low 32 bits) against a value: it becomes a categorical
 * split over the codes of the hashes the model's splits use. Splits on CTRs
 * (statistics of the training target) are refused.
 */
#include "model/ts_json.h"
#include "model/ts_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CB_MAX_DEPTH 16			/* CatBoost's own limit */

/* An integer member of obj within lo..hi. */
static bool
cb_int(const TsJson *obj, const char *key, int64_t lo, int64_t hi, int64_t *out, TsError *err)
{
	const TsJson *v = ts_json_get(obj, key);

	if (v == NULL || v->type != TSJ_NUMBER || v->u.number != floor(v->u.number) ||
		v->u.number < (double) lo || v->u.number > (double) hi)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost model: \"%s\" is missing or out of range", key);
	*out = (int64_t) v->u.number;
	return true;
}

/* Name of feature flat index j for error messages. */
static const char *
cb_feature_name(const TsModel *m, int32_t j, char *buf, size_t size)
{
	if (m->feature_names != NULL)
		return m->feature_names[j];
	snprintf(buf, size, "f%d", j);
	return buf;
}

/*
 * Features: their count (float and categorical, by flat index), names when
 * every feature has one, and the float features' flat indices.
 */
static bool
read_features(TsModel *m, const TsJson *info, int32_t **float_flat, int32_t *nfloat, TsError *err)
{
	const TsJson *floats = ts_json_get(info, "float_features");
	const TsJson *cats = ts_json_get(info, "categorical_features");
	const TsJson *lists[2] = {floats, cats};
	size_t		nf = ts_json_array_len(floats);
	int64_t		top = -1;

	*nfloat = (int32_t) nf;
	*float_flat = ts_alloc((nf + 1) * sizeof(int32_t));
	for (int l = 0; l < 2; l++)
		for (size_t i = 0; lists[l] != NULL && i < ts_json_array_len(lists[l]); i++)
		{
			const TsJson *f = lists[l]->type == TSJ_ARRAY ? lists[l]->u.arr.items[i] : NULL;
			int64_t		flat,
						index;

			if (f == NULL ||
				!cb_int(f, "flat_feature_index", 0, TS_MAX_FEATURES - 1, &flat, err) ||
				!cb_int(f, "feature_index", 0, TS_MAX_FEATURES - 1, &index, err))
				return ts_fail(err, TS_ERR_INVALID, "CatBoost model: malformed features_info");
			if (l == 0 && index != (int64_t) i)
				return ts_fail(err, TS_ERR_INVALID, "CatBoost model: float feature %zu has index %lld",
							   i, (long long) index);
			if (l == 0)
				(*float_flat)[i] = (int32_t) flat;
			top = flat > top ? flat : top;
		}
	if (top < 0)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost model has no features");
	m->num_features = (int32_t) top + 1;
	/* categorical features take names (text) even where no split reads them */
	for (size_t i = 0; cats != NULL && i < ts_json_array_len(cats); i++)
		ts_model_mark_categorical(m, (int32_t) ts_json_get(cats->u.arr.items[i],
														   "flat_feature_index")->u.number);
	return true;
}

/* Feature names (feature_id) when every feature has a distinct, non-empty one. */
static void
read_feature_names(TsModel *m, const TsJson *info)
{
	const char *keys[2] = {"float_features", "categorical_features"};
	char	  **names = ts_alloc0((size_t) m->num_features * sizeof(char *));
	bool		all = true;

	for (int l = 0; l < 2; l++)
	{
		const TsJson *list = ts_json_get(info, keys[l]);

		for (size_t i = 0; list != NULL && list->type == TSJ_ARRAY && i < ts_json_array_len(list); i++)
		{
			const TsJson *f = list->u.arr.items[i];
			const TsJson *id = ts_json_get(f, "feature_id");
			double		flat = ts_json_get(f, "flat_feature_index")->u.number;

			if (id != NULL && id->type == TSJ_STRING && id->u.str.len > 0 &&
				strlen(id->u.str.ptr) == id->u.str.len && names[(int32_t) flat] == NULL)
				names[(int32_t) flat] = strcpy(ts_alloc(id->u.str.len + 1), id->u.str.ptr);
		}
	}
	for (int32_t j = 0; j < m->num_features; j++)
	{
		ts_check_interrupts_after(j + 1);	/* quadratic in the features: 40,000 take seconds */
		for (int32_t k = 0; all && k < j; k++)
			all = names[j] != NULL && names[k] != NULL && strcmp(names[j], names[k]) != 0;
	}
	all = all && names[0] != NULL;
	if (all)
	{
		m->feature_names = names;
		return;
	}
	for (int32_t j = 0; j < m->num_features; j++)
		ts_free(names[j]);
	ts_free(names);
}

/* Objective (loss_function.type) and its link. */
static void
read_objective(TsModel *m, const TsJson *root)
{
	const TsJson *type = ts_json_get(ts_json_get(ts_json_get(ts_json_get(root, "model_info"), "params"),
												 "loss_function"), "type");
	const char *name = type != NULL && type->type == TSJ_STRING ? type->u.str.ptr : NULL;

	m->link = TS_LINK_IDENTITY;
	if (name == NULL)
		return;
	m->objective = strcpy(ts_alloc(strlen(name) + 1), name);
	if (strcmp(name, "Logloss") == 0 || strcmp(name, "CrossEntropy") == 0)
		m->link = TS_LINK_LOGISTIC;
	else if (strcmp(name, "MultiClass") == 0)
		m->link = TS_LINK_SOFTMAX;
	else if (strcmp(name, "Poisson") == 0 || strcmp(name, "Tweedie") == 0)
		m->link = TS_LINK_EXP;
}

/* scale_and_bias: [scale, [bias per output]]; the bias is the base margin. */
static bool
read_scale_and_bias(TsModel *m, const TsJson *root, double *scale, TsError *err)
{
	const TsJson *sb = ts_json_get(root, "scale_and_bias");
	const TsJson *bias = sb != NULL && sb->type == TSJ_ARRAY && ts_json_array_len(sb) == 2 ?
		sb->u.arr.items[1] : NULL;

	*scale = 1.0;
	m->base_margin = ts_alloc0((size_t) m->num_outputs * sizeof(double));
	if (sb == NULL)
		return true;
	if (bias == NULL || sb->u.arr.items[0]->type != TSJ_NUMBER ||
		ts_json_array_len(bias) != (size_t) m->num_outputs)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost model: scale_and_bias must be [scale, [one bias per output]]");
	*scale = sb->u.arr.items[0]->u.number;
	for (int32_t k = 0; k < m->num_outputs; k++)
		if (!ts_json_number_at(bias, (size_t) k, &m->base_margin[k]))
			return ts_fail(err, TS_ERR_INVALID, "CatBoost model: a bias is not a number");
	return true;
}

/* A tree's depth (number of splits) and leaf count, checked. */
static bool
tree_shape(const TsJson *tree, int32_t t, int32_t *depth, TsError *err)
{
	const TsJson *splits = ts_json_get(tree, "splits");

	if (tree->type != TSJ_OBJECT || (splits != NULL && splits->type != TSJ_ARRAY &&
									 ts_json_array_len(splits) > 0))
		return ts_fail(err, TS_ERR_INVALID, "CatBoost tree %d is malformed", t);
	*depth = (int32_t) ts_json_array_len(splits);
	if (*depth > CB_MAX_DEPTH)
		return ts_fail(err, TS_ERR_LIMIT, "CatBoost tree %d is deeper than %d", t, CB_MAX_DEPTH);
	if (ts_json_array_len(ts_json_get(tree, "leaf_weights")) != ((size_t) 1 << *depth))
		return ts_fail(err, TS_ERR_INVALID, "CatBoost tree %d: leaf_weights must have %d values",
					   t, 1 << *depth);
	return true;
}

/* Outputs from the first tree (leaf values per leaf), then size every tree. */
static bool
index_trees(TsModel *m, const TsJson *trees, TsError *err)
{
	size_t		nt = ts_json_array_len(trees);

	if (trees == NULL || (trees->type != TSJ_ARRAY && nt > 0) || nt > TS_MAX_TREES)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost model has no oblivious_trees array");
	m->num_trees = (int32_t) nt;
	m->tree_offset = ts_alloc((nt + 1) * sizeof(int64_t));
	m->tree_group = ts_alloc0((nt + 1) * sizeof(int32_t));
	m->tree_offset[0] = 0;
	m->num_outputs = 1;
	for (size_t t = 0; t < nt; t++)
	{
		int32_t		depth = 0;
		size_t		values;

		if (!tree_shape(trees->u.arr.items[t], (int32_t) t, &depth, err))
			return false;
		values = ts_json_array_len(ts_json_get(trees->u.arr.items[t], "leaf_values"));
		if (t == 0)
			m->num_outputs = (int32_t) (values >> depth);
		if (m->num_outputs < 1 || m->num_outputs > TS_MAX_OUTPUTS ||
			values != ((size_t) m->num_outputs << depth))
			return ts_fail(err, TS_ERR_INVALID, "CatBoost tree %zu: leaf_values must have %d values per leaf",
						   t, m->num_outputs);
		m->tree_offset[t + 1] = m->tree_offset[t] + ((int64_t) 2 << depth) - 1;
		if (m->tree_offset[t + 1] * m->num_outputs > TS_MAX_NODES)
			return ts_fail(err, TS_ERR_LIMIT, "model has too many nodes");
	}
	m->num_nodes = m->tree_offset[nt];
	m->leaf_size = m->num_outputs;
	return true;
}

/* Flat index of a categorical feature in features_info's list, or -1. */
static int32_t
cat_flat_index(const TsJson *info, double index)
{
	const TsJson *cats = ts_json_get(info, "categorical_features");

	if (cats == NULL || cats->type != TSJ_ARRAY || index != floor(index) || index < 0 ||
		index >= (double) ts_json_array_len(cats))
		return -1;
	return (int32_t) ts_json_get(cats->u.arr.items[(size_t) index], "flat_feature_index")->u.number;
}

/*
 * The categorical feature a one-hot or CTR split reads, to name it: a
 * one-hot split names it; a CTR split is matched to the CTR with its border,
 * whose first element names it. -1 when neither says.
 */
static int32_t
split_cat_feature(const TsJson *split, const TsJson *info)
{
	const TsJson *ctrs = ts_json_get(info, "ctrs");
	const TsJson *v = ts_json_get(split, "cat_feature_index");
	const TsJson *border = ts_json_get(split, "border");

	if (v != NULL && v->type == TSJ_NUMBER)
		return cat_flat_index(info, v->u.number);
	for (size_t i = 0; border != NULL && border->type == TSJ_NUMBER && ctrs != NULL &&
		 ctrs->type == TSJ_ARRAY && i < ts_json_array_len(ctrs); i++)
	{
		const TsJson *borders = ts_json_get(ctrs->u.arr.items[i], "borders");
		const TsJson *elems = ts_json_get(ctrs->u.arr.items[i], "elements");

		for (size_t b = 0; b < ts_json_array_len(borders); b++)
		{
			double		x;

			if (ts_json_number_at(borders, b, &x) && x == border->u.number && elems != NULL &&
				elems->type == TSJ_ARRAY && ts_json_array_len(elems) > 0 &&
				(v = ts_json_get(elems->u.arr.items[0], "cat_feature_index")) != NULL &&
				v->type == TSJ_NUMBER)
				return cat_flat_index(info, v->u.number);
		}
	}
	return -1;
}

/* A one-hot split's category hash, and its feature's flat index (-1 if malformed). */
static int32_t
one_hot_split(const TsJson *split, const TsJson *info, int32_t *hash)
{
	const TsJson *v = ts_json_get(split, "value");
	const TsJson *c = ts_json_get(split, "cat_feature_index");

	if (v == NULL || v->type != TSJ_NUMBER || v->u.number != floor(v->u.number) ||
		v->u.number < -2147483648.0 || v->u.number > 2147483647.0 || c == NULL || c->type != TSJ_NUMBER)
		return -1;
	*hash = (int32_t) v->u.number;
	return cat_flat_index(info, c->u.number);
}

/* The code of a hash in feature j's dictionary (its decimal form), or -1. */
static int32_t
hash_code(const TsModel *m, int32_t j, int32_t hash)
{
	char		buf[16];

	snprintf(buf, sizeof(buf), "%d", (int) hash);
	for (int32_t c = 0; c < ts_catdict_size(m, j); c++)
		if (strcmp(m->dict_names[m->dict_start[j] + c], buf) == 0)
			return c;
	return -1;
}

/*
 * The dictionaries of the one-hot features: per feature, in order, every
 * category hash its splits compare with; a text column's name is hashed
 * as CatBoost hashes it and looked up there (ts_catdict_lookup).
 */
static bool
read_one_hot_dictionaries(TsModel *m, const TsJson *trees, const TsJson *info, TsError *err)
{
	ts_catdict_open(m);
	m->dict_hashed = true;
	for (int32_t j = 0; j < m->num_features; j++)
		for (int32_t t = 0; t < m->num_trees; t++)
		{
			const TsJson *splits = ts_json_get(trees->u.arr.items[t], "splits");

			ts_check_interrupts_after(1 + (int64_t) ts_json_array_len(splits));
			for (size_t i = 0; i < ts_json_array_len(splits); i++)
			{
				int32_t		hash;
				const TsJson *type = ts_json_get(splits->u.arr.items[i], "split_type");
				char		buf[16];

				if (type == NULL || type->type != TSJ_STRING || strcmp(type->u.str.ptr, "OneHotFeature") != 0 ||
					one_hot_split(splits->u.arr.items[i], info, &hash) != j || hash_code(m, j, hash) >= 0)
					continue;
				snprintf(buf, sizeof(buf), "%d", (int) hash);
				ts_model_mark_categorical(m, j);
				if (!ts_catdict_add(m, j, buf, strlen(buf), err))
					return false;
			}
		}
	return ts_catdict_close(m, err);
}

/*
 * A one-hot split: right when the row's category hash is the split's value.
 * Its left set is every other code of the feature's dictionary, and every
 * code past it (an unknown category fails every one-hot test).
 */
static bool
read_one_hot(TsModel *m, const TsJson *split, const TsJson *info, int32_t *feature,
			 int32_t *cat_set, uint8_t *default_left, TsError *err)
{
	int32_t		hash = 0;
	int32_t		j = one_hot_split(split, info, &hash);
	int32_t		code = j >= 0 ? hash_code(m, j, hash) : -1;
	int64_t		offset;
	uint32_t   *set;

	if (code < 0)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost one-hot split is malformed");
	offset = ts_model_add_catset(m, (uint32_t) ts_catdict_size(m, j), true);
	if (offset < 0)
		return ts_fail(err, TS_ERR_LIMIT, "model's category sets are too large");
	set = m->cat_pool + offset;
	for (int32_t c = 0; c < ts_catdict_size(m, j); c++)
		if (c != code)
			set[2 + c / 32] |= 1u << (c % 32);
	*feature = j;
	*cat_set = (int32_t) offset;
	*default_left = 1;			/* a missing category matches no split */
	return true;
}

/* One split: its float feature's flat index, border and NaN direction; CTRs and one-hot refused. */
static bool
read_split(TsModel *m, const TsJson *split, const TsJson *info, const int32_t *float_flat,
		   int32_t nfloat, int32_t *feature, float *threshold, uint8_t *default_left, int32_t *cat_set,
		   TsError *err)
{
	const TsJson *type = ts_json_get(split, "split_type");
	const TsJson *floats = ts_json_get(info, "float_features");
	const TsJson *f;
	const TsJson *nan;
	double		border;
	int64_t		index;
	char		buf[32];

	if (type == NULL || type->type != TSJ_STRING)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost split has no split_type");
	if (strcmp(type->u.str.ptr, "OneHotFeature") == 0)
		return read_one_hot(m, split, info, feature, cat_set, default_left, err);
	if (strcmp(type->u.str.ptr, "FloatFeature") != 0)
	{
		int32_t		cat = split_cat_feature(split, info);

		return ts_fail(err, TS_ERR_UNSUPPORTED,
					   "CatBoost %s splits are not supported%s%s%s: their inputs are %s",
					   type->u.str.ptr, cat >= 0 ? " (feature " : "",
					   cat >= 0 ? cb_feature_name(m, cat, buf, sizeof(buf)) : "", cat >= 0 ? ")" : "",
					   strcmp(type->u.str.ptr, "OnlineCtr") == 0 ?
					   "statistics of the training target, not table columns" :
					   "hashes of category names");
	}
	if (!cb_int(split, "float_feature_index", 0, nfloat - 1, &index, err))
		return false;
	f = floats->u.arr.items[index];
	if (ts_json_get(split, "border") == NULL || ts_json_get(split, "border")->type != TSJ_NUMBER)
		return ts_fail(err, TS_ERR_INVALID, "CatBoost split has no border");
	border = ts_json_get(split, "border")->u.number;
	if (!ts_rounds_to_float(border))
		return ts_fail(err, TS_ERR_INVALID, "CatBoost border %g is not a float", border);
	/* a row goes right when value > border, so left when value < the next float up */
	*threshold = nextafterf((float) border, INFINITY);
	nan = ts_json_get(f, "nan_value_treatment");
	*default_left = !(nan != NULL && nan->type == TSJ_STRING && strcmp(nan->u.str.ptr, "AsTrue") == 0);
	*feature = float_flat[index];
	*cat_set = -1;
	return true;
}

/* Lay one oblivious tree out as a full binary tree (breadth first) at base. */
static bool
read_tree(TsModel *m, const TsJson *tree, int32_t t, const TsJson *info, const int32_t *float_flat,
		  int32_t nfloat, double scale, TsError *err)
{
	const TsJson *splits = ts_json_get(tree, "splits");
	const TsJson *values = ts_json_get(tree, "leaf_values");
	const TsJson *weights = ts_json_get(tree, "leaf_weights");
	int32_t		depth = (int32_t) ts_json_array_len(splits);
	int64_t		base = m->tree_offset[t];
	int64_t		first_leaf = ((int64_t) 1 << depth) - 1;
	int32_t		k = m->num_outputs;

	for (int32_t level = 0; level < depth; level++)
	{
		int32_t		feature = 0;
		float		thr = 0.0f;
		uint8_t		dl = 0;
		int32_t		cat_set = -1;

		/* the root tests the last split: leaves then lie in index order */
		if (!read_split(m, splits->u.arr.items[depth - 1 - level], info, float_flat, nfloat,
						&feature, &thr, &dl, &cat_set, err))
			return false;
		for (int64_t n = ((int64_t) 1 << level) - 1; n < ((int64_t) 2 << level) - 1; n++)
		{
			m->left[base + n] = (int32_t) (2 * n + 1);
			m->right[base + n] = (int32_t) (2 * n + 2);
			m->split_feature[base + n] = feature;
			m->threshold[base + n] = thr;
			m->default_left[base + n] = dl;
			m->cat_set[base + n] = cat_set;
		}
	}
	for (int64_t leaf = 0; leaf <= first_leaf; leaf++)
	{
		int64_t		g = base + first_leaf + leaf;

		m->left[g] = m->right[g] = -1;
		m->split_feature[g] = 0;
		m->threshold[g] = 0.0f;
		m->default_left[g] = 0;
		if (!ts_json_number_at(weights, (size_t) leaf, &m->cover[g]))
			return ts_fail(err, TS_ERR_INVALID, "CatBoost tree %d: a leaf weight is not a number", t);
		for (int32_t j = 0; j < k; j++)
			if (!ts_json_number_at(values, (size_t) (leaf * k + j), &m->leaf_value[g * k + j]))
				return ts_fail(err, TS_ERR_INVALID, "CatBoost tree %d: a leaf value is not a number", t);
			else
				m->leaf_value[g * k + j] *= scale;
	}
	/* an internal node covers the leaves below it */
	for (int64_t n = first_leaf - 1; n >= 0; n--)
		m->cover[base + n] = m->cover[base + 2 * n + 1] + m->cover[base + 2 * n + 2];
	return true;
}

/* Build the model from a parsed CatBoost JSON document. */
static bool
build_model(TsModel *m, const TsJson *root, TsError *err)
{
	const TsJson *info = ts_json_get(root, "features_info");
	const TsJson *trees = ts_json_get(root, "oblivious_trees");
	int32_t    *float_flat = NULL;
	int32_t		nfloat = 0;
	double		scale;
	bool		ok;

	ok = read_features(m, info, &float_flat, &nfloat, err) && index_trees(m, trees, err) &&
		read_scale_and_bias(m, root, &scale, err);
	if (ok)
	{
		read_feature_names(m, info);
		read_objective(m, root);
		ts_model_alloc_nodes(m);
		ok = read_one_hot_dictionaries(m, trees, info, err);
	}
	for (int32_t t = 0; ok && t < m->num_trees; t++)
		ok = read_tree(m, trees->u.arr.items[t], t, info, float_flat, nfloat, scale, err);
	ts_free(float_flat);
	return ok && ts_model_validate(m, err);
}

/* Build from a parsed CatBoost JSON document; on failure everything is freed. */
TsModel *
ts_catboost_from_doc(struct TsJsonDoc *doc, TsError *err)
{
	TsModel    *m = ts_alloc0(sizeof(TsModel));

	m->format = "catboost-json";
	m->link_scale = 1.0;
	if (!build_model(m, ts_json_root(doc), err))
	{
		ts_model_free(m);
		m = NULL;
	}
	return m;
}
