/*
 * ts_wire.c - a model's interface as flat bytes (ts_wire.h). Every count is
 * checked against the bytes left before anything is allocated, and every
 * index against what it indexes, so damaged bytes give an error, never a
 * wild read.
 */
#include "core/ts_wire.h"

#include "core/ts_pack.h"

#include <math.h>
#include <string.h>

#define WIRE_MAGIC 0x49575354u	/* "TSWI" */
#define WIRE_FORMAT 2

/* Bytes being written: counted always, copied while they fit. */
typedef struct Writer
{
	char	   *buf;
	size_t		cap;
	size_t		len;
} Writer;

/* Bytes being read. */
typedef struct Reader
{
	const char *buf;
	size_t		len;
	size_t		pos;
	bool		ok;
} Reader;

/* Append n bytes. */
static void
put(Writer *w, const void *p, size_t n)
{
	if (w->buf != NULL && n > 0 && w->len + n <= w->cap)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

/* Append a 32-bit integer. */
static void
put_i32(Writer *w, int32_t v)
{
	put(w, &v, sizeof(v));
}

/* Append a 64-bit integer. */
static void
put_i64(Writer *w, int64_t v)
{
	put(w, &v, sizeof(v));
}

/* Append a double. */
static void
put_f64(Writer *w, double v)
{
	put(w, &v, sizeof(v));
}

/* Append a string, or -1 for NULL. */
static void
put_str(Writer *w, const char *s)
{
	put_i32(w, s == NULL ? -1 : (int32_t) strlen(s));
	if (s != NULL)
		put(w, s, strlen(s));
}

/* Append an optional per-feature byte array: a presence flag, then its bytes. */
static void
put_flags(Writer *w, const uint8_t *flags, int32_t n)
{
	put_i32(w, flags != NULL);
	if (flags != NULL)
		put(w, flags, (size_t) n);
}

/* Append the model's fields other than its trees. */
static void
write_model(Writer *w, const TsModel *m)
{
	int32_t		nf = m->num_features;
	int32_t		names = m->dict_start != NULL ? m->dict_start[nf] : 0;

	put_str(w, m->format);
	put_i32(w, m->num_trees);
	put_i32(w, nf);
	put_i32(w, m->num_outputs);
	put_i64(w, m->num_nodes);
	put_i64(w, m->num_leaves);
	put_i32(w, m->max_depth);
	put_i32(w, m->leaf_size);
	put_i32(w, (int32_t) m->link);
	put_f64(w, m->link_scale);
	put_i32(w, m->dict_hashed);
	put_i32(w, m->covers_missing);
	put_str(w, m->objective);
	put(w, m->base_margin, (size_t) m->num_outputs * sizeof(double));
	put_flags(w, m->input_rule, nf);
	put_flags(w, m->categorical, nf);
	put_i32(w, m->feature_names != NULL ? 1 : m->generated_names ? 2 : 0);
	for (int32_t j = 0; m->feature_names != NULL && j < nf; j++)
		put_str(w, m->feature_names[j]);
	put_i32(w, m->dict_start != NULL);
	if (m->dict_start == NULL)
		return;
	put(w, m->dict_start, (size_t) (nf + 1) * sizeof(int32_t));
	for (int32_t i = 0; i < names; i++)
		put_str(w, m->dict_names[i]);
	put(w, m->dict_sorted, (size_t) names * sizeof(int32_t));
}

/* Append one per-element array of the listed paths. */
static void
put_elements(Writer *w, const TsPathTable *pt, const int64_t *paths, int64_t n, const void *array,
			 size_t width)
{
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		start = pt->path_start[paths[i]];

		put(w, (const char *) array + (size_t) start * width,
			(size_t) (pt->path_start[paths[i] + 1] - start) * width);
		ts_check_interrupts_after(pt->path_start[paths[i] + 1] - start);
	}
}

