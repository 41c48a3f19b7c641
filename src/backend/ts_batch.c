/*
 * ts_batch.c - batched, type-checked reading of the rows to explain. The
 * first query column is the row key; the others are features, matched by
 * name when the model has feature names and by position otherwise.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "backend/ts_batch.h"
#include "backend/ts_settings.h"

/* Name of feature j: the model's own, or XGBoost's default f<j>. */
char *
ts_feature_name(const TsModel *model, int32 j)
{
	if (model->feature_names != NULL)
		return pstrdup(model->feature_names[j]);
	return psprintf("f%d", j);
}

/* Whether a column type can carry feature values. */
static bool
is_feature_type(Oid type)
{
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case BOOLOID:
			return true;
		default:
			return false;
	}
}

/* Whether a type is one of the integer types keys may convert between. */
static bool
is_integer_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/* How a text-like column type is read: 't' text/varchar, 'b' char(n), 'e' enum, 0 if not text. */
static char
text_kind(Oid type)
{
	if (type == TEXTOID || type == VARCHAROID)
		return 't';
	if (type == BPCHAROID)
		return 'b';
	if (type_is_enum(type))
		return 'e';
	return 0;
}

/*
 * Check feature j's column type: numeric, or text-like when the model has
 * category names for j (its codes are then looked up by name).
 */
static Oid
feature_column_type(TsBatchReader *r, TupleDesc desc, int attno, int32 j)
{
	Form_pg_attribute att = TupleDescAttr(desc, attno);
	Oid			type = getBaseType(att->atttypid);
	char		kind = text_kind(type);

	bool		categorical = r->model->categorical != NULL && r->model->categorical[j];

	r->feature_text[j] = 0;
	/* CatBoost hashes a category's name, so only the name can be given */
	if (is_feature_type(type) && r->model->dict_hashed && categorical)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" has type %s, but CatBoost categorical feature \"%s\" takes text",
						NameStr(att->attname), format_type_be(att->atttypid), ts_feature_name(r->model, j)),
				 errdetail("CatBoost compares a hash of the category's name; an integer category is the hash of its decimal form."),
				 errhint("Cast the column to text.")));
	if (is_feature_type(type))
		return type;
	if (kind != 0 && (ts_catdict_size(r->model, j) > 0 || (r->model->dict_hashed && categorical)))
	{
		r->feature_text[j] = kind;
		return type;
	}
	if (kind != 0 && categorical)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("column \"%s\" has type %s, but the model has no category names for feature \"%s\"",
						NameStr(att->attname), format_type_be(att->atttypid),
						ts_feature_name(r->model, j)),
				 errdetail("The feature is categorical, but the model file does not list its categories (XGBoost >= 3.1 saves them for pandas string categories, LightGBM as pandas_categorical)."),
				 errhint("Pass the category codes as an integer column.")));
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("column \"%s\" has type %s, which is not a numeric type",
					NameStr(att->attname), format_type_be(att->atttypid)),
			 errhint("Feature columns must be smallint, integer, bigint, real, double precision, numeric or boolean, or text for categorical features whose model lists their categories.")));
	pg_unreachable();
}

/*
 * Column named like a feature, other than the key: exact name first, then
 * case-insensitive. A name longer than an identifier can be is matched by
 * the form PostgreSQL truncates it to (its first NAMEDATALEN - 1 bytes, cut
 * at a character boundary), since no column can carry the whole of it.
 */
static int
find_column(TupleDesc desc, int key_attno, const char *name)
{
	int			match = -1;
	int			len = strlen(name);
	const char *feature = name;

	if (len >= NAMEDATALEN)
		feature = pnstrdup(name, pg_mbcliplen(name, len, NAMEDATALEN - 1));

	for (int a = 0; a < desc->natts; a++)
		if (a != key_attno && !TupleDescAttr(desc, a)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, a)->attname), feature) == 0)
			return a;
	for (int a = 0; a < desc->natts; a++)
	{
		if (a == key_attno || TupleDescAttr(desc, a)->attisdropped ||
			pg_strcasecmp(NameStr(TupleDescAttr(desc, a)->attname), feature) != 0)
			continue;
		if (match >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_AMBIGUOUS_COLUMN),
					 errmsg("feature \"%s\" matches more than one column", feature)));
		match = a;
	}
	return match;
}

