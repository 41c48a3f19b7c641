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
#include "backend/ts_gpu_pg.h"
#include "backend/ts_groups.h"
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

typedef enum TsResultKind
{
	TS_RESULT_LONG,				/* (key, output, feature, shap_value) */
	TS_RESULT_WIDE,				/* (key, output, base_value, shap_values[]) */
	TS_RESULT_PREDICT,			/* (key, output, margin, prediction) */
	TS_RESULT_INTERACTIONS,		/* (key, output, feature_a, feature_b, interaction) */
	TS_RESULT_IMPORTANCE,		/* (output, feature, mean_abs_shap, mean_shap, rows), at the end */
	TS_RESULT_SEGMENTS,			/* the same per segment (the query's first column), at the end */
	TS_RESULT_TOP				/* (key, output, prediction, base_value, rank, feature, shap_value) */
} TsResultKind;

/*
 * GPU interaction batches are capped so that one result buffer stays within
 * this many bytes, whatever the number of features (a row of a 784-feature,
 * 10-class model's full matrix is 49 MB).
 */
#define TS_INTERACTION_BUFFER_BYTES ((Size) 256 * 1024 * 1024)

/* State shared by the emitters of one call. */
typedef struct TsEmitter
{
	TsResultKind kind;
	Tuplestorestate *store;
	TupleDesc	desc;
	const TsModel *model;
	const TsPathTable *paths;
	Datum	   *feature_text;	/* feature names as text, for the long forms */
	TsShapAlgorithm algorithm;	/* CPU SHAP algorithm (treeshap.algorithm) */
	TsRunSpec	spec;			/* what the GPU computes, and the interaction options */
	double	   *sums;			/* importance: sums of |phi| and of phi per (output, feature) */
	TsGroups   *groups;			/* segmented importance: those sums per segment */
	int32		top_k;			/* top features: k, at most the model's features */
	double	   *margins;		/* top features, predict: a row's margins, then its predictions */
	int64		rows;			/* importance: rows seen */
} TsEmitter;

/* The first two arguments as C strings; NULL is an error, not an empty set. */
static void
get_model_and_query(FunctionCallInfo fcinfo, char **model, char **query)
{
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model name and query must not be null")));
	*model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	*query = text_to_cstring(PG_GETARG_TEXT_PP(1));
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

/* Emit (key, output, margin, prediction) rows of one input row from its margins and predictions. */
static void
emit_prediction(TsEmitter *em, Datum key, bool key_null, const double *margin)
{
	const TsModel *m = em->model;
	const double *link = margin + m->num_outputs;
	Datum		values[4];
	bool		nulls[4] = {key_null, false, false, false};

	values[0] = key;
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		values[1] = Int32GetDatum(k);
		values[2] = Float8GetDatum(margin[k]);
		values[3] = Float8GetDatum(link[k]);
		tuplestore_putvalues(em->store, em->desc, values, nulls);
	}
}

/*
 * A one-dimensional float8[] built straight from doubles: the same bytes
 * construct_array() makes, without a Datum per element (wide results of
 * models with many features spend most of their time here).
 */
static ArrayType *
float8_array(const double *values, int32 n)
{
	Size		nbytes = ARR_OVERHEAD_NONULLS(1) + sizeof(double) * (Size) n;
	ArrayType  *a;

	if (n == 0)
		return construct_empty_array(FLOAT8OID);
	a = palloc0(nbytes);
	SET_VARSIZE(a, nbytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = FLOAT8OID;
	ARR_DIMS(a)[0] = n;
	ARR_LBOUND(a)[0] = 1;
	memcpy(ARR_DATA_PTR(a), values, sizeof(double) * (Size) n);
	return a;
}

/* Emit the result rows of one input row from its contributions (outputs x (features + 1)). */
static void
emit_contribs(TsEmitter *em, Datum key, bool key_null, const double *row_phi)
{
	const TsModel *m = em->model;
	int32		nf = m->num_features;
	Datum		values[4];
	bool		nulls[4] = {key_null, false, false, false};

	values[0] = key;
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		const double *phi = row_phi + (size_t) k * (nf + 1);

		values[1] = Int32GetDatum(k);
		if (em->kind == TS_RESULT_WIDE)
		{
			values[2] = Float8GetDatum(phi[nf]);
			values[3] = PointerGetDatum(float8_array(phi, nf));
			tuplestore_putvalues(em->store, em->desc, values, nulls);
			pfree(DatumGetPointer(values[3]));
			continue;
		}
		for (int32 j = 0; j < nf; j++)
		{
			values[2] = em->feature_text[j];
			values[3] = Float8GetDatum(phi[j]);
			tuplestore_putvalues(em->store, em->desc, values, nulls);
		}
	}
}

