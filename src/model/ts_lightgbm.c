/*
 * ts_lightgbm.c - reader for LightGBM text models (model_to_string,
 * save_model; versions v2 to v4). LightGBM's semantics become the model's
 * own: "x <= threshold goes left" turns into a float32 threshold with
 * "x < threshold", the missing-value type of a feature becomes its input
 * rule (ts_model.h), a categorical bitset becomes the node's left set, and
 * the covers are LightGBM's data counts, as its own TreeSHAP uses them.
 */
#include "model/ts_json.h"
#include "model/ts_model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* decision_type bits */
#define LGB_CATEGORICAL		1
#define LGB_DEFAULT_LEFT	2
#define LGB_MISSING_SHIFT	2		/* two bits: 0 None, 1 Zero, 2 NaN */

/* The text of one tree block: each field's value, or NULL when absent. */
typedef struct LgbTree
{
	const char *num_leaves;
	const char *num_cat;
	const char *split_feature;
	const char *threshold;
	const char *decision_type;
	const char *left_child;
	const char *right_child;
	const char *leaf_value;
	const char *leaf_count;
	const char *internal_count;
	const char *cat_boundaries;
	const char *cat_threshold;
	const char *is_linear;
} LgbTree;

/* Cursor over a NUL-terminated private copy of the model text. */
typedef struct LgbText
{
	char	   *p;
	char	   *end;
} LgbText;

/* Scratch arrays of one tree while its nodes are copied into the model. */
typedef struct LgbNodes
{
	int32_t		leaves;
	int32_t		num_cat;
	int32_t    *feature;
	double	   *threshold;
	int32_t    *decision;
	int32_t    *left;
	int32_t    *right;
	double	   *leaf_value;
	double	   *leaf_count;
	double	   *internal_count;
	int32_t    *cat_bounds;
	double	   *cat_words;
} LgbNodes;

/* Next line without its line break, or NULL at the end of the text. */
static char *
next_line(LgbText *t)
{
	char	   *line = t->p;
	char	   *nl;

	if (t->p >= t->end)
		return NULL;
	nl = memchr(t->p, '\n', (size_t) (t->end - t->p));
	if (nl == NULL)
		nl = t->end;
	*nl = '\0';
	if (nl > line && nl[-1] == '\r')
		nl[-1] = '\0';
	t->p = nl + 1;
	return line;
}

/* The value of "key=value" when line has that key, else NULL. */
static const char *
value_of(const char *line, const char *key)
{
	size_t		n = strlen(key);

	return strncmp(line, key, n) == 0 && line[n] == '=' ? line + n + 1 : NULL;
}

/* Number of space-separated tokens of a list. */
static int64_t
count_tokens(const char *s)
{
	int64_t		n = 0;

	while (*s != '\0')
	{
		while (*s == ' ')
			s++;
		if (*s == '\0')
			break;
		n++;
		while (*s != '\0' && *s != ' ')
			s++;
	}
	return n;
}

/* Parse exactly n numbers of a field into out (allocated here; NULL when n = 0). */
static bool
parse_doubles(const char *s, const char *field, int32_t tree, int64_t n, double **out,
			  TsError *err)
{
	*out = NULL;
	if (s == NULL)
		return ts_fail(err, TS_ERR_INVALID, "tree %d has no %s", tree, field);
	if (count_tokens(s) != n)
		return ts_fail(err, TS_ERR_INVALID, "tree %d: %s has %lld values, expected %lld",
					   tree, field, (long long) count_tokens(s), (long long) n);
	*out = ts_alloc((size_t) (n > 0 ? n : 1) * sizeof(double));
	for (int64_t i = 0; i < n; i++)
	{
		char	   *end;

		while (*s == ' ')
			s++;
		errno = 0;
		(*out)[i] = strtod(s, &end);
		if (end == s || (*end != ' ' && *end != '\0') || errno == ERANGE)
			return ts_fail(err, TS_ERR_INVALID, "tree %d: %s[%lld] is not a number",
						   tree, field, (long long) i);
		s = end;
	}
	return true;
}

