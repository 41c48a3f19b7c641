/*
 * ts_citus_pool.c - a node's shards of a job over a Citus table, run by a
 * pool of background workers (ts_job_workers.h) that the node's one session
 * of the job starts: each worker draws the next shard's call and runs it as
 * a statement of its own, until none is left. One connection a node, not one
 * a core: Citus opens its connections one after another (about 5 ms each on
 * a 16-core host), and a worker that ends its shard early takes the next.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "tcop/pquery.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/portal.h"
#include "utils/snapmgr.h"

#include "backend/ts_job_workers.h"
#include "backend/ts_threads.h"
#include "service/ts_pg_compat.h"

PG_FUNCTION_INFO_V1(treeshap_citus_shard_pool);

/* The one procedure a pool's call may name: a shard's job (treeshap._citus_one_shard_into). */
static const char *const pool_procedure[2] = {"treeshap", "_citus_one_shard_into"};

/* Refuse a call that is not one CALL of the pool's procedure. */
static void
check_call(const char *sql)
{
	List	   *stmts = raw_parser(sql, RAW_PARSE_DEFAULT);
	CallStmt   *call;
	List	   *name;

	call = list_length(stmts) == 1 ? (CallStmt *) linitial_node(RawStmt, stmts)->stmt : NULL;
	name = call != NULL && IsA(call, CallStmt) ? call->funccall->funcname : NIL;
	if (list_length(name) != 2 || strcmp(strVal(linitial(name)), pool_procedure[0]) != 0 ||
		strcmp(strVal(lsecond(name)), pool_procedure[1]) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a shard pool runs only calls of %s.%s", pool_procedure[0], pool_procedure[1])));
}

/* The pool's calls as C strings, each checked; their count in *n. */
static char **
pool_calls(ArrayType *array, int *n)
{
	Datum	   *elems;
	bool	   *nulls;
	char	  **calls;

	if (ARR_NDIM(array) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("a shard pool's calls must be a one-dimensional array")));
	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, n);
	calls = palloc(Max(*n, 1) * sizeof(char *));
	for (int i = 0; i < *n; i++)
	{
		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("a shard pool's calls must not be null")));
		calls[i] = TextDatumGetCString(elems[i]);
		check_call(calls[i]);
	}
	return calls;
}

/* The i-th of the segment's calls. */
static const char *
nth_call(TsJobShared *sh, uint32 i)
{
	const char *call = (const char *) sh + sh->calls_offset;

	while (i-- > 0)
		call += strlen(call) + 1;
	return call;
}

/*
 * Run one call as a top-level statement of its own, as a client's would run:
 * through a portal, so that the procedure it calls may commit (its parse
 * and plan live in a context of their own, which outlives those commits).
 */
static void
run_call(TsJobShared *sh, const char *sql)
{
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "pg_treeshap pool call", ALLOCSET_DEFAULT_SIZES);
	List	   *plans;
	Portal		portal;
	DestReceiver *dest = CreateDestReceiver(DestNone);
	QueryCompletion qc;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SetUserIdAndSecContext(sh->current_user, sh->sec_context);
	pgstat_report_activity(STATE_RUNNING, sql);
	MemoryContextSwitchTo(cxt);
	PushActiveSnapshot(GetTransactionSnapshot());
	plans = pg_plan_queries(pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, pg_parse_query(sql)),
															   sql, NULL, 0, NULL),
							sql, CURSOR_OPT_PARALLEL_OK, NULL);
	PopActiveSnapshot();
	portal = CreatePortal("", true, true);
	portal->visible = false;
	PortalDefineQuery(portal, NULL, sql, CMDTAG_CALL, plans, NULL);
	PortalStart(portal, NULL, 0, InvalidSnapshot);
	InitializeQueryCompletion(&qc);
	(void) ts_portal_run(portal, dest, &qc);
	PortalDrop(portal, false);
	/* (the transaction that began the call, and its contexts, ended at its first commit) */
	MemoryContextSwitchTo(TopTransactionContext);
	SetUserIdAndSecContext(sh->current_user, 0);
	CommitTransactionCommand();
	MemoryContextDelete(cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
}

void
ts_citus_pool_work(TsJobShared *sh, TsJobWorkerSlot *slot)
{
	while (ts_job_leader_wants_more(sh))
	{
		uint32		i = pg_atomic_fetch_add_u32(&sh->next_call, 1);

		if (i >= (uint32) sh->ncalls)
			break;
		run_call(sh, nth_call(sh, i));
		slot->ranges++;
	}
}

