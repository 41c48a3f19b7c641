/*
 * ts_interventional.c - interventional TreeSHAP against a background data
 * set (ts_interventional.h).
 */
#include <math.h>
#include <string.h>

#include "core/ts_interventional.h"

/* Weight tables past this side are computed per leaf instead (a path assigning 2,048 features). */
#define TS_WEIGHT_TABLE_MAX 2047

/* Feature states during a walk: not yet split on differently, or taken from x or from r. */
#define TS_FROM_NONE 0
#define TS_FROM_X 1
#define TS_FROM_R 2

bool
ts_interventional_link_ok(const TsModel *m)
{
	return m->link != TS_LINK_SOFTMAX || m->num_outputs == 1;
}

/* The largest margin any row can get: the largest base margin plus every tree's largest positive leaf. */
static double
margin_bound(const TsModel *m)
{
	double		bound = m->base_margin[0];
	int32_t		width = ts_leaf_size(m);

	for (int32_t k = 1; k < m->num_outputs; k++)
		bound = fmax(bound, m->base_margin[k]);
	for (int32_t t = 0; t < m->num_trees; t++)
	{
		double		top = 0.0;

		for (int64_t n = m->tree_offset[t]; n < m->tree_offset[t + 1]; n++)
			if (m->left[n] == -1)
				for (int32_t k = 0; k < width; k++)
					top = fmax(top, m->leaf_value[n * width + k]);
		bound += top;
	}
	return bound;
}

double
ts_interventional_rescale_bound(const TsModel *m)
{
	double		bound;

	switch (m->link)
	{
		case TS_LINK_IDENTITY:
			return 1.0;
		case TS_LINK_LOGISTIC:
			return fabs(m->link_scale) / 4.0;
		case TS_LINK_EXP:
			bound = exp(margin_bound(m));
			return isfinite(bound) ? fmax(bound, 1.0) : 0.0;
		default:
			return 0.0;
	}
}

/* W[a][0] = 1 / a and W[a][b] = W[a][b - 1] * b / (a + b). */
double
ts_interventional_weight(int32_t a, int32_t b)
{
	double		w = 1.0 / a;

	for (int32_t j = 1; j <= b; j++)
		w = w * j / (double) (a + j);
	return w;
}

/* The table of ts_interventional_weight, a row at a time by its recurrence. */
static void
fill_weights(TsBackground *bg)
{
	int32_t		n = bg->max_sets;

	bg->weight = ts_alloc0(sizeof(double) * (size_t) (n + 1) * (n + 1));
	for (int32_t a = 1; a <= n; a++)
	{
		double	   *w = bg->weight + (size_t) a * (n + 1);

		w[0] = 1.0 / a;
		for (int32_t b = 1; b <= n; b++)
			w[b] = w[b - 1] * b / (double) (a + b);
	}
}

/* Output per output of one row: margin, and in probability space the linked one. */
static void
row_output(const TsModel *m, const float *x, bool probability, double *margin, double *output)
{
	ts_model_predict_margin(m, x, margin);
	if (probability)
		ts_model_link(m, margin, output);
	else
		memcpy(output, margin, sizeof(double) * m->num_outputs);
}

TsBackground *
ts_background_create(const TsModel *m, const float *x, int64_t nrows, bool probability)
{
	TsBackground *bg = ts_alloc0(sizeof(TsBackground));
	size_t		nf = (size_t) m->num_features;
	size_t		no = (size_t) m->num_outputs;

	bg->model = m;
	bg->nrows = nrows;
	bg->probability = probability;
	bg->x = ts_alloc(sizeof(float) * nf * nrows);
	memcpy(bg->x, x, sizeof(float) * nf * nrows);
	bg->margin = ts_alloc(sizeof(double) * no * nrows);
	bg->output = ts_alloc(sizeof(double) * no * nrows);
	bg->base = ts_alloc0(sizeof(double) * no);
	for (int64_t j = 0; j < nrows; j++)
	{
		row_output(m, bg->x + j * nf, probability, bg->margin + j * no, bg->output + j * no);
		for (size_t k = 0; k < no; k++)
			bg->base[k] += bg->output[j * no + k];
	}
	for (size_t k = 0; k < no; k++)
		bg->base[k] /= (double) nrows;
	bg->max_sets = m->max_depth < m->num_features ? m->max_depth : m->num_features;
	if (bg->max_sets > TS_WEIGHT_TABLE_MAX)
		bg->max_sets = TS_WEIGHT_TABLE_MAX;
	fill_weights(bg);
	return bg;
}