/* Append the listed paths as a path table of their own. */
static void
write_paths(Writer *w, const TsPathTable *pt, const int64_t *paths, int64_t n)
{
	int64_t		elements = 0;
	int32_t		longest = 0;

	for (int64_t i = 0; i < n; i++)
	{
		int64_t		len = pt->path_start[paths[i] + 1] - pt->path_start[paths[i]];

		elements += len;
		longest = len > longest ? (int32_t) len : longest;
	}
	put_i64(w, pt->num_paths);
	put_i64(w, n);
	put_i64(w, elements);
	put_i32(w, longest);
	put_i32(w, pt->value_width);
	put(w, pt->bias, (size_t) pt->num_outputs * sizeof(double));
	for (int64_t i = 0; i < n; i++)
	{
		put_i64(w, pt->path_start[paths[i] + 1] - pt->path_start[paths[i]]);
		put_i32(w, pt->path_group[paths[i]]);
		put_i32(w, pt->path_tree[paths[i]]);
		put(w, pt->path_value + (size_t) paths[i] * pt->value_width, (size_t) pt->value_width * sizeof(double));
	}
	put_elements(w, pt, paths, n, pt->feature, sizeof(int32_t));
	put_elements(w, pt, paths, n, pt->lower, sizeof(float));
	put_elements(w, pt, paths, n, pt->upper, sizeof(float));
	put_elements(w, pt, paths, n, pt->missing, sizeof(uint8_t));
	put_elements(w, pt, paths, n, pt->cat, sizeof(int32_t));
	put_elements(w, pt, paths, n, pt->zero_fraction, sizeof(double));
	put_i64(w, n > 0 ? pt->cat_pool_len : 0);
	put(w, pt->cat_pool, n > 0 ? (size_t) pt->cat_pool_len * sizeof(uint32_t) : 0);
}

size_t
ts_wire_write(const TsModel *m, const TsPathTable *pt, const int64_t *long_paths, int64_t num_long,
			  char *buf, size_t cap)
{
	Writer		w = {buf, cap, 0};

	put_i32(&w, (int32_t) WIRE_MAGIC);
	put_i32(&w, WIRE_FORMAT);
	write_model(&w, m);
	write_paths(&w, pt, long_paths, num_long);
	return w.len;
}

char *
ts_wire_interface(const TsModel *m, const TsPathTable *pt, size_t *len)
{
	int64_t		num_long;
	int64_t    *long_paths = ts_pack_long_paths(pt, &num_long);
	char	   *buf;

	*len = ts_wire_write(m, pt, long_paths, num_long, NULL, 0);
	buf = ts_alloc(*len);
	ts_wire_write(m, pt, long_paths, num_long, buf, *len);
	ts_free(long_paths);
	return buf;
}

/* The next n bytes, or NULL (and the reader failed) when fewer are left. */
static const void *
take(Reader *r, size_t n)
{
	const void *p = r->buf + r->pos;

	if (!r->ok || n > r->len - r->pos)
	{
		r->ok = false;
		return NULL;
	}
	r->pos += n;
	return p;
}

/* Copy the next n bytes to dest (zeros once the reader failed). */
static void
read_into(Reader *r, void *dest, size_t n)
{
	const void *p = take(r, n);

	if (p != NULL)
		memcpy(dest, p, n);
	else
		memset(dest, 0, n);
}

/* A 32-bit integer. */
static int32_t
get_i32(Reader *r)
{
	int32_t		v;

	read_into(r, &v, sizeof(v));
	return v;
}

/* A 64-bit integer. */
static int64_t
get_i64(Reader *r)
{
	int64_t		v;

	read_into(r, &v, sizeof(v));
	return v;
}

/* A double. */
static double
get_f64(Reader *r)
{
	double		v;

	read_into(r, &v, sizeof(v));
	return v;
}

/* A copy of count items of width bytes, or NULL (reader failed) when they are not all there. */
static void *
get_array(Reader *r, int64_t count, size_t width)
{
	const void *p;
	void	   *copy;

	if (count < 0 || (width > 0 && (uint64_t) count > (r->len - r->pos) / width))
	{
		r->ok = false;
		return NULL;
	}
	p = take(r, (size_t) count * width);
	if (p == NULL)
		return NULL;
	copy = ts_alloc((size_t) count * width + 1);
	memcpy(copy, p, (size_t) count * width);
	return copy;
}

/* A string written by put_str; NULL for a NULL string or when the reader failed. */
static char *
get_str(Reader *r)
{
	int32_t		n = get_i32(r);
	char	   *s;

	if (n < 0)
		return NULL;
	s = get_array(r, n, 1);
	if (s != NULL)
		s[n] = '\0';
	return s;
}

