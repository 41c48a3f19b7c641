/*
 * ts_quad_tree_body.h - the block walk of ts_quad_tree.c, included there
 * once per instruction set and lane count with TREE_NAME (the function),
 * TREE_WIDTH (doubles per native vector) and TREE_LANES (rows at once)
 * defined; no include guard. Every row of a block walks the whole tree, so
 * the walk is the same for all TREE_LANES lanes: only the one fractions
 * differ (the zero fractions are the covers', the same in every lane). A
 * lane array is TREE_CHUNKS native vectors. Each lane's operations are the
 * same whatever TREE_LANES is, so a row's values are the same bytes in
 * either lane count.
 */
#define TREE_JOIN2(a, b) a##b
#define TREE_JOIN(a, b) TREE_JOIN2(a, b)
#define TREE_VEC TREE_JOIN(TREE_NAME, _vec)
#define TREE_MASK TREE_JOIN(TREE_NAME, _mask)
#define TREE_CHUNKS (TREE_LANES / TREE_WIDTH)
#define TREE_CHUNK for (int32_t c = 0; c < TREE_CHUNKS; c++)

/* one native vector of lanes, at any double's alignment, allowed to alias doubles */
typedef double TREE_VEC __attribute__((vector_size(TREE_WIDTH * sizeof(double)), aligned(8), may_alias));
typedef int64_t TREE_MASK __attribute__((vector_size(TREE_WIDTH * sizeof(int64_t)), aligned(8), may_alias));

/* b in the lanes where on is set (all ones), else a: a lane's pick of an edge's two values (a macro: a wide vector returned by value changes the ABI) */
#define TREE_PICK(on, a, b) \
	((TREE_VEC) ((~(on) & (TREE_MASK) ((TREE_VEC) {0} + (a))) | ((on) & (TREE_MASK) ((TREE_VEC) {0} + (b)))))

/* 1.0 in the lanes of chunk c whose bit in lanes is set, else 0.0 */
#define TREE_BITS(lanes, c) \
	__builtin_convertvector((((TREE_MASK) {0} + (int64_t) (lanes)) >> *(const TREE_MASK *) (ts_tree_lane_index + (c) * TREE_WIDTH)) & 1, TREE_VEC)

/* The coefficients of an edge whose merged zero fraction is z into e, as vectors over the padded points. */
static inline __attribute__((always_inline)) void
TREE_JOIN(TREE_NAME, _coefs) (const BlockState *st, int32_t q, double z, double *e)
{
	size_t		pad = (size_t) st->padded_points;

	/* z (1 - x) is 0 only where z is: then its reciprocal and share are 0 too */
	double		inv_z = z != 0.0 ? 1.0 / z : 0.0;
	double		nonzero = z != 0.0 ? 1.0 : 0.0;

	for (int32_t i = 0; i < q; i += TREE_WIDTH)
	{
		TREE_VEC	x = *(const TREE_VEC *) (st->points + i);
		TREE_VEC	w = *(const TREE_VEC *) (st->points + pad + i);
		TREE_VEC	g1 = z + x * (1.0 - z);
		TREE_VEC	r1 = 1.0 / g1;	/* > 0: x > 0 and z >= 0 */

		*(TREE_VEC *) (e + TREE_G0 * pad + i) = z * (1.0 - x);
		*(TREE_VEC *) (e + TREE_G1 * pad + i) = g1;
		*(TREE_VEC *) (e + TREE_R0 * pad + i) = inv_z * *(const TREE_VEC *) (st->points + 3 * pad + i);
		*(TREE_VEC *) (e + TREE_R1 * pad + i) = r1;
		*(TREE_VEC *) (e + TREE_A0 * pad + i) = nonzero * *(const TREE_VEC *) (st->points + 2 * pad + i);
		*(TREE_VEC *) (e + TREE_A1 * pad + i) = (1.0 - z) * w * r1;
	}
}

