/*
 * ts_quad_pairs.c - Shapley interaction values by quadrature for
 * TS_QUAD_LANES rows at once (see ts_quad_pairs.h). Per path: the rows' one
 * fractions into lanes, per node the factors and their prefix and suffix
 * products, each element's and each pair's integrand summed over the nodes,
 * then each live lane's terms added to its row. Built for AVX-512, AVX2 and
 * plain x86-64 as ts_quad_lanes.c is, on the instruction set it uses.
 */
#include "core/ts_quad_pairs.h"

#include "core/ts_lane_fractions.h"
#include "core/ts_quadrature.h"

#include <string.h>

/* The path's lanes, TS_QUAD_LANES doubles per element (pairs: per element pair, len apart). */
typedef struct PairArrays
{
	double	   *o;				/* one fractions */
	double	   *g;				/* the node's factors */
	double	   *pre;			/* products before the element, times the node's weight */
	double	   *suf;			/* products after it */
	double	   *diag;			/* per element: its integral */
	double	   *pairs;			/* per pair i < j: the integral without both */
	double	   *nodes;			/* nodes and weights of long paths */
	double	   *lane_sums;		/* per entry of a row's output: the block's sums (a lane array),
								 * or NULL where the output is too wide (PAIRS_LANE_SUMS_MAX) */
	int32_t		len;			/* elements a path may have here, plus one */
} PairArrays;

/*
 * Doubles of lane sums a block keeps at most (2 MB): a row's output of up to
 * 32,768 entries (181 features, all selected, one output) is summed in
 * vectors and written out once; a wider one is added to lane by lane.
 */
#define PAIRS_LANE_SUMS_MAX ((size_t) 1 << 18)

typedef void (*PairsFn) (const TsPathTable *pt, const float *x, int32_t nrows, const TsFeatureSelection *sel,
						 double *out, const PairArrays *a);

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
#define PAIRS_NAME pairs_avx512
#define PAIRS_WIDTH 8
#include "core/ts_quad_pairs_body.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define PAIRS_NAME pairs_avx2
#define PAIRS_WIDTH 4
#include "core/ts_quad_pairs_body.h"
#pragma GCC pop_options
#define TS_PAIRS_WIDE 1
#endif
#define PAIRS_NAME pairs_plain
#define PAIRS_WIDTH 2
#include "core/ts_quad_pairs_body.h"

/* The evaluation for the instruction set ts_quad_lanes uses. */
static PairsFn
pairs_fn(void)
{
	const char *isa = ts_quad_lanes_isa_in_use();

	(void) isa;
#ifdef TS_PAIRS_WIDE
	if (strcmp(isa, "avx512") == 0)
		return pairs_avx512;
	if (strcmp(isa, "avx2") == 0)
		return pairs_avx2;
#endif
	return pairs_plain;
}

/* Elements (the root's not counted) a path may have in lanes here, plus one. */
static int32_t
lanes_len(const TsPathTable *pt)
{
	int32_t		longest = pt->max_path_len - 1;

	return (longest < TS_QUAD_PAIRS_MAX ? longest : TS_QUAD_PAIRS_MAX) + 1;
}

/* Lane sums for a row's output of every feature selected, within PAIRS_LANE_SUMS_MAX doubles. */
static size_t
lane_sums_len(const TsPathTable *pt)
{
	size_t		all = (size_t) pt->num_outputs * pt->num_features * pt->num_features * TS_QUAD_LANES;

	return all <= PAIRS_LANE_SUMS_MAX ? all : PAIRS_LANE_SUMS_MAX;
}

/* From a 64-byte line: five lane arrays per element, the pairs, the lane sums; then the nodes of long paths and the dynamic programme's scratch. */
size_t
ts_quad_pairs_scratch_len(const TsPathTable *pt)
{
	size_t		len = (size_t) lanes_len(pt);

	return TS_LANE_ALIGN_SLACK + (5 * len + len * len) * TS_QUAD_LANES + lane_sums_len(pt) + 2 * (len / 2 + 1)
		+ ts_interactions_scratch_len(pt);
}

/* Paths too long for the lanes, row by row through the dynamic programme. */
static void
long_paths(const TsPathTable *pt, const float *x, int32_t nrows, const TsFeatureSelection *sel, double *out,
		   double *scratch)
{
	size_t		row_width = (size_t) pt->num_outputs * sel->count * pt->num_features;

	if (pt->max_path_len - 1 <= TS_QUAD_PAIRS_MAX)
		return;
	for (int64_t p = 0; p < pt->num_paths; p++)
		if (ts_path_len(pt, p) - 1 > TS_QUAD_PAIRS_MAX)
			for (int32_t l = 0; l < nrows; l++)
				ts_interactions_add_paths(pt, &p, 1, x + (size_t) l * pt->num_features, TS_INTERACTION_SHAPLEY,
										  sel, out + (size_t) l * row_width, scratch);
}

/* The block's raw terms on the chosen instruction set, the long paths', then each row's diagonal finished. */
void
ts_quad_pairs_rows(const TsPathTable *pt, const float *x, int32_t nrows, const TsFeatureSelection *sel,
				   double *out, double *scratch)
{
	size_t		len = (size_t) lanes_len(pt);
	size_t		lane_len = len * TS_QUAD_LANES;
	size_t		row_width = (size_t) pt->num_outputs * sel->count * pt->num_features;
	PairArrays	a;

	a.len = (int32_t) len;
	a.o = ts_lane_align(scratch);
	a.g = a.o + lane_len;
	a.pre = a.g + lane_len;
	a.suf = a.pre + lane_len;
	a.diag = a.suf + lane_len;
	a.pairs = a.diag + lane_len;
	a.lane_sums = row_width * TS_QUAD_LANES <= lane_sums_len(pt) ? a.pairs + len * lane_len : NULL;
	a.nodes = a.pairs + len * lane_len + lane_sums_len(pt);
	if (a.lane_sums != NULL)
		memset(a.lane_sums, 0, sizeof(double) * row_width * TS_QUAD_LANES);
	else
		memset(out, 0, sizeof(double) * row_width * (size_t) nrows);
	pairs_fn() (pt, x, nrows, sel, out, &a);
	if (a.lane_sums != NULL)
		for (int32_t l = 0; l < nrows; l++)
			for (size_t j = 0; j < row_width; j++)
				out[(size_t) l * row_width + j] = a.lane_sums[j * TS_QUAD_LANES + l];
	long_paths(pt, x, nrows, sel, out, a.nodes + 2 * (len / 2 + 1));
	for (int32_t l = 0; l < nrows; l++)
		ts_interactions_finish(pt->num_outputs, pt->num_features, TS_INTERACTION_SHAPLEY, sel,
							   out + (size_t) l * row_width);
}
