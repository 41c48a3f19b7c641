/*
 * ts_interactions.c - interaction values per path. Conditioning on element c
 * of a path reuses the SHAP dynamic programme with c's fractions replaced:
 * (z, o) = (1, 1) makes c a dummy, so the other elements' unwound sums carry
 * the Shapley interaction weights over the path without c; (1, 0) keeps c as
 * a player that never joins, which gives the Shapley-Taylor weights
 * s! (d - 1 - s)! / d! over the same subsets. O(D^3) per (path, row).
 */
#include "core/ts_interactions.h"

#include <string.h>

#include "core/ts_shap_cpu.h"

TsFeatureSelection *
ts_selection_make(int32_t num_features, const int32_t *features, int32_t count)
{
	TsFeatureSelection *sel = ts_alloc0(sizeof(TsFeatureSelection));

	sel->count = features == NULL ? num_features : count;
	sel->features = ts_alloc(sizeof(int32_t) * (size_t) (sel->count > 0 ? sel->count : 1));
	sel->slot = ts_alloc(sizeof(int32_t) * (size_t) (num_features > 0 ? num_features : 1));
	for (int32_t j = 0; j < num_features; j++)
		sel->slot[j] = features == NULL ? j : -1;
	for (int32_t s = 0; s < sel->count; s++)
	{
		sel->features[s] = features == NULL ? s : features[s];
		sel->slot[sel->features[s]] = s;
	}
	return sel;
}

void
ts_selection_free(TsFeatureSelection *sel)
{
	if (sel == NULL)
		return;
	ts_free(sel->features);
	ts_free(sel->slot);
	ts_free(sel);
}

/* Weights, zero and one fractions of one path. */
size_t
ts_interactions_scratch_len(const TsPathTable *pt)
{
	return 3 * (size_t) (pt->max_path_len + 1);
}

/* Whether any element of the path belongs to the selection. */
bool
ts_path_selected(const TsPathTable *pt, int64_t p, const TsFeatureSelection *sel)
{
	for (int64_t g = pt->path_start[p] + 1; g < pt->path_start[p + 1]; g++)
		if (sel->slot[pt->feature[g]] >= 0)
			return true;
	return false;
}

/*
 * Add share * v_k to entry i of each of path p's outputs k, whose blocks of
 * interaction terms are stride apart from the first output's at base.
 */
static void
add_share(const TsPathTable *pt, int64_t p, size_t i, double share, double *base, size_t stride)
{
	for (int32_t k = 0; k < pt->value_width; k++)
		base[k * stride + i] += share * ts_path_value(pt, p, k);
}

/* The diagonal terms: SHAP values (Shapley) or v (o_a - z_a) prod_{k != a} z_k (Taylor). */
static void
add_diagonal(const TsPathTable *pt, int64_t p, TsInteractionMethod method,
			 const TsFeatureSelection *sel, const double *z, const double *o, double *w,
			 double *base)
{
	int64_t		start = pt->path_start[p];
	int32_t		n = (int32_t) (pt->path_start[p + 1] - start);
	int32_t		nf = pt->num_features;

	if (method == TS_INTERACTION_SHAPLEY)
		ts_shap_extend(w, z, o, n);
	for (int32_t a = 1; a < n; a++)
	{
		int32_t		f = pt->feature[start + a];
		int32_t		s = sel->slot[f];
		double		term;

		if (s < 0)
			continue;
		if (method == TS_INTERACTION_SHAPLEY)
			term = ts_shap_unwound_sum(w, n - 1, z[a], o[a]);
		else
		{
			term = 1.0;
			for (int32_t k = 1; k < n; k++)
				term *= k == a ? 1.0 : z[k];
		}
		add_share(pt, p, (size_t) s * nf + f, term * (o[a] - z[a]), base, (size_t) sel->count * nf);
	}
}

/*
 * The off-diagonal terms of row c: every other element's share with c
 * conditioned (each output's row is stride after the previous one's).
 */