/*
 * Push the frame below frame f's next child: merged fractions, the edge's
 * coefficients, and per point its products (a lane's factor picked by its o).
 */
static inline __attribute__((always_inline)) void
TREE_JOIN(TREE_NAME, _push) (const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const float *rows,
							 int32_t nrows, TreeFrame *f, BlockState *st, int32_t top, int32_t q)
{
	int64_t		base = m->tree_offset[t];
	int64_t		n = base + f->node;
	int32_t		child = f->phase++ == 0 ? m->left[n] : m->right[n];
	int32_t		k = m->split_feature[n];
	bool		is_left = child == m->left[n];
	double		z0 = st->merged_z[k];
	bool		seen = z0 >= 0.0;
	double	   *o0 = st->merged_o + (size_t) k * TREE_LANES;
	double	   *oc = st->edge_o + (size_t) (top + 1) * TREE_LANES;
	TreeFrame  *cf = f + 1;

	if (is_left)				/* once per node: which rows go left */
	{
		f->left_lanes = 0;
		for (int32_t l = 0; l < nrows; l++)
			f->left_lanes |= (uint32_t) ts_node_goes_left(m, n, rows[(size_t) l * m->num_features + k]) << l;
	}
	{
		/* the block's rows that take this child: o is 1 there, 0 elsewhere (and past nrows) */
		uint32_t	taking = is_left ? f->left_lanes : ~f->left_lanes & (uint32_t) ((1ull << nrows) - 1ull);
		TREE_VEC   *o_taken = (TREE_VEC *) oc;
		TREE_VEC   *o_above = (TREE_VEC *) o0;

		TREE_CHUNK
		{
			TREE_VEC	taken = TREE_BITS(taking, c);

			if (seen)
				taken *= o_above[c];
			o_taken[c] = taken;
		}
	}
	*cf = (TreeFrame) {.node = child, .feature = k, .prev_z = z0, .prev_level = st->edge_level[k],
		.z = (seen ? z0 : 1.0) * plan->zero_fraction[base + child]};
	{
		size_t		pad = (size_t) st->padded_points;
		double	   *e = st->edge_coef + (size_t) (top + 1) * TREE_COEFS * pad;
		const double *e_old = seen ? st->edge_coef + (size_t) cf->prev_level * TREE_COEFS * pad : e;

		TREE_JOIN(TREE_NAME, _coefs) (st, q, cf->z, e);
		TREE_CHUNK
		{
			TREE_MASK	on = (TREE_MASK) (((TREE_VEC *) oc)[c] != 0.0);
			TREE_MASK	on_old = (TREE_MASK) (((TREE_VEC *) o0)[c] != 0.0);

			for (int32_t i = 0; i < q; i++)
			{
				TREE_VEC   *prod = (TREE_VEC *) (st->prods + ((size_t) top * q + i) * TREE_LANES);
				TREE_VEC   *out = (TREE_VEC *) (st->prods + ((size_t) (top + 1) * q + i) * TREE_LANES);
				TREE_VEC	g = TREE_PICK(on, e[TREE_G0 * pad + i], e[TREE_G1 * pad + i]);

				/* a repeated feature's factor above divided out (a factor of 0 has merged the product into 0) */
				if (seen)
					out[c] = prod[c] * TREE_PICK(on_old, e_old[TREE_R0 * pad + i], e_old[TREE_R1 * pad + i]) * g;
				else
					out[c] = prod[c] * g;
			}
		}
	}
	/* k's one fractions above are kept at the child's level (its sums and tops are written as they come) */
	memcpy(st->saved_o + (size_t) (top + 1) * TREE_LANES, o0, sizeof(double) * TREE_LANES);
	st->merged_z[k] = cf->z;
	st->edge_level[k] = top + 1;
	memcpy(o0, oc, sizeof(double) * TREE_LANES);
}

