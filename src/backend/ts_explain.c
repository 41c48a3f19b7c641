/*
 * ts_explain.c - the SQL functions that explain and predict: materialised
 * set-returning functions over batches of a user query (SHAP values,
 * interaction values, global importance, predictions), plus shap_values()
 * for a single feature array.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "backend/ts_batch.h"
#include "backend/ts_catalog.h"
#include "backend/ts_emit.h"
#include "backend/ts_gpu_pg.h"
#include "core/ts_interactions.h"
#include "backend/ts_settings.h"
#include "backend/ts_threads.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_topk.h"

PG_FUNCTION_INFO_V1(treeshap_explain_shap);
PG_FUNCTION_INFO_V1(treeshap_explain_shap_wide);
PG_FUNCTION_INFO_V1(treeshap_explain_interactions);
PG_FUNCTION_INFO_V1(treeshap_feature_importance);
PG_FUNCTION_INFO_V1(treeshap_feature_importance_segments);
PG_FUNCTION_INFO_V1(treeshap_predict);
PG_FUNCTION_INFO_V1(treeshap_explain_top_features);
PG_FUNCTION_INFO_V1(treeshap_shap_values);

/*
 * GPU interaction batches are capped so that one result buffer stays within
 * this many bytes, whatever the number of features (a row of a 784-feature,
 * 10-class model's full matrix is 49 MB).
 */
#define TS_INTERACTION_BUFFER_BYTES ((Size) 256 * 1024 * 1024)


/* Where a call's rows come from: a query, or a table with its key column. */
typedef struct TsSource
{
	char	   *query;			/* NULL for a table */
	Oid			relid;
	char	   *key_column;		/* NULL: the whole row, or no key */
} TsSource;

/*
 * The model name and the rows' source: the second argument is a query
 * (text) or a table (regclass), whose forms take the key column's name as
 * the third, except feature_importance(model, table). NULL model or source
 * is an error, not an empty set.
 */
static void
get_model_and_source(FunctionCallInfo fcinfo, TsResultKind kind, char **model, TsSource *src)
{
	bool		table = get_fn_expr_argtype(fcinfo->flinfo, 1) == REGCLASSOID;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model name and %s must not be null", table ? "source table" : "query")));
	*model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	memset(src, 0, sizeof(*src));
	if (!table)
	{
		src->query = text_to_cstring(PG_GETARG_TEXT_PP(1));
		return;
	}
	src->relid = PG_GETARG_OID(1);
	if (kind != TS_RESULT_IMPORTANCE && !PG_ARGISNULL(2))
		src->key_column = pstrdup(NameStr(*PG_GETARG_NAME(2)));
}

/* Open the reader on a call's source. */
static void
open_source(TsBatchReader *reader, const TsSource *src, const TsModel *model, Oid key_type)
{
	if (src->query != NULL)
		ts_batch_open(reader, src->query, model, key_type);
	else
		ts_batch_open_table(reader, src->relid, src->key_column, model, key_type);
}

/* Options of explain_interactions and explain_top_features, read before the model is. */
typedef struct TsCallOptions
{
	ArrayType  *features;		/* interactions: NULL for all */
	TsInteractionMethod method;
	int32		top_k;			/* top features: k as asked */
} TsCallOptions;

/* Model feature index of a name (the model's own or f<index>), or -1. */
static int32
feature_index(const TsModel *m, const char *name)
{
	for (int32 j = 0; j < m->num_features; j++)
	{
		char	   *own = ts_feature_name(m, j);
		bool		same = strcmp(own, name) == 0;

		pfree(own);
		if (same)
			return j;
	}
	return -1;
}

