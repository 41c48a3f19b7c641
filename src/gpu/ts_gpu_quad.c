/*
 * ts_gpu_quad.c - the quadrature layout of a path table for the GPU
 * (TsGpuQuadDesc in cuda/ts_cuda.h): paths grouped by output, cut into
 * chunks of at most TS_GPU_QUAD_MAX_SLOTS distinct output x feature columns
 * and a bounded number of elements, each element's slot in its chunk, and
 * the row-independent coefficients of every path at its own number of
 * Gauss-Legendre nodes; for vector leaves, one run of each chunk per value.
 * No PostgreSQL here.
 */
#include "gpu/ts_gpu_quad.h"

#include <math.h>
#include <string.h>

#include "core/ts_quadrature.h"

/* Elements of a chunk: enough chunks to fill a GPU with few rows, few flushes with many. */
#define QUAD_CHUNK_MIN_ELEMS 512
#define QUAD_CHUNKS_WANTED 256

int32_t		ts_gpu_quad_slot_cap = 0;
int32_t		ts_gpu_quad_chunk_elems = 0;

/* Gauss-Legendre rules of 1..TS_GPU_QUAD_MAX_POINTS nodes on [0, 1]. */
typedef struct QuadRules
{
	double		t[TS_GPU_QUAD_MAX_POINTS + 1][TS_GPU_QUAD_MAX_POINTS];
	double		w[TS_GPU_QUAD_MAX_POINTS + 1][TS_GPU_QUAD_MAX_POINTS];
} QuadRules;

/* Unique features of path p (its root element left out). */
static inline int32_t
path_depth(const TsPathTable *pt, int64_t p)
{
	return (int32_t) (pt->path_start[p + 1] - pt->path_start[p]) - 1;
}

/* Nodes of a path of d unique features, and the coefficients they take (even). */
static inline int32_t
nodes_for(int32_t d)
{
	return (d + 1) / 2;
}

static inline int64_t
coef_stride(int32_t n)
{
	return n + (n & 1);
}

/* Paths the kernel takes (1 to 31 unique features), grouped by output, in table order. */
static int64_t *
ordered_paths(const TsPathTable *pt, int64_t *count)
{
	int64_t    *start = ts_alloc0(sizeof(int64_t) * ((size_t) pt->num_outputs + 1));
	int64_t    *order;
	int64_t		n = 0;

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		int32_t		d = path_depth(pt, p);

		if (d >= 1 && d < TS_GPU_LANES)
		{
			start[pt->path_group[p] + 1]++;
			n++;
		}
	}
	for (int32_t g = 0; g < pt->num_outputs; g++)
		start[g + 1] += start[g];
	order = ts_alloc(sizeof(int64_t) * (size_t) (n > 0 ? n : 1));
	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		int32_t		d = path_depth(pt, p);

		if (d >= 1 && d < TS_GPU_LANES)
			order[start[pt->path_group[p]]++] = p;
	}
	ts_free(start);
	*count = n;
	return order;
}

/* Columns of path p not yet in the chunk being built (stamp marks the chunk's). */
static int32_t
new_columns(const TsPathTable *pt, int64_t p, const int64_t *stamp, int64_t chunk)
{
	int32_t		fresh = 0;
	int64_t		base = (int64_t) pt->path_group[p] * pt->num_features;

	for (int64_t e = pt->path_start[p] + 1; e < pt->path_start[p + 1]; e++)
		if (stamp[base + pt->feature[e]] != chunk)
			fresh++;
	return fresh;
}

/* Cut the ordered paths into chunks; fills chunks[] except slots, returns the count. */
static int64_t
cut_chunks(const TsPathTable *pt, const int64_t *order, int64_t n, int64_t elems_total,
		   int32_t slot_cap, TsGpuQuadChunk *chunks, int64_t *stamp)
{
	int64_t		cap = elems_total / QUAD_CHUNKS_WANTED;
	int64_t		num = 0,
				slots = 0,
				elems = 0;

	if (cap < QUAD_CHUNK_MIN_ELEMS)
		cap = QUAD_CHUNK_MIN_ELEMS;
	if (ts_gpu_quad_chunk_elems > 0)
		cap = ts_gpu_quad_chunk_elems;
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		p = order[i];
		int32_t		d = path_depth(pt, p);
		int32_t		fresh = num > 0 ? new_columns(pt, p, stamp, num - 1) : d;

		if (num == 0 || slots + fresh > slot_cap || elems + d > cap)
		{
			if (num > 0)
				chunks[num - 1].path_hi = i;
			chunks[num].path_lo = i;
			num++;
			slots = 0;
			elems = 0;
			fresh = new_columns(pt, p, stamp, num - 1);
		}
		for (int64_t e = pt->path_start[p] + 1; e < pt->path_start[p + 1]; e++)
			stamp[(int64_t) pt->path_group[p] * pt->num_features + pt->feature[e]] = num - 1;
		slots += fresh;
		elems += d;
	}
	if (num > 0)
		chunks[num - 1].path_hi = n;
	return num;
}

