/*
 * ts_pack.c - Next-Fit, First-Fit-Decreasing and Best-Fit-Decreasing packing
 * of paths into 32-lane bins. Sizes are small integers (1..32), so the
 * decreasing order is a counting sort, best fit keeps one bucket of bins per
 * free-lane count, and first fit descends a max-tree over bin free space:
 * all three run in O(paths * log paths) or better, and are deterministic.
 */
#include "core/ts_pack.h"

#include <string.h>

/* Elements of path p. */
static inline int32_t
path_len(const TsPathTable *pt, int64_t p)
{
	return (int32_t) (pt->path_start[p + 1] - pt->path_start[p]);
}

/* Paths that fit a bin, longest first (stable within a length); counts the long ones. */
static int64_t *
sorted_short_paths(const TsPathTable *pt, int64_t *nshort, bool decreasing)
{
	int64_t		count[TS_PACK_LANES + 2] = {0};
	int64_t    *out = ts_alloc((size_t) (pt->num_paths + 1) * sizeof(int64_t));
	int64_t		n = 0;

	if (!decreasing)
	{
		for (int64_t p = 0; p < pt->num_paths; p++)
			if (path_len(pt, p) <= TS_PACK_LANES)
				out[n++] = p;
		*nshort = n;
		return out;
	}
	for (int64_t p = 0; p < pt->num_paths; p++)
		if (path_len(pt, p) <= TS_PACK_LANES)
			count[TS_PACK_LANES - path_len(pt, p) + 1]++;
	for (int i = 1; i <= TS_PACK_LANES + 1; i++)
		count[i] += count[i - 1];
	for (int64_t p = 0; p < pt->num_paths; p++)
		if (path_len(pt, p) <= TS_PACK_LANES)
			out[count[TS_PACK_LANES - path_len(pt, p)]++] = p;
	*nshort = count[TS_PACK_LANES];
	return out;
}

/* Next fit: bins of consecutive paths, in table order. */
static int64_t
assign_next_fit(const TsPathTable *pt, const int64_t *order, int64_t n, int64_t *bin_of)
{
	int64_t		bins = 0;
	int32_t		used = TS_PACK_LANES;

	for (int64_t i = 0; i < n; i++)
	{
		int32_t		len = path_len(pt, order[i]);

		ts_check_interrupts_after(16);
		if (used + len > TS_PACK_LANES)
		{
			bins++;
			used = 0;
		}
		used += len;
		bin_of[i] = bins - 1;
	}
	return bins;
}

/*
 * First fit decreasing: a max-tree over the free lanes of every possible bin
 * (at most one bin per path), descended to the leftmost bin with room.
 */
static int64_t
assign_first_fit(const TsPathTable *pt, const int64_t *order, int64_t n, int64_t *bin_of)
{
	int64_t		leaves = 1;
	uint8_t    *tree;
	int64_t		bins = 0;

	while (leaves < n)
		leaves *= 2;
	tree = ts_alloc((size_t) (2 * leaves) * sizeof(uint8_t));
	memset(tree, TS_PACK_LANES, (size_t) (2 * leaves));
	for (int64_t i = 0; i < n; i++)
	{
		int32_t		len = path_len(pt, order[i]);
		int64_t		node = 1;

		ts_check_interrupts_after(16);
		while (node < leaves)
			node = tree[2 * node] >= len ? 2 * node : 2 * node + 1;
		bin_of[i] = node - leaves;
		if (bin_of[i] + 1 > bins)
			bins = bin_of[i] + 1;
		tree[node] -= (uint8_t) len;
		for (node /= 2; node >= 1; node /= 2)
			tree[node] = tree[2 * node] > tree[2 * node + 1] ? tree[2 * node] : tree[2 * node + 1];
	}
	ts_free(tree);
	return bins;
}

/*
 * Best fit decreasing: bins are kept in stacks by free lanes; a path goes to
 * the most recent bin among those with the fewest free lanes that still fit.
 */
