/*
 * ts_emit.c - result rows of the explain and predict functions
 * (ts_emit.h), one tuplestore row at a time.
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
 * A result tuple reused row after row, for results whose columns are all
 * fixed-width values passed by value (predictions keyed by integers): the
 * minimal tuple is formed once, and each row's values are written in place
 * before the tuplestore copies it, where tuplestore_putvalues() would size,
 * zero and fill a new tuple per row.
 */
struct TsTupleTemplate
{
	MinimalTuple tuple;
	char	   *data;			/* the tuple's column bytes */
	TupleTableSlot *slot;		/* hands the tuple to the tuplestore */
	int			offsets[TS_TEMPLATE_MAX_COLUMNS];
	char	   *elements;		/* wide rows: the float8[] column's elements, in the tuple */
	int32		num_elements;
};

/* Where heap_fill_tuple puts desc's first n columns, all fixed-width; returns their end. */
int
ts_fixed_offsets(TupleDesc desc, int n, int *offsets)
{
	int			offset = 0;

	for (int i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		offset = att_align_nominal(offset, att->attalign);
		offsets[i] = offset;
		offset += att->attlen;
	}
	return offset;
}

/* A template for desc's rows, or NULL when a column is not fixed-width by value. */
static TsTupleTemplate *
template_create(TupleDesc desc)
{
	TsTupleTemplate *t;
	Datum		values[TS_TEMPLATE_MAX_COLUMNS] = {0};
	bool		nulls[TS_TEMPLATE_MAX_COLUMNS] = {0};

	if (desc->natts > TS_TEMPLATE_MAX_COLUMNS)
		return NULL;
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attbyval || TupleDescAttr(desc, i)->attlen <= 0)
			return NULL;
	t = palloc0(sizeof(TsTupleTemplate));
	t->tuple = ts_form_minimal_tuple(desc, values, nulls);
	t->data = (char *) t->tuple + t->tuple->t_hoff - MINIMAL_TUPLE_OFFSET;
	ts_fixed_offsets(desc, desc->natts, t->offsets);
	t->slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	return t;
}

/* Add a row of no NULLs through the template. */
static void
template_put(TsTupleTemplate *t, Tuplestorestate *store, TupleDesc desc, const Datum *values)
{
	for (int i = 0; i < desc->natts; i++)
		store_att_byval(t->data + t->offsets[i], values[i], TupleDescAttr(desc, i)->attlen);
	ExecStoreMinimalTuple(t->tuple, t->slot, false);
	tuplestore_puttupleslot(store, t->slot);
}

/* Emit (key, output, margin, prediction) rows of one input row from its margins and predictions. */
void
ts_emit_prediction(TsEmitter *em, Datum key, bool key_null, const double *margin)
{
	const TsModel *m = em->model;
	const double *link = margin + m->num_outputs;
	Datum		values[4];
	bool		nulls[4] = {key_null, false, false, false};

	if (!em->template_tried)
	{
		em->template = template_create(em->desc);
		em->template_tried = true;
	}
	values[0] = key;
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		values[1] = Int32GetDatum(k);
		values[2] = Float8GetDatum(margin[k]);
		values[3] = Float8GetDatum(link[k]);
		if (em->template != NULL && !key_null)
			template_put(em->template, em->store, em->desc, values);
		else
			tuplestore_putvalues(em->store, em->desc, values, nulls);
	}
}

/*
 * A template for wide rows (key, output, base_value, shap_values) whose key
 * is fixed-width by value: the array of n doubles has the same size in
 * every row, so the tuple's layout is fixed and each row writes the key,
 * output, base value and elements in place. The layout is found by
 * reading a tuple PostgreSQL formed, and checked by reading back a row
 * written through it; NULL when the columns or the check disagree.
 */
static TsTupleTemplate *
wide_template_create(TupleDesc desc, int32 n)
{
	TsTupleTemplate *t;
	Datum		values[4] = {0};
	bool		nulls[4] = {0};
	double	   *probe;
	bool		ok;
	char	   *array;

	if (desc->natts != 4 || n < 1 || TupleDescAttr(desc, 3)->atttypid != FLOAT8ARRAYOID)
		return NULL;
	for (int i = 0; i < 3; i++)
		if (!TupleDescAttr(desc, i)->attbyval || TupleDescAttr(desc, i)->attlen <= 0)
			return NULL;
	probe = palloc(sizeof(double) * n);
	for (int32 j = 0; j < n; j++)
		probe[j] = j + 0.5;
	t = palloc0(sizeof(TsTupleTemplate));
	values[3] = PointerGetDatum(ts_float8_array(probe, n));
	t->tuple = ts_form_minimal_tuple(desc, values, nulls);
	t->data = (char *) t->tuple + t->tuple->t_hoff - MINIMAL_TUPLE_OFFSET;
	ts_fixed_offsets(desc, 3, t->offsets);
	t->slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	/* where the elements lie: after the array's header, short (1 byte) or not (4) */
	ExecStoreMinimalTuple(t->tuple, t->slot, false);
	slot_getallattrs(t->slot);
	array = DatumGetPointer(t->slot->tts_values[3]);
	t->elements = VARDATA_ANY(array) + ARR_OVERHEAD_NONULLS(1) - VARHDRSZ;
	t->num_elements = n;
	ok = t->elements > t->data && memcmp(t->elements, probe, sizeof(double) * n) == 0 &&
		t->elements + sizeof(double) * n <= (char *) t->tuple + t->tuple->t_len;
	pfree(probe);
	pfree(DatumGetPointer(values[3]));
	if (!ok)
		return NULL;
	return t;
}