/*
 * Order a chunk's paths by length (stably): the kernel has one code path
 * per node count, and runs of equal counts keep one in the instruction cache.
 */
static void
sort_by_depth(const TsPathTable *pt, int64_t *order, int64_t count, int64_t *tmp)
{
	int64_t		count_of[TS_GPU_LANES] = {0};
	int64_t		pos[TS_GPU_LANES];

	for (int64_t i = 0; i < count; i++)
		count_of[path_depth(pt, order[i])]++;
	pos[0] = 0;
	for (int32_t d = 1; d < TS_GPU_LANES; d++)
		pos[d] = pos[d - 1] + count_of[d - 1];
	for (int64_t i = 0; i < count; i++)
		tmp[pos[path_depth(pt, order[i])]++] = order[i];
	memcpy(order, tmp, sizeof(int64_t) * (size_t) count);
}

/*
 * Coefficients of path p at n nodes (ts_cuda.h): P_i, then per element r_i
 * and A_i, each block padded to an even count.
 */
static void
fill_coefficients(const TsPathTable *pt, int64_t p, const QuadRules *rules, double *c)
{
	int32_t		d = path_depth(pt, p);
	int32_t		n = nodes_for(d);
	int64_t		np = coef_stride(n);
	const double *t = rules->t[n];
	const double *w = rules->w[n];
	double	   *elem = c + np;

	memset(c, 0, sizeof(double) * (size_t) (np + 2 * np * d));
	/* vector leaves: the kernel scales by each value in turn */
	for (int32_t i = 0; i < n; i++)
		c[i] = pt->value_width == 1 ? pt->path_value[p] : 1.0;
	for (int32_t k = 0; k < d; k++, elem += 2 * np)
	{
		double		z = pt->zero_fraction[pt->path_start[p] + 1 + k];

		for (int32_t i = 0; i < n; i++)
		{
			double		a = z + t[i] * (1.0 - z);	/* > 0: z >= 0 and 0 < t < 1 */

			c[i] *= a;
			elem[i] = z * (1.0 - t[i]) / a;
			elem[np + i] = w[i] * (1.0 - z) / a;
		}
	}
}

/* Elements of path p with their chunk slots; stamp/slot_of map columns to slots. */
static void
fill_elements(const TsPathTable *pt, int64_t p, TsGpuQuadElem *out, int32_t *cat_out,
			  int64_t *slot_of)
{
	int64_t		base = (int64_t) pt->path_group[p] * pt->num_features;

	for (int64_t e = pt->path_start[p] + 1, k = 0; e < pt->path_start[p + 1]; e++, k++)
	{
		out[k].lower = pt->lower[e];
		out[k].upper = pt->upper[e];
		out[k].feature = pt->feature[e];
		out[k].slot_flags = (int32_t) slot_of[base + pt->feature[e]] |
			(pt->missing[e] ? TS_GPU_QUAD_MISSING : 0) |
			(pt->cat[e] >= 0 ? TS_GPU_QUAD_CATEGORICAL : 0);
		if (cat_out != NULL)
			cat_out[k] = pt->cat[e];
	}
}

