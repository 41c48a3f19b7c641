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
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "pgstat.h"
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
	MemoryContext old;
	List	   *plans;
	Portal		portal;
	DestReceiver *dest = CreateDestReceiver(DestNone);
	QueryCompletion qc;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SetUserIdAndSecContext(sh->current_user, sh->sec_context);
	pgstat_report_activity(STATE_RUNNING, sql);
	old = MemoryContextSwitchTo(cxt);
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
	MemoryContextSwitchTo(old);
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

/*
 * treeshap._citus_shard_pool(workers int, calls text[]) returns int: up to
 * `workers` background workers acting as the caller run the calls (each one
 * CALL of treeshap._citus_one_shard_into), each drawing the next until none
 * is left; the number that started (0: none could, and none ran, so the
 * caller runs them itself). A worker's ERROR stops the others and is raised
 * here, as a cancel here stops them (ts_job_run_workers).
 */
Datum
treeshap_citus_shard_pool(PG_FUNCTION_ARGS)
{
	int			asked = PG_GETARG_INT32(0);
	int			ncalls;
	char	  **calls = pool_calls(PG_GETARG_ARRAYTYPE_P(1), &ncalls);
	Size		settings = EstimateGUCStateSpace();
	Size		size;
	dsm_segment *seg;
	TsJobShared *sh;
	char	   *next;
	int			started;

	if (asked < 1 || asked > TS_JOB_MAX_WORKERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("workers must be between 1 and %d, not %d", TS_JOB_MAX_WORKERS, asked)));
	if (ncalls == 0)
		PG_RETURN_INT32(0);
	size = ts_job_shared_size(asked, settings);
	for (int i = 0; i < ncalls; i++)
		size = add_size(size, strlen(calls[i]) + 1);
	seg = dsm_create(size, 0);
	sh = dsm_segment_address(seg);
	next = ts_job_shared_init(sh, asked, settings);
	/* each worker runs its shard as this session would, with its share of the cores */
	sh->cpu_threads = ts_cpu_threads_now();
	sh->ncalls = ncalls;
	sh->calls_offset = next - (char *) sh;
	for (int i = 0; i < ncalls; i++)
		next += strlcpy(next, calls[i], strlen(calls[i]) + 1) + 1;
	started = ts_job_run_workers(seg, sh, asked);
	if (started > 0 && pg_atomic_read_u32(&sh->next_call) < (uint32) ncalls)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("the workers of a shard pool ended before they drew every shard"),
				 errdetail("%u of %d shards were drawn.", pg_atomic_read_u32(&sh->next_call), ncalls)));
	dsm_detach(seg);
	PG_RETURN_INT32(started);
}
