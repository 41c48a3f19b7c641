/*
 * ts_xgboost_cats.c - the categories of an XGBoost model: which features are
 * categorical, and, for models saved by XGBoost >= 3.1 from pandas string
 * categories, their names in code order (so a text column can be mapped to
 * the codes the trees split on).
 */
#include "model/ts_xgboost.h"

#include <math.h>
#include <string.h>

/* One feature's string categories: bytes in "values", cut at "offsets" (n + 1 of them). */
static bool
read_string_categories(TsModel *m, int32_t j, const TsJson *offsets, const TsJson *values,
					   TsError *err)
{
	size_t		n = ts_json_array_len(offsets);
	size_t		nbytes = ts_json_array_len(values);
	char	   *buf = ts_alloc(nbytes + 1);
	double		prev = 0.0;
	bool		ok = true;

	for (size_t i = 0; ok && i < nbytes; i++)
	{
		double		b;

		if (!ts_json_number_at(values, i, &b) || b != floor(b) || b < 0 || b > 255)
			ok = ts_fail(err, TS_ERR_INVALID, "cats: feature %d has a value that is not a byte", j);
		else
			buf[i] = (char) (unsigned char) b;
	}
	for (size_t i = 0; ok && i < n; i++)
	{
		double		o;

		if (!ts_json_number_at(offsets, i, &o) || o != floor(o) || o < prev || o > (double) nbytes ||
			(i == 0 && o != 0.0))
			ok = ts_fail(err, TS_ERR_INVALID, "cats: feature %d has malformed offsets", j);
		else if (i > 0)
			ok = ts_catdict_add(m, j, buf + (size_t) prev, (size_t) (o - prev), err);
		prev = o;
	}
	ts_free(buf);
	return ok;
}

/*
 * The categories each feature was trained with, as XGBoost >= 3.1 saves
 * them for pandas categories ("cats" beside the trees: per feature, string
 * categories as bytes with offsets, or numbers). Only string categories
 * make a dictionary: a table's text column is mapped to codes by it, while
 * numbers are codes already.
 */
static bool
read_category_dictionaries(TsModel *m, const TsJson *model, TsError *err)
{
	const TsJson *enc = ts_json_get(ts_json_get(model, "cats"), "enc");
	size_t		n = ts_json_array_len(enc);
	bool		ok = true;

	if (n == 0)
		return true;
	if (enc->type != TSJ_ARRAY || n != (size_t) m->num_features)
		return ts_fail(err, TS_ERR_INVALID, "cats: \"enc\" must list one entry per feature (%d)",
					   m->num_features);
	ts_catdict_open(m);
	for (int32_t j = 0; ok && j < m->num_features; j++)
	{
		const TsJson *e = enc->u.arr.items[j];
		const TsJson *offsets = ts_json_get(e, "offsets");
		const TsJson *values = ts_json_get(e, "values");

		if (e->type != TSJ_OBJECT || values == NULL ||
			(values->type != TSJ_NUMARRAY && values->type != TSJ_ARRAY))
			return ts_fail(err, TS_ERR_INVALID, "cats: entry %d has no \"values\" array", j);
		if (ts_json_array_len(values) > 0)
			ts_model_mark_categorical(m, j);
		if (ts_json_array_len(offsets) > 1)
			ok = read_string_categories(m, j, offsets, values, err);
	}
	return ok && ts_catdict_close(m, err);
}

/* Features XGBoost was told are categorical (feature_types "c"). */
static void
read_feature_types(TsModel *m, const TsJson *learner)
{
	const TsJson *types = ts_json_get(learner, "feature_types");

	if (types == NULL || types->type != TSJ_ARRAY || ts_json_array_len(types) != (size_t) m->num_features)
		return;
	for (int32_t j = 0; j < m->num_features; j++)
	{
		const TsJson *t = types->u.arr.items[j];

		if (t->type == TSJ_STRING && strcmp(t->u.str.ptr, "c") == 0)
			ts_model_mark_categorical(m, j);
	}
}

/* Categorical features and category names; see ts_xgboost.h. */
bool
ts_xgboost_read_categories(TsModel *m, const TsJson *learner, const TsJson *model, TsError *err)
{
	read_feature_types(m, learner);
	return read_category_dictionaries(m, model, err);
}
