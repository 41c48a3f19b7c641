/*
 * ts_quad_pairs_body.h - the block evaluation of ts_quad_pairs.c, included
 * there once per instruction set with PAIRS_NAME (the function) and
 * PAIRS_WIDTH (doubles per native vector) defined; no include guard. The
 * block's TS_QUAD_LANES lanes are TS_QUAD_LANES / PAIRS_WIDTH vectors.
 */
#define PAIRS_JOIN2(a, b) a##b
#define PAIRS_JOIN(a, b) PAIRS_JOIN2(a, b)
#define PAIRS_VEC PAIRS_JOIN(PAIRS_NAME, _vec)
#define PAIRS_CHUNKS (TS_QUAD_LANES / PAIRS_WIDTH)
#define PAIRS_AT(arr, e) (((PAIRS_VEC *) (arr)) + (size_t) (e) * PAIRS_CHUNKS)

/* one native vector of lanes, at any double's alignment, allowed to alias doubles */
typedef double PAIRS_VEC __attribute__((vector_size(PAIRS_WIDTH * sizeof(double)), aligned(8), may_alias));

/*
 * One node t (weight w) in every lane: the factors, the prefix products
 * (times w) and suffix products, then each element's integrand into diag
 * and each pair's (a < b, the running product between them) into pairs.
 */
static inline __attribute__((always_inline)) void
PAIRS_JOIN(PAIRS_NAME, _node) (const double *z, int32_t d, double t, double w, const PairArrays *a)
{
	PAIRS_VEC	acc[PAIRS_CHUNKS];

	for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
		acc[c] = (PAIRS_VEC) {0} + w;
	for (int32_t e = 1; e <= d; e++)
		for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
		{
			PAIRS_VEC	g = z[e] + t * (PAIRS_AT(a->o, e)[c] - z[e]);

			PAIRS_AT(a->g, e)[c] = g;
			PAIRS_AT(a->pre, e)[c] = acc[c];
			acc[c] *= g;
		}
	for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
		acc[c] = (PAIRS_VEC) {0} + 1.0;
	for (int32_t e = d; e >= 1; e--)
		for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
		{
			PAIRS_AT(a->suf, e)[c] = acc[c];
			PAIRS_AT(a->diag, e)[c] += PAIRS_AT(a->pre, e)[c] * acc[c];
			acc[c] *= PAIRS_AT(a->g, e)[c];
		}
	for (int32_t i = 1; i < d; i++)
	{
		PAIRS_VEC	run[PAIRS_CHUNKS];

		for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
			run[c] = PAIRS_AT(a->pre, i)[c];
		for (int32_t j = i + 1; j <= d; j++)
			for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
			{
				PAIRS_AT(a->pairs, i * a->len + j)[c] += run[c] * PAIRS_AT(a->suf, j)[c];
				run[c] *= PAIRS_AT(a->g, j)[c];
			}
	}
}

/* Every node of the path's quadrature: diag and pairs zeroed, then each node's terms added in order. */
static inline __attribute__((always_inline)) void
PAIRS_JOIN(PAIRS_NAME, _integrals) (const double *z, int32_t d, const PairArrays *a)
{
	int32_t		n = (d + 1) / 2;
	const double *x,
			   *w;

	ts_quad_nodes(n, &x, &w, a->nodes);
	for (int32_t e = 1; e <= d; e++)
		for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
		{
			PAIRS_AT(a->diag, e)[c] = (PAIRS_VEC) {0};
			for (int32_t j = e + 1; j <= d; j++)
				PAIRS_AT(a->pairs, e * a->len + j)[c] = (PAIRS_VEC) {0};
		}
	for (int32_t q = 0; q < n; q++)
		PAIRS_JOIN(PAIRS_NAME, _node) (z, d, x[q], w[q], a);
}

/*
 * Add value[l] times each of path p's leaf values at entry `at` of each live
 * row's output block: as whole vectors into the block's lane sums where it
 * has them (a lane that cannot reach the leaf adds an exact 0 there, and a
 * lane past the rows is never read), else lane by lane into out.
 */