/*
 * Emit one input row's interaction matrix rows: per output and selected
 * feature a, the diagonal and every nonzero (a, b); a zero off-diagonal
 * entry (a pair on no common path the row can reach) is left out.
 */
static void
emit_interactions(TsEmitter *em, Datum key, bool key_null, const double *out)
{
	const TsFeatureSelection *sel = em->spec.selection;
	int32		nf = em->model->num_features;
	Datum		values[5];
	bool		nulls[5] = {key_null, false, false, false, false};

	values[0] = key;
	for (int32 k = 0; k < em->model->num_outputs; k++)
	{
		values[1] = Int32GetDatum(k);
		for (int32 s = 0; s < sel->count; s++)
		{
			int32		a = sel->features[s];
			const double *r = out + ((size_t) k * sel->count + s) * nf;

			values[2] = em->feature_text[a];
			for (int32 b = 0; b < nf; b++)
			{
				if (b != a && r[b] == 0.0)
					continue;
				values[3] = em->feature_text[b];
				values[4] = Float8GetDatum(r[b]);
				tuplestore_putvalues(em->store, em->desc, values, nulls);
			}
		}
	}
}

/*
 * Emit one input row's top features (outputs x ts_topk_width records): per
 * output, k rows by rank, each with the row's prediction for that output
 * (the link of its margin, across outputs for softmax).
 */
static void
emit_top_features(TsEmitter *em, Datum key, bool key_null, const double *top)
{
	const TsModel *m = em->model;
	size_t		width = ts_topk_width(em->top_k);
	double	   *prediction = em->margins + m->num_outputs;
	Datum		values[7];
	bool		nulls[7] = {key_null, false, false, false, false, false, false};

	for (int32 k = 0; k < m->num_outputs; k++)
		em->margins[k] = top[k * width];
	ts_model_link(m, em->margins, prediction);
	values[0] = key;
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		const double *rec = top + k * width;

		values[1] = Int32GetDatum(k);
		values[2] = Float8GetDatum(prediction[k]);
		values[3] = Float8GetDatum(rec[1]);
		for (int32 r = 0; r < em->top_k; r++)
		{
			values[4] = Int32GetDatum(r + 1);
			values[5] = em->feature_text[(int32) rec[2 + em->top_k + r]];
			values[6] = Float8GetDatum(rec[2 + r]);
			tuplestore_putvalues(em->store, em->desc, values, nulls);
		}
	}
}

/* Emit the importance rows: means over the rows seen (NULL when there were none). */
static void
emit_importance(TsEmitter *em)
{
	const TsModel *m = em->model;
	size_t		columns = (size_t) m->num_outputs * m->num_features;
	Datum		values[5];
	bool		nulls[5] = {false, false, em->rows == 0, em->rows == 0, false};

	values[4] = Int64GetDatum(em->rows);
	for (int32 k = 0; k < m->num_outputs; k++)
		for (int32 j = 0; j < m->num_features; j++)
		{
			size_t		c = (size_t) k * m->num_features + j;

			values[0] = Int32GetDatum(k);
			values[1] = em->feature_text[j];
			values[2] = Float8GetDatum(em->rows > 0 ? em->sums[c] / em->rows : 0.0);
			values[3] = Float8GetDatum(em->rows > 0 ? em->sums[columns + c] / em->rows : 0.0);
			tuplestore_putvalues(em->store, em->desc, values, nulls);
		}
}

/* Emit the importance rows of every segment, in order of first appearance. */
static void
emit_segments(TsEmitter *em)
{
	const TsModel *m = em->model;
	size_t		columns = (size_t) m->num_outputs * m->num_features;
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};

	for (int i = 0; i < ts_groups_count(em->groups); i++)
	{
		int64		rows;
		const double *sums = ts_groups_get(em->groups, i, &values[0], &nulls[0], &rows);

		values[5] = Int64GetDatum(rows);
		for (int32 k = 0; k < m->num_outputs; k++)
			for (int32 j = 0; j < m->num_features; j++)
			{
				size_t		c = (size_t) k * m->num_features + j;

				values[1] = Int32GetDatum(k);
				values[2] = em->feature_text[j];
				values[3] = Float8GetDatum(sums[c] / rows);
				values[4] = Float8GetDatum(sums[columns + c] / rows);
				tuplestore_putvalues(em->store, em->desc, values, nulls);
			}
	}
}

