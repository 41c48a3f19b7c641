/*
 * ts_run.c - the two pipelines that carry a call's rows through (ts_run.h):
 * batches read, computed on the GPU service or on the session's CPU
 * threads, and emitted, the backend reading and emitting while the batch
 * before or after computes.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/memutils.h"

#include "backend/ts_background.h"
#include "backend/ts_run.h"
#include "backend/ts_settings.h"
#include "backend/ts_threads.h"
#include "core/ts_interactions.h"

/*
 * GPU interaction batches are capped so that one result buffer stays within
 * this many bytes, whatever the number of features (a row of a 784-feature,
 * 10-class model's full matrix is 49 MB).
 */
#define TS_INTERACTION_BUFFER_BYTES ((Size) 256 * 1024 * 1024)

/* Fetch the next batch straight into a GPU slot's pinned input; keep its keys. */
static int32
fetch_into_slot(TsBatchReader *reader, TsGpuRun *run, int slot, TsKeySlot *ks)
{
	reader->x_target = ts_gpu_run_input(run, slot);
	ts_batch_next(reader);
	ts_batch_keep_keys(reader, ks);
	return (int32) reader->nrows;
}

/*
 * A GPU run's first batch is this fraction of the others: the device starts
 * once a quarter of a batch is read, and the overlap of reading the next
 * batch and emitting the last one with the device's work begins that much
 * sooner (the first batch has nothing to overlap with).
 */
#define TS_FIRST_BATCH_SHARE 4

/*
 * Fetch the first batch, then start the GPU run: sized for a full batch, or
 * for the first batch's rows alone when the query ended within it (a query
 * of fewer rows than a quarter batch touches no more memory than it needs,
 * one of more takes a full batch's, and an empty one no GPU at all).
 * Allocates both key slots; returns the first batch's rows, in slot 0.
 */
static int32
start_run(TsBatchReader *reader, TsGpuRun **run, TsCachedModel *cached, const TsRunSpec *spec,
		  TsKeySlot ks[2], Oid key_type)
{
	int32		nf = cached->model->num_features;
	int32		full = reader->batch_rows;
	int32		first = Max(1, full / TS_FIRST_BATCH_SHARE);
	int32		n,
				room;

	reader->batch_rows = first;
	n = (int32) ts_batch_next(reader);
	reader->batch_rows = full;
	if (n == 0)
		return 0;
	/* a batch comes short of what was asked only at the source's end: no later batch */
	room = n < first ? n : full;
	for (int i = 0; i < 2; i++)
		ts_key_slot_init(&ks[i], room, key_type);
	*run = ts_gpu_run_start(cached, room, spec);
	memcpy(ts_gpu_run_input(*run, 0), reader->x, sizeof(float) * (size_t) n * nf);
	ts_batch_keep_keys(reader, &ks[0]);
	return n;
}

/* Where a GPU run's backend time goes, reported at DEBUG1. */
typedef struct TsPhaseClock
{
	instr_time	fetch;			/* SPI fetch and conversion to float32 */
	instr_time	wait;			/* waiting for the GPU (and the CPU's long paths) */
	instr_time	emit;			/* building result tuples */
	instr_time	mark;
} TsPhaseClock;

/* Charge the time since the last mark to one phase. */
static void
phase_charge(TsPhaseClock *c, instr_time *phase)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_ACCUM_DIFF(*phase, now, c->mark);
	c->mark = now;
}

/*
 * Results of one CPU run are kept within this many bytes: rows of a wide
 * model's interactions can take megabytes each.
 */
#define TS_CPU_RESULT_BYTES ((Size) 64 * 1024 * 1024)

/*
 * The tree plan for a call's path-dependent contributions by quadrature
 * (the kinds in SHAP values or top features), or NULL: through the paths.
 * A call with a background (interventional) keeps its own route.
 */
static const TsQuadTreePlan *
tree_plan_for(const TsEmitter *em, TsCachedModel *entry)
{
	if (em->kind == TS_RESULT_PREDICT || em->kind == TS_RESULT_INTERACTIONS ||
		em->algorithm != TS_SHAP_QUADRATURE || em->background != NULL)
		return NULL;
	return ts_model_tree_plan(entry);
}

