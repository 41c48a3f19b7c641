/*
 * ts_shap_cpu.c - the CPU SHAP path: per path, EXTEND the permutation
 * weights over every element, then UNWOUNDSUM each element out to get its
 * share of the leaf value, O(D^2) per (path, row); or the quadrature of
 * ts_quadrature.c, chosen per call.
 */
#include "core/ts_shap_cpu.h"

#include "core/ts_quadrature.h"

#include <math.h>
#include <string.h>

/* Three arrays of max_path_len doubles: weights, zero and one fractions. */
static size_t
dp_scratch_len(const TsPathTable *pt)
{
	return 3 * (size_t) (pt->max_path_len + 1);
}

/* Sum of the permutation weights with element (z, o) removed from a path of depth d. */
double
ts_shap_unwound_sum(const double *w, int32_t d, double z, double o)
{
	double		total = 0.0;

	if (o != 0.0)
	{
		double		next = w[d];

		for (int32_t i = d - 1; i >= 0; i--)
		{
			double		tmp = next * (d + 1) / ((i + 1) * o);

			total += tmp;
			next = w[i] - tmp * z * (d - i) / (d + 1);
		}
	}
	else
	{
		for (int32_t i = d - 1; i >= 0; i--)
			total += w[i] * (d + 1) / (z * (d - i));
	}
	return total;
}

/*
 * Zero and one fractions of path p's elements 1..n-1 for row; returns false
 * when an element has z = 0 and is not satisfied: every subset then reaches
 * the leaf with weight zero, so all contributions are zero (and an unwinding
 * would divide by zero).
 */
bool
ts_shap_fractions(const TsPathTable *pt, int64_t p, const float *row, double *z, double *o)
{
	int64_t		start = pt->path_start[p];
	int32_t		n = (int32_t) (pt->path_start[p + 1] - start);

	for (int32_t e = 1; e < n; e++)
	{
		int64_t		g = start + e;

		z[e] = pt->zero_fraction[g];
		o[e] = ts_paths_satisfied(pt, g, row[pt->feature[g]]) ? 1.0 : 0.0;
		if (o[e] == 0.0 && z[e] == 0.0)
			return false;
	}
	return true;
}

/* EXTEND over elements 1..n-1; the root element (z = o = 1) leaves w = {1}. */
void
ts_shap_extend(double *w, const double *z, const double *o, int32_t n)
{
	w[0] = 1.0;
	for (int32_t e = 1; e < n; e++)
	{
		w[e] = 0.0;
		for (int32_t i = e - 1; i >= 0; i--)
		{
			w[i + 1] += o[e] * w[i] * (i + 1) / (e + 1);
			w[i] = z[e] * w[i] * (e - i) / (e + 1);
		}
	}
}

/*
 * Add share * v_k to feature f's contribution to each of path p's outputs k:
 * a vector leaf's values share one evaluation of the path.
 */
void
ts_shap_add_share(const TsPathTable *pt, int64_t p, int32_t f, double share, double *phi)
{
	for (int32_t k = 0; k < pt->value_width; k++)
		phi[ts_path_output_offset(pt, p, k) + f] += share * ts_path_value(pt, p, k);
}

/* Add one path's contributions. */
static void
shap_path(const TsPathTable *pt, int64_t p, const float *row, double *phi, double *scratch)
{
	int64_t		start = pt->path_start[p];
	int32_t		n = (int32_t) (pt->path_start[p + 1] - start);
	double	   *w = scratch;
	double	   *z = scratch + n;
	double	   *o = scratch + 2 * n;

	if (!ts_shap_fractions(pt, p, row, z, o))
		return;
	ts_shap_extend(w, z, o, n);
	for (int32_t e = 1; e < n; e++)
		ts_shap_add_share(pt, p, pt->feature[start + e],
						  ts_shap_unwound_sum(w, n - 1, z[e], o[e]) * (o[e] - z[e]), phi);
}

size_t
ts_cpu_scratch_len(const TsPathTable *pt)
{
	size_t		a = dp_scratch_len(pt);
	size_t		b = ts_quad_scratch_len(pt);

	return a > b ? a : b;
}

/* Add path p's contributions by the chosen algorithm. */
static inline void
add_path(const TsPathTable *pt, TsShapAlgorithm alg, int64_t p, const float *row, double *phi,
		 double *scratch)
{
	if (alg == TS_SHAP_QUADRATURE)
		ts_quad_path(pt, p, row, phi, scratch);
	else
		shap_path(pt, p, row, phi, scratch);
}

void
ts_cpu_shap_add_paths(const TsPathTable *pt, TsShapAlgorithm alg, const int64_t *paths, int64_t npaths,
					  const float *row, double *phi, double *scratch)
{
	for (int64_t i = 0; i < npaths; i++)
	{
		ts_check_interrupts_after(ts_path_work(pt, paths[i]));
		add_path(pt, alg, paths[i], row, phi, scratch);
	}
}

void
ts_cpu_shap_add_paths_rows(const TsPathTable *pt, TsShapAlgorithm alg, const int64_t *paths,
						   int64_t npaths, const float *x, int64_t nrows, double *phi, double *scratch)
{
	size_t		row_width = (size_t) pt->num_outputs * (pt->num_features + 1);

	for (int64_t r = 0; npaths > 0 && r < nrows; r++)
		ts_cpu_shap_add_paths(pt, alg, paths, npaths, x + (size_t) r * pt->num_features,
							  phi + (size_t) r * row_width, scratch);
}

void
ts_cpu_shap_row(const TsPathTable *pt, TsShapAlgorithm alg, const float *row, double *phi,
				double *scratch)
{
	size_t		width = (size_t) pt->num_features + 1;

	memset(phi, 0, width * (size_t) pt->num_outputs * sizeof(double));
	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		ts_check_interrupts_after(ts_path_work(pt, p));
		add_path(pt, alg, p, row, phi, scratch);
	}
	for (int32_t k = 0; k < pt->num_outputs; k++)
		phi[k * width + width - 1] = pt->bias[k];
}

void
ts_importance_add_rows(const double *phi, int64_t nrows, int32_t num_outputs, int32_t num_features,
					   double *sums)
{
	size_t		columns = (size_t) num_outputs * num_features;

	for (int64_t r = 0; r < nrows; r++)
		for (int32_t k = 0; k < num_outputs; k++)
		{
			const double *row = phi + ((size_t) r * num_outputs + k) * (num_features + 1);
			double	   *abs_sum = sums + (size_t) k * num_features;

			for (int32_t j = 0; j < num_features; j++)
			{
				abs_sum[j] += fabs(row[j]);
				abs_sum[columns + j] += row[j];
			}
		}
}
