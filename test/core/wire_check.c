/*
 * wire_check.c - ts_cli's check of a model's interface (src/core/ts_wire.c):
 * written and read back, it must give the model's every non-tree field and
 * long paths whose contributions equal the full table's bitwise; damaged
 * copies (truncated, bytes flipped) must be refused or read, never crash
 * (the check runs under AddressSanitizer).
 */
#include "core/ts_pack.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_wire.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int			ts_cli_check_wire(const TsModel *m, const TsPathTable *pt);

/* Whether two optional strings are equal. */
static bool
same_str(const char *a, const char *b)
{
	return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

/* Whether two optional byte arrays of n are equal. */
static bool
same_bytes(const void *a, const void *b, size_t n)
{
	return (a == NULL) == (b == NULL) && (a == NULL || memcmp(a, b, n) == 0);
}

/* Whether the interface's model has m's every field but the trees. */
static bool
same_model(const TsModel *m, const TsModel *w)
{
	int32_t		nf = m->num_features;
	int32_t		names = m->dict_start != NULL ? m->dict_start[nf] : 0;
	bool		same = same_str(m->format, w->format) && m->num_trees == w->num_trees &&
		nf == w->num_features && m->num_outputs == w->num_outputs && m->num_nodes == w->num_nodes &&
		m->num_leaves == w->num_leaves && m->max_depth == w->max_depth && m->leaf_size == w->leaf_size &&
		m->link == w->link && m->link_scale == w->link_scale && m->dict_hashed == w->dict_hashed &&
		same_str(m->objective, w->objective) &&
		same_bytes(m->base_margin, w->base_margin, (size_t) m->num_outputs * sizeof(double)) &&
		same_bytes(m->input_rule, w->input_rule, (size_t) nf) &&
		same_bytes(m->categorical, w->categorical, (size_t) nf) &&
		(m->feature_names == NULL) == (w->feature_names == NULL) &&
		same_bytes(m->dict_start, w->dict_start, (size_t) (nf + 1) * sizeof(int32_t)) &&
		same_bytes(m->dict_sorted, w->dict_sorted, (size_t) names * sizeof(int32_t));

	for (int32_t j = 0; same && m->feature_names != NULL && j < nf; j++)
		same = strcmp(m->feature_names[j], w->feature_names[j]) == 0;
	for (int32_t i = 0; same && i < names; i++)
		same = strcmp(m->dict_names[i], w->dict_names[i]) == 0;
	return same;
}

/* Whether the long paths' contributions from the interface equal the full table's, bitwise. */
static bool
same_long_paths(const TsPathTable *pt, const int64_t *list, int64_t n, const TsPathTable *sub)
{
	size_t		width = (size_t) pt->num_outputs * (pt->num_features + 1);
	float	   *x = malloc(sizeof(float) * pt->num_features);
	double	   *a = calloc(width, sizeof(double));
	double	   *b = calloc(width, sizeof(double));
	int64_t    *own = malloc(sizeof(int64_t) * (size_t) (n + 1));
	double	   *scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));
	bool		same = sub->num_paths == n;

	for (int64_t i = 0; i < n; i++)
		own[i] = i;
	for (int r = 0; same && r < 16; r++)
	{
		for (int32_t j = 0; j < pt->num_features; j++)
			x[j] = (j + r) % 7 == 0 ? NAN : (float) (((j * 37 + r * 11) % 23) - 5) * 0.5f;
		memset(a, 0, width * sizeof(double));
		memset(b, 0, width * sizeof(double));
		ts_cpu_shap_add_paths_rows(pt, TS_SHAP_QUADRATURE, list, n, x, 1, a, scratch);
		ts_cpu_shap_add_paths_rows(sub, TS_SHAP_QUADRATURE, own, n, x, 1, b, scratch);
		same = memcmp(a, b, width * sizeof(double)) == 0;
	}
	free(x);
	free(a);
	free(b);
	free(own);
	free(scratch);
	return same;
}

/* Read damaged copies of an interface: every outcome is fine but a crash. */
static int
read_damaged(const char *buf, size_t len)
{
	char	   *copy = malloc(len);
	int			refused = 0;
	TsInterface in;
	TsError		err = {0};

	for (int i = 0; i < 64; i++)
	{
		size_t		cut = len * (size_t) i / 64;

		memcpy(copy, buf, len);
		if (i % 2 == 0)
			cut = len - 1 - (size_t) i * 7919 % len;	/* one flipped byte, the whole length */
		if (i % 2 == 0)
			copy[cut] ^= (char) (1 + i);
		if (ts_wire_read(copy, i % 2 == 0 ? len : cut, &in, &err))
			ts_wire_free(&in);
		else
			refused++;
	}
	free(copy);
	return refused;
}

int
ts_cli_check_wire(const TsModel *m, const TsPathTable *pt)
{
	int64_t		n;
	int64_t    *list = ts_pack_long_paths(pt, &n);
	size_t		len;
	char	   *buf = ts_wire_interface(m, pt, &len);
	TsInterface in;
	TsError		err = {0};
	bool		read;
	bool		ok;
	int			refused;

	read = ts_wire_read(buf, len, &in, &err);
	ok = read && in.num_paths == pt->num_paths && same_model(m, in.model) &&
		same_long_paths(pt, list, n, in.long_paths);
	if (read)
		ts_wire_free(&in);
	refused = read_damaged(buf, len);
	printf("interface bytes=%zu long paths=%lld damaged copies refused=%d/64 %s\n", len, (long long) n,
		   refused, ok ? "valid" : "INVALID");
	ts_free(buf);
	ts_free(list);
	return ok ? 0 : 1;
}
