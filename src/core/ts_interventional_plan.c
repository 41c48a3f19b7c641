/*
 * ts_interventional_plan.c - the background grouped per path, and rows
 * explained through the groups (ts_interventional_plan.h).
 */
#include <string.h>

#include "core/ts_interventional_plan.h"

/* One thread's working memory for grouping the background rows of a path. */
typedef struct TsGroupScratch
{
	uint32_t   *stamp;			/* the current path's stamp: a slot of another is empty */
	uint32_t   *mask;			/* per background row */
	int32_t    *gid;			/* per background row: its group */
	uint32_t   *keys;			/* per group, in order of first row: its mask */
	uint32_t   *counts;			/* per group: its rows */
	uint32_t   *slot_key;		/* hash table of masks, hash_size slots */
	int32_t    *slot_gid;
	uint32_t   *slot_stamp;
	uint32_t	hash_bits;
} TsGroupScratch;

/* Bits set in v (SWAR: the builtin is a library call on a baseline x86-64 build). */
static inline int32_t
bit_count(uint32_t v)
{
	v = v - ((v >> 1) & 0x55555555u);
	v = (v & 0x33333333u) + ((v >> 2) & 0x33333333u);
	return (int32_t) ((((v + (v >> 4)) & 0x0f0f0f0fu) * 0x01010101u) >> 24);
}

/* Elements of path p, the root's excluded. */
static inline int32_t
path_elements(const TsPathTable *pt, int64_t p)
{
	return (int32_t) (pt->path_start[p + 1] - pt->path_start[p] - 1);
}

/* Bits of the hash table: twice the background rows at least, so probes stay short. */
static uint32_t
hash_bits_for(int64_t nrows)
{
	uint32_t	bits = 4;

	while (((int64_t) 1 << bits) < 2 * nrows)
		bits++;
	return bits;
}

size_t
ts_iv_plan_build_scratch(const TsBackground *bg)
{
	size_t		rows = (size_t) bg->nrows;
	size_t		slots = (size_t) 1 << hash_bits_for(bg->nrows);

	return sizeof(uint32_t) * (1 + 4 * rows + 3 * slots);
}

/* Carve a thread's zeroed scratch into its arrays. */
static void
group_scratch(const TsBackground *bg, void *scratch, TsGroupScratch *s)
{
	uint32_t   *u = scratch;
	size_t		rows = (size_t) bg->nrows;

	s->hash_bits = hash_bits_for(bg->nrows);
	s->stamp = u;
	s->mask = u + 1;
	s->gid = (int32_t *) (s->mask + rows);
	s->keys = (uint32_t *) (s->gid + rows);
	s->counts = s->keys + rows;
	s->slot_key = s->counts + rows;
	s->slot_gid = (int32_t *) (s->slot_key + ((size_t) 1 << s->hash_bits));
	s->slot_stamp = (uint32_t *) (s->slot_gid + ((size_t) 1 << s->hash_bits));
}

/* Elements of path p that row v satisfies: bit i for element i + 1. */
static inline uint32_t
row_mask(const TsPathTable *pt, int64_t p, const float *v)
{
	int64_t		first = pt->path_start[p] + 1;
	uint32_t	mask = 0;

	for (int64_t e = first; e < pt->path_start[p + 1]; e++)
		if (ts_paths_satisfied(pt, e, v[pt->feature[e]]))
			mask |= (uint32_t) 1 << (e - first);
	return mask;
}

/*
 * Set bit i of each background row's mask where it satisfies element i + 1
 * of path p: one pass over a feature's column per element.
 */
static void
background_masks(const TsPathTable *pt, const TsBackground *bg, int64_t p, uint32_t *mask)
{
	int64_t		first = pt->path_start[p] + 1;
	size_t		rows = (size_t) bg->nrows;

	memset(mask, 0, sizeof(uint32_t) * rows);
	for (int64_t e = first; e < pt->path_start[p + 1]; e++)
	{
		const float *col = bg->columns + (size_t) pt->feature[e] * rows;
		uint32_t	bit = (uint32_t) 1 << (e - first);
		uint32_t	if_missing = pt->missing[e] ? bit : 0;
		float		lower = pt->lower[e];
		float		upper = pt->upper[e];

		if (pt->cat[e] >= 0)
		{
			for (size_t r = 0; r < rows; r++)
				mask[r] |= ts_paths_satisfied(pt, e, col[r]) ? bit : 0;
			continue;
		}
		for (size_t r = 0; r < rows; r++)
		{
			float		v = col[r];

			mask[r] |= ((uint32_t) ((v >= lower) & (v < upper)) * bit) |
				((uint32_t) (v != v) * if_missing);
		}
	}
}

/*
 * The group of mask in the hash table, a new one (numbered next) if it has
 * none. Masks of few elements index the table directly, without collisions.
 */
