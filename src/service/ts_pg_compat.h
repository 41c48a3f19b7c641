/*
 * ts_pg_compat.h - the differences between the PostgreSQL versions
 * pg_treeshap builds on (15, 16, 17, 18), as names the rest of src/ uses
 * the same way on each. PG_VERSION_NUM is tested here and nowhere else
 * (test/core/layers_check.py checks); the service layer is the lowest that
 * includes PostgreSQL's headers, so every file above can include this one.
 * Include it after postgres.h.
 */
#ifndef TS_PG_COMPAT_H
#define TS_PG_COMPAT_H

#include "access/htup_details.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "storage/latch.h"
#include "storage/proc.h"

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 190000
#error "pg_treeshap builds on PostgreSQL 15, 16, 17 and 18"
#endif

/* 16 moved the varlena macros (VARDATA_ANY, SET_VARSIZE, ...) out of postgres.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * 18 replaced pg_attribute_noreturn(), written after a declaration, with the
 * pg_noreturn prefix; before 18 GCC and clang take the attribute in front too.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * A PGPROC's index in ProcGlobal->allProcs, which numbers the service's
 * request slots: a field of PGPROC up to 16, ProcNumber from 17. As uint32,
 * the type the service shares it in.
 */
#if PG_VERSION_NUM >= 170000
#define ts_proc_number(proc) ((int) GetNumberFromPGProc(proc))
#define TS_INVALID_PROC_NUMBER ((uint32) INVALID_PROC_NUMBER)
#else
#define ts_proc_number(proc) ((proc)->pgprocno)
#define TS_INVALID_PROC_NUMBER ((uint32) INVALID_PGPROCNO)
#endif

/*
 * A wait event set freed by its creator before any error can escape: 17
 * takes the resource owner that would track it (none), earlier versions the
 * memory context it lives in.
 */
#if PG_VERSION_NUM >= 170000
#define ts_create_wait_event_set(nevents) CreateWaitEventSet(NULL, (nevents))
#else
#define ts_create_wait_event_set(nevents) CreateWaitEventSet(CurrentMemoryContext, (nevents))
#endif

/*
 * A column's storage changed in a tuple descriptor of our own: 18 forms
 * tuples from a compact copy of each column (attispackable among them),
 * which must be refreshed after the change; before 18 nothing to do.
 */
#if PG_VERSION_NUM >= 180000
#define ts_tupdesc_column_changed(desc, i) populate_compact_attribute((desc), (i))
#else
#define ts_tupdesc_column_changed(desc, i) ((void) 0)
#endif

/*
 * 18 added virtual generated columns, computed as a row is read: the heap
 * holds NULL in their place, so only a query reads their values.
 */
#if PG_VERSION_NUM >= 180000
#define ts_has_virtual_columns(desc) ((desc)->constr != NULL && (desc)->constr->has_generated_virtual)
#else
#define ts_has_virtual_columns(desc) false
#endif

/*
 * Run a portal to its end as a top-level statement: 18 dropped PortalRun's
 * run_once (a portal runs once). Include tcop/pquery.h first.
 */
#if PG_VERSION_NUM >= 180000
#define ts_portal_run(portal, dest, qc) PortalRun((portal), FETCH_ALL, true, (dest), (dest), (qc))
#else
#define ts_portal_run(portal, dest, qc) PortalRun((portal), FETCH_ALL, true, true, (dest), (dest), (qc))
#endif

/* A minimal tuple: 18 asks for the bytes to reserve in front of it (none here). */
#if PG_VERSION_NUM >= 180000
#define ts_form_minimal_tuple(desc, values, nulls) heap_form_minimal_tuple((desc), (values), (nulls), 0)
#else
#define ts_form_minimal_tuple(desc, values, nulls) heap_form_minimal_tuple((desc), (values), (nulls))
#endif

/* A slot's index entries, no ON CONFLICT arbiter: 16 added whether only summarizing indexes change. */
#if PG_VERSION_NUM >= 160000
#define ts_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define ts_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

/* Whether a table has generated columns: 18 added virtual ones to the stored. */
#if PG_VERSION_NUM >= 180000
#define ts_has_generated_columns(constr) ((constr)->has_generated_stored || (constr)->has_generated_virtual)
#else
#define ts_has_generated_columns(constr) ((constr)->has_generated_stored)
#endif

/*
 * Check SELECT on the columns (executor column-set bits) of a relation as the
 * executor checks a query's range table, ereporting on a violation: up to 15
 * the permissions sit in the range table entry, from 16 in a separate
 * RTEPermissionInfo the entry points to.
 */
static inline void
ts_check_select_columns(Oid relid, char relkind, Bitmapset *columns)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);

	rte->rtekind = RTE_RELATION;
	rte->relid = relid;
	rte->relkind = relkind;
	rte->rellockmode = AccessShareLock;
#if PG_VERSION_NUM >= 160000
	{
		RTEPermissionInfo *perm = makeNode(RTEPermissionInfo);

		perm->relid = relid;
		perm->inh = false;
		perm->requiredPerms = ACL_SELECT;
		perm->selectedCols = columns;
		rte->perminfoindex = 1;
		ExecCheckPermissions(list_make1(rte), list_make1(perm), true);
	}
#else
	rte->requiredPerms = ACL_SELECT;
	rte->selectedCols = columns;
	ExecCheckRTPerms(list_make1(rte), true);
#endif
}

#endif							/* TS_PG_COMPAT_H */