/* What the CPU computes for a result kind with this model, path table and tree plan, on how many threads; returns the rows per run. */
static int64
cpu_rows_init(const TsEmitter *em, TsCpuRows *r, const TsModel *model, const TsPathTable *paths,
			  const TsQuadTreePlan *tree_plan)
{
	Size		row_bytes;
	int64		span;

	r->kind = em->kind == TS_RESULT_PREDICT ? TS_ROWS_PREDICT
		: em->kind == TS_RESULT_INTERACTIONS ? TS_ROWS_INTERACTIONS
		: ts_result_is_top(em->kind) ? TS_ROWS_TOP_FEATURES : TS_ROWS_SHAP;
	r->top_k = em->top_k;
	r->background = em->background;
	r->model = model;
	r->paths = paths;
	r->tree_plan = tree_plan;
	r->algorithm = em->algorithm;
	r->method = em->spec.method;
	r->selection = em->spec.selection;
	row_bytes = sizeof(double) * Max(ts_cpu_rows_width(r), 1);
	span = Max(1, Min((int64) ts_batch_rows, (int64) (TS_CPU_RESULT_BYTES / row_bytes)));
	r->threads = (int) Min(ts_cpu_threads_now(), span);
	r->iv_plan = NULL;
	r->scratch_len = ts_cpu_rows_scratch_len(r);
	r->scratch = palloc_extended(sizeof(double) * Max(r->scratch_len * r->threads, 1),
								 MCXT_ALLOC_HUGE);
	r->out = palloc_extended(row_bytes * span, MCXT_ALLOC_HUGE);
	return span;
}

/* Emit (or add up) the results of count rows with these keys. */
static void
consume_cpu_rows(TsEmitter *em, const Datum *keys, const bool *key_null, int64 count,
				 const double *out)
{
	const TsModel *m = em->model;

	/* the CPU's rows hold per-row results; predictions come linked already */
	if (em->kind == TS_RESULT_IMPORTANCE)
	{
		ts_importance_add_rows(out, count, m->num_outputs, m->num_features, em->sums);
		em->rows += count;
	}
	else if (em->kind == TS_RESULT_PREDICT)
	{
		for (int64 i = 0; i < count; i++)
			ts_emit_prediction(em, keys[i], key_null[i], out + i * 2 * (Size) m->num_outputs);
	}
	else
		ts_emit_batch(em, keys, key_null, (int32) count, out);
}

/*
 * The interventional route of a call, from its first batch (at most span
 * rows, whatever the threads): the background grouped per path when the
 * batch has the rows to pay for it (treeshap.background_grouping), else
 * the walk.
 */
static const TsIvPlan *
interventional_route(const TsEmitter *em, const TsCpuRows *rows, int64 first_batch, int64 span)
{
	if (rows->background == NULL || ts_background_grouping == TS_GROUPING_NEVER)
		return NULL;
	if (ts_background_grouping == TS_GROUPING_AUTO &&
		Min(first_batch, span) < ts_iv_plan_min_rows(em->paths, em->model))
		return NULL;
	return ts_background_plan(em->paths, rows->background, rows->threads);
}

/* Batch by batch, each computed on the session's threads (the backend's too), then emitted. */
static void
run_cpu_serial(TsEmitter *em, TsBatchReader *reader, TsCpuRows *rows, int64 span)
{
	Size		nf = em->model->num_features;
	uint64		n;
	bool		routed = false;

	while ((n = ts_batch_next(reader)) > 0)
	{
		if (!routed)
			rows->iv_plan = interventional_route(em, rows, (int64) n, span);
		routed = true;
		for (uint64 first = 0; first < n; first += span)
		{
			int64		count = Min(span, (int64) (n - first));

			rows->x = reader->x + first * nf;
			ts_cpu_rows_compute(rows, count);
			consume_cpu_rows(em, reader->keys + first, reader->key_null + first, count, rows->out);
		}
	}
}

/* A pipelined CPU run's two sets of buffers: rows in and out, and their keys. */
typedef struct TsCpuSlots
{
	TsCpuRows	rows[2];
	float	   *x[2];
	TsKeySlot	keys[2];
} TsCpuSlots;

/* Allocate both sets; the first reuses the prototype's output buffer. */
static void
cpu_slots_init(TsCpuSlots *s, const TsCpuRows *proto, int64 span, Oid key_type)
{
	Size		row_bytes = sizeof(double) * Max(ts_cpu_rows_width(proto), 1);

	for (int i = 0; i < 2; i++)
	{
		s->rows[i] = *proto;
		s->x[i] = palloc_extended(sizeof(float) * span * Max(proto->model->num_features, 1),
								  MCXT_ALLOC_HUGE);
		s->rows[i].x = s->x[i];
		if (i > 0)
			s->rows[i].out = palloc_extended(row_bytes * span, MCXT_ALLOC_HUGE);
		ts_key_slot_init(&s->keys[i], span, key_type);
	}
}