/* The selection a features argument asks for: named features, in model order, once each. */
static TsFeatureSelection *
resolve_selection(const TsModel *m, ArrayType *features)
{
	Datum	   *names;
	bool	   *nulls;
	int			n;
	bool	   *wanted;
	int32	   *list;
	int32		count = 0;

	if (features == NULL)
		return ts_selection_make(m->num_features, NULL, 0);
	if (ARR_NDIM(features) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array")));
	deconstruct_array(features, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
	wanted = palloc0(sizeof(bool) * Max(m->num_features, 1));
	for (int i = 0; i < n; i++)
	{
		char	   *name;
		int32		j;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("features must not contain nulls")));
		name = TextDatumGetCString(names[i]);
		j = feature_index(m, name);
		if (j < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model has no feature \"%s\"", name)));
		wanted[j] = true;
	}
	list = palloc(sizeof(int32) * Max(m->num_features, 1));
	for (int32 j = 0; j < m->num_features; j++)
		if (wanted[j])
			list[count++] = j;
	return ts_selection_make(m->num_features, list, count);
}

/* Prepare per-call buffers for the chosen result kind and what the GPU is to compute. */
static void
emitter_init(TsEmitter *em, TsResultKind kind, ReturnSetInfo *rsinfo, TsCachedModel *cached,
			 const TsCallOptions *args)
{
	const TsModel *m = cached->model;
	size_t		columns = (size_t) m->num_outputs * m->num_features;

	em->spec.kind = kind == TS_RESULT_INTERACTIONS ? TS_RUN_INTERACTIONS
		: kind == TS_RESULT_IMPORTANCE ? TS_RUN_IMPORTANCE
		: kind == TS_RESULT_TOP ? TS_RUN_TOP_FEATURES
		: kind == TS_RESULT_PREDICT ? TS_RUN_PREDICT : TS_RUN_SHAP;
	em->spec.method = args != NULL ? args->method : TS_INTERACTION_SHAPLEY;
	em->spec.selection = kind == TS_RESULT_INTERACTIONS ? resolve_selection(m, args->features) : NULL;
	em->kind = kind;
	em->store = rsinfo->setResult;
	em->desc = rsinfo->setDesc;
	em->model = m;
	em->paths = cached->paths;
	em->algorithm = (TsShapAlgorithm) ts_cpu_algorithm();
	em->feature_text = NULL;
	em->rows = 0;
	em->template = NULL;
	em->template_tried = false;
	if (kind == TS_RESULT_IMPORTANCE)
		em->sums = palloc0(sizeof(double) * 2 * Max(columns, 1));
	if (kind == TS_RESULT_SEGMENTS)
		em->groups = ts_groups_create(TupleDescAttr(rsinfo->setDesc, 0)->atttypid, columns);
	if (kind == TS_RESULT_TOP)
	{
		em->top_k = ts_topk_count(args->top_k, m->num_features);
		em->spec.top_k = em->top_k;
	}
	if (kind == TS_RESULT_TOP || kind == TS_RESULT_PREDICT)
		em->margins = palloc(sizeof(double) * 2 * m->num_outputs);
	if (kind != TS_RESULT_WIDE && kind != TS_RESULT_PREDICT)
	{
		em->feature_text = palloc(sizeof(Datum) * m->num_features);
		for (int32 j = 0; j < m->num_features; j++)
			em->feature_text[j] = CStringGetTextDatum(ts_feature_name(m, j));
	}
}

/* Keys of one pipelined batch, copied out of SPI's tuples (freed by the next fetch). */
typedef struct TsKeySlot
{
	Datum	   *keys;
	bool	   *key_null;
	MemoryContext context;		/* by-reference key copies */
} TsKeySlot;

/* Keep the current batch's keys in a slot (SPI frees its tuples at the next fetch). */
static void
keep_keys(const TsBatchReader *reader, TsKeySlot *ks, int16 key_len, bool key_byval)
{
	MemoryContextReset(ks->context);
	for (uint64 i = 0; i < reader->nrows; i++)
	{
		ks->key_null[i] = reader->key_null[i];
		ks->keys[i] = reader->key_null[i] || key_byval ? reader->keys[i]
			: datumCopy(reader->keys[i], false, key_len);
	}
}

