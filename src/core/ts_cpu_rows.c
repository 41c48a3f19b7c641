/*
 * ts_cpu_rows.c - a batch of rows on a row pool (ts_cpu_rows.h).
 */
#include "core/ts_cpu_rows.h"

size_t
ts_cpu_rows_width(const TsCpuRows *r)
{
	size_t		outputs = (size_t) r->model->num_outputs;
	size_t		features = (size_t) r->model->num_features;

	switch (r->kind)
	{
		case TS_ROWS_PREDICT:
			return 2 * outputs;
		case TS_ROWS_INTERACTIONS:
			return outputs * (size_t) r->selection->count * features;
		case TS_ROWS_TOP_FEATURES:
			return outputs * ts_topk_width(r->top_k);
		default:
			return outputs * (features + 1);
	}
}

/*
 * Whether the run goes in blocks of rows in lanes: path-dependent
 * contributions, or Shapley interaction values, by quadrature.
 */
static bool
in_lanes(const TsCpuRows *r)
{
	if (r->algorithm != TS_SHAP_QUADRATURE)
		return false;
	if (r->kind == TS_ROWS_INTERACTIONS)
		return r->method == TS_INTERACTION_SHAPLEY;
	return (r->kind == TS_ROWS_SHAP || r->kind == TS_ROWS_TOP_FEATURES) && r->background == NULL;
}

/* Rows of a block in lanes: as many as the tree walk takes at once, or TS_QUAD_LANES through the paths. */
static int32_t
block_rows(const TsCpuRows *r)
{
	return r->tree_plan != NULL && r->kind != TS_ROWS_INTERACTIONS ? r->tree_plan->block_rows : TS_QUAD_LANES;
}

/* Doubles of one row's contributions. */
static size_t
shap_width(const TsCpuRows *r)
{
	return (size_t) r->model->num_outputs * (r->model->num_features + 1);
}

/* Scratch doubles of one row's contributions. */
static size_t
shap_scratch_len(const TsCpuRows *r)
{
	size_t		walk,
				plan;

	if (in_lanes(r))
		return r->tree_plan != NULL ? ts_quad_tree_rows_scratch_len(r->model, r->tree_plan, block_rows(r))
			: ts_quad_rows_scratch_len(r->paths);
	if (r->background == NULL)
		return ts_cpu_scratch_len(r->paths);
	/* the plan is chosen at the first batch: room for either route */
	walk = ts_interventional_scratch_len(r->background);
	plan = ts_iv_plan_scratch_len(r->paths, r->background);
	return walk > plan ? walk : plan;
}

size_t
ts_cpu_rows_scratch_len(const TsCpuRows *r)
{
	switch (r->kind)
	{
		case TS_ROWS_PREDICT:
			return 0;
		case TS_ROWS_INTERACTIONS:
			return in_lanes(r) ? ts_quad_pairs_scratch_len(r->paths) : ts_interactions_scratch_len(r->paths);
		case TS_ROWS_TOP_FEATURES:
			/* the rows' contributions (a block's in lanes), then the SHAP algorithm's own */
			return (size_t) (in_lanes(r) ? block_rows(r) : 1) * shap_width(r) + shap_scratch_len(r);
		default:
			return shap_scratch_len(r);
	}
}

/*
 * One row's contributions: interventional when the run has a background
 * (through its plan, or the walk when it has none), else path-dependent.
 */
static void
shap_row(const TsCpuRows *r, const float *x, double *phi, double *scratch)
{
	if (r->iv_plan != NULL)
		ts_iv_plan_row(r->iv_plan, x, phi, scratch);
	else if (r->background != NULL)
		ts_interventional_row(r->background, x, phi, scratch);
	else
		ts_cpu_shap_row(r->paths, r->algorithm, x, phi, scratch);
}

/* One row's top features: its contributions into scratch, then the selection. */
static void
top_features_row(const TsCpuRows *r, const float *x, double *out, double *scratch)
{
	int32_t		outputs = r->model->num_outputs;
	int32_t		features = r->model->num_features;
	double	   *phi = scratch;

	shap_row(r, x, phi, scratch + (size_t) outputs * (features + 1));
	ts_topk_row(phi, outputs, features, r->top_k, out);
}

/* A block's contributions: down each tree when the run has a tree plan, else through each path. */
static void
block_contribs(const TsCpuRows *r, const float *x, int32_t n, double *phi, double *scratch)
{
	if (r->tree_plan != NULL)
		ts_quad_tree_contribs(r->model, r->tree_plan, r->paths->bias, x, n, phi, scratch);
	else
		ts_quad_rows(r->paths, x, n, phi, scratch);
}