/* Fetch the next batch into slot i's input and keep its keys; returns its rows. */
static int64
fetch_into_cpu_slot(TsBatchReader *reader, TsCpuSlots *s, int i)
{
	reader->x_target = s->x[i];
	ts_batch_next(reader);
	ts_batch_keep_keys(reader, &s->keys[i]);
	return (int64) reader->nrows;
}

/*
 * The CPU pipeline, as the GPU's: while the other threads compute batch k,
 * the backend emits batch k-1's results and fetches batch k+1, then joins
 * batch k's rows. Results are those of the serial loop, row for row.
 */
static void
cpu_pipeline(TsEmitter *em, TsBatchReader *reader, TsCpuSlots *s)
{
	int			cur = 0;
	int			pending = -1;
	int64		pending_n = 0;
	int64		n = fetch_into_cpu_slot(reader, s, 0);

	s->rows[0].iv_plan = s->rows[1].iv_plan = interventional_route(em, &s->rows[0], n, n);
	while (n > 0)
	{
		int			other = 1 - cur;
		int64		next_n;

		ts_cpu_rows_begin(&s->rows[cur], n);
		if (pending >= 0)
			consume_cpu_rows(em, s->keys[pending].keys, s->keys[pending].key_null, pending_n,
							 s->rows[pending].out);
		next_n = fetch_into_cpu_slot(reader, s, other);
		ts_cpu_rows_end(&s->rows[cur], n);
		pending = cur;
		pending_n = n;
		cur = other;
		n = next_n;
	}
	if (pending >= 0)
		consume_cpu_rows(em, s->keys[pending].keys, s->keys[pending].key_null, pending_n,
						 s->rows[pending].out);
}

/* The pipeline over batches of span rows; an ERROR first stops the threads. */
static void
run_cpu_overlapped(TsEmitter *em, TsBatchReader *reader, const TsCpuRows *proto, int64 span,
				   Oid key_type)
{
	TsCpuSlots	slots;

	cpu_slots_init(&slots, proto, span, key_type);
	reader->batch_rows = (int) span;
	PG_TRY();
	{
		cpu_pipeline(em, reader, &slots);
	}
	PG_CATCH();
	{
		/* no thread may still write the slots when the ERROR frees them */
		ts_cpu_rows_abandon();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

void
ts_run_cpu(TsEmitter *em, TsCachedModel *cached, const TsSource *src, Oid key_type)
{
	TsBatchReader reader;
	TsCpuRows	rows;
	int64		span = cpu_rows_init(em, &rows, em->model, em->paths, tree_plan_for(em, cached));

	ts_batch_open_source(&reader, src, cached->model, key_type);
	if (ts_cpu_rows_can_overlap(&rows))
		run_cpu_overlapped(em, &reader, &rows, span, key_type);
	else
		run_cpu_serial(em, &reader, &rows, span);
	ts_batch_close(&reader);
}

/* Compute and emit n rows already converted into x, span rows at a time, on the CPU. */
static void
cpu_rows_from(TsEmitter *em, TsCpuRows *rows, int64 span, const float *x, int64 n, const TsKeySlot *ks)
{
	Size		nf = em->model->num_features;

	for (int64 first = 0; first < n; first += span)
	{
		int64		count = Min(span, n - first);

		rows->x = x + first * nf;
		ts_cpu_rows_compute(rows, count);
		consume_cpu_rows(em, ks->keys + first, ks->key_null + first, count, rows->out);
	}
}

/*
 * The GPU service failed the batch in slot `slot` and did not come back
 * (treeshap.device = auto): that batch, the one fetched after it (next_n rows
 * in the other slot) and the rest of the source are computed on the CPU,
 * with the model's trees (a GPU call's cache entry holds only its interface).
 */
static void
finish_on_cpu(TsEmitter *em, TsBatchReader *reader, TsCachedModel *cached, TsGpuRun *run, int slot,
			  int32 n, const TsKeySlot ks[2], int32 next_n)
{
	TsCachedModel *trees;
	TsCpuRows	rows;
	int64		span;

	ereport(NOTICE,
			(errmsg("the GPU service failed a request and did not come back: computing the rest of this call on the CPU"),
			 errhint("treeshap.gpu_status shows the service's state.")));
	trees = ts_model_acquire(cached->name, false);
	PG_TRY();
	{
		/* the rows were read for this call's model: a version stored since is another */
		if (trees->version != cached->version || trees->digest != cached->digest ||
			trees->length != cached->length)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("model \"%s\" was replaced while the GPU service was away", cached->name),
					 errdetail("The call could not finish on the CPU with the model it started with."),
					 errhint("Run the call again.")));
		span = cpu_rows_init(em, &rows, trees->model,
							 em->kind == TS_RESULT_PREDICT ? NULL : ts_model_paths(trees), tree_plan_for(em, trees));
		cpu_rows_from(em, &rows, span, ts_gpu_run_input(run, slot), n, &ks[slot]);
		cpu_rows_from(em, &rows, span, ts_gpu_run_input(run, 1 - slot), next_n, &ks[1 - slot]);
		reader->x_target = NULL;
		run_cpu_serial(em, reader, &rows, span);
	}
	PG_FINALLY();
	{
		ts_model_release(trees);
	}
	PG_END_TRY();
}