/* The edge into the node at level top: each lane's sum_q own_q (o - z) w_q / g_q, per value, into its phi lanes. */
static inline __attribute__((always_inline)) void
TREE_JOIN(TREE_NAME, _share) (const TsModel *m, int32_t t, const TreeFrame *f, BlockState *st, int32_t top,
							  int32_t q)
{
	int32_t		k_values = ts_leaf_size(m);
	size_t		width = (size_t) m->num_features + 1;
	size_t		level_sums = (size_t) k_values * q * TREE_LANES;
	TREE_VEC   *o = (TREE_VEC *) (st->edge_o + (size_t) top * TREE_LANES);
	size_t		pad = (size_t) st->padded_points;
	const double *e = st->edge_coef + (size_t) top * TREE_COEFS * pad;

	for (int32_t k = 0; k < k_values; k++)
	{
		TREE_VEC   *phi = (TREE_VEC *) (st->phi_lanes
										+ ((size_t) (m->tree_group[t] + k) * width + f->feature) * TREE_LANES);

		TREE_CHUNK
		{
			TREE_MASK	on = (TREE_MASK) (o[c] != 0.0);
			TREE_VEC	acc = {0};

			for (int32_t i = 0; i < q; i++)
			{
				size_t		at = (size_t) top * level_sums + ((size_t) k * q + i) * TREE_LANES;
				TREE_VEC	own = ((TREE_VEC *) (st->sums + at))[c];

				if (f->has_tops)
					own -= ((TREE_VEC *) (st->tops + at))[c];
				acc += own * TREE_PICK(on, e[TREE_A0 * pad + i], e[TREE_A1 * pad + i]);
			}
			phi[c] += acc;
		}
	}
}

/* Add the sums src into dst, or copy them there when dst holds nothing yet. */
static inline __attribute__((always_inline)) void
TREE_JOIN(TREE_NAME, _add) (const double *src, double *dst, size_t level_sums, bool first)
{
	const TREE_VEC *s = (const TREE_VEC *) src;
	TREE_VEC   *d = (TREE_VEC *) dst;

	if (first)
		memcpy(dst, src, sizeof(double) * level_sums);
	else
		for (size_t j = 0; j < level_sums / TREE_WIDTH; j++)
			d[j] += s[j];
}

/*
 * The node at level top is done (its sums complete): a split's sums go to
 * the tops of the nearest edge on its feature above, its edge's share is
 * taken, its sums go up to its parent, and its feature's state above is
 * put back.
 */
static inline __attribute__((always_inline)) void
TREE_JOIN(TREE_NAME, _finish) (const TsModel *m, int32_t t, const TreeFrame *f, BlockState *st, int32_t top,
							   int32_t q)
{
	int64_t		n = m->tree_offset[t] + f->node;
	size_t		level_sums = (size_t) ts_leaf_size(m) * q * TREE_LANES;

	if (m->left[n] != -1 && st->edge_level[m->split_feature[n]] >= 0)
	{
		int32_t		to = st->edge_level[m->split_feature[n]];

		TREE_JOIN(TREE_NAME, _add) (st->sums + (size_t) top * level_sums, st->tops + (size_t) to * level_sums,
									level_sums, !st->frames[to].has_tops);
		st->frames[to].has_tops = true;
	}
	if (top == 0)
		return;
	TREE_JOIN(TREE_NAME, _share) (m, t, f, st, top, q);
	/* the parent's sums: its left child's, then plus its right child's */
	TREE_JOIN(TREE_NAME, _add) (st->sums + (size_t) top * level_sums, st->sums + (size_t) (top - 1) * level_sums,
								level_sums, st->frames[top - 1].phase == 1);
	st->merged_z[f->feature] = f->prev_z;
	st->edge_level[f->feature] = f->prev_level;
	memcpy(st->merged_o + (size_t) f->feature * TREE_LANES,
		   st->saved_o + (size_t) top * TREE_LANES, sizeof(double) * TREE_LANES);
}