/* An optional per-feature byte array written by put_flags. */
static uint8_t *
get_flags(Reader *r, int32_t n)
{
	return get_i32(r) != 0 ? get_array(r, n, 1) : NULL;
}

/* Whether the dictionaries' offsets rise from 0 and their sorted codes stay in range. */
static bool
valid_dicts(const TsModel *m)
{
	int32_t		nf = m->num_features;

	if (m->dict_start[0] != 0)
		return false;
	for (int32_t j = 0; j < nf; j++)
		if (m->dict_start[j + 1] < m->dict_start[j])
			return false;
	for (int32_t i = 0; i < m->dict_start[nf]; i++)
		if (m->dict_names[i] == NULL || m->dict_sorted[i] < 0 || m->dict_sorted[i] >= m->dict_start[nf])
			return false;
	return true;
}

/* Read the dictionaries, when the model has them. */
static void
read_dicts(Reader *r, TsModel *m)
{
	int32_t		names;

	if (get_i32(r) == 0 || !r->ok)
		return;
	m->dict_start = get_array(r, (int64_t) m->num_features + 1, sizeof(int32_t));
	if (m->dict_start == NULL)
		return;
	names = m->dict_start[m->num_features];
	if (names < 0 || (size_t) names > r->len - r->pos)
	{
		ts_free(m->dict_start);	/* ts_model_free counts names from it */
		m->dict_start = NULL;
		r->ok = false;
		return;
	}
	m->dict_names = ts_alloc0((size_t) names * sizeof(char *) + 1);
	for (int32_t i = 0; i < names; i++)
		m->dict_names[i] = get_str(r);
	m->dict_sorted = get_array(r, names, sizeof(int32_t));
	r->ok = r->ok && valid_dicts(m);
}

/* Read the model's fields; the caller checks r->ok. */
static TsModel *
read_model(Reader *r)
{
	TsModel    *m = ts_alloc0(sizeof(TsModel));
	int32_t		nf;
	int32_t		names;			/* 1: the model's names follow; 2: LightGBM's Column_<j> */

	m->format = get_str(r);
	m->num_trees = get_i32(r);
	m->num_features = nf = get_i32(r);
	m->num_outputs = get_i32(r);
	m->num_nodes = get_i64(r);
	m->num_leaves = get_i64(r);
	m->max_depth = get_i32(r);
	m->leaf_size = get_i32(r);
	m->link = (TsLink) get_i32(r);
	m->link_scale = get_f64(r);
	m->dict_hashed = get_i32(r) != 0;
	m->covers_missing = get_i32(r) != 0;
	m->objective = get_str(r);
	if (nf < 1 || nf > TS_MAX_FEATURES || m->num_outputs < 1 || m->num_outputs > TS_MAX_OUTPUTS ||
		m->link < TS_LINK_IDENTITY || m->link > TS_LINK_HINGE)
	{
		r->ok = false;
		return m;
	}
	m->base_margin = get_array(r, m->num_outputs, sizeof(double));
	m->input_rule = get_flags(r, nf);
	m->categorical = get_flags(r, nf);
	names = get_i32(r);
	m->generated_names = names == 2;
	if (names == 1 && r->ok)
	{
		m->feature_names = ts_alloc0((size_t) nf * sizeof(char *));
		for (int32_t j = 0; j < nf; j++)
			if ((m->feature_names[j] = get_str(r)) == NULL)
				r->ok = false;
	}
	read_dicts(r, m);
	return m;
}

/* Whether every element's feature and category set, and every path's outputs, are in range. */
static bool
valid_paths(const TsPathTable *pt)
{
	for (int64_t p = 0; p < pt->num_paths; p++)
		if (pt->path_group[p] < 0 || (int64_t) pt->path_group[p] + pt->value_width > pt->num_outputs)
			return false;
	for (int64_t e = 0; e < pt->num_elements; e++)
	{
		ts_check_interrupts_after(1);
		if (pt->feature[e] < -1 || pt->feature[e] >= pt->num_features ||
			(pt->cat[e] >= 0 && !ts_catset_valid(pt->cat_pool, pt->cat_pool_len, pt->cat[e])))
			return false;
	}
	return true;
}