/*
 * Rows per GPU batch: treeshap.batch_rows, and for interactions no more than
 * fit TS_INTERACTION_BUFFER_BYTES.
 */
static int
gpu_batch_rows(const TsEmitter *em)
{
	const TsModel *m = em->model;
	Size		row_bytes;

	if (em->kind != TS_RESULT_INTERACTIONS)
		return ts_batch_rows;
	row_bytes = sizeof(double) * m->num_outputs * m->num_features *
		(Size) Max(em->spec.selection->count, 1);
	return (int) Max(1, Min((Size) ts_batch_rows, TS_INTERACTION_BUFFER_BYTES / row_bytes));
}

void
ts_run_gpu(TsEmitter *em, TsGpuRun **runp, TsCachedModel *cached, const TsSource *src,
		   Oid key_type)
{
	TsBatchReader reader;
	TsKeySlot	ks[2];
	TsPhaseClock clock = {0};
	int			running = 0;
	int32		running_n;
	int			pending = -1;
	int32		pending_n = 0;
	double	   *pending_phi = NULL;
	int64		rows = 0,
				batches = 0;
	TsGpuRun   *run;

	INSTR_TIME_SET_CURRENT(clock.mark);
	ts_batch_open_source(&reader, src, cached->model, key_type);
	reader.batch_rows = gpu_batch_rows(em);
	running_n = start_run(&reader, runp, cached, &em->spec, ks, key_type);
	run = *runp;
	phase_charge(&clock, &clock.fetch);
	if (running_n > 0)
		ts_gpu_run_submit(run, running, running_n);
	while (running_n > 0)
	{
		int			other = 1 - running;
		int32		next_n;

		if (pending >= 0)
			ts_emit_batch(em, ks[pending].keys, ks[pending].key_null, pending_n, pending_phi);
		phase_charge(&clock, &clock.emit);
		CHECK_FOR_INTERRUPTS();
		next_n = fetch_into_slot(&reader, run, other, &ks[other]);
		phase_charge(&clock, &clock.fetch);
		pending_phi = ts_gpu_run_wait(run, running, running_n);
		phase_charge(&clock, &clock.wait);
		if (pending_phi == NULL)
		{
			finish_on_cpu(em, &reader, cached, run, running, running_n, ks, next_n);
			pending = -1;
			break;
		}
		pending = running;
		pending_n = running_n;
		rows += running_n;
		batches++;
		if (next_n > 0)
			ts_gpu_run_submit(run, other, next_n);
		running = other;
		running_n = next_n;
	}
	if (pending >= 0)
		ts_emit_batch(em, ks[pending].keys, ks[pending].key_null, pending_n, pending_phi);
	phase_charge(&clock, &clock.emit);
	ts_batch_close(&reader);
	elog(DEBUG1, "treeshap gpu run: %lld rows in %lld batches; fetch+convert %.1f ms, waiting for gpu %.1f ms, emit %.1f ms",
		 (long long) rows, (long long) batches, INSTR_TIME_GET_MILLISEC(clock.fetch),
		 INSTR_TIME_GET_MILLISEC(clock.wait), INSTR_TIME_GET_MILLISEC(clock.emit));
}

