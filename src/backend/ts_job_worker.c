/*
 * ts_job_worker.c - one worker of a parallel explain_into run
 * (ts_job_workers.h), a dynamic background worker. It connects as the
 * leader's authenticated user, takes on the leader's settings, then its
 * role, user and security context, as PostgreSQL's parallel workers do, so
 * every privilege check and row level security policy sees the caller. Then
 * it runs treeshap._job_run_range with the run's arguments, one transaction
 * per range, and treeshap._job_draw (a transaction of its own) when no range
 * is left to claim, until none is left to draw, the leader says stop, or the
 * leader is gone. A worker of a pool runs the pool's calls instead
 * (ts_citus_pool.c).
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "backend/ts_job_workers.h"
#include "service/ts_pg_compat.h"

PGDLLEXPORT void ts_job_worker_main(Datum arg);

/* One range of the run: its claim, rows and done mark in the worker's transaction. */
static const char range_statement[] =
	"SELECT treeshap._job_run_range($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, false, $12)";
#define RANGE_ARGS 12

/* The next range of the run, drawn in a transaction of its own. */
static const char draw_statement[] =
	"SELECT treeshap._job_draw($1, $2, $3, $4, $5, $6, $7, $8)";
#define DRAW_ARGS 8

/* The run's total while its ranges are drawn (the first worker, before its first range). */
static const char count_statement[] =
	"SELECT treeshap._job_count($1, $2, $3, $4, $5, $6)";
#define COUNT_ARGS 6

/* One statement of the worker and its arguments. */
typedef struct WorkerStatement
{
	const char *sql;
	int			nargs;
	Oid			types[RANGE_ARGS];
	Datum		values[RANGE_ARGS];
	char		nulls[RANGE_ARGS];
} WorkerStatement;

/* Set argument a of a statement. */
static void
set_argument(WorkerStatement *st, int a, Oid type, Datum value, bool isnull)
{
	st->types[a] = type;
	st->values[a] = isnull ? (Datum) 0 : value;
	st->nulls[a] = isnull ? 'n' : ' ';
}

/* Set argument a of a statement to the segment's text argument t. */
static void
set_text_argument(WorkerStatement *st, int a, TsJobShared *sh, int t)
{
	set_argument(st, a, TEXTOID,
				 sh->arg_null[t] ? (Datum) 0 : CStringGetTextDatum((char *) sh + sh->arg_offset[t]),
				 sh->arg_null[t]);
}

/* The range statement from the segment: job, the texts (version after the seventh), bulk. */
static void
range_arguments(TsJobShared *sh, WorkerStatement *st)
{
	st->sql = range_statement;
	st->nargs = RANGE_ARGS;
	set_argument(st, 0, INT8OID, Int64GetDatum(sh->job), false);
	for (int t = 0; t < TS_JOB_ARG_PLAN; t++)
		set_text_argument(st, t < 7 ? t + 1 : t + 2, sh, t);
	set_argument(st, 8, INT8OID, Int64GetDatum(sh->version), false);
	set_argument(st, 11, BOOLOID, BoolGetDatum(sh->bulk), false);
}

/* The draw statement from the segment: job, version, source, key, filter, key type, range rows, plan. */
static void
draw_arguments(TsJobShared *sh, WorkerStatement *st)
{
	st->sql = draw_statement;
	st->nargs = DRAW_ARGS;
	set_argument(st, 0, INT8OID, Int64GetDatum(sh->job), false);
	set_argument(st, 1, INT8OID, Int64GetDatum(sh->version), false);
	set_text_argument(st, 2, sh, TS_JOB_ARG_SOURCE);
	set_text_argument(st, 3, sh, TS_JOB_ARG_KEY);
	set_text_argument(st, 4, sh, TS_JOB_ARG_FILTER);
	set_text_argument(st, 5, sh, TS_JOB_ARG_KEY_TYPE);
	set_argument(st, 6, INT4OID, Int32GetDatum(sh->range_rows), false);
	set_text_argument(st, 7, sh, TS_JOB_ARG_PLAN);
}

/* The count statement from the segment: job, source, key, filter, key type, range rows. */
static void
count_arguments(TsJobShared *sh, WorkerStatement *st)
{
	st->sql = count_statement;
	st->nargs = COUNT_ARGS;
	set_argument(st, 0, INT8OID, Int64GetDatum(sh->job), false);
	set_text_argument(st, 1, sh, TS_JOB_ARG_SOURCE);
	set_text_argument(st, 2, sh, TS_JOB_ARG_KEY);
	set_text_argument(st, 3, sh, TS_JOB_ARG_FILTER);
	set_text_argument(st, 4, sh, TS_JOB_ARG_KEY_TYPE);
	set_argument(st, 5, INT4OID, Int32GetDatum(sh->range_rows), false);
}

/*
 * Run a statement in its own transaction; whether its one value is neither
 * null nor false (a range claimed, a range drawn). The user and security
 * context are the caller's inside the transaction only: a transaction starts
 * from a context of none.
 */