/* Give chunk c's columns slots in order of first use; returns the slots. */
static int64_t
assign_slots(const TsPathTable *pt, const int64_t *order, const TsGpuQuadChunk *c,
			 int64_t *slot_of, int64_t *stamp, int64_t chunk, int32_t *columns)
{
	int64_t		slots = 0;

	for (int64_t i = c->path_lo; i < c->path_hi; i++)
	{
		int64_t		p = order[i];
		int64_t		base = (int64_t) pt->path_group[p] * pt->num_features;

		for (int64_t e = pt->path_start[p] + 1; e < pt->path_start[p + 1]; e++)
		{
			int64_t		col = base + pt->feature[e];

			if (stamp[col] != chunk)
			{
				stamp[col] = chunk;
				slot_of[col] = slots;
				columns[slots++] = (int32_t) col;
			}
		}
	}
	return slots;
}

/*
 * Slots a chunk may use: every column when a row's sums fit 16, else 8. The
 * slot sums take shared memory per row, so fewer slots let more rows run at
 * once; each chunk then costs a flush of its slots. Measured on an H200
 * (covtype_synthetic-med and fashion_mnist-med, 8 to 64 slots), 8 was the
 * fastest for the wide models.
 */
static int32_t
slot_cap(const TsPathTable *pt)
{
	int64_t		columns = (int64_t) pt->num_outputs * pt->num_features;

	if (ts_gpu_quad_slot_cap > 0)
		return ts_gpu_quad_slot_cap < TS_GPU_QUAD_MAX_SLOTS ? ts_gpu_quad_slot_cap : TS_GPU_QUAD_MAX_SLOTS;
	return columns <= 16 ? (int32_t) (columns > 0 ? columns : 1) : 8;
}

/*
 * Vector leaves: run each chunk once per value k, chunk c's runs next to
 * each other (its coefficients stay in cache), each run adding to its own
 * columns, k outputs after the first's; values[i * K + k] scales path i.
 */
static void
expand_targets(const TsPathTable *pt, const int64_t *order, TsGpuQuadDesc *q, int32_t *slot_column)
{
	int32_t		width = pt->value_width;
	int64_t		base = q->num_chunks;
	TsGpuQuadChunk *out = ts_alloc(sizeof(TsGpuQuadChunk) * (size_t) (base * width > 0 ? base * width : 1));
	double	   *values = ts_alloc(sizeof(double) * (size_t) (q->num_paths * width > 0 ? q->num_paths * width : 1));
	int64_t		slots = q->num_slots;

	for (int64_t i = 0; i < q->num_paths; i++)
		memcpy(values + i * width, pt->path_value + order[i] * width, sizeof(double) * (size_t) width);
	for (int64_t c = 0; c < base; c++)
		for (int32_t k = 0; k < width; k++)
		{
			TsGpuQuadChunk *r = &out[c * width + k];

			*r = q->chunks[c];
			r->target = k;
			if (k == 0)
				continue;
			r->slot_start = slots;
			for (int32_t s = 0; s < r->slots; s++)
				slot_column[slots++] = slot_column[q->chunks[c].slot_start + s] + k * pt->num_features;
		}
	ts_free((void *) q->chunks);
	q->chunks = out;
	q->num_chunks = base * width;
	q->num_slots = slots;
	q->values = values;
	q->value_width = width;
}

/* Leaf values of the layout's paths (one value each), in layout order. */
static double *
layout_values(const TsPathTable *pt, const int64_t *order, int64_t n)
{
	double	   *v = ts_alloc(sizeof(double) * (size_t) (n > 0 ? n : 1));

	for (int64_t i = 0; i < n; i++)
		v[i] = pt->path_value[order[i]];
	return v;
}

/* The n-point rules and w_i / (1 - t_i). */
static void
make_rules(QuadRules *rules, TsGpuQuadDesc *q)
{
	memset(rules, 0, sizeof(*rules));
	for (int32_t n = 1; n <= TS_GPU_QUAD_MAX_POINTS; n++)
	{
		ts_gauss_legendre(n, rules->t[n], rules->w[n]);
		for (int32_t i = 0; i < n; i++)
			q->unsat_weight[n][i] = rules->w[n][i] / (1.0 - rules->t[n][i]);
	}
}

