/*
 * ts_model.c - format-independent model operations: detection, validation,
 * traversal (prediction), links and release.
 */
#include "model/ts_model.h"

#include <math.h>
#include <string.h>

/* Whether buf starts an XGBoost UBJSON object: '{' then a count, a type or a key length. */
static bool
looks_like_ubjson(const char *buf, size_t len)
{
	return len >= 2 && buf[0] == '{' && strchr("iUIlL#$", buf[1]) != NULL && buf[1] != '\0';
}

/* Detect the format from the first bytes and dispatch to its reader. */
TsModel *
ts_model_read(const char *buf, size_t len, TsError *err)
{
	size_t		i = 0;

	/* Treelite writes its major version first, a little-endian int32 */
	if (len >= 4 && memcmp(buf, "\x04\0\0\0", 4) == 0)
		return ts_treelite_read(buf, len, err);
	if (len >= 4 && memcmp(buf, "\x03\0\0\0", 4) == 0)
		return ts_treelite_read(buf, len, err);	/* it says which version to use */
	if (looks_like_ubjson(buf, len))
		return ts_xgboost_ubj_read(buf, len, err);
	if (len >= 5 && memcmp(buf, "tree", 4) == 0 && (buf[4] == '\n' || buf[4] == '\r'))
		return ts_lightgbm_read(buf, len, err);
	while (i < len && (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t'))
		i++;
	if (i < len && buf[i] == '{')
		return ts_json_model_read(buf, len, err);
	if (len == 0)
		ts_fail(err, TS_ERR_SYNTAX, "model is empty");
	else
		ts_fail(err, TS_ERR_SYNTAX,
				"unrecognised model format: expected XGBoost JSON or UBJSON, a LightGBM text model, CatBoost JSON or a Treelite checkpoint");
	return NULL;
}

/* Allocate the flat node arrays for m->num_nodes nodes; no node is categorical yet. */
void
ts_model_alloc_nodes(TsModel *m)
{
	size_t		n = (size_t) m->num_nodes + 1;

	m->left = ts_alloc(n * sizeof(int32_t));
	m->right = ts_alloc(n * sizeof(int32_t));
	m->split_feature = ts_alloc(n * sizeof(int32_t));
	m->threshold = ts_alloc(n * sizeof(float));
	m->default_left = ts_alloc(n * sizeof(uint8_t));
	m->leaf_value = ts_alloc0(n * (size_t) ts_leaf_size(m) * sizeof(double));
	m->cover = ts_alloc(n * sizeof(double));
	m->cat_set = ts_alloc(n * sizeof(int32_t));
	for (size_t i = 0; i < n; i++)
		m->cat_set[i] = -1;
}

/*
 * Append an empty set of nbits categories (no bit set; others as given) to
 * the pool; returns its offset, or -1 past the size limit.
 */
int64_t
ts_model_add_catset(TsModel *m, uint32_t nbits, bool others)
{
	int64_t		len = ts_catset_len(nbits);
	int64_t		offset = m->cat_pool_len;

	if (nbits > TS_MAX_CATEGORIES || offset + len > TS_MAX_CAT_WORDS)
		return -1;
	if (offset + len > m->cat_pool_cap)
	{
		m->cat_pool_cap = (offset + len) * 2;
		m->cat_pool = ts_realloc(m->cat_pool, (size_t) m->cat_pool_cap * sizeof(uint32_t));
	}
	memset(m->cat_pool + offset, 0, (size_t) len * sizeof(uint32_t));
	m->cat_pool[offset] = nbits;
	m->cat_pool[offset + 1] = others ? 1 : 0;
	m->cat_pool_len = offset + len;
	return offset;
}

/* Free a model and all of its arrays. */
void
ts_model_free(TsModel *m)
{
	if (m == NULL)
		return;
	ts_free(m->tree_offset);
	ts_free(m->tree_group);
	ts_free(m->left);
	ts_free(m->right);
	ts_free(m->split_feature);
	ts_free(m->threshold);
	ts_free(m->default_left);
	ts_free(m->leaf_value);
	ts_free(m->cover);
	ts_free(m->cat_set);
	ts_free(m->cat_pool);
	ts_free(m->input_rule);
	ts_free(m->categorical);
	for (int32_t i = 0; m->dict_start != NULL && i < m->dict_start[m->num_features]; i++)
		ts_free(m->dict_names[i]);
	ts_free(m->dict_start);
	ts_free(m->dict_names);
	ts_free(m->dict_sorted);
	if (m->feature_names != NULL)
	{
		for (int32_t i = 0; i < m->num_features; i++)
			ts_free(m->feature_names[i]);
		ts_free(m->feature_names);
	}
	ts_free(m->objective);
	ts_free(m->base_margin);
	ts_free(m);
}

/* Validate the node arrays of one tree and measure its depth by DFS. */
static bool
validate_tree(TsModel *m, int32_t t, uint8_t *seen, int32_t *stack, int32_t *depth_of,
			  TsError *err)
{
	int64_t		base = m->tree_offset[t];
	int64_t		n = m->tree_offset[t + 1] - base;
	int64_t		sp = 0;
	int64_t		visited = 0;

	if (n < 1)
		return ts_fail(err, TS_ERR_INVALID, "tree %d has no nodes", t);
	memset(seen, 0, (size_t) n);
	stack[sp++] = 0;
	depth_of[0] = 0;
	seen[0] = 1;
	while (sp > 0)
	{
		int32_t		i = stack[--sp];
		int64_t		g = base + i;
		int32_t		l = m->left[g];
		int32_t		r = m->right[g];

		visited++;
		ts_check_interrupts_after(4);
		if (!(m->cover[g] >= 0.0) || !isfinite(m->cover[g]))
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %d has an invalid cover (%g); covers must be finite and >= 0",
						   t, i, m->cover[g]);
		if (l == -1)
		{
			if (r != -1)
				return ts_fail(err, TS_ERR_INVALID,
							   "tree %d node %d has a right child but no left child", t, i);
			for (int32_t k = 0; k < ts_leaf_size(m); k++)
				if (!isfinite(m->leaf_value[g * ts_leaf_size(m) + k]))
					return ts_fail(err, TS_ERR_INVALID, "tree %d leaf %d has a non-finite value", t, i);
			m->num_leaves++;
			if (depth_of[i] > m->max_depth)
				m->max_depth = depth_of[i];
			continue;
		}
		if (l < 0 || l >= n || r < 0 || r >= n)
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %d has a child index out of range (%d, %d; %lld nodes)",
						   t, i, l, r, (long long) n);
		if (seen[l] || seen[r] || l == r)
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %d reaches a node twice (cycle or shared child)", t, i);
		if (m->split_feature[g] < 0 || m->split_feature[g] >= m->num_features)
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %d splits on feature %d, outside 0..%d",
						   t, i, m->split_feature[g], m->num_features - 1);
		if (m->cat_set[g] != -1 && !ts_catset_valid(m->cat_pool, m->cat_pool_len, m->cat_set[g]))
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %d has a malformed category set", t, i);
		if (m->cat_set[g] != -1)
			ts_model_mark_categorical(m, m->split_feature[g]);
		/*
		 * +inf sends every present value left (inputs are clamped to
		 * FLT_MAX), -inf every present value right (XGBoost's split of
		 * present against missing); NaN decides nothing.
		 */
		if (m->cat_set[g] == -1 && isnan(m->threshold[g]))
			return ts_fail(err, TS_ERR_INVALID,
						   "tree %d node %d has a NaN split threshold", t, i);
		if (m->default_left[g] > 1)
			return ts_fail(err, TS_ERR_INVALID, "tree %d node %d has default_left not 0 or 1", t, i);
		seen[l] = seen[r] = 1;
		depth_of[l] = depth_of[r] = depth_of[i] + 1;
		stack[sp++] = l;
		stack[sp++] = r;
	}
	if (visited != n)
		return ts_fail(err, TS_ERR_INVALID,
					   "tree %d has %lld nodes not reachable from its root",
					   t, (long long) (n - visited));
	return true;
}