/* Check the key column against the requested key type. */
static void
bind_key(TsBatchReader *r, TupleDesc desc)
{
	Form_pg_attribute key;
	Oid			in;

	if (r->key_attno == TS_KEY_WHOLE_ROW || r->key_attno == TS_KEY_NONE)
	{
		/* the table source checked that key_type is the table's row type, or that there is none */
		r->key_in_type = r->key_attno == TS_KEY_NONE ? InvalidOid : desc->tdtypeid;
		return;
	}
	key = TupleDescAttr(desc, r->key_attno);
	in = getBaseType(key->atttypid);
	r->key_in_type = in;
	if (r->key_type == InvalidOid)
		return;
	/* a domain's keys come from a column of that domain, which has met its constraints */
	if (r->key_base != r->key_type ? key->atttypid == r->key_type :
		in == r->key_type || (is_integer_type(in) && is_integer_type(r->key_type)))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("row key column \"%s\" has type %s, but keys of type %s were requested",
					NameStr(key->attname), format_type_be(key->atttypid),
					format_type_be(r->key_type)),
			 errhint("Pass the key type as the key_type argument, e.g. NULL::%s.",
					 format_type_be(key->atttypid))));
}

/* The columns that may hold features, in order: every live one but the key. */
static int
feature_candidates(const TsBatchReader *r, TupleDesc desc, int *attnos)
{
	int			count = 0;

	for (int a = 0; a < desc->natts; a++)
		if (a != r->key_attno && !TupleDescAttr(desc, a)->attisdropped)
			attnos[count++] = a;
	return count;
}

/* The name feature j is matched by: the model's, or LightGBM's generated Column_<j>. */
static const char *
binding_name(const TsModel *m, int32 j)
{
	return m->feature_names != NULL ? m->feature_names[j] : psprintf("Column_%d", j);
}

/*
 * Whether a model of LightGBM's generated names finds every one of them
 * among the columns, spelled exactly (a table built from the same
 * DataFrame); a near miss leaves the columns to their positions.
 */
static bool
has_generated_columns(const TsBatchReader *r, TupleDesc desc)
{
	if (!r->model->generated_names)
		return false;
	for (int32 j = 0; j < r->model->num_features; j++)
	{
		char		name[32];
		bool		found = false;

		snprintf(name, sizeof(name), "Column_%d", j);
		for (int a = 0; a < desc->natts && !found; a++)
			found = a != r->key_attno && !TupleDescAttr(desc, a)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, a)->attname), name) == 0;
		if (!found)
			return false;
	}
	return true;
}

/* Column of feature j, by name. */
static int
feature_by_name(const TsBatchReader *r, TupleDesc desc, int32 j)
{
	const char *name = binding_name(r->model, j);
	int			attno = find_column(desc, r->key_attno, name);

	if (attno < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("%s has no column for feature \"%s\"", r->rel != NULL ? "table" : r->what, name),
				 strlen(name) >= NAMEDATALEN ?
				 errdetail("Names longer than %d bytes are matched by their first %d bytes, as PostgreSQL truncates identifiers.",
						   NAMEDATALEN - 1, NAMEDATALEN - 1) : 0,
				 errhint("Set treeshap.match_columns to position to match columns by position.")));
	return attno;
}

/*
 * Where each column read lies in a tuple without NULLs, when every column up
 * to the last one read has a fixed width (a model's features are mostly
 * float4 or float8 columns): each at its alignment after the one before, as
 * heap_fill_tuple() lays them out, whether dropped or not. No layout (NULL)
 * for varlena columns, text-coded categories, or a whole-row key.
 */
