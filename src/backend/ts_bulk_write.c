/*
 * ts_bulk_write.c - explanations written into an explain_into target the way
 * COPY FROM writes (ts_bulk_write.h). Exactly-once is the job's bookkeeping
 * (a range is marked done in the transaction that wrote it), so nothing here
 * reads the target; the unique index still refuses a duplicate key.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "backend/ts_bulk_write.h"
#include "service/ts_pg_compat.h"

PG_FUNCTION_INFO_V1(treeshap_bulk_target_ok);

/* Rows gathered before one multi-insert (COPY gathers up to 1,000). */
#define TS_BULK_ROWS 1000

/* The wide layout's columns, in the order ts_bulk_put fills them. */
static const char *const wide_columns[] = {
	"row_key", "output", "base_value", "shap_values", "model_version", "computed_at"
};
#define TS_WIDE_COLUMNS lengthof(wide_columns)

struct TsBulkWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	BulkInsertState bistate;
	CommandId	cid;
	TupleDesc	slot_desc;		/* the target's, copied: slots that pin nothing */
	MemoryContext slot_cxt;		/* the writer's: where slots are made */
	const TupleTableSlotOps *slot_ops;
	TupleTableSlot *slots[TS_BULK_ROWS];	/* made as rows first need them */
	int			nslots;
	MemoryContext rows_cxt;		/* the buffered rows' arrays, reset at every write */
	AttrNumber	attno[TS_WIDE_COLUMNS];	/* each layout column's index in the target */
	bool		key_byval;
	int16		key_len;
	Datum		version;
	Datum		now;
	int64		rows;			/* rows of output 0 written */
};

/*
 * A one-dimensional float8[] built straight from doubles: the same bytes
 * construct_array() makes, without a Datum per element (wide results of
 * models with many features spend most of their time here).
 */
ArrayType *
ts_float8_array(const double *values, int32 n)
{
	ArrayType  *a;

	if (n == 0)
		return construct_empty_array(FLOAT8OID);
	a = ts_array_shell(FLOAT8OID, n, ARR_OVERHEAD_NONULLS(1) + sizeof(double) * (Size) n);
	memcpy(ARR_DATA_PTR(a), values, sizeof(double) * (Size) n);
	return a;
}

/* A one-dimensional array's header (ts_bulk_write.h), in zeroed memory. */
ArrayType *
ts_array_shell(Oid elemtype, int32 n, Size nbytes)
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

/* The index of a layout column in the target's tuple, or -1. */
static int
column_index(TupleDesc desc, const char *name)
{
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped && strcmp(NameStr(att->attname), name) == 0)
			return i;
	}
	return -1;
}

/* Whether the target has the wide layout's columns and no other. */
static bool
columns_are_layout(TupleDesc desc)
{
	int			live = 0;

	for (int i = 0; i < desc->natts; i++)
		live += !TupleDescAttr(desc, i)->attisdropped;
	if (live != TS_WIDE_COLUMNS)
		return false;
	for (int c = 0; c < (int) TS_WIDE_COLUMNS; c++)
		if (column_index(desc, wide_columns[c]) < 0)
			return false;
	return true;
}

/* The types of the wide layout's columns, in wide_columns' order; the key's is the call's. */
static const Oid wide_types[TS_WIDE_COLUMNS] = {
	InvalidOid, INT4OID, FLOAT8OID, FLOAT8ARRAYOID, INT8OID, TIMESTAMPTZOID
};

/*
 * Whether a relation takes the writer's rows as INSERT would take them: a
 * plain table that is no partition, of the wide layout's columns alone in
 * their types (the key in key_type, unless InvalidOid), with no rule,
 * trigger, check constraint or generated column for INSERT to apply.
 */
static bool
relation_takes_rows(Relation rel, Oid key_type)
{
	TupleDesc	desc = RelationGetDescr(rel);
	TupleConstr *constr = desc->constr;

	if (rel->rd_rel->relkind != RELKIND_RELATION || rel->rd_rel->relispartition ||
		rel->trigdesc != NULL || rel->rd_rules != NULL || !columns_are_layout(desc))
		return false;
	if (constr != NULL && (constr->num_check > 0 || ts_has_generated_columns(constr)))
		return false;
	for (int c = 0; c < (int) TS_WIDE_COLUMNS; c++)
	{
		Oid			want = c == 0 ? key_type : wide_types[c];

		if (OidIsValid(want) && TupleDescAttr(desc, column_index(desc, wide_columns[c]))->atttypid != want)
			return false;
	}
	return true;
}

/* Whether the current user may insert into the relation, with no row level security to apply. */
static bool
user_may_insert(Oid relid)
{
	return pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK &&
		check_enable_rls(relid, InvalidOid, true) == RLS_NONE;
}

bool
ts_bulk_target_ok(Oid relid)
{
	Relation	rel;
	bool		ok;

	if (!user_may_insert(relid))
		return false;			/* INSERT says why, or applies the policies */
	rel = table_open(relid, AccessShareLock);
	ok = relation_takes_rows(rel, InvalidOid);
	table_close(rel, AccessShareLock);
	return ok;
}

