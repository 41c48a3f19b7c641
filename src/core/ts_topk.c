/*
 * ts_topk.c - top-k selection of a row's contributions (ts_topk.h).
 */
#include <math.h>

#include "core/ts_topk.h"

/*
 * Select into value/index (k slots, kept by decreasing |value|): a feature
 * enters only when strictly larger than the k-th, and goes after every kept
 * one of equal magnitude, so earlier features win ties.
 */
static void
select_top(const double *phi, int32_t num_features, int32_t k, double *value, double *index)
{
	int32_t		kept = 0;

	for (int32_t j = 0; j < num_features; j++)
	{
		double		v = fabs(phi[j]);
		int32_t		at;

		if (kept == k && !(v > fabs(value[k - 1])))
			continue;
		at = kept < k ? kept++ : k - 1;
		for (; at > 0 && v > fabs(value[at - 1]); at--)
		{
			value[at] = value[at - 1];
			index[at] = index[at - 1];
		}
		value[at] = phi[j];
		index[at] = j;
	}
}

void
ts_topk_row(const double *phi, int32_t num_outputs, int32_t num_features, int32_t k, double *out)
{
	size_t		width = ts_topk_width(k);

	for (int32_t o = 0; o < num_outputs; o++)
	{
		const double *row = phi + (size_t) o * (num_features + 1);
		double	   *rec = out + (size_t) o * width;
		double		margin = row[num_features];

		for (int32_t j = 0; j < num_features; j++)
			margin += row[j];
		rec[0] = margin;
		rec[1] = row[num_features];
		select_top(row, num_features, k, rec + 2, rec + 2 + k);
	}
}