static int64_t
assign_best_fit(const TsPathTable *pt, const int64_t *order, int64_t n, int64_t *bin_of)
{
	int64_t    *next = ts_alloc((size_t) (n + 1) * sizeof(int64_t));	/* stack links */
	int64_t		top[TS_PACK_LANES + 1];
	int64_t		bins = 0;

	for (int i = 0; i <= TS_PACK_LANES; i++)
		top[i] = -1;
	for (int64_t i = 0; i < n; i++)
	{
		int32_t		len = path_len(pt, order[i]);
		int32_t		free_lanes = len;
		int64_t		b;

		ts_check_interrupts_after(16);
		while (free_lanes <= TS_PACK_LANES && top[free_lanes] < 0)
			free_lanes++;
		if (free_lanes > TS_PACK_LANES)
		{
			b = bins++;
			free_lanes = TS_PACK_LANES;
		}
		else
		{
			b = top[free_lanes];
			top[free_lanes] = next[b];
		}
		bin_of[i] = b;
		free_lanes -= len;
		next[b] = top[free_lanes];
		top[free_lanes] = b;
	}
	ts_free(next);
	return bins;
}

/* Pack every path of at most 32 elements; longer ones go to long_paths. */
TsPacking *
ts_pack_paths(const TsPathTable *pt, TsPackAlgo algo)
{
	TsPacking  *pk = ts_alloc0(sizeof(TsPacking));
	int64_t		n;
	int64_t    *order = sorted_short_paths(pt, &n, algo != TS_PACK_NEXT_FIT);
	int64_t    *bin_of = ts_alloc((size_t) (n + 1) * sizeof(int64_t));

	pk->algo = algo;
	if (algo == TS_PACK_NEXT_FIT)
		pk->num_bins = assign_next_fit(pt, order, n, bin_of);
	else if (algo == TS_PACK_FIRST_FIT_DECREASING)
		pk->num_bins = assign_first_fit(pt, order, n, bin_of);
	else
		pk->num_bins = assign_best_fit(pt, order, n, bin_of);

	/* group by bin, keeping assignment order within a bin (counting sort) */
	pk->bin_start = ts_alloc0((size_t) (pk->num_bins + 2) * sizeof(int64_t));
	pk->paths = ts_alloc((size_t) (n + 1) * sizeof(int64_t));
	for (int64_t i = 0; i < n; i++)
		pk->bin_start[bin_of[i] + 2]++;
	for (int64_t b = 0; b < pk->num_bins; b++)
		pk->bin_start[b + 2] += pk->bin_start[b + 1];
	for (int64_t i = 0; i < n; i++)
	{
		pk->paths[pk->bin_start[bin_of[i] + 1]++] = order[i];
		pk->packed_elements += path_len(pt, order[i]);
	}

	pk->long_paths = ts_pack_long_paths(pt, &pk->num_long);
	ts_free(order);
	ts_free(bin_of);
	return pk;
}

int64_t *
ts_pack_long_paths(const TsPathTable *pt, int64_t *count)
{
	int64_t		n = 0;
	int64_t    *paths;

	for (int64_t p = 0; p < pt->num_paths; p++)
		n += path_len(pt, p) > TS_PACK_LANES;
	paths = ts_alloc((size_t) (n + 1) * sizeof(int64_t));
	n = 0;
	for (int64_t p = 0; p < pt->num_paths; p++)
		if (path_len(pt, p) > TS_PACK_LANES)
			paths[n++] = p;
	*count = n;
	return paths;
}

void
ts_pack_free(TsPacking *pk)
{
	if (pk == NULL)
		return;
	ts_free(pk->bin_start);
	ts_free(pk->paths);
	ts_free(pk->long_paths);
	ts_free(pk);
}

double
ts_pack_utilisation(const TsPacking *pk)
{
	if (pk->num_bins == 0)
		return 1.0;
	return (double) pk->packed_elements / ((double) TS_PACK_LANES * (double) pk->num_bins);
}

const char *
ts_pack_algo_name(TsPackAlgo algo)
{
	switch (algo)
	{
		case TS_PACK_NEXT_FIT:
			return "nf";
		case TS_PACK_FIRST_FIT_DECREASING:
			return "ffd";
		case TS_PACK_BEST_FIT_DECREASING:
			return "bfd";
	}
	return "?";
}