static int32_t
find_group(TsGroupScratch *s, int32_t elements, uint32_t mask, int32_t next)
{
	uint32_t	slots = (uint32_t) 1 << s->hash_bits;
	uint32_t	h = elements <= (int32_t) s->hash_bits ? mask
		: (mask * 2654435761u) >> (32 - s->hash_bits);

	for (;; h = (h + 1) & (slots - 1))
	{
		if (s->slot_stamp[h] != *s->stamp)
		{
			s->slot_stamp[h] = *s->stamp;
			s->slot_key[h] = mask;
			s->slot_gid[h] = next;
			return next;
		}
		if (s->slot_key[h] == mask)
			return s->slot_gid[h];
	}
}

/* Group the background rows of path p by mask, groups in order of their first row; returns their number. */
static int32_t
group_rows(const TsPathTable *pt, const TsBackground *bg, int64_t p, TsGroupScratch *s)
{
	int32_t		elements = path_elements(pt, p);
	int32_t		groups = 0;

	if (++*s->stamp == 0)
	{
		/* a stamp wrapped round: forget every slot */
		memset(s->slot_stamp, 0, sizeof(uint32_t) << s->hash_bits);
		*s->stamp = 1;
	}
	background_masks(pt, bg, p, s->mask);
	for (int64_t r = 0; r < bg->nrows; r++)
	{
		uint32_t	mask = s->mask[r];
		int32_t		g = find_group(s, elements, mask, groups);

		if (g == groups)
		{
			s->keys[g] = mask;
			s->counts[g] = 0;
			groups++;
		}
		s->gid[r] = g;
		s->counts[g]++;
	}
	return groups;
}

void
ts_iv_plan_count(const TsPathTable *pt, const TsBackground *bg, int64_t first, int64_t count,
				 void *scratch, int64_t *ngroups)
{
	TsGroupScratch s;

	group_scratch(bg, scratch, &s);
	for (int64_t p = first; p < first + count; p++)
	{
		ngroups[p] = path_elements(pt, p) > TS_IV_PLAN_MAX_ELEMENTS ? 0 : group_rows(pt, bg, p, &s);
		ts_check_interrupts_after(ts_path_len(pt, p) * (bg->nrows + 1));
	}
}

/* Bytes of one background row's index in the members lists: 2 while they fit in 16 bits. */
static size_t
member_size(const TsBackground *bg)
{
	return bg->nrows <= (int64_t) UINT16_MAX + 1 ? sizeof(uint16_t) : sizeof(uint32_t);
}

/* Bytes of a plan's arrays. */
static size_t
plan_bytes(const TsPathTable *pt, const TsBackground *bg, int64_t total_groups, int64_t num_long)
{
	size_t		members = bg->probability ? (size_t) pt->num_paths * (size_t) bg->nrows : 0;

	return sizeof(int64_t) * ((size_t) pt->num_paths + 1 + (size_t) num_long) +
		sizeof(uint32_t) * 2 * (size_t) total_groups + member_size(bg) * members;
}

TsIvPlan *
ts_iv_plan_create(const TsPathTable *pt, const TsBackground *bg, const int64_t *ngroups,
				  size_t budget)
{
	int64_t		total = 0,
				num_long = 0;
	TsIvPlan   *plan;

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		total += ngroups[p];
		num_long += path_elements(pt, p) > TS_IV_PLAN_MAX_ELEMENTS;
	}
	if (bg->nrows > (int64_t) UINT32_MAX || plan_bytes(pt, bg, total, num_long) > budget)
		return NULL;
	plan = ts_alloc0(sizeof(TsIvPlan));
	plan->pt = pt;
	plan->bg = bg;
	plan->group_start = ts_alloc(sizeof(int64_t) * ((size_t) pt->num_paths + 1));
	plan->group_mask = ts_alloc(sizeof(uint32_t) * (size_t) (total + 1));
	plan->group_end = ts_alloc(sizeof(uint32_t) * (size_t) (total + 1));
	if (bg->probability && member_size(bg) == sizeof(uint16_t))
		plan->members16 = ts_alloc(sizeof(uint16_t) * (size_t) pt->num_paths * (size_t) bg->nrows);
	else if (bg->probability)
		plan->members = ts_alloc(sizeof(uint32_t) * (size_t) pt->num_paths * (size_t) bg->nrows);
	plan->long_paths = ts_alloc(sizeof(int64_t) * (size_t) (num_long + 1));
	plan->group_start[0] = 0;
	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		plan->group_start[p + 1] = plan->group_start[p] + ngroups[p];
		if (path_elements(pt, p) > TS_IV_PLAN_MAX_ELEMENTS)
			plan->long_paths[plan->num_long++] = p;
	}
	return plan;
}