static void
bind_fixed_layout(TsBatchReader *r, TupleDesc desc)
{
	int32		nf = r->model->num_features;
	int		   *offsets;
	int			offset = 0;

	r->fixed_offset = NULL;
	if (r->key_attno == TS_KEY_WHOLE_ROW)
		return;
	for (int32 j = 0; j < nf; j++)
		if (r->feature_text[j] != 0)
			return;
	for (int a = 0; a < r->natts_read; a++)
		if (TupleDescAttr(desc, a)->attlen <= 0)
			return;
	offsets = palloc(sizeof(int) * Max(r->natts_read, 1));
	for (int a = 0; a < r->natts_read; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		offset = att_align_nominal(offset, att->attalign);
		offsets[a] = offset;
		offset += att->attlen;
	}
	r->fixed_offset = palloc(sizeof(int) * Max(nf, 1));
	r->fixed_len = palloc(sizeof(int16) * Max(nf, 1));
	r->fixed_float4_run = true;
	for (int32 j = 0; j < nf; j++)
	{
		r->fixed_offset[j] = offsets[r->feature_attno[j]];
		r->fixed_len[j] = TupleDescAttr(desc, r->feature_attno[j])->attlen;
		r->fixed_float4_run &= r->feature_type[j] == FLOAT4OID &&
			r->fixed_offset[j] == r->fixed_offset[0] + (int) sizeof(float4) * j;
	}
	r->key_offset = r->key_attno >= 0 ? offsets[r->key_attno] : -1;
	if (r->key_attno >= 0)
	{
		r->key_len = TupleDescAttr(desc, r->key_attno)->attlen;
		r->key_byval = TupleDescAttr(desc, r->key_attno)->attbyval;
	}
	pfree(offsets);
}

/*
 * Map every model feature to a column and check the types: by name when the
 * model has names (and treeshap.match_columns says so), or LightGBM's
 * generated Column_<j> that the columns all have; else the columns other
 * than the key in order.
 */
void
ts_batch_bind(TsBatchReader *r, TupleDesc desc)
{
	int32		nf = r->model->num_features;
	bool		by_name;
	int		   *candidates = palloc(sizeof(int) * Max(desc->natts, 1));
	int			count;

	if (desc->natts < 1 && r->rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("query must return a row key column followed by feature columns")));
	bind_key(r, desc);
	by_name = !r->positional && ts_match_columns == TS_MATCH_NAME &&
		(r->model->feature_names != NULL || has_generated_columns(r, desc));
	count = feature_candidates(r, desc, candidates);
	r->feature_attno = palloc(sizeof(int) * nf);
	r->feature_type = palloc(sizeof(Oid) * nf);
	r->feature_text = palloc(nf);
	if (!by_name && count != nf)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s %d feature columns, but the model has %d features",
						r->rel != NULL ? "table has" : "query returns", count, nf),
				 r->model->generated_names && !r->positional && ts_match_columns == TS_MATCH_NAME ?
				 errdetail("The model's features are LightGBM's Column_0 to Column_%d, which the columns do not all have, so the columns other than the row key are matched by position.", nf - 1) :
				 r->model->feature_names == NULL ?
				 errdetail("The model has no feature names, so the columns other than the row key are matched by position.") :
				 errdetail("treeshap.match_columns is position, so the columns other than the row key are matched by position.")));
	r->natts_read = Max(r->key_attno + 1, 0);
	for (int32 j = 0; j < nf; j++)
	{
		int			attno = by_name ? feature_by_name(r, desc, j) : candidates[j];

		r->feature_attno[j] = attno;
		r->feature_type[j] = feature_column_type(r, desc, attno, j);
		r->natts_read = Max(r->natts_read, attno + 1);
	}
	pfree(candidates);
	r->values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	r->isnull = palloc(sizeof(bool) * Max(desc->natts, 1));
	bind_fixed_layout(r, desc);
	r->bound = true;
}