static void
add_conditioned(const TsPathTable *pt, int64_t p, int32_t c, TsInteractionMethod method,
				double *z, double *o, double *w, double *row_out, size_t stride)
{
	int64_t		start = pt->path_start[p];
	int32_t		n = (int32_t) (pt->path_start[p + 1] - start);
	double		on_minus_off = o[c] - z[c];
	double		zc = z[c];
	double		oc = o[c];
	double		scale;

	if (on_minus_off == 0.0)
		return;
	scale = (method == TS_INTERACTION_SHAPLEY ? 0.5 : 1.0) * on_minus_off;
	z[c] = 1.0;
	o[c] = method == TS_INTERACTION_SHAPLEY ? 1.0 : 0.0;
	ts_shap_extend(w, z, o, n);
	for (int32_t i = 1; i < n; i++)
		if (i != c)
			add_share(pt, p, (size_t) pt->feature[start + i],
					  ts_shap_unwound_sum(w, n - 1, z[i], o[i]) * (o[i] - z[i]) * scale, row_out, stride);
	z[c] = zc;
	o[c] = oc;
}

void
ts_interactions_add_paths(const TsPathTable *pt, const int64_t *paths, int64_t npaths,
						  const float *row, TsInteractionMethod method,
						  const TsFeatureSelection *sel, double *out, double *scratch)
{
	int32_t		nf = pt->num_features;

	for (int64_t i = 0; i < npaths; i++)
	{
		int64_t		p = paths[i];
		int64_t		start = pt->path_start[p];
		int32_t		n = (int32_t) (pt->path_start[p + 1] - start);
		double	   *w = scratch;
		double	   *z = scratch + n;
		double	   *o = scratch + 2 * n;
		double	   *base = out + (size_t) pt->path_group[p] * sel->count * nf;

		/* a path's pairs cost about its length times its SHAP values */
		ts_check_interrupts_after(ts_path_work(pt, p) * ts_path_len(pt, p));
		if (!ts_path_selected(pt, p, sel) || !ts_shap_fractions(pt, p, row, z, o))
			continue;
		add_diagonal(pt, p, method, sel, z, o, w, base);
		for (int32_t c = 1; c < n; c++)
		{
			int32_t		s = sel->slot[pt->feature[start + c]];

			if (s >= 0)
				add_conditioned(pt, p, c, method, z, o, w, base + (size_t) s * nf, (size_t) sel->count * nf);
		}
	}
}

void
ts_interactions_add_paths_rows(const TsPathTable *pt, const int64_t *paths, int64_t npaths,
							   const float *x, int64_t nrows, TsInteractionMethod method,
							   const TsFeatureSelection *sel, double *out, double *scratch)
{
	size_t		row_width = (size_t) pt->num_outputs * sel->count * pt->num_features;

	for (int64_t r = 0; npaths > 0 && r < nrows; r++)
		ts_interactions_add_paths(pt, paths, npaths, x + (size_t) r * pt->num_features, method, sel,
								  out + (size_t) r * row_width, scratch);
}

void
ts_interactions_finish(int32_t num_outputs, int32_t num_features, TsInteractionMethod method,
					   const TsFeatureSelection *sel, double *out)
{
	if (method != TS_INTERACTION_SHAPLEY)
		return;
	for (int32_t k = 0; k < num_outputs; k++)
		for (int32_t s = 0; s < sel->count; s++)
		{
			double	   *r = out + ((size_t) k * sel->count + s) * num_features;
			int32_t		a = sel->features[s];
			double		others = 0.0;

			for (int32_t b = 0; b < num_features; b++)
				if (b != a)
					others += r[b];
			r[a] -= others;
		}
}

void
ts_interactions_row(const TsPathTable *pt, const float *row, TsInteractionMethod method,
					const TsFeatureSelection *sel, double *out, double *scratch)
{
	size_t		len = (size_t) pt->num_outputs * sel->count * pt->num_features;

	memset(out, 0, len * sizeof(double));
	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		ts_interactions_add_paths(pt, &p, 1, row, method, sel, out, scratch);
	}
	ts_interactions_finish(pt->num_outputs, pt->num_features, method, sel, out);
}