/* Add one row's contributions to its segment's sums. */
static void
add_to_segment(TsEmitter *em, Datum segment, bool isnull, const double *row_phi)
{
	int64	   *rows;
	double	   *sums = ts_groups_find(em->groups, segment, isnull, &rows);

	ts_importance_add_rows(row_phi, 1, em->model->num_outputs, em->model->num_features, sums);
	(*rows)++;
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

/* Emit (or, for importance, add up) one finished batch. */
static void
consume_batch(TsEmitter *em, const TsKeySlot *ks, int32 n, const double *result)
{
	const TsModel *m = em->model;
	size_t		columns = (size_t) m->num_outputs * m->num_features;

	if (em->kind == TS_RESULT_IMPORTANCE)
	{
		for (size_t c = 0; c < 2 * columns; c++)
			em->sums[c] += result[c];
		em->rows += n;
		return;
	}
	for (int32 i = 0; i < n; i++)
	{
		if (em->kind == TS_RESULT_PREDICT)
		{
			memcpy(em->margins, result + (size_t) i * m->num_outputs, sizeof(double) * m->num_outputs);
			ts_model_link(m, em->margins, em->margins + m->num_outputs);
			emit_prediction(em, ks->keys[i], ks->key_null[i], em->margins);
		}
		else if (em->kind == TS_RESULT_INTERACTIONS)
			emit_interactions(em, ks->keys[i], ks->key_null[i],
							  result + i * columns * em->spec.selection->count);
		else if (em->kind == TS_RESULT_TOP)
			emit_top_features(em, ks->keys[i], ks->key_null[i],
							  result + i * m->num_outputs * ts_topk_width(em->top_k));
		else if (em->kind == TS_RESULT_SEGMENTS)
			add_to_segment(em, ks->keys[i], ks->key_null[i], result + i * (columns + m->num_outputs));
		else
			emit_contribs(em, ks->keys[i], ks->key_null[i],
						  result + i * (columns + m->num_outputs));
	}
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

/* Emit (or add up) the results of count rows of the reader's batch from first on. */
static void
consume_cpu_rows(TsEmitter *em, const TsBatchReader *reader, uint64 first, int64 count,
				 const double *out)
{
	const TsModel *m = em->model;
	TsKeySlot	ks = {reader->keys + first, reader->key_null + first, NULL};

	if (em->kind == TS_RESULT_IMPORTANCE)
	{
		ts_importance_add_rows(out, count, m->num_outputs, m->num_features, em->sums);
		em->rows += count;
	}
	else if (em->kind == TS_RESULT_PREDICT)
	{
		for (int64 i = 0; i < count; i++)
			emit_prediction(em, ks.keys[i], ks.key_null[i], out + i * 2 * (Size) m->num_outputs);
	}
	else if (em->kind == TS_RESULT_TOP)
	{
		for (int64 i = 0; i < count; i++)
			emit_top_features(em, ks.keys[i], ks.key_null[i],
							  out + i * m->num_outputs * ts_topk_width(em->top_k));
	}
	else
		consume_batch(em, &ks, (int32) count, out);
}

/* Read the query batch by batch and compute on the session's CPU threads; the model stays pinned. */
static void
run_query_cpu(TsEmitter *em, TsCachedModel *cached, const char *query, Oid key_type)
{
	TsBatchReader reader;
	TsCpuRows	rows;
	int64		span = cpu_rows_init(em, &rows);
	Size		nf = cached->model->num_features;
	uint64		n;

	ts_batch_open(&reader, query, cached->model, key_type);
	while ((n = ts_batch_next(&reader)) > 0)
	{
		for (uint64 first = 0; first < n; first += span)
		{
			int64		count = Min(span, (int64) (n - first));

			rows.x = reader.x + first * nf;
			ts_cpu_rows_compute(&rows, count);
			consume_cpu_rows(em, &reader, first, count, rows.out);
		}
	}
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
run_query_gpu(TsEmitter *em, TsGpuRun **runp, TsCachedModel *cached, const char *query,
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

	if (key_type != InvalidOid)
		get_typlenbyval(key_type, &key_len, &key_byval);
	INSTR_TIME_SET_CURRENT(clock.mark);
	ts_batch_open(&reader, query, cached->model, key_type);
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
			consume_batch(em, &ks[pending], pending_n, pending_phi);
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
		consume_batch(em, &ks[pending], pending_n, pending_phi);
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
	char	   *query;
	TsCachedModel *volatile cached = NULL;
	TsGpuRun   *volatile run = NULL;
	TsEmitter	em;
	Oid			key_type;
	bool		use_gpu;

	get_model_and_query(fcinfo, &model_name, &query);
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
			run_query_gpu(&em, (TsGpuRun **) &run, cached, query, key_type);
		}
		else
			run_query_cpu(&em, cached, query, key_type);
		if (kind == TS_RESULT_IMPORTANCE)
			emit_importance(&em);
		else if (kind == TS_RESULT_SEGMENTS)
			emit_segments(&em);
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