void
ts_iv_plan_free(TsIvPlan *plan)
{
	if (plan == NULL)
		return;
	ts_free(plan->group_start);
	ts_free(plan->group_mask);
	ts_free(plan->group_end);
	ts_free(plan->members16);
	ts_free(plan->members);
	ts_free(plan->long_paths);
	ts_free(plan);
}

/* Write path p's groups, and in probability space its rows by group, into the plan. */
static void
fill_path(TsIvPlan *plan, int64_t p, TsGroupScratch *s)
{
	int64_t		g0 = plan->group_start[p];
	int32_t		groups = group_rows(plan->pt, plan->bg, p, s);
	uint32_t	end = 0;
	size_t		base = (size_t) p * (size_t) plan->bg->nrows;

	for (int32_t g = 0; g < groups; g++)
	{
		uint32_t	rows = s->counts[g];

		plan->group_mask[g0 + g] = s->keys[g];
		s->counts[g] = end;		/* from here on: where the group's next row goes */
		end += rows;
		plan->group_end[g0 + g] = end;
	}
	if (plan->members16 != NULL)
		for (int64_t r = 0; r < plan->bg->nrows; r++)
			plan->members16[base + s->counts[s->gid[r]]++] = (uint16_t) r;
	else if (plan->members != NULL)
		for (int64_t r = 0; r < plan->bg->nrows; r++)
			plan->members[base + s->counts[s->gid[r]]++] = (uint32_t) r;
}

void
ts_iv_plan_fill(TsIvPlan *plan, int64_t first, int64_t count, void *scratch)
{
	TsGroupScratch s;

	group_scratch(plan->bg, scratch, &s);
	for (int64_t p = first; p < first + count; p++)
	{
		if (plan->group_start[p + 1] > plan->group_start[p])
			fill_path(plan, p, &s);
		ts_check_interrupts_after(ts_path_len(plan->pt, p) * (plan->bg->nrows + 1));
	}
}

size_t
ts_iv_plan_scratch_len(const TsPathTable *pt, const TsBackground *bg)
{
	size_t		width = (size_t) pt->value_width;
	size_t		outputs = (size_t) pt->num_outputs;
	size_t		factors = bg->probability ? (size_t) bg->nrows * outputs : 0;

	return (TS_IV_PLAN_MAX_ELEMENTS + 2) * width + 2 * outputs + factors;
}

/* One row's working arrays, carved out of its scratch doubles. */
typedef struct TsIvRow
{
	double	   *acc;			/* per element and value: weights (times factors) of A */
	double	   *acc_b;			/* per value: the same of B, alike for every element of B */
	double	   *sum;			/* per value: one group's rows (or factors) */
	double	   *margin_x;		/* outputs */
	double	   *output_x;		/* outputs */
	double	   *factor;			/* probability space: background rows x outputs, else NULL */
	int32_t		width;			/* values accumulated per element: 1 in margin space */
} TsIvRow;

/* shap's factor per background row and output for row x. */
static void
row_factors(const TsBackground *bg, const double *margin_x, const double *output_x, double *factor)
{
	int32_t		no = bg->model->num_outputs;

	for (int64_t r = 0; r < bg->nrows; r++)
		for (int32_t k = 0; k < no; k++)
		{
			size_t		i = (size_t) r * no + k;

			factor[i] = ts_interventional_factor(margin_x[k], output_x[k], bg->margin[i], bg->output[i]);
		}
}

/* A group's rows as one weight per value: its count, or the sum of its rows' factors. */
static void
group_sum(const TsIvPlan *plan, int64_t p, uint32_t begin, uint32_t end, const TsIvRow *w)
{
	size_t		base = (size_t) p * (size_t) plan->bg->nrows;
	int32_t		no = plan->pt->num_outputs;
	int32_t		group = plan->pt->path_group[p];

	if (w->factor == NULL)
	{
		w->sum[0] = (double) (end - begin);
		return;
	}
	for (int32_t k = 0; k < w->width; k++)
	{
		const double *factor = w->factor + group + k;
		double		s = 0.0;

		if (plan->members16 != NULL)
			for (uint32_t i = begin; i < end; i++)
				s += factor[(size_t) plan->members16[base + i] * no];
		else
			for (uint32_t i = begin; i < end; i++)
				s += factor[(size_t) plan->members[base + i] * no];
		w->sum[k] = s;
	}
}

/*
 * Accumulate path p's groups for a row of mask mx: a group reaches the leaf
 * with x when it satisfies every element x does not (need). Returns whether
 * any did.
 */