/* Fetch the next batch straight into a GPU slot's pinned input; keep its keys. */
static int32
fetch_into_slot(TsBatchReader *reader, TsGpuRun *run, int slot, TsKeySlot *ks,
				int16 key_len, bool key_byval)
{
	reader->x_target = ts_gpu_run_input(run, slot);
	ts_batch_next(reader);
	keep_keys(reader, ks, key_len, key_byval);
	return (int32) reader->nrows;
}

/*
 * Fetch the first batch, then start the GPU run sized for it: a query shorter
 * than treeshap.batch_rows gets buffers for its own rows only, and an empty
 * one touches no GPU at all. Allocates both key slots; returns the first
 * batch's rows, in slot 0.
 */
static int32
start_run(TsBatchReader *reader, TsGpuRun **run, TsCachedModel *cached, const TsRunSpec *spec,
		  TsKeySlot ks[2], int16 key_len, bool key_byval)
{
	int32		nf = cached->model->num_features;
	int32		n = (int32) ts_batch_next(reader);

	if (n == 0)
		return 0;
	/* no later batch is larger than the first */
	for (int i = 0; i < 2; i++)
	{
		ks[i].keys = palloc(sizeof(Datum) * n);
		ks[i].key_null = palloc(sizeof(bool) * n);
		ks[i].context = AllocSetContextCreate(CurrentMemoryContext, "treeshap keys",
											  ALLOCSET_DEFAULT_SIZES);
	}
	*run = ts_gpu_run_start(cached, n, spec);
	memcpy(ts_gpu_run_input(*run, 0), reader->x, sizeof(float) * (size_t) n * nf);
	keep_keys(reader, &ks[0], key_len, key_byval);
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

/* What the CPU computes for a result kind, on how many threads; returns the rows per run. */
static int64
cpu_rows_init(const TsEmitter *em, TsCpuRows *r)
{
	Size		row_bytes;
	int64		span;

	r->kind = em->kind == TS_RESULT_PREDICT ? TS_ROWS_PREDICT
		: em->kind == TS_RESULT_INTERACTIONS ? TS_ROWS_INTERACTIONS
		: em->kind == TS_RESULT_TOP ? TS_ROWS_TOP_FEATURES : TS_ROWS_SHAP;
	r->top_k = em->top_k;
	r->model = em->model;
	r->paths = em->paths;
	r->algorithm = em->algorithm;
	r->method = em->spec.method;
	r->selection = em->spec.selection;
	row_bytes = sizeof(double) * Max(ts_cpu_rows_width(r), 1);
	span = Max(1, Min((int64) ts_batch_rows, (int64) (TS_CPU_RESULT_BYTES / row_bytes)));
	r->threads = (int) Min(ts_cpu_threads_now(), span);
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

/* Batch by batch, each computed on the session's threads (the backend's too), then emitted. */
static void
run_cpu_serial(TsEmitter *em, TsBatchReader *reader, TsCpuRows *rows, int64 span)
{
	Size		nf = em->model->num_features;
	uint64		n;

	while ((n = ts_batch_next(reader)) > 0)
	{
		for (uint64 first = 0; first < n; first += span)
		{
			int64		count = Min(span, (int64) (n - first));

			rows->x = reader->x + first * nf;
			ts_cpu_rows_compute(rows, count);
			consume_cpu_rows(em, reader->keys + first, reader->key_null + first, count, rows->out);
		}
	}
}

/* Byte length and passing of a call's keys (importance keys are never looked at). */
static void
key_typlen(Oid key_type, int16 *key_len, bool *key_byval)
{
	*key_len = sizeof(Datum);
	*key_byval = true;
	if (key_type != InvalidOid)
		get_typlenbyval(key_type, key_len, key_byval);
}

/* A pipelined CPU run's two sets of buffers: rows in and out, and their keys. */
typedef struct TsCpuSlots
{
	TsCpuRows	rows[2];
	float	   *x[2];
	TsKeySlot	keys[2];
	int16		key_len;
	bool		key_byval;
} TsCpuSlots;

/* Allocate both sets; the first reuses the prototype's output buffer. */
static void
cpu_slots_init(TsCpuSlots *s, const TsCpuRows *proto, int64 span, Oid key_type)
{
	Size		row_bytes = sizeof(double) * Max(ts_cpu_rows_width(proto), 1);

	key_typlen(key_type, &s->key_len, &s->key_byval);
	for (int i = 0; i < 2; i++)
	{
		s->rows[i] = *proto;
		s->x[i] = palloc_extended(sizeof(float) * span * Max(proto->model->num_features, 1),
								  MCXT_ALLOC_HUGE);
		s->rows[i].x = s->x[i];
		if (i > 0)
			s->rows[i].out = palloc_extended(row_bytes * span, MCXT_ALLOC_HUGE);
		s->keys[i].keys = palloc(sizeof(Datum) * span);
		s->keys[i].key_null = palloc(sizeof(bool) * span);
		s->keys[i].context = AllocSetContextCreate(CurrentMemoryContext, "treeshap keys",
												   ALLOCSET_DEFAULT_SIZES);
	}
}

/* Fetch the next batch into slot i's input and keep its keys; returns its rows. */
static int64
fetch_into_cpu_slot(TsBatchReader *reader, TsCpuSlots *s, int i)
{
	reader->x_target = s->x[i];
	ts_batch_next(reader);
	keep_keys(reader, &s->keys[i], s->key_len, s->key_byval);
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

/* Read the rows batch by batch and compute on the session's CPU threads; the model stays pinned. */
static void
run_query_cpu(TsEmitter *em, TsCachedModel *cached, const TsSource *src, Oid key_type)
{
	TsBatchReader reader;
	TsCpuRows	rows;
	int64		span = cpu_rows_init(em, &rows);

	open_source(&reader, src, cached->model, key_type);
	if (ts_cpu_rows_can_overlap(&rows))
		run_cpu_overlapped(em, &reader, &rows, span, key_type);
	else
		run_cpu_serial(em, &reader, &rows, span);
	ts_batch_close(&reader);
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

/*
 * The GPU pipeline: while the GPU computes batch k, the backend emits the
 * results of batch k-1 and fetches and converts batch k+1 into the other slot.
 */
static void
run_query_gpu(TsEmitter *em, TsGpuRun **runp, TsCachedModel *cached, const TsSource *src,
			  Oid key_type)
{
	TsBatchReader reader;
	TsKeySlot	ks[2];
	TsPhaseClock clock = {0};
	int16		key_len = sizeof(Datum);
	bool		key_byval = true;	/* keys of importance runs are never looked at */
	int			running = 0;
	int32		running_n;
	int			pending = -1;
	int32		pending_n = 0;
	double	   *pending_phi = NULL;
	int64		rows = 0,
				batches = 0;
	TsGpuRun   *run;

	key_typlen(key_type, &key_len, &key_byval);
	INSTR_TIME_SET_CURRENT(clock.mark);
	open_source(&reader, src, cached->model, key_type);
	reader.batch_rows = gpu_batch_rows(em);
	running_n = start_run(&reader, runp, cached, &em->spec, ks, key_len, key_byval);
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
		next_n = fetch_into_slot(&reader, run, other, &ks[other], key_len, key_byval);
		phase_charge(&clock, &clock.fetch);
		pending_phi = ts_gpu_run_wait(run, running, running_n);
		phase_charge(&clock, &clock.wait);
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

/* Free a call's GPU buffers and unpin its model, after success or ERROR. */
static void
end_call(TsGpuRun *run, TsCachedModel *cached)
{
	if (run != NULL)
		ts_gpu_run_end(run);
	if (cached != NULL)
		ts_model_release(cached);
}

/* Whether a call stays on the CPU whatever the device: interactions of no feature (no work at all). */
static bool
cpu_only(const TsCallOptions *args)
{
	return (args != NULL && args->features != NULL &&
		 ArrayGetNItems(ARR_NDIM(args->features), ARR_DIMS(args->features)) == 0);
}

/* Common body of the set-returning functions; args only for interactions. */
static Datum
explain_common(FunctionCallInfo fcinfo, TsResultKind kind, const TsCallOptions *args)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model_name;
	TsSource	src;
	TsCachedModel *volatile cached = NULL;
	TsGpuRun   *volatile run = NULL;
	TsEmitter	em;
	Oid			key_type;
	bool		use_gpu;

	get_model_and_source(fcinfo, kind, &model_name, &src);
	use_gpu = !cpu_only(args) && ts_device_use_gpu(true);
	InitMaterializedSRF(fcinfo, 0);
	key_type = kind == TS_RESULT_IMPORTANCE ? InvalidOid : TupleDescAttr(rsinfo->setDesc, 0)->atttypid;

	SPI_connect();
	PG_TRY();
	{
		cached = ts_model_acquire(model_name, use_gpu);
		emitter_init(&em, kind, rsinfo, cached, args);
		if (use_gpu)
		{
			run_query_gpu(&em, (TsGpuRun **) &run, cached, &src, key_type);
		}
		else
			run_query_cpu(&em, cached, &src, key_type);
		ts_emit_totals(&em);
	}
	PG_FINALLY();
	{
		end_call(run, cached);
	}
	PG_END_TRY();
	SPI_finish();
	return (Datum) 0;
}

/* treeshap.explain_shap(model, query [, key_type]): one row per (row, output, feature). */
Datum
treeshap_explain_shap(PG_FUNCTION_ARGS)
{
	return explain_common(fcinfo, TS_RESULT_LONG, NULL);
}

/* treeshap.explain_shap_wide(model, query [, key_type]): one row per (row, output). */
Datum
treeshap_explain_shap_wide(PG_FUNCTION_ARGS)
{
	return explain_common(fcinfo, TS_RESULT_WIDE, NULL);
}

/* treeshap.predict(model, query [, key_type]): margin and linked prediction per output. */
Datum
treeshap_predict(PG_FUNCTION_ARGS)
{
	return explain_common(fcinfo, TS_RESULT_PREDICT, NULL);
}

/*
 * treeshap.explain_top_features(model, query [, key_type], k): per (row,
 * output), the k features of largest |SHAP value|, ties to the earlier feature.
 */
Datum
treeshap_explain_top_features(PG_FUNCTION_ARGS)
{
	TsCallOptions args = {NULL, TS_INTERACTION_SHAPLEY, 0};
	int			k_arg = PG_NARGS() - 1;

	if (PG_ARGISNULL(k_arg) || PG_GETARG_INT32(k_arg) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be a positive number of features")));
	args.top_k = PG_GETARG_INT32(k_arg);
	return explain_common(fcinfo, TS_RESULT_TOP, &args);
}

/* The method argument: 'shapley' (XGBoost's pred_interactions) or 'taylor'. */
static TsInteractionMethod
interaction_method(text *arg)
{
	char	   *name = text_to_cstring(arg);

	if (pg_strcasecmp(name, "shapley") == 0)
		return TS_INTERACTION_SHAPLEY;
	if (pg_strcasecmp(name, "taylor") == 0)
		return TS_INTERACTION_TAYLOR;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown interaction method \"%s\"", name),
			 errhint("Use 'shapley' (as XGBoost's pred_interactions) or 'taylor' (Shapley-Taylor).")));
	pg_unreachable();
}

/*
 * treeshap.explain_interactions(model, query [, key_type], features, method):
 * one row per (row, output, feature_a, feature_b) with feature_a selected.
 */
Datum
treeshap_explain_interactions(PG_FUNCTION_ARGS)
{
	int			first = PG_NARGS() - 2;	/* features, then method; key_type before them */
	TsCallOptions args = {NULL, TS_INTERACTION_SHAPLEY, 0};

	args.features = PG_ARGISNULL(first) ? NULL : PG_GETARG_ARRAYTYPE_P(first);
	if (PG_ARGISNULL(first + 1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("method must not be null")));
	args.method = interaction_method(PG_GETARG_TEXT_PP(first + 1));
	return explain_common(fcinfo, TS_RESULT_INTERACTIONS, &args);
}

/* treeshap.feature_importance(model, query): mean |SHAP| and mean SHAP per (output, feature). */
Datum
treeshap_feature_importance(PG_FUNCTION_ARGS)
{
	return explain_common(fcinfo, TS_RESULT_IMPORTANCE, NULL);
}

/*
 * treeshap.feature_importance(model, query, segment_type): the same per
 * segment, the value of the query's first column (of segment_type), as
 * GROUP BY that column over explain_shap would give.
 */
Datum
treeshap_feature_importance_segments(PG_FUNCTION_ARGS)
{
	return explain_common(fcinfo, TS_RESULT_SEGMENTS, NULL);
}

/* Feature array argument as float32 features; NULL elements are missing. */
static float *
features_from_array(ArrayType *arr, const TsModel *model)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	float	   *x;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array")));
	deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
	if (n != model->num_features)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("features has %d elements, but the model has %d features", n,
						model->num_features)));
	x = palloc(sizeof(float) * n);
	for (int i = 0; i < n; i++)
		x[i] = nulls[i] ? NAN : ts_feature_value(DatumGetFloat8(elems[i]));
	ts_model_prepare_row(model, x);
	return x;
}