/* Add a wide row through its template: key, output, base value, elements written in place. */
static void
wide_put(TsTupleTemplate *t, Tuplestorestate *store, TupleDesc desc, const Datum *values,
		 const double *elements)
{
	for (int i = 0; i < 3; i++)
		store_att_byval(t->data + t->offsets[i], values[i], TupleDescAttr(desc, i)->attlen);
	memcpy(t->elements, elements, sizeof(double) * t->num_elements);
	ExecStoreMinimalTuple(t->tuple, t->slot, false);
	tuplestore_puttupleslot(store, t->slot);
}

/* Emit the result rows of one input row from its contributions (outputs x (features + 1)). */
static void
emit_contribs(TsEmitter *em, Datum key, bool key_null, const double *row_phi)
{
	const TsModel *m = em->model;
	int32		nf = m->num_features;
	Datum		values[4];
	bool		nulls[4] = {key_null, false, false, false};

	if (em->kind == TS_RESULT_WIDE && !em->template_tried && em->writer == NULL)
	{
		em->template = wide_template_create(em->desc, nf);
		em->template_tried = true;
	}
	values[0] = key;
	for (int32 k = 0; k < m->num_outputs; k++)
	{
		const double *phi = row_phi + (size_t) k * (nf + 1);

		values[1] = Int32GetDatum(k);
		if (em->writer != NULL)
		{
			ts_bulk_put(em->writer, key, key_null, k, phi[nf], phi, nf);
			continue;
		}
		if (em->kind == TS_RESULT_WIDE)
		{
			values[2] = Float8GetDatum(phi[nf]);
			if (em->template != NULL && !key_null)
			{
				wide_put(em->template, em->store, em->desc, values, phi);
				continue;
			}
			values[3] = PointerGetDatum(ts_float8_array(phi, nf));
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
 * Emit (output, feature, mean |SHAP|, mean SHAP) from column first on, one
 * row per (output, feature), from sums over rows rows (the means NULL when
 * there were none); values and nulls hold the caller's other columns.
 */
static void
emit_means(TsEmitter *em, const double *sums, int64 rows, Datum *values, bool *nulls, int first)
{
	const TsModel *m = em->model;
	size_t		columns = (size_t) m->num_outputs * m->num_features;

	nulls[first + 2] = nulls[first + 3] = rows == 0;
	for (int32 k = 0; k < m->num_outputs; k++)
		for (int32 j = 0; j < m->num_features; j++)
		{
			size_t		c = (size_t) k * m->num_features + j;

			values[first] = Int32GetDatum(k);
			values[first + 1] = em->feature_text[j];
			values[first + 2] = Float8GetDatum(rows > 0 ? sums[c] / rows : 0.0);
			values[first + 3] = Float8GetDatum(rows > 0 ? sums[columns + c] / rows : 0.0);
			tuplestore_putvalues(em->store, em->desc, values, nulls);
		}
}

/* Emit the importance rows: means over the rows seen. */
static void
emit_importance(TsEmitter *em)
{
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};

	values[4] = Int64GetDatum(em->rows);
	emit_means(em, em->sums, em->rows, values, nulls, 0);
}

/* Emit the importance rows of every segment, in order of first appearance. */
static void
emit_segments(TsEmitter *em)
{
	Datum		values[6];
	bool		nulls[6] = {false, false, false, false, false, false};

	for (int i = 0; i < ts_groups_count(em->groups); i++)
	{
		int64		rows;
		const double *sums = ts_groups_get(em->groups, i, &values[0], &nulls[0], &rows);

		values[5] = Int64GetDatum(rows);
		emit_means(em, sums, rows, values, nulls, 1);
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

/* Emit (or, for importance, add up) one finished batch. */
void
ts_emit_batch(TsEmitter *em, const Datum *keys, const bool *key_null, int32 n, const double *result)
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
			ts_emit_prediction(em, keys[i], key_null[i], em->margins);
		}
		else if (em->kind == TS_RESULT_INTERACTIONS)
			emit_interactions(em, keys[i], key_null[i],
							  result + i * columns * em->spec.selection->count);
		else if (ts_result_is_top(em->kind))
			ts_emit_top_records(em, keys[i], key_null[i],
								result + i * m->num_outputs * ts_topk_width(em->top_k));
		else if (em->kind == TS_RESULT_SEGMENTS)
			add_to_segment(em, keys[i], key_null[i], result + i * (columns + m->num_outputs));
		else
			emit_contribs(em, keys[i], key_null[i],
						  result + i * (columns + m->num_outputs));
	}
}

void
ts_emit_totals(TsEmitter *em)
{
	if (em->kind == TS_RESULT_IMPORTANCE)
		emit_importance(em);
	else if (em->kind == TS_RESULT_SEGMENTS)
		emit_segments(em);
}
