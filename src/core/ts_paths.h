/*
 * ts_paths.h - the path table: every root-to-leaf path of the ensemble as a
 * list of path elements with repeated features merged (GPUTreeShap's
 * preprocessing). Element 0 of each path is the root placeholder (feature -1,
 * zero fraction 1, always satisfied), so a path of d unique features has d+1
 * elements and maps one element per warp lane on the GPU.
 */
#ifndef TS_PATHS_H
#define TS_PATHS_H

#include "model/ts_model.h"

typedef struct TsPathTable
{
	int32_t		num_features;
	int32_t		num_outputs;
	int64_t		num_paths;
	int64_t		num_elements;
	int32_t		max_path_len;	/* elements, root included */
	int32_t		value_width;	/* values per path: 1, or K for vector leaves */

	/*
	 * per path; a vector leaf is one path whose K values share its elements:
	 * value k adds to output path_group + k
	 */
	int64_t    *path_start;		/* num_paths + 1 offsets into the element arrays */
	int32_t    *path_group;		/* (first) output the leaf adds to */
	int32_t    *path_tree;		/* tree the leaf belongs to */
	double	   *path_value;		/* num_paths x value_width leaf values */

	/*
	 * per element: a missing x satisfies it when missing != 0; a present x
	 * when lower <= x < upper and, if cat >= 0, x's category is in the set
	 * at cat_pool + cat
	 */
	int32_t    *feature;		/* -1 for the root element */
	float	   *lower;
	float	   *upper;
	uint8_t    *missing;
	int32_t    *cat;
	double	   *zero_fraction;	/* product of child cover / parent cover over merged splits */

	uint32_t   *cat_pool;		/* merged category sets (ts_catset.h layout) */
	int64_t		cat_pool_len;

	double	   *bias;			/* per output: base margin + cover-weighted mean leaf value */
} TsPathTable;

/* Whether x (NaN = missing) satisfies element e. */
static inline bool
ts_paths_satisfied(const TsPathTable *pt, int64_t e, float x)
{
	if (x != x)
		return pt->missing[e] != 0;
	return x >= pt->lower[e] && x < pt->upper[e] &&
		(pt->cat[e] < 0 || ts_catset_contains(pt->cat_pool + pt->cat[e], x));
}

/* Value k of path p's leaf (it adds to output path_group[p] + k). */
static inline double
ts_path_value(const TsPathTable *pt, int64_t p, int32_t k)
{
	return pt->path_value[p * pt->value_width + k];
}

/* Output columns (output x features + 1) from path p's first output to its value k's. */
static inline size_t
ts_path_output_offset(const TsPathTable *pt, int64_t p, int32_t k)
{
	return (size_t) (pt->path_group[p] + k) * (size_t) (pt->num_features + 1);
}

/* Elements of path p, its root included. */
static inline int64_t
ts_path_len(const TsPathTable *pt, int64_t p)
{
	return pt->path_start[p + 1] - pt->path_start[p];
}

/* Work units of one row's SHAP values of path p: its elements squared (ts_core.h). */
static inline int64_t
ts_path_work(const TsPathTable *pt, int64_t p)
{
	int64_t		len = ts_path_len(pt, p);

	return 4 + len * len;
}

/* Build the path table of a validated model. */
extern TsPathTable *ts_paths_build(const TsModel *m);

/*
 * Paths and elements (root included) the table of a validated model would
 * hold, without building it: a walk of the trees, O(nodes + elements).
 */
extern void ts_paths_count(const TsModel *m, int64_t *paths, int64_t *elements);

extern void ts_paths_free(TsPathTable *pt);

/* Bytes a path table holds (its arrays, at their used lengths). */
extern size_t ts_paths_bytes(const TsPathTable *pt);

#endif							/* TS_PATHS_H */