/* One feature value as float32 (what XGBoost compares); NULL and NaN are missing. */
static float
feature_value(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return ts_feature_value((double) DatumGetInt16(d));
		case INT4OID:
			return ts_feature_value((double) DatumGetInt32(d));
		case INT8OID:
			return ts_feature_value((double) DatumGetInt64(d));
		case FLOAT4OID:
			return ts_feature_value((double) DatumGetFloat4(d));
		case FLOAT8OID:
			return ts_feature_value(DatumGetFloat8(d));
		case BOOLOID:
			return DatumGetBool(d) ? 1.0f : 0.0f;
		case NUMERICOID:
			return ts_feature_value(DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d)));
	}
	pg_unreachable();
}

/*
 * A category given by name, as its code in the model's dictionary. A name
 * the model was not trained with is a missing value, as pandas makes it
 * when a column takes the training set's categories (LightGBM does so;
 * XGBoost 3.2 refuses such a name instead).
 */
static float
category_code(const TsModel *m, int32 j, Datum d, char kind)
{
	const char *name;
	size_t		len;
	int32		code;

	if (kind == 'e')
	{
		HeapTuple	tup = SearchSysCache1(ENUMOID, d);

		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for enum value %u", DatumGetObjectId(d));
		name = NameStr(((Form_pg_enum) GETSTRUCT(tup))->enumlabel);
		code = ts_catdict_lookup(m, j, name, strlen(name));
		ReleaseSysCache(tup);
		return code >= 0 ? (float) code : NAN;
	}
	else
	{
		text	   *t = DatumGetTextPP(d);

		name = VARDATA_ANY(t);
		len = VARSIZE_ANY_EXHDR(t);
		if (kind == 'b')		/* char(n) pads with blanks that are not part of the value */
			len = bpchartruelen((char *) name, (int) len);
		code = ts_catdict_lookup(m, j, name, len);
		return code >= 0 ? (float) code : NAN;
	}
}

/* The row key in the requested type, converting between integer types with range checks. */
static Datum
convert_key(TsBatchReader *r, Datum d)
{
	int64		v;

	if (r->key_type == InvalidOid || r->key_in_type == r->key_base)
		return d;
	v = r->key_in_type == INT2OID ? DatumGetInt16(d) :
		r->key_in_type == INT4OID ? DatumGetInt32(d) : DatumGetInt64(d);
	if (r->key_type == INT8OID)
		return Int64GetDatum(v);
	if ((r->key_type == INT4OID && (v < PG_INT32_MIN || v > PG_INT32_MAX)) ||
		(r->key_type == INT2OID && (v < PG_INT16_MIN || v > PG_INT16_MAX)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("row key %lld is out of range for type %s", (long long) v,
						format_type_be(r->key_type))));
	return r->key_type == INT4OID ? Int32GetDatum((int32) v) : Int16GetDatum((int16) v);
}

/* Whether a prepared plan is one SELECT (or VALUES) statement. */
static bool
is_select_plan(SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);

	return list_length(sources) == 1 &&
		((CachedPlanSource *) linitial(sources))->commandTag == CMDTAG_SELECT &&
		SPI_is_cursor_plan(plan);
}

/* Reader state common to both sources; the batch memory lives under the current context. */
void
ts_batch_init(TsBatchReader *r, const TsModel *model, Oid key_type)
{
	memset(r, 0, sizeof(*r));
	r->model = model;
	r->key_type = key_type;
	r->key_base = key_type != InvalidOid ? getBaseType(key_type) : InvalidOid;
	r->what = "query";
	r->batch_rows = ts_batch_rows;
	r->batch_context = AllocSetContextCreate(CurrentMemoryContext, "treeshap batch",
											 ALLOCSET_DEFAULT_SIZES);
}

