/*
 * ts_model_store.c - writing treeshap.model_store. load_model stores a name
 * and bytes; whatever writes a row (load_model, or an owner's own INSERT,
 * UPDATE or COPY, which row level security allows, or a restore), its
 * trigger parses the bytes and derives every column that describes them,
 * and a change of bytes draws a new version, so no row can describe other
 * bytes than its own and every session sees a change at its next call.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "backend/ts_catalog.h"

PG_FUNCTION_INFO_V1(treeshap_store_model);
PG_FUNCTION_INFO_V1(treeshap_model_stamp);

/*
 * The columns the trigger derives from the bytes, in the order it fills them:
 * 0.1.0's (which load_model writes itself too), then 0.2.0's path counts.
 */
static const char *const derived_columns[] = {
	"format", "num_trees", "num_features", "num_outputs", "max_depth", "num_leaves",
	"feature_names", "objective", "base_score", "categorical_features", "num_categories", "digest",
	"num_paths", "path_elements"
};

#define NUM_DERIVED (lengthof(derived_columns))
#define NUM_STORED 12			/* the ones 0.1.0's catalog has */

/*
 * The model _store_model has parsed, while it writes its row: the trigger
 * takes it for those bytes (same digest and length) instead of parsing them
 * a second time. Set and cleared around the write, errors included.
 */
static const TsModel *storing_model = NULL;
static uint64 storing_digest = 0;
static uint64 storing_length = 0;

/* ERROR if a model of this name exists (load without replace). */
static void
check_name_free(Datum name_datum, const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {name_datum};

	if (SPI_execute_with_args("SELECT 1 FROM treeshap.model_store WHERE name = $1",
							  1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up model \"%s\"", name);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("model \"%s\" already exists", name),
				 errhint("Pass replace => true to replace it.")));
}

/*
 * The derived columns' values for model m of these bytes, in derived_columns'
 * order: all of them, or 0.1.0's alone (no walk of the trees for the counts).
 */
static void
derived_values(const TsModel *m, uint64 digest, bool all, Datum *values, bool *nulls)
{
	int64_t		paths;
	int64_t		elements;

	memset(nulls, 0, sizeof(bool) * NUM_DERIVED);
	values[0] = CStringGetTextDatum(m->format);
	values[1] = Int32GetDatum(m->num_trees);
	values[2] = Int32GetDatum(m->num_features);
	values[3] = Int32GetDatum(m->num_outputs);
	values[4] = Int32GetDatum(m->max_depth);
	values[5] = Int64GetDatum(m->num_leaves);
	values[6] = ts_feature_names_array(m, &nulls[6]);
	values[7] = m->objective != NULL ? CStringGetTextDatum(m->objective) : (Datum) 0;
	nulls[7] = m->objective == NULL;
	values[8] = ts_base_score_array(m);
	ts_categorical_arrays(m, &values[9], &values[10], &nulls[9]);
	nulls[10] = nulls[9];
	values[11] = Int64GetDatum((int64) digest);
	if (!all)
		return;
	ts_paths_count(m, &paths, &elements);
	values[12] = Int64GetDatum(paths);
	values[13] = Int64GetDatum(elements);
}

/* 0.1.0's derived columns, comma separated, or as assignments from an ON CONFLICT's proposed row. */
static char *
column_list(bool assign)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < NUM_STORED; i++)
	{
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", derived_columns[i]);
		if (assign)
			appendStringInfo(&buf, " = EXCLUDED.%s", derived_columns[i]);
	}
	return buf.data;
}

/*
 * Insert (or replace) the catalog row in one statement, all or nothing, with
 * what the bytes say: the trigger derives the same, but a library newer than
 * the catalog's scripts (before ALTER EXTENSION UPDATE) finds 0.1.0's trigger,
 * which sets the digest alone.
 */