TsBulkWriter *
ts_bulk_begin(Oid relid, Oid key_type, int64 version)
{
	TsBulkWriter *w = palloc0(sizeof(TsBulkWriter));

	PreventCommandIfReadOnly("explain_into");
	w->rel = table_open(relid, RowExclusiveLock);
	/* checked under the lock that keeps the table so: callable by anyone */
	if (!user_may_insert(relid) || !relation_takes_rows(w->rel, key_type))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("explanations cannot be written straight into \"%s\"", RelationGetRelationName(w->rel)),
				 errdetail("Only a plain table of the wide layout's columns alone, in their types, without rules, triggers, row level security, check constraints or generated columns, into which the current user may insert, is written in bulk.")));
	w->estate = CreateExecutorState();
	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, w->rel, 1, NULL, 0);
	ExecOpenIndices(w->rri, false);
	w->bistate = GetBulkInsertState();
	w->cid = GetCurrentCommandId(true);
	for (int c = 0; c < (int) TS_WIDE_COLUMNS; c++)
		w->attno[c] = column_index(RelationGetDescr(w->rel), wide_columns[c]);
	/*
	 * Each range of a job writes through a writer of its own: a thousand
	 * slots pinning the relation's descriptor, made and dropped per range,
	 * cost 2-4 % of a job of 1M rows of a small model in ranges of 10,000
	 * (measured). Slots over a copy pin nothing, and a range of few rows
	 * makes only as many as it uses.
	 */
	w->slot_desc = CreateTupleDescCopy(RelationGetDescr(w->rel));
	w->slot_ops = table_slot_callbacks(w->rel);
	w->slot_cxt = CurrentMemoryContext;
	w->key_byval = TupleDescAttr(RelationGetDescr(w->rel), w->attno[0])->attbyval;
	w->key_len = TupleDescAttr(RelationGetDescr(w->rel), w->attno[0])->attlen;
	w->rows_cxt = AllocSetContextCreate(CurrentMemoryContext, "pg_treeshap bulk rows",
										ALLOCSET_DEFAULT_SIZES);
	w->version = Int64GetDatum(version);
	w->now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	return w;
}

/* Write the buffered rows and their index entries; free their arrays. */
static void
bulk_flush(TsBulkWriter *w)
{
	if (w->nslots == 0)
		return;
	table_multi_insert(w->rel, w->slots, w->nslots, w->cid, 0, w->bistate);
	for (int i = 0; i < w->nslots; i++)
	{
		if (w->rri->ri_NumIndices > 0)
			list_free(ts_insert_index_tuples(w->rri, w->slots[i], w->estate));
		ExecClearTuple(w->slots[i]);
	}
	w->nslots = 0;
	MemoryContextReset(w->rows_cxt);
	ResetPerTupleExprContext(w->estate);
}

void
ts_bulk_put(TsBulkWriter *w, Datum key, bool key_null, int32 output, double base_value,
			const double *values, int32 n)
{
	TupleTableSlot *slot = w->slots[w->nslots];
	MemoryContext old;
	Datum		row[TS_WIDE_COLUMNS];

	if (slot == NULL)
	{
		old = MemoryContextSwitchTo(w->slot_cxt);
		slot = w->slots[w->nslots] = MakeSingleTupleTableSlot(w->slot_desc, w->slot_ops);
		MemoryContextSwitchTo(old);
	}
	old = MemoryContextSwitchTo(w->rows_cxt);

	if (key_null)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a row with a NULL key cannot be written into \"%s\"", RelationGetRelationName(w->rel))));
	/* a key by reference lives in its batch's memory, which the next batch reuses */
	row[0] = w->key_byval ? key : datumCopy(key, false, w->key_len);
	row[1] = Int32GetDatum(output);
	row[2] = Float8GetDatum(base_value);
	row[3] = PointerGetDatum(ts_float8_array(values, n));
	row[4] = w->version;
	row[5] = w->now;
	MemoryContextSwitchTo(old);
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (int c = 0; c < (int) TS_WIDE_COLUMNS; c++)
	{
		slot->tts_values[w->attno[c]] = row[c];
		slot->tts_isnull[w->attno[c]] = false;
	}
	ExecStoreVirtualTuple(slot);
	w->rows += output == 0;
	if (++w->nslots == TS_BULK_ROWS)
		bulk_flush(w);
}

int64
ts_bulk_end(TsBulkWriter *w)
{
	int64		rows;

	bulk_flush(w);
	FreeBulkInsertState(w->bistate);
	table_finish_bulk_insert(w->rel, 0);
	ExecCloseIndices(w->rri);
	for (int i = 0; i < TS_BULK_ROWS && w->slots[i] != NULL; i++)
		ExecDropSingleTupleTableSlot(w->slots[i]);
	FreeTupleDesc(w->slot_desc);
	FreeExecutorState(w->estate);
	table_close(w->rel, NoLock);
	MemoryContextDelete(w->rows_cxt);
	rows = w->rows;
	pfree(w);
	return rows;
}

/* treeshap._bulk_target_ok(target regclass): whether _explain_write can write into it as the current user. */
Datum
treeshap_bulk_target_ok(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(ts_bulk_target_ok(PG_GETARG_OID(0)));
}
