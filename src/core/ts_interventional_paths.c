/*
 * ts_interventional_paths.c - interventional TreeSHAP path by path
 * (ts_interventional.h's path form): what the GPU kernel computes, for the
 * paths it leaves to the CPU and for the GPU service's emulation.
 */

#include "core/ts_interventional.h"

/* Sets of a path for one pair: elements only x satisfies, only r satisfies; false when neither reaches it. */
static bool
classify_path(const TsPathTable *pt, int64_t p, const float *x, const float *r,
			  int32_t *only_x, int32_t *only_r)
{
	*only_x = 0;
	*only_r = 0;
	for (int64_t e = pt->path_start[p] + 1; e < pt->path_start[p + 1]; e++)
	{
		bool		sx = ts_paths_satisfied(pt, e, x[pt->feature[e]]);
		bool		sr = ts_paths_satisfied(pt, e, r[pt->feature[e]]);

		if (!sx && !sr)
			return false;
		*only_x += sx && !sr;
		*only_r += sr && !sx;
	}
	return *only_x + *only_r > 0;
}

/* shap's factor of a transformed output k for the pair (1 where the margins are equal). */
static double
pair_rescale(const TsBackgroundRows *bg, int64_t j, int32_t outputs, int32_t k,
			 const double *margin_x, const double *output_x)
{
	if (bg->output == NULL)
		return 1.0;
	return ts_interventional_factor(margin_x[k], output_x[k], bg->margin[j * outputs + k],
									bg->output[j * outputs + k]);
}

/* Add path p's values for the pair (x, background row j), already divided by the rows. */
static void
add_path_pair(const TsPathTable *pt, int64_t p, const TsBackgroundRows *bg, int64_t j,
			  const float *x, const double *margin_x, const double *output_x, double *phi)
{
	const float *r = bg->x + j * pt->num_features;
	int32_t		a,
				b;
	double		wa,
				wb;

	if (!classify_path(pt, p, x, r, &a, &b))
		return;
	wa = a > 0 ? ts_interventional_weight(a, b) : 0.0;
	wb = b > 0 ? ts_interventional_weight(b, a) : 0.0;
	for (int32_t k = 0; k < pt->value_width; k++)
	{
		double	   *out = phi + ts_path_output_offset(pt, p, k);
		double		v = ts_path_value(pt, p, k) / (double) bg->nrows *
			pair_rescale(bg, j, pt->num_outputs, pt->path_group[p] + k, margin_x, output_x);

		for (int64_t e = pt->path_start[p] + 1; e < pt->path_start[p + 1]; e++)
		{
			bool		sx = ts_paths_satisfied(pt, e, x[pt->feature[e]]);
			bool		sr = ts_paths_satisfied(pt, e, r[pt->feature[e]]);

			if (sx && !sr)
				out[pt->feature[e]] += v * wa;
			else if (sr && !sx)
				out[pt->feature[e]] -= v * wb;
		}
	}
}

void
ts_interventional_add_paths_row(const TsPathTable *pt, const int64_t *paths, int64_t num_paths,
								const TsBackgroundRows *bg, const float *x, const double *margin_x,
								const double *output_x, double *phi)
{
	for (int64_t j = 0; j < bg->nrows; j++)
	{
		for (int64_t i = 0; i < num_paths; i++)
		{
			add_path_pair(pt, paths[i], bg, j, x, margin_x, output_x, phi);
			ts_check_interrupts_after(ts_path_len(pt, paths[i]));
		}
	}
}