/* Parse exactly n integers in lo..hi. */
static bool
parse_ints(const char *s, const char *field, int32_t tree, int64_t n, int64_t lo, int64_t hi,
		   int32_t **out, TsError *err)
{
	double	   *d;
	bool		ok = parse_doubles(s, field, tree, n, &d, err);

	*out = ts_alloc((size_t) (n > 0 ? n : 1) * sizeof(int32_t));
	for (int64_t i = 0; ok && i < n; i++)
	{
		if (d[i] != floor(d[i]) || d[i] < (double) lo || d[i] > (double) hi)
			ok = ts_fail(err, TS_ERR_INVALID, "tree %d: %s[%lld] = %.15g is out of range %lld..%lld",
						 tree, field, (long long) i, d[i], (long long) lo, (long long) hi);
		else
			(*out)[i] = (int32_t) d[i];
	}
	ts_free(d);
	return ok;
}

/* One integer field of a tree or the header. */
static bool
parse_int(const char *s, const char *field, int64_t lo, int64_t hi, int64_t *out, TsError *err)
{
	char	   *end;
	long long	v;

	if (s == NULL)
		return ts_fail(err, TS_ERR_INVALID, "LightGBM model has no %s", field);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
		return ts_fail(err, TS_ERR_INVALID, "%s = \"%.40s\" is not an integer in %lld..%lld",
					   field, s, (long long) lo, (long long) hi);
	*out = v;
	return true;
}

