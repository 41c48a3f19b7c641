/*
 * ts_job_worker.c - one worker of a parallel explain_into run
 * (ts_job_workers.h), a dynamic background worker. It connects as the
 * leader's authenticated user, takes on the leader's settings, then its
 * role, user and security context, as PostgreSQL's parallel workers do, so
 * every privilege check and row level security policy sees the caller. Then
 * it runs treeshap._job_run_range with the run's arguments, one transaction
 * per range, until no range is left, the leader says stop, or the leader is
 * gone.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
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

/* The statement's arguments from the segment: job, the texts (version among them), bulk. */
static void
range_arguments(TsJobShared *sh, Oid *types, Datum *values, char *nulls)
{
	int			a = 0;

	types[0] = INT8OID;
	values[0] = Int64GetDatum(sh->job);
	nulls[0] = ' ';
	for (int t = 0; t < TS_JOB_TEXT_ARGS; t++)
	{
		a = t < 7 ? t + 1 : t + 2;	/* the version comes after the seventh text */
		types[a] = TEXTOID;
		nulls[a] = sh->arg_null[t] ? 'n' : ' ';
		values[a] = sh->arg_null[t] ? (Datum) 0 : CStringGetTextDatum((char *) sh + sh->arg_offset[t]);
	}
	types[8] = INT8OID;
	values[8] = Int64GetDatum(sh->version);
	nulls[8] = ' ';
	types[11] = BOOLOID;
	values[11] = BoolGetDatum(sh->bulk);
	nulls[11] = ' ';
}

/*
 * Run one range in its own transaction; whether one was claimed. The user
 * and security context are the caller's inside the transaction only: a
 * transaction starts from a context of none.
 */
static bool
run_one_range(TsJobShared *sh, Oid *types, Datum *values, char *nulls)
{
	bool		claimed;
	bool		isnull;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SetUserIdAndSecContext(sh->current_user, sh->sec_context);
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, range_statement);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args(range_statement, RANGE_ARGS, types, values, nulls, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "the range statement of an explain_into worker returned no row");
	(void) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	claimed = !isnull;
	SPI_finish();
	PopActiveSnapshot();
	SetUserIdAndSecContext(sh->current_user, 0);
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return claimed;
}

/* Whether the leader still runs and wants more ranges. */
static bool
leader_wants_more(TsJobShared *sh)
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

/* Connect as the leader's session, with its settings and identity. */
static void
become_the_caller(TsJobShared *sh)
{
	char		threads[16];

	BackgroundWorkerInitializeConnectionByOid(sh->database, sh->authenticated_user, 0);
	StartTransactionCommand();
	RestoreGUCState((char *) sh + sh->settings_offset);
	snprintf(threads, sizeof(threads), "%d", sh->cpu_threads);
	SetConfigOption("treeshap.cpu_threads", threads, PGC_USERSET, PGC_S_SESSION);
	CommitTransactionCommand();
	SetCurrentRoleId(sh->outer_user, sh->outer_is_superuser);
	SetUserIdAndSecContext(sh->current_user, 0);
}

/* Entry point: attach, become the caller, run ranges until none is left. */
void
ts_job_worker_main(Datum arg)
{
	dsm_segment *seg;
	TsJobShared *sh;
	TsJobWorkerSlot *slot;
	int			index;
	Oid			types[RANGE_ARGS];
	Datum		values[RANGE_ARGS];
	char		nulls[RANGE_ARGS];

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
		become_the_caller(sh);
		range_arguments(sh, types, values, nulls);
		while (leader_wants_more(sh) && run_one_range(sh, types, values, nulls))
			slot->ranges++;
	}
	PG_CATCH();
	{
		record_error(slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pg_atomic_write_u32(&slot->state, TS_JOB_WORKER_DONE);
	dsm_detach(seg);
	proc_exit(0);
}