/*
 * Check the invariants the path builder and traversal rely on: every node
 * reachable exactly once from its root (so no cycles), child and feature
 * indices in range, finite thresholds and leaf values, covers >= 0.
 */
bool
ts_model_validate(TsModel *m, TsError *err)
{
	int64_t		largest = 0;
	uint8_t    *seen;
	int32_t    *stack;
	int32_t    *depth_of;
	bool		ok = true;

	if (m->num_outputs < 1 || m->num_outputs > TS_MAX_OUTPUTS)
		return ts_fail(err, TS_ERR_LIMIT, "number of outputs %d out of range", m->num_outputs);
	if (m->num_features < 1 || m->num_features > TS_MAX_FEATURES)
		return ts_fail(err, TS_ERR_LIMIT, "number of features %d out of range 1..%d",
					   m->num_features, TS_MAX_FEATURES);
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		if (m->tree_group[t] < 0 || m->tree_group[t] > m->num_outputs - ts_leaf_size(m))
			return ts_fail(err, TS_ERR_INVALID, "tree %d belongs to output %d, outside 0..%d",
						   t, m->tree_group[t], m->num_outputs - ts_leaf_size(m));
		if (m->tree_offset[t + 1] - m->tree_offset[t] > largest)
			largest = m->tree_offset[t + 1] - m->tree_offset[t];
	}
	for (int32_t k = 0; k < m->num_outputs; k++)
		if (!isfinite(m->base_margin[k]))
			return ts_fail(err, TS_ERR_INVALID, "base_score is not finite in margin space");
	for (int32_t j = 0; m->input_rule != NULL && j < m->num_features; j++)
		if (m->input_rule[j] > TS_INPUT_CATEGORY_TRUNC)
			return ts_fail(err, TS_ERR_INVALID, "feature %d has an unknown input rule", j);
	if (m->cat_pool_len > TS_MAX_CAT_WORDS)
		return ts_fail(err, TS_ERR_LIMIT, "model's category sets are too large");
	if (!(m->link_scale > 0.0) || !isfinite(m->link_scale))
		return ts_fail(err, TS_ERR_INVALID, "link scale %g must be positive", m->link_scale);
	seen = ts_alloc((size_t) largest + 1);
	stack = ts_alloc(((size_t) largest + 1) * sizeof(int32_t));
	depth_of = ts_alloc(((size_t) largest + 1) * sizeof(int32_t));
	m->num_leaves = 0;
	m->max_depth = 0;
	for (int32_t t = 0; ok && t < m->num_trees; t++)
		ok = validate_tree(m, t, seen, stack, depth_of, err);
	ts_free(seen);
	ts_free(stack);
	ts_free(depth_of);
	return ok;
}