/*
 * Blocks [first, first + count) of block_rows rows each (the pool hands
 * out blocks in lanes, so only the run's last block is short): their
 * contributions, their top features from the block's contributions, or
 * their interaction values.
 */
static void
lanes_task(const TsCpuRows *r, int64_t first, int64_t count, double *scratch)
{
	size_t		nf = (size_t) r->model->num_features;
	size_t		width = ts_cpu_rows_width(r);
	size_t		row_width = shap_width(r);
	int64_t		rows = block_rows(r);
	int64_t		end = (first + count) * rows < r->nrows ? (first + count) * rows : r->nrows;

	for (int64_t i = first * rows; i < end; i += rows)
	{
		int32_t		n = (int32_t) (end - i < rows ? end - i : rows);

		if (r->kind == TS_ROWS_INTERACTIONS)
		{
			ts_quad_pairs_rows(r->paths, r->x + (size_t) i * nf, n, r->selection, r->out + (size_t) i * width, scratch);
			continue;
		}
		if (r->kind == TS_ROWS_SHAP)
		{
			block_contribs(r, r->x + (size_t) i * nf, n, r->out + (size_t) i * width, scratch);
			continue;
		}
		block_contribs(r, r->x + (size_t) i * nf, n, scratch, scratch + (size_t) rows * row_width);
		for (int32_t l = 0; l < n; l++)
			ts_topk_row(scratch + (size_t) l * row_width, r->model->num_outputs, (int32_t) nf, r->top_k,
						r->out + (size_t) (i + l) * width);
	}
}

/* Row pool task: rows [first, first + count) of the run on one thread. */
static void
rows_task(void *arg, int thread, int64_t first, int64_t count)
{
	const TsCpuRows *r = arg;
	size_t		nf = (size_t) r->model->num_features;
	size_t		width = ts_cpu_rows_width(r);
	double	   *scratch = r->scratch + (size_t) thread * r->scratch_len;

	if (in_lanes(r))
	{
		lanes_task(r, first, count, scratch);
		return;
	}
	for (int64_t i = first; i < first + count; i++)
	{
		const float *x = r->x + (size_t) i * nf;
		double	   *out = r->out + (size_t) i * width;

		switch (r->kind)
		{
			case TS_ROWS_PREDICT:
				ts_model_predict_margin(r->model, x, out);
				ts_model_link(r->model, out, out + r->model->num_outputs);
				break;
			case TS_ROWS_INTERACTIONS:
				ts_interactions_row(r->paths, x, r->method, r->selection, out, scratch);
				break;
			case TS_ROWS_TOP_FEATURES:
				top_features_row(r, x, out, scratch);
				break;
			default:
				shap_row(r, x, out, scratch);
		}
	}
}

/*
 * The smallest chunk of rows a thread claims (the pool's chunks shrink to it
 * as the rows run out): about a sixty-fourth of a thread's share, so that the
 * last chunks end close together, and one row when rows are few.
 */
static int64_t
chunk_rows(int64_t nrows, int threads)
{
	int64_t		chunk = nrows / ((int64_t) threads * 64);

	return chunk > 0 ? chunk : 1;
}

/* The pool's units of work: rows, or blocks of block_rows rows in lanes (a row's lanes then never depend on the chunks). */
static int64_t
pool_units(TsCpuRows *r, int64_t nrows)
{
	r->nrows = nrows;
	return in_lanes(r) ? (nrows + block_rows(r) - 1) / block_rows(r) : nrows;
}

bool
ts_cpu_rows_run(TsCpuRows *r, TsRowPool *pool, int64_t nrows, TsStopRequested stop_requested)
{
	int64_t		units = pool_units(r, nrows);

	if (ts_row_pool_threads(pool) > r->threads)
		pool = NULL;
	return ts_row_pool_run(pool, units, chunk_rows(units, ts_row_pool_threads(pool)), rows_task, r,
						   stop_requested);
}

void
ts_cpu_rows_start(TsCpuRows *r, TsRowPool *pool, int64_t nrows, TsStopRequested stop_requested)
{
	int64_t		units = pool_units(r, nrows);

	ts_row_pool_start(pool, units, chunk_rows(units, ts_row_pool_threads(pool)), rows_task, r,
					  stop_requested);
}