/* Whether a SELECT neither writes (a data-modifying WITH) nor locks rows (FOR UPDATE). */
static bool
is_read_only_plan(SPIPlanPtr plan)
{
	CachedPlanSource *source = linitial(SPI_plan_get_plan_sources(plan));
	ListCell   *lc;

	foreach(lc, source->query_list)
	{
		Query	   *q = lfirst_node(Query, lc);

		if (q->commandType != CMD_SELECT || q->hasModifyingCTE || q->rowMarks != NIL)
			return false;
	}
	return true;
}

/* Open a cursor over query; read_only so the query cannot modify data. */
void
ts_batch_open_query(TsBatchReader *r, const char *query)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);

	if (plan == NULL)
		elog(ERROR, "could not prepare query: %s", SPI_result_code_string(SPI_result));
	if (!is_select_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_CURSOR_DEFINITION),
				 errmsg("%s must be a single SELECT or VALUES that returns rows", r->what)));
	if (!is_read_only_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_CURSOR_DEFINITION),
				 errmsg("%s must be read-only", r->what),
				 errdetail("It may neither change data (INSERT, UPDATE, DELETE or MERGE in WITH) nor lock rows (FOR UPDATE, FOR SHARE)."),
				 errhint("Change the data in a statement of its own, then explain the rows.")));
	r->portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
}

/* Open the user's query, keyed by its first column. */
void
ts_batch_open(TsBatchReader *r, const char *query, const TsModel *model, Oid key_type)
{
	ts_batch_init(r, model, key_type);
	ts_batch_open_query(r, query);
}

void
ts_batch_open_source(TsBatchReader *r, const TsSource *src, const TsModel *model, Oid key_type)
{
	if (src->query != NULL)
		ts_batch_open(r, src->query, model, key_type);
	else
		ts_batch_open_table(r, src->relid, src->key_column, model, key_type);
}

void
ts_key_slot_init(TsKeySlot *ks, int64 rows, Oid key_type)
{
	ks->keys = palloc(sizeof(Datum) * Max(rows, 1));
	ks->key_null = palloc(sizeof(bool) * Max(rows, 1));
	ks->context = AllocSetContextCreate(CurrentMemoryContext, "treeshap keys",
										ALLOCSET_DEFAULT_SIZES);
	ks->key_len = sizeof(Datum);
	ks->key_byval = true;
	if (key_type != InvalidOid)
		get_typlenbyval(key_type, &ks->key_len, &ks->key_byval);
}

void
ts_batch_keep_keys(const TsBatchReader *r, TsKeySlot *ks)
{
	MemoryContextReset(ks->context);
	for (uint64 i = 0; i < r->nrows; i++)
	{
		ks->key_null[i] = r->key_null[i];
		ks->keys[i] = r->key_null[i] || ks->key_byval ? r->keys[i]
			: datumCopy(r->keys[i], false, ks->key_len);
	}
}

/* Make room for a batch of up to room rows (the previous batch's memory is freed). */
void
ts_batch_start(TsBatchReader *r, uint64 room)
{
	MemoryContext old;

	MemoryContextReset(r->batch_context);
	old = MemoryContextSwitchTo(r->batch_context);
	r->x = r->x_target != NULL ? r->x_target
		: palloc_extended(sizeof(float) * Max(room, 1) * r->model->num_features, MCXT_ALLOC_HUGE);
	r->keys = palloc(sizeof(Datum) * Max(room, 1));
	r->key_null = palloc(sizeof(bool) * Max(room, 1));
	MemoryContextSwitchTo(old);
}

/* Convert row i of the batch from its deformed columns; the key as the source gives it. */
void
ts_batch_convert_row(TsBatchReader *r, uint64 i, Datum key, bool key_null,
					 const Datum *values, const bool *isnull)
{
	int32		nf = r->model->num_features;
	float	   *row = r->x + i * nf;

	r->key_null[i] = key_null;
	r->keys[i] = key_null ? (Datum) 0 : convert_key(r, key);
	for (int32 j = 0; j < nf; j++)
	{
		int			a = r->feature_attno[j];

		if (isnull[a])
			row[j] = NAN;
		else if (r->feature_text[j] != 0)
			row[j] = category_code(r->model, j, values[a], r->feature_text[j]);
		else
			row[j] = feature_value(values[a], r->feature_type[j]);
	}
	ts_model_prepare_row(r->model, row);
}

