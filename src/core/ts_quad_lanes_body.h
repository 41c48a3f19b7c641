/*
 * ts_quad_lanes_body.h - the block evaluation of ts_quad_lanes.c, included
 * there once per instruction set with LANES_NAME (the function) and
 * LANES_WIDTH (doubles per native vector) defined; no include guard. The
 * block's TS_QUAD_LANES lanes are TS_QUAD_LANES / LANES_WIDTH vectors.
 */
#define LANES_JOIN2(a, b) a##b
#define LANES_JOIN(a, b) LANES_JOIN2(a, b)
#define LANES_VEC LANES_JOIN(LANES_NAME, _vec)
#define LANES_CHUNKS (TS_QUAD_LANES / LANES_WIDTH)

/* one native vector of lanes, at any double's alignment, allowed to alias doubles */
typedef double LANES_VEC __attribute__((vector_size(LANES_WIDTH * sizeof(double)), aligned(8), may_alias));

/*
 * Nodes q and q + 1 of the quadrature in every lane, interleaved: two
 * independent chains of products, each node's terms added to sum in the
 * order ts_quad_path adds them (node q's before node q + 1's). For the last
 * node of an odd count, two = false and node q alone.
 */
static inline __attribute__((always_inline)) void
LANES_JOIN(LANES_NAME, _node_pair) (const double *z, int32_t d, const double *x, const double *w,
									int32_t q, bool two, const LaneArrays *a)
{
	LANES_VEC  *o = (LANES_VEC *) a->o;
	LANES_VEC  *f0 = (LANES_VEC *) a->f;
	LANES_VEC  *f1 = (LANES_VEC *) a->f1;
	LANES_VEC  *pre0 = (LANES_VEC *) a->pre;
	LANES_VEC  *pre1 = (LANES_VEC *) a->pre1;
	LANES_VEC  *sum = (LANES_VEC *) a->sum;
	LANES_VEC	acc0[LANES_CHUNKS],
				acc1[LANES_CHUNKS];
	double		t0 = x[q],
				t1 = two ? x[q + 1] : 0.0;

	for (int32_t c = 0; c < LANES_CHUNKS; c++)
		acc0[c] = acc1[c] = (LANES_VEC) {0} + 1.0;
	for (int32_t e = 1; e <= d; e++)
		for (int32_t c = 0; c < LANES_CHUNKS; c++)
		{
			int32_t		i = e * LANES_CHUNKS + c;
			LANES_VEC	g0 = z[e] + t0 * (o[i] - z[e]);
			LANES_VEC	g1 = z[e] + t1 * (o[i] - z[e]);

			f0[i] = g0;
			pre0[i] = acc0[c];
			acc0[c] *= g0;
			f1[i] = g1;
			pre1[i] = acc1[c];
			acc1[c] *= g1;
		}
	for (int32_t c = 0; c < LANES_CHUNKS; c++)
	{
		acc0[c] = (LANES_VEC) {0} + w[q];
		acc1[c] = (LANES_VEC) {0} + (two ? w[q + 1] : 0.0);
	}
	for (int32_t e = d; e >= 1; e--)
		for (int32_t c = 0; c < LANES_CHUNKS; c++)
		{
			int32_t		i = e * LANES_CHUNKS + c;

			sum[i] += pre0[i] * acc0[c];
			acc0[c] *= f0[i];
			if (two)
				sum[i] += pre1[i] * acc1[c];
			acc1[c] *= f1[i];
		}
}

/* The quadrature of ts_quad_path in every lane: sum[e] = the integral for element e. */
static inline __attribute__((always_inline)) void
LANES_JOIN(LANES_NAME, _integrals) (const double *z, int32_t d, const LaneArrays *a)
{
	LANES_VEC  *sum = (LANES_VEC *) a->sum;
	int32_t		n = (d + 1) / 2;
	const double *x,
			   *w;

	ts_quad_nodes(n, &x, &w, a->nodes);
	for (int32_t i = LANES_CHUNKS; i < (d + 1) * LANES_CHUNKS; i++)
		sum[i] = (LANES_VEC) {0};
	for (int32_t q = 0; q < n; q += 2)
		LANES_JOIN(LANES_NAME, _node_pair) (z, d, x, w, q, q + 1 < n, a);
}

/*
 * Add each element's share, (o - z) times its integral, times each leaf
 * value to the live rows' contributions (ts_shap_add_share per row).
 */
static inline __attribute__((always_inline)) void
LANES_JOIN(LANES_NAME, _shares) (const TsPathTable *pt, int64_t p, int32_t d, uint32_t live, double *phi,
								 size_t row_width, const LaneArrays *a)
{
	int64_t		start = pt->path_start[p];
	LANES_VEC	share[LANES_CHUNKS];

	for (int32_t e = 1; e <= d; e++)
	{
		double		z = pt->zero_fraction[start + e];
		int32_t		j = pt->feature[start + e];

		for (int32_t c = 0; c < LANES_CHUNKS; c++)
			share[c] = (((LANES_VEC *) a->o)[e * LANES_CHUNKS + c] - z) * ((LANES_VEC *) a->sum)[e * LANES_CHUNKS + c];
		for (int32_t k = 0; k < pt->value_width; k++)
		{
			double	   *out = phi + ts_path_output_offset(pt, p, k) + j;
			double		v = ts_path_value(pt, p, k);

			for (int32_t l = 0; l < TS_QUAD_LANES; l++)
				if (live & (1u << l))
					out[(size_t) l * row_width] += share[l / LANES_WIDTH][l % LANES_WIDTH] * v;
		}
	}
}

/* Every path's contributions to the block's rows (phi zeroed). */
static void
LANES_NAME(const TsPathTable *pt, const float *x, int32_t nrows, double *phi, const LaneArrays *a)
{
	size_t		row_width = (size_t) pt->num_outputs * (pt->num_features + 1);

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		int64_t		start = pt->path_start[p];
		int32_t		d = (int32_t) (pt->path_start[p + 1] - start) - 1;
		uint32_t	live;

		ts_check_interrupts_after(ts_path_work(pt, p) * nrows);
		if (d < 1 || (live = ts_lane_fractions(pt, p, x, nrows, a->o)) == 0)
			continue;
		LANES_JOIN(LANES_NAME, _integrals) (pt->zero_fraction + start, d, a);
		LANES_JOIN(LANES_NAME, _shares) (pt, p, d, live, phi, row_width, a);
	}
}

#undef LANES_CHUNKS
#undef LANES_VEC
#undef LANES_NAME
#undef LANES_WIDTH
