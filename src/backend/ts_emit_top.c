/*
 * ts_emit_top.c - result rows of explain_top_features and
 * explain_top_features_wide from top-k records (core/ts_topk.h: margin,
 * base value, k values by rank, their feature indices), selected on the
 * GPU or on the CPU threads before they get here.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"

#include "backend/ts_emit.h"
#include "core/ts_topk.h"

/*
 * A row's predictions from its records' margins: the model's link, across
 * outputs for softmax (values explaining the linked output already sum to it).
 */
static const double *
record_predictions(TsEmitter *em, const double *top)
{
	const TsModel *m = em->model;
	size_t		width = ts_topk_width(em->top_k);
	double	   *prediction = em->margins + m->num_outputs;

	for (int32 k = 0; k < m->num_outputs; k++)
		em->margins[k] = top[k * width];
	if (em->probability)
		memcpy(prediction, em->margins, sizeof(double) * m->num_outputs);
	else
		ts_model_link(m, em->margins, prediction);
	return prediction;
}

/* Emit k rows per output, by rank: (key, output, prediction, base_value, rank, feature, shap_value). */
static void
emit_top_long(TsEmitter *em, Datum key, bool key_null, const double *top)
{
	const TsModel *m = em->model;
	size_t		width = ts_topk_width(em->top_k);
	const double *prediction = record_predictions(em, top);
	Datum		values[7];
	bool		nulls[7] = {key_null, false, false, false, false, false, false};

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

/* An empty one-dimensional array of n elements of type elemtype in nbytes (zeroed): its header only. */
static ArrayType *
array_shell(Oid elemtype, int32 n, Size nbytes)
{
	ArrayType  *a = palloc0(nbytes);

	SET_VARSIZE(a, nbytes);
	a->ndim = 1;
	a->dataoffset = 0;
	a->elemtype = elemtype;
	ARR_DIMS(a)[0] = n;
	ARR_LBOUND(a)[0] = 1;
	return a;
}

/*
 * The result's columns with its arrays stored plain: arrays of a few
 * elements would otherwise be packed with 1-byte headers (as tables pack
 * them), which every reader of the row (cardinality(), a subscript, the
 * output function) first copies out again to read; plain, they are read
 * where they lie. Readers take either form (att_align_pointer), so the
 * columns' own descriptor reads these rows as it reads any.
 */
static TupleDesc
plain_arrays_desc(TupleDesc desc)
{
	TupleDesc	plain = CreateTupleDescCopy(desc);

	for (int i = 0; i < plain->natts; i++)
		if (TupleDescAttr(plain, i)->attlen == -1)
			TupleDescAttr(plain, i)->attstorage = TYPSTORAGE_PLAIN;
	return plain;
}

/*
 * The two arrays a wide row is made of, allocated once per call and
 * rewritten for each row (tuplestore_putvalues copies them): features[]
 * sized for the k longest names at most (every name's bytes bound that),
 * shap_values[] of k doubles.
 */
static void
top_arrays_init(TsEmitter *em)
{
	Size		names = 0;

	for (int32 j = 0; j < em->model->num_features; j++)
		names += INTALIGN(VARSIZE(DatumGetPointer(em->feature_text[j])));
	em->top_features = array_shell(TEXTOID, em->top_k, ARR_OVERHEAD_NONULLS(1) + names);
	em->top_values = array_shell(FLOAT8OID, em->top_k,
								 ARR_OVERHEAD_NONULLS(1) + sizeof(double) * (Size) em->top_k);
	em->top_desc = plain_arrays_desc(em->desc);
}

/*
 * Write a record's feature names into features[], each with its 4-byte
 * header and padded with zeros to int alignment as construct_array()
 * stores text elements, and set the array's size to what they take.
 */
static void
fill_top_features(TsEmitter *em, const double *indices)
{
	char	   *p = ARR_DATA_PTR(em->top_features);

	for (int32 r = 0; r < em->top_k; r++)
	{
		const char *name = DatumGetPointer(em->feature_text[(int32) indices[r]]);
		Size		len = VARSIZE(name);

		memcpy(p, name, len);
		memset(p + len, 0, INTALIGN(len) - len);
		p += INTALIGN(len);
	}
	SET_VARSIZE(em->top_features, p - (char *) em->top_features);
}

/* Emit one row per output: (key, output, prediction, base_value, features[], shap_values[]). */
static void
emit_top_wide(TsEmitter *em, Datum key, bool key_null, const double *top)
{
	const TsModel *m = em->model;
	size_t		width = ts_topk_width(em->top_k);
	const double *prediction = record_predictions(em, top);
	Datum		values[6];
	bool		nulls[6] = {key_null, false, false, false, false, false};

	if (em->top_features == NULL)
		top_arrays_init(em);
	values[0] = key;
	values[4] = PointerGetDatum(em->top_features);
	values[5] = PointerGetDatum(em->top_values);
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		const double *rec = top + k * width;

		values[1] = Int32GetDatum(k);
		values[2] = Float8GetDatum(prediction[k]);
		values[3] = Float8GetDatum(rec[1]);
		fill_top_features(em, rec + 2 + em->top_k);
		memcpy(ARR_DATA_PTR(em->top_values), rec + 2, sizeof(double) * em->top_k);
		tuplestore_putvalues(em->store, em->top_desc, values, nulls);
	}
}

void
ts_emit_top_records(TsEmitter *em, Datum key, bool key_null, const double *top)
{
	if (em->kind == TS_RESULT_TOP_WIDE)
		emit_top_wide(em, key, key_null, top);
	else
		emit_top_long(em, key, key_null, top);
}