/* The most workers one pool takes: the cores, and half of the server's background worker slots. */
static int
pool_cap(void)
{
	return (int) Max(1, Min(Min(ts_usable_cores(), max_worker_processes / 2), TS_JOB_MAX_WORKERS));
}

/* A segment holding the pool's calls, for asked workers acting as this session. */
static TsJobShared *
fill_pool(dsm_segment **seg, int asked, char **calls, int ncalls)
{
	Size		settings = EstimateGUCStateSpace();
	Size		size = ts_job_shared_size(asked, settings);
	TsJobShared *sh;
	char	   *next;

	for (int i = 0; i < ncalls; i++)
		size = add_size(size, strlen(calls[i]) + 1);
	*seg = dsm_create(size, 0);
	sh = dsm_segment_address(*seg);
	next = ts_job_shared_init(sh, asked, settings);
	/* each worker runs its shard as this session would, with its share of the cores */
	sh->cpu_threads = ts_cpu_threads_now();
	sh->ncalls = ncalls;
	sh->calls_offset = next - (char *) sh;
	for (int i = 0; i < ncalls; i++)
		next += strlcpy(next, calls[i], strlen(calls[i]) + 1) + 1;
	return sh;
}

/* The procedure's one output, `started`, as the record CALL expects. */
static Datum
pool_result(FunctionCallInfo fcinfo, int started)
{
	TupleDesc	desc;
	Datum		value = Int32GetDatum(started);
	bool		isnull = false;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "treeshap._citus_shard_pool must return a record");
	return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), &value, &isnull));
}

/*
 * CALL treeshap._citus_shard_pool(workers int, calls text[], INOUT started
 * int): up to `workers` background workers acting as the caller (at most
 * pool_cap()) run the calls, each one CALL of treeshap._citus_one_shard_into,
 * each drawing the next until none is left; `started`, the number that
 * started (0: none could, and none ran, so the caller runs them itself).
 * Called as a procedure, it first commits, so that the node's session holds
 * no snapshot and no lock while its shards run. A worker's ERROR is raised
 * here once the others have ended their shards; a cancel here stops them.
 */
Datum
treeshap_citus_shard_pool(PG_FUNCTION_ARGS)
{
	/* (inside an exception block of its caller it cannot commit, and holds on instead) */
	bool		nonatomic = fcinfo->context != NULL && IsA(fcinfo->context, CallContext) &&
		!castNode(CallContext, fcinfo->context)->atomic && !IsSubTransaction();
	int			asked;
	int			ncalls;
	char	  **calls;
	dsm_segment *seg;
	TsJobShared *sh;
	int			started;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("a shard pool's workers and calls must not be null")));
	asked = PG_GETARG_INT32(0);
	if (asked < 1 || asked > TS_JOB_MAX_WORKERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("workers must be between 1 and %d, not %d", TS_JOB_MAX_WORKERS, asked)));
	/* its workers' calls commit: not where this session could not */
	if (InSecurityRestrictedOperation() || InLocalUserIdChange())
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_TERMINATION),
				 errmsg("a shard pool cannot run inside a security-restricted operation or a SECURITY DEFINER function")));
	calls = pool_calls(PG_GETARG_ARRAYTYPE_P(1), &ncalls);
	if (ncalls == 0)
		PG_RETURN_DATUM(pool_result(fcinfo, 0));
	asked = Min(asked, pool_cap());
	if (nonatomic)
	{
		SPI_connect_ext(SPI_OPT_NONATOMIC);
		SPI_commit();
	}
	sh = fill_pool(&seg, asked, calls, ncalls);
	/* (filling it may have read the catalog: no snapshot of it kept while the pool runs) */
	InvalidateCatalogSnapshot();
	started = ts_job_run_workers(seg, sh, asked);
	if (started > 0 && pg_atomic_read_u32(&sh->next_call) < (uint32) ncalls)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("the workers of a shard pool ended before they drew every shard"),
				 errdetail("%u of %d shards were drawn.", pg_atomic_read_u32(&sh->next_call), ncalls)));
	dsm_detach(seg);
	if (nonatomic)
		SPI_finish();
	PG_RETURN_DATUM(pool_result(fcinfo, started));
}
