/*
 * ts_table_source.c - table input: the rows of a table, keyed by a named
 * column (or by the whole row, which passes every column through to the
 * result). The table is read with a direct scan where that reads exactly
 * what SELECT would: a plain table or a populated materialized view, with
 * no inheritance children and no row-level security in force, privileges
 * checked as the executor checks them. Anything else (views, partitioned
 * and foreign tables, policies) is read through a generated SELECT, so it
 * behaves as PostgreSQL's own query would.
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "backend/ts_batch.h"
#include "backend/ts_citus.h"
#include "service/ts_pg_compat.h"

/* Rows converted between two looks at interrupts: a fraction of a millisecond. */
#define TS_SCAN_INTERRUPT_ROWS 1024

/*
 * The key column's attribute number (0-based): key_column names it; NULL
 * asks for the whole row, which only the table's row type can hold, or for
 * no key at all when the caller takes none (key_type InvalidOid).
 */
static int
resolve_key(Relation rel, const char *key_column, Oid key_type)
{
	AttrNumber	attnum;

	if (key_column == NULL && key_type == InvalidOid)
		return TS_KEY_NONE;
	if (key_column == NULL)
	{
		if (key_type == RelationGetDescr(rel)->tdtypeid)
			return TS_KEY_WHOLE_ROW;
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key_column must not be null"),
				 errhint("Name the key column, or pass NULL::%s as key_type to get each row of \"%s\" whole as its key.",
						 format_type_be(RelationGetDescr(rel)->tdtypeid), RelationGetRelationName(rel))));
	}
	attnum = get_attnum(RelationGetRelid(rel), key_column);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						key_column, RelationGetRelationName(rel))));
	return attnum - 1;
}

/* Whether a direct scan of rel reads the rows that SELECT * FROM rel would. */
static bool
direct_scan_reads_as_select(Relation rel)
{
	char		kind = rel->rd_rel->relkind;

	if (kind != RELKIND_RELATION && kind != RELKIND_MATVIEW)
		return false;
	/* SELECT refuses an unpopulated materialized view: let it say so */
	if (kind == RELKIND_MATVIEW && !RelationIsPopulated(rel))
		return false;
	/* SELECT reads inheritance children too */
	if (rel->rd_rel->relhassubclass)
		return false;
	if (RELATION_IS_OTHER_TEMP(rel))
		return false;
	if (!ActiveSnapshotSet())
		return false;
	/* virtual generated columns are computed by the executor, not stored */
	if (ts_has_virtual_columns(RelationGetDescr(rel)))
		return false;
	/* a Citus table's rows are in its shards, not in the shell here */
	if (ts_citus_table(RelationGetRelid(rel)))
		return false;
	return check_enable_rls(RelationGetRelid(rel), InvalidOid, true) != RLS_ENABLED;
}

/* Column (0-based) as the bit of an executor column set. */
static Bitmapset *
add_column(Bitmapset *columns, int attno)
{
	return bms_add_member(columns, attno + 1 - FirstLowInvalidHeapAttributeNumber);
}

/*
 * Check SELECT on the columns read, as the executor checks a query's range
 * table (column privileges count, and so do the hooks of security modules).
 */
static void
check_select_privilege(const TsBatchReader *r)
{
	Bitmapset  *columns = NULL;

	/* the whole row is column 0 of the set, as the parser marks it */
	if (r->key_attno == TS_KEY_WHOLE_ROW)
		columns = add_column(columns, -1);
	else if (r->key_attno >= 0)
		columns = add_column(columns, r->key_attno);
	for (int32 j = 0; j < r->model->num_features; j++)
		columns = add_column(columns, r->feature_attno[j]);
	ts_check_select_columns(RelationGetRelid(r->rel), r->rel->rd_rel->relkind, columns);
}

/* An alias for the table that no column is named (a whole-row reference must not resolve to a column). */
static char *
row_alias(TupleDesc desc)
{
	for (int n = 0;; n++)
	{
		char	   *alias = n == 0 ? pstrdup("ts_source") : psprintf("ts_source_%d", n);
		bool		taken = false;

		for (int a = 0; a < desc->natts && !taken; a++)
			taken = strcmp(NameStr(TupleDescAttr(desc, a)->attname), alias) == 0;
		if (!taken)
			return alias;
	}
}

/* Quoted alias.column of a column (0-based). */
static const char *
column_ref(const char *alias, TupleDesc desc, int attno)
{
	return psprintf("%s.%s", quote_identifier(alias),
					quote_identifier(NameStr(TupleDescAttr(desc, attno)->attname)));
}

/*
 * SELECT key, features in model order FROM the table: the same columns the
 * direct scan would read, for sources only a query reads right.
 */
