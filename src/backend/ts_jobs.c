/*
 * ts_jobs.c - the lock of an explain_into run. It is a session-level
 * advisory lock (the same tag as pg_try_advisory_lock(1953720432, key)), so
 * it outlives the transactions the procedure commits and keeps a second run
 * out. The procedure releases it on every error it catches, but a cancel
 * can also land between two of its statements, outside its exception
 * block; the error then escapes the procedure, and the session, idle but
 * alive, would keep the lock. An abort callback releases it then.
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "backend/ts_job_workers.h"

/* First key of every job lock: 'tshp'. */
#define TS_JOB_LOCK_CLASS 1953720432

PG_FUNCTION_INFO_V1(treeshap_job_lock);
PG_FUNCTION_INFO_V1(treeshap_job_unlock);

static bool job_lock_held = false;
static LOCKTAG job_lock_tag;

bool
ts_job_lock_held(void)
{
	return job_lock_held;
}

/* Release the job lock if this session holds it. */
static void
release_job_lock(void)
{
	if (!job_lock_held)
		return;
	job_lock_held = false;
	LockRelease(&job_lock_tag, ExclusiveLock, true);
}

/* A top-level abort while a run holds the lock means the run has ended. */
static void
job_lock_abort_callback(XactEvent event, void *arg)
{
	(void) arg;
	if (event == XACT_EVENT_ABORT)
		release_job_lock();
}

/* treeshap._job_lock(key int): take the run lock of a target without waiting. */
Datum
treeshap_job_lock(PG_FUNCTION_ARGS)
{
	static bool callback_registered = false;
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) TS_JOB_LOCK_CLASS, (uint32) PG_GETARG_INT32(0), 2);
	if (job_lock_held)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("this session already runs an explain_into job")));
	if (!callback_registered)
	{
		RegisterXactCallback(job_lock_abort_callback, NULL);
		callback_registered = true;
	}
	if (LockAcquire(&tag, ExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL)
		PG_RETURN_BOOL(false);
	job_lock_tag = tag;
	job_lock_held = true;
	PG_RETURN_BOOL(true);
}

/* treeshap._job_unlock(): release the run lock at the end of a run. */
Datum
treeshap_job_unlock(PG_FUNCTION_ARGS)
{
	release_job_lock();
	PG_RETURN_VOID();
}