void
ts_background_add_columns(TsBackground *bg)
{
	size_t		nf = (size_t) bg->model->num_features;
	size_t		rows = (size_t) bg->nrows;

	if (bg->columns != NULL)
		return;
	bg->columns = ts_alloc(sizeof(float) * nf * rows);
	for (size_t j = 0; j < rows; j++)
		for (size_t f = 0; f < nf; f++)
			bg->columns[f * rows + j] = bg->x[j * nf + f];
}

void
ts_background_free(TsBackground *bg)
{
	if (bg == NULL)
		return;
	ts_free(bg->x);
	ts_free(bg->columns);
	ts_free(bg->margin);
	ts_free(bg->output);
	ts_free(bg->base);
	ts_free(bg->weight);
	ts_free(bg);
}

/* A branch of a walk: the node where x and r first part on a feature. */
typedef struct TsWalkFrame
{
	int32_t		feature;
	int32_t		r_child;		/* the child r's value leads to */
	int32_t		phase;			/* 0: walking x's side, 1: r's */
	int32_t		pad;
} TsWalkFrame;

/* One thread's working memory for a row, carved out of its scratch doubles. */
typedef struct TsWalk
{
	const TsModel *model;
	const TsBackground *bg;
	int32_t		width;			/* values per leaf */
	TsWalkFrame *frames;		/* max_depth + 1 */
	double	   *x_side;			/* per frame, width sums of x-side weights below its x child */
	double	   *r_side;			/* the same of its r-side weights */
	double	   *ret_x;			/* the subtree just walked: width sums each */
	double	   *ret_r;
	double	   *pair;			/* one background row's values (probability space only) */
	double	   *margin_x;		/* outputs */
	double	   *output_x;		/* outputs */
	uint8_t    *state;			/* per feature: TS_FROM_* */
} TsWalk;

/* Frames a walk can stack: one per distinct feature of a path, at most. */
static size_t
walk_frames(const TsModel *m)
{
	return (size_t) m->max_depth + 1;
}

size_t
ts_interventional_scratch_len(const TsBackground *bg)
{
	const TsModel *m = bg->model;
	size_t		width = (size_t) ts_leaf_size(m);
	size_t		frames = walk_frames(m);
	size_t		values = (size_t) m->num_outputs * (m->num_features + 1);

	return frames * (sizeof(TsWalkFrame) / sizeof(double)) + 2 * frames * width + 2 * width +
		values + 2 * (size_t) m->num_outputs + ((size_t) m->num_features + 7) / 8;
}

/* Lay a walk's arrays over scratch (the layout ts_interventional_scratch_len counts). */
static void
walk_init(TsWalk *w, const TsBackground *bg, double *scratch)
{
	const TsModel *m = bg->model;
	size_t		frames = walk_frames(m);
	size_t		values = (size_t) m->num_outputs * (m->num_features + 1);

	w->model = m;
	w->bg = bg;
	w->width = ts_leaf_size(m);
	w->frames = (TsWalkFrame *) scratch;
	scratch += frames * (sizeof(TsWalkFrame) / sizeof(double));
	w->x_side = scratch;
	scratch += frames * w->width;
	w->r_side = scratch;
	scratch += frames * w->width;
	w->ret_x = scratch;
	scratch += w->width;
	w->ret_r = scratch;
	scratch += w->width;
	w->pair = scratch;
	scratch += values;
	w->margin_x = scratch;
	scratch += m->num_outputs;
	w->output_x = scratch;
	scratch += m->num_outputs;
	w->state = (uint8_t *) scratch;
	memset(w->state, TS_FROM_NONE, m->num_features);
}

/* The sums a leaf hands up: its value times the x-side and r-side weights of its sets. */
static void
leaf_sums(TsWalk *w, int64_t leaf, int32_t n_x, int32_t n_r)
{
	double		wx = n_x > 0 ? ts_background_weight(w->bg, n_x, n_r) : 0.0;
	double		wr = n_r > 0 ? ts_background_weight(w->bg, n_r, n_x) : 0.0;

	for (int32_t k = 0; k < w->width; k++)
	{
		double		v = w->model->leaf_value[leaf * w->width + k];

		w->ret_x[k] = v * wx;
		w->ret_r[k] = v * wr;
	}
}

/*
 * Add tree t's values for the pair (x, r) to phi (outputs x (features + 1)).
 * Where x and r take the same child, or the feature is already taken from
 * one side, the walk follows one child; where they part on a new feature
 * it walks x's child with the feature from x, then r's with it from r, and
 * credits the feature with the x-side sums of the first and debits it the
 * r-side sums of the second.
 */