static char *
generated_query(const TsBatchReader *r)
{
	TupleDesc	desc = RelationGetDescr(r->rel);
	char	   *alias = row_alias(desc);
	StringInfoData q;

	initStringInfo(&q);
	appendStringInfoString(&q, "SELECT ");
	if (r->key_attno == TS_KEY_WHOLE_ROW)
		appendStringInfoString(&q, quote_identifier(alias));
	else if (r->key_attno >= 0)
		appendStringInfoString(&q, column_ref(alias, desc, r->key_attno));
	else
		appendStringInfoString(&q, "NULL");
	for (int32 j = 0; j < r->model->num_features; j++)
		appendStringInfo(&q, ", %s", column_ref(alias, desc, r->feature_attno[j]));
	appendStringInfo(&q, " FROM %s AS %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(r->rel)),
												RelationGetRelationName(r->rel)),
					 quote_identifier(alias));
	return q.data;
}

/* Read through the generated query: the key first, then the features by position. */
static void
open_as_query(TsBatchReader *r)
{
	ts_batch_open_query(r, generated_query(r));
	r->key_attno = 0;
	r->positional = true;
	r->bound = false;
}

/*
 * Start the direct scan under the statement's snapshot, always from the
 * table's first block (no synchronized scan): results come in the table's
 * order, the same from run to run.
 */
static void
open_scan(TsBatchReader *r)
{
	check_select_privilege(r);
	if (r->key_attno >= 0)
	{
		Form_pg_attribute key = TupleDescAttr(RelationGetDescr(r->rel), r->key_attno);

		r->key_len = key->attlen;
		r->key_byval = key->attbyval;
	}
	r->slot = table_slot_create(r->rel, NULL);
	r->scan = table_beginscan_strat(r->rel, GetActiveSnapshot(), 0, NULL, true, false);
}

/* Open a table as the rows to explain. */
void
ts_batch_open_table(TsBatchReader *r, Oid relid, const char *key_column,
					const TsModel *model, Oid key_type)
{
	ts_batch_init(r, model, key_type);
	r->rel = relation_open(relid, AccessShareLock);
	r->key_attno = resolve_key(r->rel, key_column, key_type);
	ts_batch_bind(r, RelationGetDescr(r->rel));
	if (direct_scan_reads_as_select(r->rel))
		open_scan(r);
	else
		open_as_query(r);
	elog(DEBUG1, "treeshap: reading \"%s\" %s", RelationGetRelationName(r->rel),
		 r->scan != NULL ? "with a direct scan" : "through a generated query");
}

/* The current row's key, in batch memory: the slot's values last only until the next row. */
static Datum
slot_key(TsBatchReader *r, bool *key_null)
{
	TupleTableSlot *slot = r->slot;

	*key_null = false;
	if (r->key_attno == TS_KEY_WHOLE_ROW)
		return ExecFetchSlotHeapTupleDatum(slot);
	if (r->key_attno == TS_KEY_NONE || slot->tts_isnull[r->key_attno])
	{
		*key_null = true;
		return (Datum) 0;
	}
	return datumCopy(slot->tts_values[r->key_attno], r->key_byval, r->key_len);
}

/* Scan and convert up to batch_rows rows; 0 at the end. */
uint64
ts_table_scan_next(TsBatchReader *r)
{
	uint64		n = 0;
	MemoryContext old;

	ts_batch_start(r, r->batch_rows);
	old = MemoryContextSwitchTo(r->batch_context);
	while (n < (uint64) r->batch_rows && !r->scan_done)
	{
		Datum		key;
		bool		key_null;

		/* a heap scan asked again after its end starts over: never ask it again */
		if (!table_scan_getnextslot(r->scan, ForwardScanDirection, r->slot))
		{
			r->scan_done = true;
			break;
		}

		if (n % TS_SCAN_INTERRUPT_ROWS == 0)
			CHECK_FOR_INTERRUPTS();
		if (TTS_IS_BUFFERTUPLE(r->slot) &&
			ts_batch_convert_tuple(r, n, ((BufferHeapTupleTableSlot *) r->slot)->base.tuple))
		{
			n++;
			continue;
		}
		slot_getsomeattrs(r->slot, r->natts_read);
		key = slot_key(r, &key_null);
		ts_batch_convert_row(r, n, key, key_null, r->slot->tts_values, r->slot->tts_isnull);
		n++;
	}
	MemoryContextSwitchTo(old);
	r->nrows = n;
	return n;
}

/* End the scan (if any) and close the table; its lock is kept to the end of the transaction. */
void
ts_table_scan_close(TsBatchReader *r)
{
	if (r->scan != NULL)
	{
		table_endscan(r->scan);
		ExecDropSingleTupleTableSlot(r->slot);
		r->scan = NULL;
	}
	relation_close(r->rel, NoLock);
	r->rel = NULL;
}