static bool
accumulate_groups(const TsIvPlan *plan, int64_t p, uint32_t mx, uint32_t need, const TsIvRow *w)
{
	const TsBackground *bg = plan->bg;
	int32_t		nb = bit_count(need);
	uint32_t	begin = 0;
	bool		any = false;

	for (int64_t g = plan->group_start[p]; g < plan->group_start[p + 1]; g++)
	{
		uint32_t	mr = plan->group_mask[g];
		uint32_t	end = plan->group_end[g];
		uint32_t	a_set = mx & ~mr;
		int32_t		na = bit_count(a_set);
		double		wa,
					wb;

		if ((mr & need) != need || na + nb == 0)
		{
			begin = end;
			continue;
		}
		group_sum(plan, p, begin, end, w);
		begin = end;
		wa = na > 0 ? ts_background_weight(bg, na, nb) : 0.0;
		wb = nb > 0 ? ts_background_weight(bg, nb, na) : 0.0;
		for (; a_set != 0; a_set &= a_set - 1)
		{
			double	   *acc = w->acc + (size_t) __builtin_ctz(a_set) * w->width;

			for (int32_t k = 0; k < w->width; k++)
				acc[k] += wa * w->sum[k];
		}
		for (int32_t k = 0; k < w->width; k++)
			w->acc_b[k] += wb * w->sum[k];
		any = true;
	}
	return any;
}

/* Add path p's values for row x against the whole background to phi. */
static void
path_row(const TsIvPlan *plan, int64_t p, const float *x, const TsIvRow *w, double *phi)
{
	const TsPathTable *pt = plan->pt;
	int64_t		first = pt->path_start[p] + 1;
	int32_t		d = path_elements(pt, p);
	uint32_t	full = d == 32 ? UINT32_MAX : ((uint32_t) 1 << d) - 1;
	uint32_t	mx = row_mask(pt, p, x);

	memset(w->acc, 0, sizeof(double) * (size_t) d * w->width);
	memset(w->acc_b, 0, sizeof(double) * w->width);
	if (!accumulate_groups(plan, p, mx, full & ~mx, w))
		return;
	for (int32_t k = 0; k < pt->value_width; k++)
	{
		double	   *out = phi + ts_path_output_offset(pt, p, k);
		double		v = ts_path_value(pt, p, k) / (double) plan->bg->nrows;
		int32_t		kk = w->width == 1 ? 0 : k;

		for (int32_t i = 0; i < d; i++)
		{
			if (mx & ((uint32_t) 1 << i))
				out[pt->feature[first + i]] += v * w->acc[(size_t) i * w->width + kk];
			else
				out[pt->feature[first + i]] -= v * w->acc_b[kk];
		}
	}
}

int64_t
ts_iv_plan_min_rows(const TsPathTable *pt, const TsModel *m)
{
	int64_t		walk_row = (int64_t) 10 * m->num_trees * (m->max_depth > 0 ? m->max_depth : 1);
	int64_t		rows = pt->num_elements / walk_row;

	return rows > 1 ? rows : 1;
}

/* Lay a row's arrays over scratch (the layout ts_iv_plan_scratch_len counts). */
static void
row_init(const TsIvPlan *plan, double *scratch, TsIvRow *w)
{
	size_t		width = (size_t) plan->pt->value_width;

	w->width = plan->bg->probability ? (int32_t) width : 1;
	w->acc = scratch;
	scratch += TS_IV_PLAN_MAX_ELEMENTS * width;
	w->acc_b = scratch;
	scratch += width;
	w->sum = scratch;
	scratch += width;
	w->margin_x = scratch;
	scratch += plan->pt->num_outputs;
	w->output_x = scratch;
	scratch += plan->pt->num_outputs;
	w->factor = plan->bg->probability ? scratch : NULL;
}

void
ts_iv_plan_row(const TsIvPlan *plan, const float *x, double *phi, double *scratch)
{
	const TsPathTable *pt = plan->pt;
	const TsBackground *bg = plan->bg;
	size_t		stride = (size_t) pt->num_features + 1;
	TsBackgroundRows rows = {bg->x, bg->probability ? bg->margin : NULL,
	bg->probability ? bg->output : NULL, bg->nrows};
	TsIvRow		w;

	row_init(plan, scratch, &w);
	memset(phi, 0, sizeof(double) * stride * pt->num_outputs);
	if (bg->probability)
	{
		ts_model_predict_margin(bg->model, x, w.margin_x);
		ts_model_link(bg->model, w.margin_x, w.output_x);
		row_factors(bg, w.margin_x, w.output_x, w.factor);
	}
	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		if (plan->group_start[p + 1] > plan->group_start[p])
			path_row(plan, p, x, &w, phi);
		ts_check_interrupts_after(ts_path_work(pt, p) * (plan->group_start[p + 1] - plan->group_start[p]));
	}
	if (plan->num_long > 0)
		ts_interventional_add_paths_row(pt, plan->long_paths, plan->num_long, &rows, x,
										w.margin_x, w.output_x, phi);
	for (int32_t k = 0; k < pt->num_outputs; k++)
		phi[k * stride + pt->num_features] = bg->base[k];
}