/* n float4 columns' values as features, one after the other (feature_value's rule). */
static void
copy_float4_run(const float4 *src, int32 n, float *row)
{
	for (int32 j = 0; j < n; j++)
		row[j] = ts_feature_value((double) src[j]);
}

/*
 * Convert row i of the batch straight from a tuple's bytes, without
 * deforming it, where the columns lie at fixed offsets (bind_fixed_layout)
 * and the tuple has no NULL and every column read (one stored before a
 * column was added with a default has fewer); false, having done nothing,
 * otherwise. The same values and key as ts_batch_convert_row's.
 */
bool
ts_batch_convert_tuple(TsBatchReader *r, uint64 i, HeapTuple tuple)
{
	int32		nf = r->model->num_features;
	float	   *row = r->x + i * nf;
	const char *data;

	if (r->fixed_offset == NULL || tuple == NULL || HeapTupleHasNulls(tuple) ||
		HeapTupleHeaderGetNatts(tuple->t_data) < r->natts_read)
		return false;
	data = (const char *) tuple->t_data + tuple->t_data->t_hoff;
	r->key_null[i] = r->key_attno < 0;
	r->keys[i] = r->key_attno < 0 ? (Datum) 0
		: convert_key(r, datumCopy(fetch_att(data + r->key_offset, r->key_byval, r->key_len),
								   r->key_byval, r->key_len));
	if (r->fixed_float4_run)
		copy_float4_run((const float4 *) (data + r->fixed_offset[0]), nf, row);
	else
		for (int32 j = 0; j < nf; j++)
			row[j] = feature_value(fetch_att(data + r->fixed_offset[j], true, r->fixed_len[j]),
								   r->feature_type[j]);
	ts_model_prepare_row(r->model, row);
	return true;
}

/* Fetch up to batch_rows rows of the cursor and convert them. */
static uint64
query_next(TsBatchReader *r)
{
	SPITupleTable *tt;
	MemoryContext old;
	bool		keyless = r->key_attno < 0;	/* a background query: every column a feature */

	if (SPI_tuptable != NULL)
		SPI_freetuptable(SPI_tuptable);
	SPI_cursor_fetch(r->portal, true, r->batch_rows);
	tt = SPI_tuptable;
	if (!r->bound)
		ts_batch_bind(r, tt->tupdesc);
	r->nrows = SPI_processed;
	ts_batch_start(r, r->nrows);
	old = MemoryContextSwitchTo(r->batch_context);
	for (uint64 i = 0; i < r->nrows; i++)
	{
		if (ts_batch_convert_tuple(r, i, tt->vals[i]))
			continue;
		heap_deform_tuple(tt->vals[i], tt->tupdesc, r->values, r->isnull);
		ts_batch_convert_row(r, i, keyless ? (Datum) 0 : r->values[r->key_attno],
							 keyless || r->isnull[r->key_attno], r->values, r->isnull);
	}
	MemoryContextSwitchTo(old);
	return r->nrows;
}

/* Fetch and convert the next batch; 0 at the end. */
uint64
ts_batch_next(TsBatchReader *r)
{
	return r->scan != NULL ? ts_table_scan_next(r) : query_next(r);
}

/* Close the cursor or the scan and free batch memory. */
void
ts_batch_close(TsBatchReader *r)
{
	if (r->portal != NULL)
	{
		if (SPI_tuptable != NULL)
			SPI_freetuptable(SPI_tuptable);
		SPI_cursor_close(r->portal);
	}
	if (r->rel != NULL)
		ts_table_scan_close(r);
	MemoryContextDelete(r->batch_context);
}
