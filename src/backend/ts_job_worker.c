/*
 * ts_job_worker.c - one worker of a parallel explain_into run
 * (ts_job_workers.h), a dynamic background worker. It connects as the
 * leader's authenticated user and takes on the leader's role, user and
 * security context, as PostgreSQL's parallel workers do, so every privilege
 * check and row level security policy sees the caller. Then it runs the
 * leader's statement, one transaction per call, until the statement finds
 * no range left to claim, the leader says stop, or the leader is gone.
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "backend/ts_job_workers.h"
#include "service/ts_pg_compat.h"

PGDLLEXPORT void ts_job_worker_main(Datum arg);

/* Take on the leader's settings: name NUL value NUL pairs, an empty name last. */
static void
apply_settings(const char *pairs)
{
	while (*pairs != '\0')
	{
		const char *value = pairs + strlen(pairs) + 1;

		SetConfigOption(pairs, value, PGC_USERSET, PGC_S_SESSION);
		pairs = value + strlen(value) + 1;
	}
}

/* Run the statement once in its own transaction; whether it claimed a range. */
static bool
run_one_range(const char *statement)
{
	bool		claimed;
	bool		isnull;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, statement);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute(statement, false, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "the range statement of an explain_into worker returned no row");
	(void) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	claimed = !isnull;
	SPI_finish();
	PopActiveSnapshot();
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

/* Copy the error being handled into the slot, for the leader to raise. */
static void
record_error(TsJobWorkerSlot *slot)
{
	ErrorData  *edata;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	edata = CopyErrorData();
	MemoryContextSwitchTo(old);
	slot->sqlerrcode = edata->sqlerrcode;
	strlcpy(slot->message, edata->message ? edata->message : "unknown error", sizeof(slot->message));
	strlcpy(slot->detail, edata->detail ? edata->detail : "", sizeof(slot->detail));
	strlcpy(slot->hint, edata->hint ? edata->hint : "", sizeof(slot->hint));
	pg_write_barrier();
	pg_atomic_write_u32(&slot->state, TS_JOB_WORKER_FAILED);
}

/* Entry point: attach, become the caller, run ranges until none is left. */
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
		BackgroundWorkerInitializeConnectionByOid(sh->database, sh->authenticated_user, 0);
		SetCurrentRoleId(sh->outer_user, sh->outer_is_superuser);
		SetUserIdAndSecContext(sh->current_user, sh->sec_context);
		StartTransactionCommand();
		apply_settings((char *) sh + sh->settings_offset);
		CommitTransactionCommand();
		while (leader_wants_more(sh) && run_one_range((char *) sh + sh->statement_offset))
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