/* Record one line of a tree block in its field. */
static void
tree_field(LgbTree *t, const char *line)
{
	const struct
	{
		const char *key;
		size_t		offset;
	}			fields[] = {
		{"num_leaves", offsetof(LgbTree, num_leaves)},
		{"num_cat", offsetof(LgbTree, num_cat)},
		{"split_feature", offsetof(LgbTree, split_feature)},
		{"threshold", offsetof(LgbTree, threshold)},
		{"decision_type", offsetof(LgbTree, decision_type)},
		{"left_child", offsetof(LgbTree, left_child)},
		{"right_child", offsetof(LgbTree, right_child)},
		{"leaf_value", offsetof(LgbTree, leaf_value)},
		{"leaf_count", offsetof(LgbTree, leaf_count)},
		{"internal_count", offsetof(LgbTree, internal_count)},
		{"cat_boundaries", offsetof(LgbTree, cat_boundaries)},
		{"cat_threshold", offsetof(LgbTree, cat_threshold)},
		{"is_linear", offsetof(LgbTree, is_linear)},
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
	{
		const char *v = value_of(line, fields[i].key);

		if (v != NULL)
			*(const char **) ((char *) t + fields[i].offset) = v;
	}
}

/* Objective line ("binary sigmoid:0.7") to name, link and link scale. */
static bool
read_objective(TsModel *m, const char *line, TsError *err)
{
	const char *sig = strstr(line, "sigmoid:");
	size_t		n = strcspn(line, " ");
	const struct
	{
		const char *name;
		TsLink		link;
	}			links[] = {
		{"binary", TS_LINK_LOGISTIC}, {"multiclassova", TS_LINK_LOGISTIC},
		{"cross_entropy", TS_LINK_LOGISTIC}, {"xentropy", TS_LINK_LOGISTIC},
		{"multiclass", TS_LINK_SOFTMAX}, {"softmax", TS_LINK_SOFTMAX},
		{"poisson", TS_LINK_EXP}, {"gamma", TS_LINK_EXP}, {"tweedie", TS_LINK_EXP},
	};

	ts_free(m->objective);
	m->objective = ts_alloc(n + 1);
	memcpy(m->objective, line, n);
	m->objective[n] = '\0';
	m->link = TS_LINK_IDENTITY;
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (strcmp(m->objective, links[i].name) == 0)
			m->link = links[i].link;
	if (sig != NULL && m->link == TS_LINK_LOGISTIC)
	{
		char	   *end;

		m->link_scale = strtod(sig + 8, &end);
		if (end == sig + 8 || !(m->link_scale > 0.0) || !isfinite(m->link_scale))
			return ts_fail(err, TS_ERR_INVALID, "objective has a bad sigmoid parameter");
	}
	return true;
}

/* Whether LightGBM made the names up: Column_0 Column_1 ... for a plain array. */
static bool
generated_names(const char *s, int32_t num_features)
{
	for (int32_t j = 0; j < num_features; j++)
	{
		char		want[32];
		size_t		n;

		while (*s == ' ')
			s++;
		n = (size_t) snprintf(want, sizeof(want), "Column_%d", j);
		if (strncmp(s, want, n) != 0 || (s[n] != ' ' && s[n] != '\0'))
			return false;
		s += n;
	}
	return true;
}

/*
 * Split feature_names into the model's names (must be one per feature).
 * LightGBM's generated names count as none, but are remembered: a query
 * that has every Column_<j> (a table built from the same DataFrame) is
 * matched by name, any other by position.
 */
static bool
read_feature_names(TsModel *m, const char *s, TsError *err)
{
	if (s == NULL)
		return true;
	if (count_tokens(s) == m->num_features && generated_names(s, m->num_features))
	{
		m->generated_names = true;
		return true;
	}
	if (count_tokens(s) != m->num_features)
		return ts_fail(err, TS_ERR_INVALID, "feature_names has %lld names but the model has %d features",
					   (long long) count_tokens(s), m->num_features);
	m->feature_names = ts_alloc0((size_t) m->num_features * sizeof(char *));
	for (int32_t j = 0; j < m->num_features; j++)
	{
		size_t		n;

		while (*s == ' ')
			s++;
		n = strcspn(s, " ");
		m->feature_names[j] = ts_alloc(n + 1);
		memcpy(m->feature_names[j], s, n);
		m->feature_names[j][n] = '\0';
		ts_check_interrupts_after(j + 1);
		for (int32_t i = 0; i < j; i++)
			if (strcmp(m->feature_names[i], m->feature_names[j]) == 0)
				return ts_fail(err, TS_ERR_INVALID, "feature name \"%s\" appears twice",
							   m->feature_names[j]);
		s += n;
	}
	return true;
}

/* The header, up to the first tree: outputs, features, objective, names, averaging. */
static bool
read_header(TsModel *m, LgbText *text, bool *average, char **first_tree, TsError *err)
{
	const char *version = NULL;
	const char *names = NULL;
	const char *per_iter = NULL;
	const char *max_feature = NULL;
	char	   *line;
	int64_t		v;

	*average = false;
	*first_tree = NULL;
	while ((line = next_line(text)) != NULL && strncmp(line, "Tree=", 5) != 0)
	{
		const char *val;

		if ((val = value_of(line, "version")) != NULL)
			version = val;
		else if ((val = value_of(line, "num_tree_per_iteration")) != NULL)
			per_iter = val;
		else if ((val = value_of(line, "max_feature_idx")) != NULL)
			max_feature = val;
		else if ((val = value_of(line, "feature_names")) != NULL)
			names = val;
		else if ((val = value_of(line, "objective")) != NULL && !read_objective(m, val, err))
			return false;
		else if (strcmp(line, "average_output") == 0)
			*average = true;
		else if (strcmp(line, "end of trees") == 0)
			break;
	}
	*first_tree = line != NULL && strncmp(line, "Tree=", 5) == 0 ? line : NULL;
	if (version == NULL || (strcmp(version, "v2") != 0 && strcmp(version, "v3") != 0 &&
							strcmp(version, "v4") != 0))
		return ts_fail(err, TS_ERR_UNSUPPORTED, "LightGBM model version \"%.20s\" is not supported (v2 to v4 are)",
					   version ? version : "(none)");
	if (!parse_int(per_iter, "num_tree_per_iteration", 1, TS_MAX_OUTPUTS, &v, err))
		return false;
	m->num_outputs = (int32_t) v;
	if (!parse_int(max_feature, "max_feature_idx", 0, TS_MAX_FEATURES - 1, &v, err))
		return false;
	m->num_features = (int32_t) v + 1;
	return read_feature_names(m, names, err);
}

/* Collect the tree blocks (field pointers into the text) up to "end of trees". */
static bool
collect_trees(LgbText *text, char *line, LgbTree **trees, int32_t *ntrees, TsError *err)
{
	int32_t		cap = 0;

	*ntrees = 0;
	*trees = NULL;
	while (line != NULL && strcmp(line, "end of trees") != 0)
	{
		if (strncmp(line, "Tree=", 5) == 0)
		{
			if (*ntrees >= TS_MAX_TREES)
				return ts_fail(err, TS_ERR_LIMIT, "model has too many trees");
			if (*ntrees == cap)
			{
				cap = cap * 2 + 16;
				*trees = ts_realloc(*trees, (size_t) cap * sizeof(LgbTree));
			}
			memset(&(*trees)[(*ntrees)++], 0, sizeof(LgbTree));
		}
		else if (*ntrees > 0)
			tree_field(&(*trees)[*ntrees - 1], line);
		ts_check_interrupts_after(4);
		line = next_line(text);
	}
	if (line == NULL)
		return ts_fail(err, TS_ERR_SYNTAX, "LightGBM model ends without \"end of trees\"");
	return true;
}

/* Parse the arrays of one tree with their sizes checked. */
static bool
parse_tree(const LgbTree *t, int32_t i, int32_t num_features, LgbNodes *n, TsError *err)
{
	int64_t		leaves,
				num_cat,
				linear = 0;
	int64_t		nint;

	memset(n, 0, sizeof(*n));
	if (!parse_int(t->num_leaves, "num_leaves", 1, TS_MAX_NODES / 2, &leaves, err) ||
		(t->is_linear != NULL && !parse_int(t->is_linear, "is_linear", 0, 1, &linear, err)))
		return false;
	if (linear)
		return ts_fail(err, TS_ERR_UNSUPPORTED, "LightGBM linear trees (linear_tree) are not supported");
	n->leaves = (int32_t) leaves;
	nint = leaves - 1;
	if (!parse_doubles(t->leaf_value, "leaf_value", i, leaves, &n->leaf_value, err))
		return false;
	if (leaves == 1)
		return true;
	if (!parse_int(t->num_cat ? t->num_cat : "0", "num_cat", 0, nint, &num_cat, err))
		return false;
	n->num_cat = (int32_t) num_cat;
	return parse_ints(t->split_feature, "split_feature", i, nint, 0, num_features - 1, &n->feature, err) &&
		parse_doubles(t->threshold, "threshold", i, nint, &n->threshold, err) &&
		parse_ints(t->decision_type, "decision_type", i, nint, 0, 15, &n->decision, err) &&
		parse_ints(t->left_child, "left_child", i, nint, -leaves, nint - 1, &n->left, err) &&
		parse_ints(t->right_child, "right_child", i, nint, -leaves, nint - 1, &n->right, err) &&
		parse_doubles(t->leaf_count, "leaf_count", i, leaves, &n->leaf_count, err) &&
		parse_doubles(t->internal_count, "internal_count", i, nint, &n->internal_count, err) &&
		(num_cat == 0 ||
		 (parse_ints(t->cat_boundaries, "cat_boundaries", i, num_cat + 1, 0, INT32_MAX,
					 &n->cat_bounds, err) &&
		  parse_doubles(t->cat_threshold, "cat_threshold", i, n->cat_bounds[num_cat],
						&n->cat_words, err)));
}

/* Free one tree's scratch arrays. */
static void
free_nodes(LgbNodes *n)
{
	ts_free(n->feature);
	ts_free(n->threshold);
	ts_free(n->decision);
	ts_free(n->left);
	ts_free(n->right);
	ts_free(n->leaf_value);
	ts_free(n->leaf_count);
	ts_free(n->internal_count);
	ts_free(n->cat_bounds);
	ts_free(n->cat_words);
}

/*
 * A feature's input rule must be the same at every split on it: LightGBM
 * fixes the missing type per feature, and the rule is applied per feature.
 */
static bool
set_rule(TsModel *m, int32_t feature, TsInputRule rule, bool *seen, TsError *err)
{
	if (seen[feature] && m->input_rule[feature] != rule)
		return ts_fail(err, TS_ERR_UNSUPPORTED,
					   "feature %d is split with different missing-value types or as both "
					   "numerical and categorical", feature);
	seen[feature] = true;
	m->input_rule[feature] = (uint8_t) rule;
	return true;
}

/* "x <= t" on doubles as "x < threshold" on float32 (ts_threshold_le). */
static bool
float_threshold(double t, int32_t tree, int32_t node, float *out, TsError *err)
{
	if (isnan(t))
		return ts_fail(err, TS_ERR_INVALID, "tree %d node %d: threshold is NaN", tree, node);
	*out = ts_threshold_le(t);
	return true;
}

/* A categorical node's bitset (categories that go left) into the model's pool. */
static bool
add_bitset(TsModel *m, const LgbNodes *n, int32_t tree, int32_t node, int64_t g, TsError *err)
{
	double		idx = n->threshold[node];
	int32_t		lo,
				words;
	int64_t		offset;

	if (idx != floor(idx) || idx < 0 || idx >= n->num_cat)
		return ts_fail(err, TS_ERR_INVALID, "tree %d node %d: category set %g does not exist",
					   tree, node, idx);
	lo = n->cat_bounds[(int32_t) idx];
	words = n->cat_bounds[(int32_t) idx + 1] - lo;
	if (words < 0 || lo + words > n->cat_bounds[n->num_cat] ||
		(int64_t) words * 32 > TS_MAX_CATEGORIES)
		return ts_fail(err, TS_ERR_INVALID, "tree %d: cat_boundaries are malformed", tree);
	offset = ts_model_add_catset(m, (uint32_t) words * 32, false);
	if (offset < 0)
		return ts_fail(err, TS_ERR_LIMIT, "model's category sets are too large");
	for (int32_t w = 0; w < words; w++)
	{
		double		v = n->cat_words[lo + w];

		if (v != floor(v) || v < 0 || v > 4294967295.0)
			return ts_fail(err, TS_ERR_INVALID, "tree %d: cat_threshold holds a non-word %g", tree, v);
		m->cat_pool[offset + 2 + w] = (uint32_t) v;
	}
	m->cat_set[g] = (int32_t) offset;
	return true;
}

/* One internal node: its split, direction of missing values and the feature's rule. */
static bool
copy_split(TsModel *m, const LgbNodes *n, int32_t tree, int32_t node, int64_t g, bool *seen,
		   TsError *err)
{
	int32_t		dt = n->decision[node];
	int32_t		missing = (dt >> LGB_MISSING_SHIFT) & 3;
	int32_t		f = n->feature[node];

	m->split_feature[g] = f;
	m->cat_set[g] = -1;
	m->threshold[g] = 0.0f;
	if (dt & LGB_CATEGORICAL)
	{
		m->default_left[g] = 0;	/* NaN and negative categories go right */
		return set_rule(m, f, TS_INPUT_CATEGORY_TRUNC, seen, err) &&
			add_bitset(m, n, tree, node, g, err);
	}
	if (missing == 3)
		return ts_fail(err, TS_ERR_INVALID, "tree %d node %d: unknown missing type", tree, node);
	if (!float_threshold(n->threshold[node], tree, node, &m->threshold[g], err))
		return false;
	/* missing type None reads NaN as 0, so a NaN goes where 0 goes */
	m->default_left[g] = missing == 0 ? 0.0f < m->threshold[g] : (dt & LGB_DEFAULT_LEFT) != 0;
	return set_rule(m, f, missing == 0 ? TS_INPUT_NAN_IS_ZERO :
					missing == 1 ? TS_INPUT_ZERO_IS_MISSING : TS_INPUT_PLAIN, seen, err);
}

/* Internal node i keeps index i; leaf j follows them at (leaves - 1) + j. */
static int32_t
node_index(const LgbNodes *n, int32_t child)
{
	return child >= 0 ? child : (n->leaves - 1) + ~child;
}

/* Copy one parsed tree into the model's node arrays at base. */
static bool
copy_tree(TsModel *m, const LgbNodes *n, int32_t tree, int64_t base, double scale, bool *seen,
		  TsError *err)
{
	int32_t		nint = n->leaves - 1;

	for (int32_t i = 0; i < nint; i++)
	{
		int64_t		g = base + i;

		m->left[g] = node_index(n, n->left[i]);
		m->right[g] = node_index(n, n->right[i]);
		m->cover[g] = n->internal_count[i];
		m->leaf_value[g] = 0.0;
		if (!copy_split(m, n, tree, i, g, seen, err))
			return false;
	}
	for (int32_t j = 0; j < n->leaves; j++)
	{
		int64_t		g = base + nint + j;

		m->left[g] = m->right[g] = -1;
		m->split_feature[g] = 0;
		m->threshold[g] = 0.0f;
		m->default_left[g] = 0;
		m->cat_set[g] = -1;
		m->cover[g] = n->leaves == 1 ? 1.0 : n->leaf_count[j];
		m->leaf_value[g] = n->leaf_value[j] * scale;
	}
	return true;
}

/* Tree offsets and outputs; sizes come from each tree's num_leaves. */
static bool
index_trees(TsModel *m, const LgbTree *trees, int32_t ntrees, TsError *err)
{
	m->num_trees = ntrees;
	m->tree_offset = ts_alloc(((size_t) ntrees + 1) * sizeof(int64_t));
	m->tree_group = ts_alloc(((size_t) ntrees + 1) * sizeof(int32_t));
	m->tree_offset[0] = 0;
	if (ntrees % m->num_outputs != 0)
		return ts_fail(err, TS_ERR_INVALID, "%d trees is not a multiple of num_tree_per_iteration (%d)",
					   ntrees, m->num_outputs);
	for (int32_t t = 0; t < ntrees; t++)
	{
		int64_t		leaves;
		int64_t		values = trees[t].leaf_value ? count_tokens(trees[t].leaf_value) : 0;

		if (!parse_int(trees[t].num_leaves, "num_leaves", 1, TS_MAX_NODES / 2, &leaves, err))
			return false;
		/* the node arrays are sized from num_leaves: it must match the text, not just the limit */
		if (values != leaves)
			return ts_fail(err, TS_ERR_INVALID, "tree %d: num_leaves is %lld but leaf_value has %lld values",
						   t, (long long) leaves, (long long) values);
		if (m->tree_offset[t] + 2 * leaves - 1 > TS_MAX_NODES)
			return ts_fail(err, TS_ERR_LIMIT, "model has too many nodes");
		m->tree_offset[t + 1] = m->tree_offset[t] + 2 * leaves - 1;
		m->tree_group[t] = t % m->num_outputs;
	}
	m->num_nodes = m->tree_offset[ntrees];
	return true;
}

/* Parse "[categorical_feature: 1,2,5]" into feature indices; false if malformed. */
static bool
parse_categorical_feature(const char *s, int32_t num_features, int32_t **out, int32_t *n)
{
	*n = 0;
	*out = ts_alloc(((size_t) strlen(s) / 2 + 1) * sizeof(int32_t));
	while (*s != ']' && *s != '\0')
	{
		char	   *end;
		long		v;

		errno = 0;
		v = strtol(s, &end, 10);
		/* ascending, as LightGBM writes them (dictionaries are added in feature order) */
		if (end == s || errno != 0 || v < 0 || v >= num_features || (*n > 0 && v <= (*out)[*n - 1]))
			return false;
		(*out)[(*n)++] = (int32_t) v;
		s = end;
		if (*s == ',')
			s++;
	}
	return *s == ']' && *n > 0;
}

/* One pandas_categorical list: all strings make feature j's dictionary; numbers make none. */
static bool
add_pandas_categories(TsModel *m, int32_t j, const TsJson *list, TsError *err)
{
	size_t		n = ts_json_array_len(list);

	if (list->type == TSJ_NUMARRAY)
		return true;
	if (list->type != TSJ_ARRAY)
		return ts_fail(err, TS_ERR_INVALID, "pandas_categorical holds a non-list");
	for (size_t i = 0; i < n; i++)
		if (list->u.arr.items[i]->type != TSJ_STRING)
			return true;		/* mixed or numeric categories: codes only */
	for (size_t i = 0; i < n; i++)
	{
		const TsJson *c = list->u.arr.items[i];

		if (!ts_catdict_add(m, j, c->u.str.ptr, c->u.str.len, err))
			return false;
	}
	return true;
}

/*
 * LightGBM saves the categories of a pandas DataFrame's categorical columns
 * as "pandas_categorical:" (a JSON list of lists) after the parameters,
 * one list per such column in column order; "[categorical_feature: ...]"
 * names those columns' indices. When both agree in number, the lists are
 * the dictionaries of those features; otherwise the model keeps codes only.
 */
static bool
read_pandas_categorical(TsModel *m, LgbText *text, TsError *err)
{
	const char *cat_param = NULL;
	const char *pandas = NULL;
	char	   *line;
	int32_t    *features = NULL;
	int32_t		nfeatures = 0;
	TsJsonDoc  *doc;
	const TsJson *lists;
	bool		ok = true;

	while ((line = next_line(text)) != NULL)
		if (strncmp(line, "[categorical_feature: ", 22) == 0)
			cat_param = line + 22;
		else if (strncmp(line, "pandas_categorical:", 19) == 0)
			pandas = line + 19;
	if (pandas == NULL || strcmp(pandas, "null") == 0 || cat_param == NULL)
		return true;
	doc = ts_json_parse(pandas, strlen(pandas), err);
	if (doc == NULL)
		return false;
	lists = ts_json_root(doc);
	if (parse_categorical_feature(cat_param, m->num_features, &features, &nfeatures) &&
		lists->type == TSJ_ARRAY && ts_json_array_len(lists) == (size_t) nfeatures)
	{
		ts_catdict_open(m);
		for (int32_t i = 0; ok && i < nfeatures; i++)
		{
			ts_model_mark_categorical(m, features[i]);
			ok = add_pandas_categories(m, features[i], lists->u.arr.items[i], err);
		}
		ok = ok && ts_catdict_close(m, err);
	}
	ts_free(features);
	ts_json_free(doc);
	return ok;
}

/* Build the model from the text; the caller frees it on failure. */
static bool
build_model(TsModel *m, LgbText *text, TsError *err)
{
	LgbTree    *trees = NULL;
	int32_t		ntrees = 0;
	bool		average;
	char	   *first;
	bool	   *seen = NULL;
	double		scale = 1.0;
	bool		ok;

	ok = read_header(m, text, &average, &first, err) &&
		collect_trees(text, first, &trees, &ntrees, err) &&
		index_trees(m, trees, ntrees, err);
	if (ok)
	{
		ts_model_alloc_nodes(m);
		m->base_margin = ts_alloc0((size_t) m->num_outputs * sizeof(double));
		m->input_rule = ts_alloc0((size_t) m->num_features);
		seen = ts_alloc0((size_t) m->num_features * sizeof(bool));
		/* random-forest mode predicts the mean over iterations */
		if (average && ntrees > 0)
			scale = (double) m->num_outputs / ntrees;
	}
	for (int32_t t = 0; ok && t < ntrees; t++)
	{
		LgbNodes	n;

		ok = parse_tree(&trees[t], t, m->num_features, &n, err) &&
			copy_tree(m, &n, t, m->tree_offset[t], scale, seen, err);
		ts_check_interrupts_after(ok ? 16 * (int64_t) n.leaves : 1);
		free_nodes(&n);
	}
	ts_free(seen);
	ts_free(trees);
	return ok && read_pandas_categorical(m, text, err) && ts_model_validate(m, err);
}

/* Read a LightGBM text model; on failure everything is freed. */
TsModel *
ts_lightgbm_read(const char *buf, size_t len, TsError *err)
{
	TsModel    *m = ts_alloc0(sizeof(TsModel));
	LgbText		text;
	char	   *copy = ts_alloc(len + 1);

	memcpy(copy, buf, len);
	copy[len] = '\0';
	if (memchr(copy, '\0', len) != NULL)
	{
		ts_free(copy);
		ts_free(m);
		ts_fail(err, TS_ERR_SYNTAX, "LightGBM model text contains a NUL byte");
		return NULL;
	}
	text.p = copy;
	text.end = copy + len;
	m->format = "lightgbm";
	m->link_scale = 1.0;
	if (!build_model(m, &text, err))
	{
		ts_model_free(m);
		m = NULL;
	}
	ts_free(copy);
	return m;
}
