/*
 * ts_catdict.c - the category names a model was trained with, per feature,
 * so that a text column can be mapped to the codes its trees split on. The
 * code of a category is its position in the dictionary (XGBoost's "cats",
 * LightGBM's pandas_categorical, both in pandas' category order).
 */
#include "model/ts_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Start empty dictionaries for every feature. */
void
ts_catdict_open(TsModel *m)
{
	m->dict_start = ts_alloc0(((size_t) m->num_features + 1) * sizeof(int32_t));
	m->dict_cap = 16;
	m->dict_names = ts_alloc((size_t) m->dict_cap * sizeof(char *));
	m->dict_last = 0;
}

/* Append a category to feature j's dictionary; features come in ascending order. */
bool
ts_catdict_add(TsModel *m, int32_t j, const char *name, size_t len, TsError *err)
{
	int32_t		n = m->dict_start[m->num_features];

	if (j < m->dict_last || j >= m->num_features)
		return ts_fail(err, TS_ERR_INVALID, "category dictionary of feature %d is out of order", j);
	if (memchr(name, '\0', len) != NULL)
		return ts_fail(err, TS_ERR_INVALID, "a category name of feature %d contains a NUL byte", j);
	if (n - m->dict_start[j] >= TS_MAX_CATEGORIES)
		return ts_fail(err, TS_ERR_LIMIT, "feature %d has more than %d categories", j,
					   TS_MAX_CATEGORIES);
	if (n == m->dict_cap)
	{
		m->dict_cap *= 2;
		m->dict_names = ts_realloc(m->dict_names, (size_t) m->dict_cap * sizeof(char *));
	}
	m->dict_names[n] = ts_alloc(len + 1);
	memcpy(m->dict_names[n], name, len);
	m->dict_names[n][len] = '\0';
	m->dict_last = j;
	/* features before j keep their end; j and later end here for now */
	for (int32_t k = j + 1; k <= m->num_features; k++)
		m->dict_start[k] = n + 1;
	return true;
}

typedef struct TsNamedCode
{
	const char *name;
	int32_t		code;
} TsNamedCode;

/* Order categories by the bytes of their names. */
static int
named_code_cmp(const void *a, const void *b)
{
	return strcmp(((const TsNamedCode *) a)->name, ((const TsNamedCode *) b)->name);
}

/* Sort each feature's codes by name and refuse duplicate names. */
bool
ts_catdict_close(TsModel *m, TsError *err)
{
	int32_t		n = m->dict_start[m->num_features];
	TsNamedCode *tmp = ts_alloc(((size_t) n + 1) * sizeof(TsNamedCode));
	bool		ok = true;

	m->dict_sorted = ts_alloc(((size_t) n + 1) * sizeof(int32_t));
	for (int32_t j = 0; ok && j < m->num_features; j++)
	{
		int32_t		lo = m->dict_start[j];
		int32_t		size = m->dict_start[j + 1] - lo;

		for (int32_t c = 0; c < size; c++)
			tmp[c] = (TsNamedCode) {m->dict_names[lo + c], c};
		qsort(tmp, (size_t) size, sizeof(TsNamedCode), named_code_cmp);
		for (int32_t i = 0; i < size; i++)
		{
			m->dict_sorted[lo + i] = tmp[i].code;
			if (i > 0 && strcmp(tmp[i - 1].name, tmp[i].name) == 0)
			{
				ok = ts_fail(err, TS_ERR_INVALID, "feature %d has the category \"%.60s\" twice",
							 j, tmp[i].name);
				break;
			}
		}
	}
	ts_free(tmp);
	return ok;
}

/* Categories in feature j's dictionary. */
int32_t
ts_catdict_size(const TsModel *m, int32_t j)
{
	return m->dict_start == NULL ? 0 : m->dict_start[j + 1] - m->dict_start[j];
}

/* Compare name[0 .. len) with a NUL-terminated category name, bytewise. */
static int
name_cmp(const char *name, size_t len, const char *category)
{
	size_t		clen = strlen(category);
	int			c = memcmp(name, category, len < clen ? len : clen);

	if (c != 0)
		return c;
	return len < clen ? -1 : len > clen ? 1 : 0;
}

/* Binary search over the feature's codes sorted by name. */
int32_t
ts_catdict_lookup(const TsModel *m, int32_t j, const char *name, size_t len)
{
	char		hashed[16];
	int32_t		base;
	int32_t		lo = 0;
	int32_t		hi = ts_catdict_size(m, j);

	if (hi == 0)
		return -1;
	if (m->dict_hashed)
	{
		snprintf(hashed, sizeof(hashed), "%d", (int) ts_catboost_category_hash(name, len));
		name = hashed;
		len = strlen(hashed);
	}
	base = m->dict_start[j];
	while (lo < hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;
		int32_t		code = m->dict_sorted[base + mid];
		int			c = name_cmp(name, len, m->dict_names[base + code]);

		if (c == 0)
			return code;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

/* Mark feature j categorical (allocating the flags on first use). */
void
ts_model_mark_categorical(TsModel *m, int32_t j)
{
	if (m->categorical == NULL)
		m->categorical = ts_alloc0((size_t) m->num_features);
	m->categorical[j] = 1;
}