static void
store_row(Datum name_datum, bytea *bytes, const TsModel *m, uint64 digest, bool replace)
{
	Oid			argtypes[2 + NUM_STORED] = {TEXTOID, BYTEAOID, TEXTOID, INT4OID, INT4OID, INT4OID,
	INT4OID, INT8OID, TEXTARRAYOID, TEXTOID, FLOAT8ARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8OID};
	Datum		args[2 + NUM_DERIVED] = {name_datum, PointerGetDatum(bytes)};
	bool		isnull[NUM_DERIVED];
	char		nulls[2 + NUM_STORED];
	StringInfoData sql;

	derived_values(m, digest, false, args + 2, isnull);
	memset(nulls, ' ', sizeof(nulls));
	for (int i = 0; i < NUM_STORED; i++)
		nulls[2 + i] = isnull[i] ? 'n' : ' ';
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO treeshap.model_store AS s (name, model, %s, created_at, version) "
					 "VALUES ($1, $2", column_list(false));
	for (int i = 0; i < NUM_STORED; i++)
		appendStringInfo(&sql, ", $%d", 3 + i);
	/* drawn in the row, not in the update: Citus evaluates them once, on the coordinator */
	appendStringInfoString(&sql, ", now(), nextval('treeshap.model_version'))");
	if (replace)
		appendStringInfo(&sql, " ON CONFLICT (name) DO UPDATE SET model = EXCLUDED.model, %s, "
						 "created_at = EXCLUDED.created_at, version = EXCLUDED.version",
						 column_list(true));
	if (SPI_execute_with_args(sql.data, 2 + NUM_STORED, argtypes, args, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not store model");
}

/* store_row with the model already parsed, which the trigger then takes for those bytes. */
static void
store_parsed_row(Datum name_datum, bytea *bytes, const TsModel *m, bool replace)
{
	storing_model = m;
	storing_digest = ts_cityhash64(VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes));
	storing_length = VARSIZE_ANY_EXHDR(bytes);
	PG_TRY();
	{
		store_row(name_datum, bytes, m, storing_digest, replace);
	}
	PG_FINALLY();
	{
		storing_model = NULL;
	}
	PG_END_TRY();
}

/*
 * treeshap._store_model(name, bytes, replace): parse and validate the bytes,
 * then insert or replace the catalog row. Nothing is written unless the model
 * is valid.
 */
Datum
treeshap_store_model(PG_FUNCTION_ARGS)
{
	char	   *name;
	bytea	   *bytes;
	bool		replace = PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2);
	MemoryContext check_context;
	MemoryContext old;
	TsModel    *m;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model name and model bytes must not be null")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("model name must not be empty")));
	bytes = PG_GETARG_BYTEA_PP(1);

	check_context = AllocSetContextCreate(CurrentMemoryContext, "treeshap model check",
										  ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(check_context);
	m = ts_read_model_or_error(name, bytes);
	MemoryContextSwitchTo(old);

	SPI_connect();
	if (!replace)
		check_name_free(PG_GETARG_DATUM(0), name);
	store_parsed_row(PG_GETARG_DATUM(0), bytes, m, replace);
	SPI_finish();
	MemoryContextDelete(check_context);
	PG_RETURN_VOID();
}

/* The attribute number of a model_store column (ERROR if the table lacks it). */
static int
store_column(TupleDesc desc, const char *name)
{
	int			attno = SPI_fnumber(desc, name);

	if (attno <= 0)
		elog(ERROR, "treeshap.model_store has no column \"%s\"", name);
	return attno;
}

/*
 * Whether the old row holds the bytes of this digest and length: its digest,
 * and its bytes' length from their header (nothing detoasted).
 */
static bool
same_bytes(HeapTuple old_row, TupleDesc desc, uint64 digest, Size length)
{
	bool		digest_null;
	bool		model_null;
	Datum		d = heap_getattr(old_row, store_column(desc, "digest"), desc, &digest_null);
	Datum		bytes = heap_getattr(old_row, store_column(desc, "model"), desc, &model_null);

	return !digest_null && !model_null && (uint64) DatumGetInt64(d) == digest &&
		toast_raw_datum_size(bytes) - VARHDRSZ == length;
}

/*
 * Whether the trigger runs on a Citus placement of the table (a reference
 * table's shard, named after the table with its shard id), not on the
 * table itself: each node then writes its own copy of the row, so a
 * version drawn here would be drawn once per node, each different.
 */
