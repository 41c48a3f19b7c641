/*
 * ts_emit_top.c - result rows of explain_top_features and
 * explain_top_features_wide from top-k records (core/ts_topk.h: margin,
 * base value, k values by rank, their feature indices), selected on the
 * GPU or on the CPU threads before they get here.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "utils/array.h"

#include "backend/ts_emit.h"
#include "core/ts_topk.h"
#include "service/ts_pg_compat.h"

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
		{
			TupleDescAttr(plain, i)->attstorage = TYPSTORAGE_PLAIN;
			ts_tupdesc_column_changed(plain, i);
		}
	return plain;
}

/*
 * What the wide rows of a call reuse: the two arrays, allocated once and
 * rewritten for each row, and each feature name as the array stores it
 * (its 4-byte header, zeros to int alignment, as construct_array() stores
 * text), copied a word at a time. Where the key is fixed-width by value,
 * each row is also written into one reused minimal tuple (the prefix's
 * columns in place, then the two arrays at their alignments) that the
 * tuplestore copies, where tuplestore_putvalues() would size, zero and
 * fill a new tuple per row; the layout is checked once, against the tuple
 * PostgreSQL forms of the call's first row.
 */
typedef struct TsTopWide
{
	ArrayType  *features;		/* features[]: room for the k longest names at most */
	ArrayType  *values;			/* shap_values[]: k doubles */
	TupleDesc	desc;			/* the result's columns, arrays stored plain */
	uint32	  **name_words;		/* per feature: its name as stored, in words */
	int32	   *name_count;		/* and how many words */
	MinimalTuple tuple;			/* the reused row, NULL when rows are formed one by one */
	char	   *data;			/* its column bytes */
	int			offsets[4];		/* key, output, prediction, base_value */
	int			features_at;	/* features[], from data; shap_values[] follows it */
	bool		checked;		/* the layout was compared with PostgreSQL's */
	TupleTableSlot *slot;		/* hands the tuple to the tuplestore */
} TsTopWide;

/* Room for a row's tuple: header, prefix, the two arrays at their largest, alignment. */
static void
top_wide_tuple_create(TsTopWide *w)
{
	Form_pg_attribute key = TupleDescAttr(w->desc, 0);
	Size		room;

	w->tuple = NULL;
	if (!key->attbyval || key->attlen <= 0)
		return;
	w->features_at = att_align_nominal(ts_fixed_offsets(w->desc, 4, w->offsets),
									   TupleDescAttr(w->desc, 4)->attalign);
	room = MAXALIGN(SizeofMinimalTupleHeader) + w->features_at + VARSIZE(w->features) +
		MAXIMUM_ALIGNOF + VARSIZE(w->values);
	w->tuple = palloc0(room);
	w->slot = MakeSingleTupleTableSlot(w->desc, &TTSOpsMinimalTuple);
	w->checked = false;
}

/* The reused arrays, names and tuple of a call's wide rows. */
static TsTopWide *
top_wide_create(TsEmitter *em)
{
	TsTopWide  *w = palloc(sizeof(TsTopWide));
	int32		nf = em->model->num_features;
	Size		names = 0;

	w->name_words = palloc(sizeof(uint32 *) * Max(nf, 1));
	w->name_count = palloc(sizeof(int32) * Max(nf, 1));
	for (int32 j = 0; j < nf; j++)
	{
		const char *name = DatumGetPointer(em->feature_text[j]);
		Size		len = INTALIGN(VARSIZE(name));

		w->name_words[j] = palloc0(len);
		memcpy(w->name_words[j], name, VARSIZE(name));
		w->name_count[j] = len / sizeof(uint32);
		names += len;
	}
	w->features = ts_array_shell(TEXTOID, em->top_k, ARR_OVERHEAD_NONULLS(1) + names);
	w->values = ts_array_shell(FLOAT8OID, em->top_k,
							ARR_OVERHEAD_NONULLS(1) + sizeof(double) * (Size) em->top_k);
	w->desc = plain_arrays_desc(em->desc);
	top_wide_tuple_create(w);
	return w;
}

/* Write a record's feature names into features[] and set its size to what they take. */
static void
fill_top_features(TsTopWide *w, int32 k, const double *indices)
{
	uint32	   *p = (uint32 *) ARR_DATA_PTR(w->features);

	for (int32 r = 0; r < k; r++)
	{
		int32		j = (int32) indices[r];

		for (int32 i = 0; i < w->name_count[j]; i++)
			*p++ = w->name_words[j][i];
	}
	SET_VARSIZE(w->features, (char *) p - (char *) w->features);
}

/* Write a row into the reused tuple: the prefix in place, the arrays after it, padding zeroed. */
static void
write_top_tuple(TsTopWide *w, const Datum *values)
{
	Size		at = w->features_at + VARSIZE(w->features);
	Size		values_at = att_align_nominal(at, TupleDescAttr(w->desc, 5)->attalign);

	for (int i = 0; i < 4; i++)
		store_att_byval(w->data + w->offsets[i], values[i], TupleDescAttr(w->desc, i)->attlen);
	memcpy(w->data + w->features_at, w->features, VARSIZE(w->features));
	memset(w->data + at, 0, values_at - at);
	memcpy(w->data + values_at, w->values, VARSIZE(w->values));
	w->tuple->t_len = (w->data - (char *) w->tuple) + values_at + VARSIZE(w->values);
}

/*
 * Take the reused tuple's header from the tuple PostgreSQL forms of the
 * first row, and keep the tuple only if writing that row in place gives
 * the same bytes.
 */
static void
check_top_tuple(TsTopWide *w, const Datum *values, const bool *nulls)
{
	MinimalTuple formed = ts_form_minimal_tuple(w->desc, (Datum *) values, (bool *) nulls);
	Size		header = formed->t_hoff - MINIMAL_TUPLE_OFFSET;

	w->checked = true;
	memcpy(w->tuple, formed, header);
	w->data = (char *) w->tuple + header;
	write_top_tuple(w, values);
	if (formed->t_len != w->tuple->t_len || memcmp(formed, w->tuple, formed->t_len) != 0)
		w->tuple = NULL;
	pfree(formed);
}

/* Add a row: through the reused tuple where the key allows, else formed by PostgreSQL. */
static void
put_top_wide(TsEmitter *em, TsTopWide *w, const Datum *values, const bool *nulls)
{
	if (w->tuple != NULL && !nulls[0])
	{
		if (!w->checked)
			check_top_tuple(w, values, nulls);
		if (w->tuple != NULL)
		{
			write_top_tuple(w, values);
			ExecStoreMinimalTuple(w->tuple, w->slot, false);
			tuplestore_puttupleslot(em->store, w->slot);
			return;
		}
	}
	tuplestore_putvalues(em->store, w->desc, (Datum *) values, (bool *) nulls);
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

	if (em->top_wide == NULL)
		em->top_wide = top_wide_create(em);
	values[0] = key;
	values[4] = PointerGetDatum(em->top_wide->features);
	values[5] = PointerGetDatum(em->top_wide->values);
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		const double *rec = top + k * width;

		values[1] = Int32GetDatum(k);
		values[2] = Float8GetDatum(prediction[k]);
		values[3] = Float8GetDatum(rec[1]);
		fill_top_features(em->top_wide, em->top_k, rec + 2 + em->top_k);
		memcpy(ARR_DATA_PTR(em->top_wide->values), rec + 2, sizeof(double) * em->top_k);
		put_top_wide(em, em->top_wide, values, nulls);
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