TsGpuQuadDesc *
ts_gpu_quad_build(const TsPathTable *pt)
{
	TsGpuQuadDesc *q = ts_alloc0(sizeof(TsGpuQuadDesc));
	int64_t		columns = (int64_t) pt->num_outputs * pt->num_features;
	int64_t    *stamp = ts_alloc(sizeof(int64_t) * (size_t) (columns > 0 ? columns : 1));
	int64_t    *slot_of = ts_alloc0(sizeof(int64_t) * (size_t) (columns > 0 ? columns : 1));
	QuadRules	rules;
	int64_t		n,
				elems = 0,
				coefs = 0;
	int64_t    *order = ordered_paths(pt, &n);
	TsGpuQuadChunk *chunks;
	TsGpuQuadPath *paths;
	int32_t    *slot_column;

	make_rules(&rules, q);
	for (int64_t i = 0; i < n; i++)
	{
		int32_t		d = path_depth(pt, order[i]);

		elems += d;
		coefs += coef_stride(nodes_for(d)) * (1 + 2 * d);
		if (nodes_for(d) > q->max_points)
			q->max_points = nodes_for(d);
	}
	for (int64_t c = 0; c < columns; c++)
		stamp[c] = -1;
	chunks = ts_alloc0(sizeof(TsGpuQuadChunk) * (size_t) (n > 0 ? n : 1));
	q->num_chunks = cut_chunks(pt, order, n, elems, slot_cap(pt), chunks, stamp);
	paths = ts_alloc(sizeof(TsGpuQuadPath) * (size_t) (n > 0 ? n : 1));
	q->elems = ts_alloc(sizeof(TsGpuQuadElem) * (size_t) (elems > 0 ? elems : 1));
	q->elem_cat = pt->cat_pool_len > 0 ? ts_alloc(sizeof(int32_t) * (size_t) (elems > 0 ? elems : 1)) : NULL;
	q->coef = ts_alloc(sizeof(double) * (size_t) (coefs > 0 ? coefs : 1));
	slot_column = ts_alloc(sizeof(int32_t) *
						   (size_t) (TS_GPU_QUAD_MAX_SLOTS * q->num_chunks * pt->value_width + 1));
	for (int64_t c = 0; c < columns; c++)
		stamp[c] = -1;
	{
		int64_t    *tmp = ts_alloc(sizeof(int64_t) * (size_t) (n > 0 ? n : 1));

		for (int64_t c = 0; c < q->num_chunks; c++)
			sort_by_depth(pt, order + chunks[c].path_lo, chunks[c].path_hi - chunks[c].path_lo, tmp);
		ts_free(tmp);
	}
	elems = coefs = 0;
	for (int64_t c = 0; c < q->num_chunks; c++)
	{
		chunks[c].slot_start = q->num_slots;
		chunks[c].slots = (int32_t) assign_slots(pt, order, &chunks[c], slot_of, stamp, c,
												 slot_column + q->num_slots);
		q->num_slots += chunks[c].slots;
		for (int64_t i = chunks[c].path_lo; i < chunks[c].path_hi; i++)
		{
			int64_t		p = order[i];
			int32_t		d = path_depth(pt, p);

			paths[i].elem = elems;
			paths[i].coef = coefs;
			paths[i].d = d;
			paths[i].n = nodes_for(d);
			fill_elements(pt, p, (TsGpuQuadElem *) q->elems + elems,
						  q->elem_cat ? (int32_t *) q->elem_cat + elems : NULL, slot_of);
			fill_coefficients(pt, p, &rules, (double *) q->coef + coefs);
			ts_check_interrupts_after(coef_stride(nodes_for(d)) * (1 + 2 * d));
			elems += d;
			coefs += coef_stride(nodes_for(d)) * (1 + 2 * d);
		}
	}
	q->chunks = chunks;
	q->paths = paths;
	q->num_paths = n;
	q->num_elems = elems;
	q->num_coef = coefs;
	q->slot_column = slot_column;
	q->value_width = 1;
	if (pt->value_width > 1)
		expand_targets(pt, order, q, slot_column);
	else
		q->leaf_value = layout_values(pt, order, n);
	ts_free(order);
	ts_free(stamp);
	ts_free(slot_of);
	return q;
}

void
ts_gpu_quad_free(TsGpuQuadDesc *q)
{
	if (q == NULL)
		return;
	ts_free((void *) q->chunks);
	ts_free((void *) q->paths);
	ts_free((void *) q->elems);
	ts_free((void *) q->elem_cat);
	ts_free((void *) q->coef);
	ts_free((void *) q->slot_column);
	ts_free((void *) q->values);
	ts_free((void *) q->leaf_value);
	ts_free(q);
}