static bool
on_citus_placement(Relation rel)
{
	return RelationGetRelid(rel) != get_relname_relid("model_store", RelationGetNamespace(rel));
}

/*
 * The row to write: NEW with every derived column taken from its bytes (a
 * parse, unless _store_model is writing the model it just parsed), and on an
 * UPDATE that changes the bytes but not the version, a new version.
 */
static HeapTuple
stamp_row(TriggerData *trig)
{
	Relation	rel = trig->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	row = TRIGGER_FIRED_BY_UPDATE(trig->tg_event) ? trig->tg_newtuple : trig->tg_trigtuple;
	bool		name_null;
	bool		model_null;
	Datum		name = heap_getattr(row, store_column(desc, "name"), desc, &name_null);
	Datum		model = heap_getattr(row, store_column(desc, "model"), desc, &model_null);
	bytea	   *bytes;
	uint64		digest;
	MemoryContext parse_context;
	const TsModel *m = storing_model;
	int			columns[NUM_DERIVED + 1];
	Datum		values[NUM_DERIVED + 1];
	bool		nulls[NUM_DERIVED + 1];
	int			n = NUM_DERIVED;

	/* a NULL name or model: the table's NOT NULL constraints refuse the row */
	if (name_null || model_null)
		return row;
	bytes = DatumGetByteaPP(model);
	digest = ts_cityhash64(VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes));
	parse_context = AllocSetContextCreate(CurrentMemoryContext, "treeshap model stamp",
										  ALLOCSET_DEFAULT_SIZES);
	if (m == NULL || digest != storing_digest || VARSIZE_ANY_EXHDR(bytes) != storing_length)
	{
		MemoryContext old = MemoryContextSwitchTo(parse_context);

		m = ts_read_model_or_error(TextDatumGetCString(name), bytes);
		MemoryContextSwitchTo(old);
	}
	derived_values(m, digest, true, values, nulls);
	for (int i = 0; i < (int) NUM_DERIVED; i++)
		columns[i] = store_column(desc, derived_columns[i]);
	if (TRIGGER_FIRED_BY_UPDATE(trig->tg_event) &&
		!same_bytes(trig->tg_trigtuple, desc, digest, VARSIZE_ANY_EXHDR(bytes)))
	{
		int			version = store_column(desc, "version");
		bool		old_null;
		bool		new_null;
		Datum		old_version = heap_getattr(trig->tg_trigtuple, version, desc, &old_null);
		Datum		new_version = heap_getattr(row, version, desc, &new_null);

		if (!old_null && !new_null && DatumGetInt64(old_version) == DatumGetInt64(new_version))
		{
			Oid			seq = get_relname_relid("model_version", RelationGetNamespace(rel));

			if (on_citus_placement(rel))
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("model \"%s\" would get a different version on each node of the Citus cluster",
								TextDatumGetCString(name)),
						 errdetail("Its bytes change in an UPDATE that keeps its version."),
						 errhint("Use treeshap.load_model(name, bytes, replace => true), or set version to a value drawn before the UPDATE with nextval('treeshap.model_version').")));

			columns[n] = version;
			values[n] = Int64GetDatum(nextval_internal(seq, true));
			nulls[n++] = false;
		}
	}
	row = heap_modify_tuple_by_cols(row, desc, n, columns, values, nulls);
	MemoryContextDelete(parse_context);
	return row;
}

/*
 * treeshap._model_stamp(): the BEFORE INSERT OR UPDATE trigger of
 * treeshap.model_store. Bytes that do not parse as a model are refused with
 * the reader's error.
 */
Datum
treeshap_model_stamp(PG_FUNCTION_ARGS)
{
	TriggerData *trig = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_BEFORE(trig->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trig->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(trig->tg_event) || TRIGGER_FIRED_BY_UPDATE(trig->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("treeshap._model_stamp() must run as a BEFORE INSERT OR UPDATE row trigger")));
	return PointerGetDatum(stamp_row(trig));
}