/* Read the per-path arrays: lengths (as offsets), outputs, trees, values. */
static void
read_path_heads(Reader *r, TsPathTable *pt)
{
	pt->path_start = ts_alloc0((size_t) (pt->num_paths + 1) * sizeof(int64_t));
	pt->path_group = ts_alloc0((size_t) (pt->num_paths + 1) * sizeof(int32_t));
	pt->path_tree = ts_alloc0((size_t) (pt->num_paths + 1) * sizeof(int32_t));
	pt->path_value = ts_alloc0((size_t) (pt->num_paths * pt->value_width + 1) * sizeof(double));
	for (int64_t p = 0; p < pt->num_paths && r->ok; p++)
	{
		int64_t		len = get_i64(r);

		if (len < 1 || len > pt->max_path_len)
			r->ok = false;
		pt->path_start[p + 1] = pt->path_start[p] + len;
		pt->path_group[p] = get_i32(r);
		pt->path_tree[p] = get_i32(r);
		for (int32_t k = 0; k < pt->value_width; k++)
			pt->path_value[p * pt->value_width + k] = get_f64(r);
	}
	r->ok = r->ok && pt->path_start[pt->num_paths] == pt->num_elements;
}

/* Read the long paths' table; the caller checks r->ok. */
static TsPathTable *
read_paths(Reader *r, const TsModel *m, int64_t *num_paths)
{
	TsPathTable *pt = ts_alloc0(sizeof(TsPathTable));
	int64_t		n;

	pt->num_features = m->num_features;
	pt->num_outputs = m->num_outputs;
	*num_paths = get_i64(r);
	n = get_i64(r);
	pt->num_elements = get_i64(r);
	pt->max_path_len = get_i32(r);
	pt->value_width = get_i32(r);
	pt->bias = get_array(r, m->num_outputs, sizeof(double));
	/* each path takes at least 24 bytes, each element 25: no count beyond the bytes left */
	if (!r->ok || n < 0 || n > *num_paths || n > (int64_t) (r->len - r->pos) / 24 ||
		pt->num_elements < n || pt->num_elements > (int64_t) (r->len - r->pos) / 25 ||
		pt->value_width < 1 || pt->value_width > m->num_outputs || pt->max_path_len < 0)
	{
		r->ok = false;
		return pt;
	}
	pt->num_paths = n;
	read_path_heads(r, pt);
	pt->feature = get_array(r, pt->num_elements, sizeof(int32_t));
	pt->lower = get_array(r, pt->num_elements, sizeof(float));
	pt->upper = get_array(r, pt->num_elements, sizeof(float));
	pt->missing = get_array(r, pt->num_elements, sizeof(uint8_t));
	pt->cat = get_array(r, pt->num_elements, sizeof(int32_t));
	pt->zero_fraction = get_array(r, pt->num_elements, sizeof(double));
	pt->cat_pool_len = get_i64(r);
	pt->cat_pool = get_array(r, pt->cat_pool_len, sizeof(uint32_t));
	r->ok = r->ok && valid_paths(pt);
	return pt;
}

bool
ts_wire_read(const char *buf, size_t len, TsInterface *out, TsError *err)
{
	Reader		r = {buf, len, 0, true};

	memset(out, 0, sizeof(*out));
	if ((uint32_t) get_i32(&r) != WIRE_MAGIC || get_i32(&r) != WIRE_FORMAT)
		return ts_fail(err, TS_ERR_SYNTAX, "the model's interface has a foreign header");
	out->model = read_model(&r);
	if (r.ok)
		out->long_paths = read_paths(&r, out->model, &out->num_paths);
	if (!r.ok || r.pos != len)
	{
		ts_wire_free(out);
		return ts_fail(err, TS_ERR_SYNTAX, "the model's interface is damaged");
	}
	return true;
}

void
ts_wire_free(TsInterface *in)
{
	if (in->model != NULL)
		ts_free((char *) in->model->format);	/* a reader's is a literal; this one was read */
	ts_model_free(in->model);
	ts_paths_free(in->long_paths);
	memset(in, 0, sizeof(*in));
}