static bool
run_statement(TsJobShared *sh, WorkerStatement *st)
{
	Datum		value;
	bool		isnull;
	bool		result;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SetUserIdAndSecContext(sh->current_user, sh->sec_context);
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, st->sql);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(st->sql, st->nargs, st->types, st->values, st->nulls, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "a statement of an explain_into worker returned no row");
	value = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	result = !isnull && (TupleDescAttr(SPI_tuptable->tupdesc, 0)->atttypid != BOOLOID || DatumGetBool(value));
	SPI_finish();
	PopActiveSnapshot();
	SetUserIdAndSecContext(sh->current_user, 0);
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return result;
}

bool
ts_job_leader_wants_more(TsJobShared *sh)
{
	return pg_atomic_read_u32(&sh->stop) == 0 && BackendPidGetProc(sh->leader_pid) != NULL;
}

/* Copy at most size - 1 bytes of text into a slot's field, never cutting a character. */
static void
copy_clipped(char *dst, const char *src, int size)
{
	int			len;

	if (src == NULL)
		src = "";
	len = pg_mbcliplen(src, strlen(src), size - 1);
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Copy the error being handled into the slot, for the leader to raise. */
static void
record_error(TsJobWorkerSlot *slot)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	slot->sqlerrcode = edata->sqlerrcode;
	copy_clipped(slot->message, edata->message ? edata->message : "unknown error", sizeof(slot->message));
	copy_clipped(slot->detail, edata->detail, sizeof(slot->detail));
	copy_clipped(slot->hint, edata->hint, sizeof(slot->hint));
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, TS_JOB_WORKER_FAILED);
}

void
ts_job_become_caller(TsJobShared *sh)
{
	char		threads[16];

	BackgroundWorkerInitializeConnectionByOid(sh->database, sh->authenticated_user, 0);
	StartTransactionCommand();
	RestoreGUCState((char *) sh + sh->settings_offset);
	snprintf(threads, sizeof(threads), "%d", sh->cpu_threads);
	SetConfigOption("treeshap.cpu_threads", threads, PGC_USERSET, PGC_S_SESSION);

	/*
	 * A range's commit need not wait for its WAL to reach disk (on 2 cores,
	 * a third of two workers' samples waited on WAL, and a run took a fifth
	 * longer with flushes at each commit): the worker
	 * flushes it all before it says it is done. A crash before that loses a
	 * range's rows and its done mark together, and the next run explains
	 * them once. Not under Citus, whose two-phase commit of a distributed
	 * target's shards would then outlive a lost local commit.
	 */
	if (!OidIsValid(get_extension_oid("citus", true)))
		SetConfigOption("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION);
	CommitTransactionCommand();
	SetCurrentRoleId(sh->outer_user, sh->outer_is_superuser);
	SetUserIdAndSecContext(sh->current_user, 0);
}

/* Run the run's ranges until none is left to claim or draw, or the leader says stop. */
static void
run_ranges(TsJobShared *sh, TsJobWorkerSlot *slot, int index)
{
	WorkerStatement range;
	WorkerStatement draw;
	WorkerStatement count;

	range_arguments(sh, &range);
	draw_arguments(sh, &draw);
	count_arguments(sh, &count);
	if (index == 0)
		(void) run_statement(sh, &count);
	while (ts_job_leader_wants_more(sh))
	{
		if (run_statement(sh, &range))
			slot->ranges++;
		else if (!run_statement(sh, &draw))
			break;
	}
}

/* Entry point: attach, become the caller, run ranges (or a pool's calls) until none is left. */
void
ts_job_worker_main(Datum arg)
{
	dsm_segment *seg;
	TsJobShared *sh;
	TsJobWorkerSlot *slot;
	int			index;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	memcpy(&index, MyBgworkerEntry->bgw_extra, sizeof(index));
	CurrentResourceOwner = ResourceOwnerCreate(NULL, "pg_treeshap job worker");
	seg = dsm_attach(DatumGetUInt32(arg));
	if (seg == NULL)
		proc_exit(0);			/* the leader is gone already */
	sh = dsm_segment_address(seg);
	if (index < 0 || index >= sh->nworkers)
		proc_exit(1);
	slot = &sh->slots[index];
	pg_atomic_write_u32(&slot->state, TS_JOB_WORKER_RUNNING);
	PG_TRY();
	{
		ts_job_become_caller(sh);
		if (sh->ncalls > 0)
			ts_citus_pool_work(sh, slot);
		else
			run_ranges(sh, slot, index);
	}
	PG_CATCH();
	{
		record_error(slot);
		/* a pool's other workers end the shard they run, and draw no more */
		if (sh->ncalls > 0)
			pg_atomic_write_u32(&sh->stop, 1);
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* the ranges' commits did not wait for their WAL (ts_job_become_caller) */
	if (!XLogRecPtrIsInvalid(XactLastCommitEnd))
		XLogFlush(XactLastCommitEnd);
	pg_atomic_write_u32(&slot->state, TS_JOB_WORKER_DONE);
	dsm_detach(seg);
	proc_exit(0);
}