static void
tree_pair(TsWalk *w, int32_t t, const float *x, const float *r, double *phi)
{
	const TsModel *m = w->model;
	int64_t		base = m->tree_offset[t];
	size_t		stride = (size_t) m->num_features + 1;
	double	   *out = phi + (size_t) m->tree_group[t] * stride;
	int32_t		depth = 0;
	int32_t		n_x = 0;
	int32_t		n_r = 0;
	int32_t		node = 0;

	for (;;)
	{
		while (m->left[base + node] != -1)
		{
			int64_t		g = base + node;
			int32_t		f = m->split_feature[g];
			bool		x_left = ts_node_goes_left(m, g, x[f]);
			bool		r_left = ts_node_goes_left(m, g, r[f]);
			TsWalkFrame *fr;

			if (x_left == r_left || w->state[f] == TS_FROM_X)
			{
				node = x_left ? m->left[g] : m->right[g];
				continue;
			}
			if (w->state[f] == TS_FROM_R)
			{
				node = r_left ? m->left[g] : m->right[g];
				continue;
			}
			fr = &w->frames[depth++];
			fr->feature = f;
			fr->r_child = r_left ? m->left[g] : m->right[g];
			fr->phase = 0;
			w->state[f] = TS_FROM_X;
			n_x++;
			node = x_left ? m->left[g] : m->right[g];
		}
		leaf_sums(w, base + node, n_x, n_r);
		for (;;)
		{
			TsWalkFrame *fr;
			double	   *xs;
			double	   *rs;

			if (depth == 0)
				return;
			fr = &w->frames[depth - 1];
			xs = w->x_side + (size_t) (depth - 1) * w->width;
			rs = w->r_side + (size_t) (depth - 1) * w->width;
			if (fr->phase == 0)
			{
				/* x's side is done: keep its sums, then walk r's side */
				for (int32_t k = 0; k < w->width; k++)
				{
					xs[k] = w->ret_x[k];
					rs[k] = w->ret_r[k];
					out[k * stride + fr->feature] += w->ret_x[k];
				}
				fr->phase = 1;
				w->state[fr->feature] = TS_FROM_R;
				n_x--;
				n_r++;
				node = fr->r_child;
				break;
			}
			for (int32_t k = 0; k < w->width; k++)
			{
				out[k * stride + fr->feature] -= w->ret_r[k];
				w->ret_x[k] += xs[k];
				w->ret_r[k] += rs[k];
			}
			w->state[fr->feature] = TS_FROM_NONE;
			n_r--;
			depth--;
		}
	}
}

/* Every tree's values for the pair (x, r) added to phi. */
static void
pair_values(TsWalk *w, const float *x, const float *r, double *phi)
{
	for (int32_t t = 0; t < w->model->num_trees; t++)
	{
		tree_pair(w, t, x, r, phi);
		ts_check_interrupts_after(w->model->tree_offset[t + 1] - w->model->tree_offset[t]);
	}
}

/* Background row j's values in probability space, scaled into phi. */
static void
add_scaled_pair(TsWalk *w, const float *x, int64_t j, double *phi)
{
	const TsModel *m = w->model;
	size_t		stride = (size_t) m->num_features + 1;

	memset(w->pair, 0, sizeof(double) * stride * m->num_outputs);
	pair_values(w, x, w->bg->x + j * (size_t) m->num_features, w->pair);
	ts_check_interrupts_after((int64_t) stride * m->num_outputs);
	for (int32_t k = 0; k < m->num_outputs; k++)
	{
		size_t		i = (size_t) j * m->num_outputs + k;
		double		c = ts_interventional_factor(w->margin_x[k], w->output_x[k], w->bg->margin[i],
												 w->bg->output[i]);

		for (size_t f = 0; f + 1 < stride; f++)
			phi[k * stride + f] += c * w->pair[k * stride + f];
	}
}

void
ts_interventional_row(const TsBackground *bg, const float *x, double *phi, double *scratch)
{
	const TsModel *m = bg->model;
	size_t		nf = (size_t) m->num_features;
	size_t		stride = nf + 1;
	TsWalk		w;

	walk_init(&w, bg, scratch);
	memset(phi, 0, sizeof(double) * stride * m->num_outputs);
	if (bg->probability)
		row_output(m, x, true, w.margin_x, w.output_x);
	for (int64_t j = 0; j < bg->nrows; j++)
	{
		if (bg->probability)
			add_scaled_pair(&w, x, j, phi);
		else
			pair_values(&w, x, bg->x + j * nf, phi);
	}
	for (int32_t k = 0; k < m->num_outputs; k++)
	{
		for (size_t f = 0; f < nf; f++)
			phi[k * stride + f] /= (double) bg->nrows;
		phi[k * stride + nf] = bg->base[k];
	}
}
