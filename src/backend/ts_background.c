/*
 * ts_background.c - reading an interventional call's background rows
 * (ts_background.h) through the batch reader, without a key column.
 */
#include "postgres.h"

#include "backend/ts_background.h"
#include "backend/ts_batch.h"
#include "backend/ts_settings.h"
#include "backend/ts_threads.h"

TsBackground *
ts_background_read(const char *query, const TsModel *model, bool probability)
{
	TsBatchReader reader;
	Size		nf = model->num_features;
	float	   *x = NULL;
	int64		rows = 0;
	int64		room = 0;
	uint64		n;
	TsBackground *bg;

	ts_batch_init(&reader, model, InvalidOid);
	reader.what = "background query";
	ts_batch_open_query(&reader, query);
	reader.key_attno = TS_KEY_NONE;
	while ((n = ts_batch_next(&reader)) > 0)
	{
		if (rows + (int64) n > room)
		{
			room = Max(room * 2, rows + (int64) n);
			x = x == NULL ? palloc_extended(sizeof(float) * nf * room, MCXT_ALLOC_HUGE)
				: repalloc_huge(x, sizeof(float) * nf * room);
		}
		memcpy(x + rows * nf, reader.x, sizeof(float) * nf * n);
		rows += n;
	}
	ts_batch_close(&reader);
	if (rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("background query returned no rows"),
				 errhint("Interventional SHAP averages over the background rows; give it at least one.")));
	bg = ts_background_create(model, x, rows, probability);
	pfree(x);
	elog(DEBUG1, "treeshap: interventional SHAP against %lld background rows", (long long) rows);
	return bg;
}

/* Paths a thread claims at least at a time while the plan is built. */
#define PLAN_CHUNK_PATHS 64

/* A plan being built: both passes' shared state, and each thread's scratch. */
typedef struct TsPlanBuild
{
	const TsPathTable *pt;
	const TsBackground *bg;
	TsIvPlan   *plan;
	int64	   *ngroups;
	char	   *scratch;
	Size		scratch_bytes;
} TsPlanBuild;

/* Row pool task: count the groups of a range of paths. */
static void
count_task(void *arg, int thread, int64_t first, int64_t count)
{
	TsPlanBuild *b = arg;

	ts_iv_plan_count(b->pt, b->bg, first, count, b->scratch + thread * b->scratch_bytes, b->ngroups);
}

/* Row pool task: fill the groups of a range of paths. */
static void
fill_task(void *arg, int thread, int64_t first, int64_t count)
{
	TsPlanBuild *b = arg;

	ts_iv_plan_fill(b->plan, first, count, b->scratch + thread * b->scratch_bytes);
}

TsIvPlan *
ts_background_plan(const TsPathTable *pt, const TsBackground *bg, int threads)
{
	TsPlanBuild b = {pt, bg, NULL, NULL, NULL, 0};

	if (ts_background_plan_kb == 0)
		return NULL;
	/* the call's own background: its columns are made here, for the grouped route alone */
	ts_background_add_columns(unconstify(TsBackground *, bg));
	b.scratch_bytes = MAXALIGN(ts_iv_plan_build_scratch(bg));
	b.scratch = palloc_extended(b.scratch_bytes * threads, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	b.ngroups = palloc_extended(sizeof(int64) * Max(pt->num_paths, 1), MCXT_ALLOC_HUGE);
	ts_cpu_tasks_compute(threads, pt->num_paths, PLAN_CHUNK_PATHS, count_task, &b);
	b.plan = ts_iv_plan_create(pt, bg, b.ngroups, (size_t) ts_background_plan_kb * 1024);
	if (b.plan != NULL)
		ts_cpu_tasks_compute(threads, pt->num_paths, PLAN_CHUNK_PATHS, fill_task, &b);
	pfree(b.scratch);
	pfree(b.ngroups);
	elog(DEBUG1, "treeshap: background %s per path (%lld groups over %lld paths)",
		 b.plan != NULL ? "grouped" : "too large to group",
		 (long long) (b.plan != NULL ? b.plan->group_start[pt->num_paths] : 0),
		 (long long) pt->num_paths);
	return b.plan;
}