static inline __attribute__((always_inline)) void
PAIRS_JOIN(PAIRS_NAME, _add) (const TsPathTable *pt, int64_t p, uint32_t live, const PAIRS_VEC *value,
							  double *out, size_t at, size_t row_width, size_t stride, double *lane_sums)
{
	for (int32_t k = 0; k < pt->value_width; k++)
	{
		double		v = ts_path_value(pt, p, k);
		size_t		entry = ((size_t) pt->path_group[p] + k) * stride + at;
		double	   *base = out + entry;

		if (lane_sums != NULL)
			for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
				PAIRS_AT(lane_sums, entry)[c] += value[c] * v;
		else
			for (int32_t l = 0; l < TS_QUAD_LANES; l++)
				if (live & (1u << l))
					base[(size_t) l * row_width] += value[l / PAIRS_WIDTH][l % PAIRS_WIDTH] * v;
	}
}

/* The path's raw terms into the selected rows of the matrices: SHAP values on the diagonal, half pairs off it. */
static inline __attribute__((always_inline)) void
PAIRS_JOIN(PAIRS_NAME, _shares) (const TsPathTable *pt, int64_t p, int32_t d, uint32_t live,
								 const TsFeatureSelection *sel, double *out, size_t row_width, const PairArrays *a)
{
	int64_t		start = pt->path_start[p];
	size_t		nf = (size_t) pt->num_features;
	size_t		stride = (size_t) sel->count * nf;

	for (int32_t i = 1; i <= d; i++)
	{
		int32_t		fi = pt->feature[start + i];
		int32_t		si = sel->slot[fi];
		double		zi = pt->zero_fraction[start + i];
		PAIRS_VEC	share_i[PAIRS_CHUNKS],
					value[PAIRS_CHUNKS];

		for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
			share_i[c] = PAIRS_AT(a->o, i)[c] - zi;
		if (si >= 0)
		{
			for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
				value[c] = share_i[c] * PAIRS_AT(a->diag, i)[c];
			PAIRS_JOIN(PAIRS_NAME, _add) (pt, p, live, value, out, (size_t) si * nf + fi, row_width, stride, a->lane_sums);
		}
		for (int32_t j = i + 1; j <= d; j++)
		{
			int32_t		fj = pt->feature[start + j];
			int32_t		sj = sel->slot[fj];
			double		zj = pt->zero_fraction[start + j];

			if (si < 0 && sj < 0)
				continue;
			for (int32_t c = 0; c < PAIRS_CHUNKS; c++)
				value[c] = 0.5 * share_i[c] * (PAIRS_AT(a->o, j)[c] - zj) * PAIRS_AT(a->pairs, i * a->len + j)[c];
			if (si >= 0)
				PAIRS_JOIN(PAIRS_NAME, _add) (pt, p, live, value, out, (size_t) si * nf + fj, row_width, stride, a->lane_sums);
			if (sj >= 0)
				PAIRS_JOIN(PAIRS_NAME, _add) (pt, p, live, value, out, (size_t) sj * nf + fi, row_width, stride, a->lane_sums);
		}
	}
}

/* Every path of up to TS_QUAD_PAIRS_MAX elements with a selected feature, into the block's rows. */
static void
PAIRS_NAME(const TsPathTable *pt, const float *x, int32_t nrows, const TsFeatureSelection *sel, double *out,
		   const PairArrays *a)
{
	size_t		row_width = (size_t) pt->num_outputs * sel->count * pt->num_features;

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		int64_t		start = pt->path_start[p];
		int32_t		d = (int32_t) (pt->path_start[p + 1] - start) - 1;
		uint32_t	live;

		ts_check_interrupts_after(((int64_t) d * d * (d + 1) / 4 + 1) * nrows);
		if (d < 1 || d > TS_QUAD_PAIRS_MAX || !ts_path_selected(pt, p, sel) ||
			(live = ts_lane_fractions(pt, p, x, nrows, a->o)) == 0)
			continue;
		PAIRS_JOIN(PAIRS_NAME, _integrals) (pt->zero_fraction + start, d, a);
		PAIRS_JOIN(PAIRS_NAME, _shares) (pt, p, d, live, sel, out, row_width, a);
	}
}

#undef PAIRS_AT
#undef PAIRS_CHUNKS
#undef PAIRS_VEC
#undef PAIRS_NAME
#undef PAIRS_WIDTH