/* Walk each tree to its leaf and add the leaf value to its output's margin. */
void
ts_model_predict_margin(const TsModel *m, const float *row, double *margin)
{
	for (int32_t k = 0; k < m->num_outputs; k++)
		margin[k] = m->base_margin[k];
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		int64_t		base = m->tree_offset[t];
		int32_t		i = 0;
		int64_t		steps = 1;

		while (m->left[base + i] != -1)
		{
			int64_t		g = base + i;

			i = ts_node_goes_left(m, g, row[m->split_feature[g]]) ? m->left[g] : m->right[g];
			steps++;
		}
		ts_check_interrupts_after(steps);
		for (int32_t k = 0; k < ts_leaf_size(m); k++)
			margin[m->tree_group[t] + k] += m->leaf_value[(base + i) * ts_leaf_size(m) + k];
	}
}

/*
 * The float after the largest float <= t: exact for every float32 input. From
 * FLT_MAX up it is +inf, which inputs (clamped to FLT_MAX) are all below.
 */
float
ts_threshold_le(double t)
{
	float		f = (float) t;

	if ((double) f > t)
		f = nextafterf(f, -INFINITY);
	return nextafterf(f, INFINITY);
}

/* The smallest float >= t: below it are exactly the floats below t. */
float
ts_threshold_lt(double t)
{
	float		f = (float) t;

	if ((double) f < t)
		f = nextafterf(f, INFINITY);
	return f;
}

/* LightGBM's view of a raw value, for the features whose rule says so. */
void
ts_model_prepare_row(const TsModel *m, float *row)
{
	if (m->input_rule == NULL)
		return;
	for (int32_t j = 0; j < m->num_features; j++)
	{
		float		x = row[j];

		switch ((TsInputRule) m->input_rule[j])
		{
			case TS_INPUT_PLAIN:
				break;
			case TS_INPUT_ZERO_IS_MISSING:
				if (fabsf(x) <= 1e-35f)
					row[j] = NAN;
				break;
			case TS_INPUT_NAN_IS_ZERO:
				if (isnan(x))
					row[j] = 0.0f;
				break;
			case TS_INPUT_CATEGORY_TRUNC:
				if (x > -1.0f && x < 0.0f)
					row[j] = 0.0f;
				break;
		}
	}
}

/* Map an objective to the link that turns margins into predictions. */
TsLink
ts_objective_link(const char *objective)
{
	static const struct
	{
		const char *name;
		TsLink		link;
	}			links[] = {
		{"binary:logistic", TS_LINK_LOGISTIC},
		{"reg:logistic", TS_LINK_LOGISTIC},
		{"multi:softprob", TS_LINK_SOFTMAX},
		{"multi:softmax", TS_LINK_SOFTMAX},
		{"count:poisson", TS_LINK_EXP},
		{"reg:gamma", TS_LINK_EXP},
		{"reg:tweedie", TS_LINK_EXP},
		{"survival:cox", TS_LINK_EXP},
		{"survival:aft", TS_LINK_EXP},
		{"binary:hinge", TS_LINK_HINGE},
	};

	if (objective == NULL)
		return TS_LINK_IDENTITY;
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (strcmp(objective, links[i].name) == 0)
			return links[i].link;
	return TS_LINK_IDENTITY;
}

/* Apply the link: sigmoid, exp, softmax over outputs, hinge step or identity. */
void
ts_model_link(const TsModel *m, const double *margin, double *pred)
{
	int32_t		n = m->num_outputs;

	switch (m->link)
	{
		case TS_LINK_LOGISTIC:
			for (int32_t k = 0; k < n; k++)
				pred[k] = 1.0 / (1.0 + exp(-m->link_scale * margin[k]));
			break;
		case TS_LINK_EXP:
			for (int32_t k = 0; k < n; k++)
				pred[k] = exp(margin[k]);
			break;
		case TS_LINK_HINGE:
			for (int32_t k = 0; k < n; k++)
				pred[k] = margin[k] > 0.0 ? 1.0 : 0.0;
			break;
		case TS_LINK_SOFTMAX:
			{
				double		mx = margin[0];
				double		sum = 0.0;

				for (int32_t k = 1; k < n; k++)
					if (margin[k] > mx)
						mx = margin[k];
				for (int32_t k = 0; k < n; k++)
				{
					pred[k] = exp(margin[k] - mx);
					sum += pred[k];
				}
				for (int32_t k = 0; k < n; k++)
					pred[k] /= sum;
				break;
			}
		case TS_LINK_IDENTITY:
			for (int32_t k = 0; k < n; k++)
				pred[k] = margin[k];
			break;
	}
}