/* Tree t's contributions for the block's rows, on q points. */
static inline __attribute__((always_inline)) void
TREE_JOIN(TREE_NAME, _walk) (const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const float *rows,
							 int32_t nrows, BlockState *st, int32_t q)
{
	int64_t		base = m->tree_offset[t];
	int32_t		k_values = ts_leaf_size(m);
	size_t		level_sums = (size_t) k_values * q * TREE_LANES;
	int32_t		top = 0;
	int64_t		pending = 0;
	const double *x,
			   *w;

	ts_quad_tree_nodes(plan, t, &x, &w);
	/*
	 * the points, weights, -w / (1 - x) (an edge's share where o = 0, for any
	 * z > 0) and 1 / (1 - x), padded to whole vectors (a padded point weighs 0)
	 */
	for (int32_t i = 0; i < st->padded_points; i++)
	{
		double		xi = i < q ? x[i] : 0.5;
		double		wi = i < q ? w[i] : 0.0;

		st->points[i] = xi;
		st->points[st->padded_points + i] = wi;
		st->points[2 * st->padded_points + i] = -wi / (1.0 - xi);
		st->points[3 * st->padded_points + i] = 1.0 / (1.0 - xi);
	}
	st->frames[0] = (TreeFrame) {.node = 0, .feature = -1};
	for (int32_t i = 0; i < q * TREE_LANES; i++)
		st->prods[i] = 1.0;
	while (top >= 0)
	{
		TreeFrame  *f = &st->frames[top];
		int64_t		n = base + f->node;

		/*
		 * the work is counted here and passed on in batches: in a shared
		 * library the count is thread-local storage reached through a call,
		 * which would spill the lanes' vectors at every node
		 */
		pending += (4 + 4 * (int64_t) q * k_values) * nrows;
		if (pending >= TREE_CHECK_BATCH)
		{
			ts_check_interrupts_after(pending);
			pending = 0;
		}
		if (m->left[n] != -1 && f->phase < 2)
		{
			TREE_JOIN(TREE_NAME, _push) (m, plan, t, rows, nrows, f, st, top, q);
			top++;
			continue;
		}
		if (m->left[n] == -1)
		{
			TREE_VEC   *prod = (TREE_VEC *) (st->prods + (size_t) top * q * TREE_LANES);
			TREE_VEC   *s = (TREE_VEC *) (st->sums + (size_t) top * level_sums);

			for (int32_t k = 0; k < k_values; k++)
				for (int32_t j = 0; j < q * TREE_CHUNKS; j++)
					s[k * q * TREE_CHUNKS + j] = m->leaf_value[n * k_values + k] * prod[j];
		}
		TREE_JOIN(TREE_NAME, _finish) (m, t, f, st, top, q);
		top--;
	}
	ts_check_interrupts_after(pending);
}

#undef TREE_BITS
/*
 * Tree t's contributions for the block's rows: the walk built for each
 * point count of trees up to depth 8 (whose loops over points the compiler
 * then unrolls), one walk for any other.
 */
static void
TREE_NAME(const TsModel *m, const TsQuadTreePlan *plan, int32_t t, const float *rows, int32_t nrows,
		  BlockState *st)
{
	switch (plan->points[t])
	{
		case 1:
			TREE_JOIN(TREE_NAME, _walk) (m, plan, t, rows, nrows, st, 1);
			break;
		case 2:
			TREE_JOIN(TREE_NAME, _walk) (m, plan, t, rows, nrows, st, 2);
			break;
		case 3:
			TREE_JOIN(TREE_NAME, _walk) (m, plan, t, rows, nrows, st, 3);
			break;
		case 4:
			TREE_JOIN(TREE_NAME, _walk) (m, plan, t, rows, nrows, st, 4);
			break;
		default:
			TREE_JOIN(TREE_NAME, _walk) (m, plan, t, rows, nrows, st, plan->points[t]);
			break;
	}
}

#undef TREE_PICK
#undef TREE_CHUNK
#undef TREE_CHUNKS
#undef TREE_MASK
#undef TREE_VEC
#undef TREE_NAME
#undef TREE_WIDTH
#undef TREE_LANES