/* pred_contribs layout: 1-D (features+1) for one output, else outputs x (features+1). */
static ArrayType *
contribs_array(const double *phi, int32 num_outputs, int32 num_features)
{
	int			width = num_features + 1;
	int			total = num_outputs * width;
	Datum	   *elems = palloc(sizeof(Datum) * total);
	int			dims[2] = {num_outputs, width};
	int			lbs[2] = {1, 1};

	for (int i = 0; i < total; i++)
		elems[i] = Float8GetDatum(phi[i]);
	if (num_outputs == 1)
		return construct_array(elems, width, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	return construct_md_array(elems, NULL, 2, dims, lbs, FLOAT8OID, 8, FLOAT8PASSBYVAL,
							  TYPALIGN_DOUBLE);
}

/* One row's contributions on the GPU (used when treeshap.device = gpu). */
static double *
shap_row_gpu(TsCachedModel *cached, const float *x, TsGpuRun **run)
{
	*run = ts_gpu_run_start(cached, 1, NULL);
	memcpy(ts_gpu_run_input(*run, 0), x, sizeof(float) * cached->model->num_features);
	ts_gpu_run_submit(*run, 0, 1);
	return ts_gpu_run_wait(*run, 0, 1);
}

/*
 * treeshap.shap_values(model, features float8[]): one row's contributions.
 * One row is quicker on the CPU, so auto stays there; gpu forces the GPU.
 */
Datum
treeshap_shap_values(PG_FUNCTION_ARGS)
{
	char	   *model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	TsCachedModel *volatile cached = NULL;
	TsGpuRun   *volatile run = NULL;
	ArrayType  *result = NULL;
	bool		use_gpu = ts_device_use_gpu(false);

	SPI_connect();
	PG_TRY();
	{
		const TsModel *m;
		float	   *x;
		double	   *phi;

		cached = ts_model_acquire(model_name, use_gpu);
		m = cached->model;
		x = features_from_array(arr, m);
		if (use_gpu)
			phi = shap_row_gpu(cached, x, (TsGpuRun **) &run);
		else
		{
			phi = palloc(sizeof(double) * (size_t) m->num_outputs * (m->num_features + 1));
			ts_cpu_shap_row(cached->paths, ts_cpu_algorithm(), x, phi,
							palloc(sizeof(double) * ts_cpu_scratch_len(cached->paths)));
		}
		result = contribs_array(phi, m->num_outputs, m->num_features);
		/* copy out of SPI's memory before SPI_finish frees it */
		result = (ArrayType *) DatumGetPointer(SPI_datumTransfer(PointerGetDatum(result), false, -1));
	}
	PG_FINALLY();
	{
		end_call(run, cached);
	}
	PG_END_TRY();
	SPI_finish();
	PG_RETURN_ARRAYTYPE_P(result);
}
