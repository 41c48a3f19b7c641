/*
 * ts_job_leader.c - the leader's side of a parallel explain_into run
 * (ts_job_workers.h). treeshap._job_workers starts dynamic background
 * workers in the caller's database, acting as the caller, and waits for
 * them: they claim the run's key ranges themselves, so the leader only
 * watches. A worker's ERROR fails the run with that worker's message and
 * stops the others; a cancel, statement_timeout or terminate of the leader
 * stops them too (within the second: they are sent SIGTERM and honour it
 * like any backend). When fewer workers start than asked, the run goes on
 * with those it got and says so. The same start and watch serve a node's
 * pool of shard calls under Citus (ts_citus_pool.c), whose workers, when one
 * fails, end the shard they run before the error is raised.
 */
#include "postgres.h"

#include <unistd.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/postmaster.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/wait_event.h"

#include "backend/ts_job_workers.h"
#include "backend/ts_settings.h"
#include "backend/ts_threads.h"
#include "service/ts_pg_compat.h"

PG_FUNCTION_INFO_V1(treeshap_job_workers);
PG_FUNCTION_INFO_V1(treeshap_job_workers_wanted);

/* How long a stopping leader waits for its workers to end. */
#define TS_JOB_STOP_WAIT_MS 1000

/* How long a pool's other workers may take to end their shards after one failed. */
#define TS_POOL_DRAIN_MS 60000

/* treeshap._job_workers' arguments that travel as text: model, layout, source, key, columns, filter, target, key type, key collation, plan. */
static const int text_args[TS_JOB_TEXT_ARGS] = {2, 3, 4, 5, 6, 7, 8, 10, 11, 14};

/* The workers of the run in progress, for the exit callback. */
static BackgroundWorkerHandle *running[TS_JOB_MAX_WORKERS];
static int	nrunning = 0;
static TsJobShared *running_shared = NULL;

/* Tell every running worker to stop: a flag for the next range, SIGTERM for this one. */
static void
stop_workers(void)
{
	if (running_shared != NULL)
		pg_atomic_write_u32(&running_shared->stop, 1);
	for (int i = 0; i < nrunning; i++)
		TerminateBackgroundWorker(running[i]);
}

/* Wait, up to a bound and deaf to interrupts, for every worker to end. */
static void
wait_workers_gone(void)
{
	HOLD_INTERRUPTS();
	for (int waited = 0; waited < TS_JOB_STOP_WAIT_MS; waited += 10)
	{
		bool		alive = false;
		pid_t		pid;

		for (int i = 0; i < nrunning; i++)
			alive |= GetBackgroundWorkerPid(running[i], &pid) != BGWH_STOPPED;
		if (!alive)
			break;
		pg_usleep(10 * 1000L);
	}
	RESUME_INTERRUPTS();
}

/*
 * A leader terminated mid-run (FATAL passes every PG_CATCH) still stops its
 * workers, and waits for them as an ERROR does: a worker's range may be
 * committing, and its session's end is when a client may read what the run
 * left (which a rerun then completes, test/jobs_check.py).
 */
static void
stop_workers_at_exit(int code, Datum arg)
{
	(void) code;
	(void) arg;
	stop_workers();
	wait_workers_gone();
	nrunning = 0;
}

Size
ts_job_shared_size(int nworkers, Size settings)
{
	return add_size(add_size(offsetof(TsJobShared, slots), mul_size(nworkers, sizeof(TsJobWorkerSlot))), settings);
}

/* The bytes of the segment: the head, the slots, the leader's settings, the run's arguments. */
static Size
shared_size(FunctionCallInfo fcinfo, int nworkers, Size settings)
{
	Size		size = ts_job_shared_size(nworkers, settings);

	for (int a = 0; a < TS_JOB_TEXT_ARGS; a++)
		if (!PG_ARGISNULL(text_args[a]))
			size = add_size(size, VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(text_args[a])) + 1);
	return size;
}

char *
ts_job_shared_init(TsJobShared *sh, int nworkers, Size settings)
{
	Oid			role = GetCurrentRoleId();
	char	   *next;

	memset(sh, 0, offsetof(TsJobShared, slots) + nworkers * sizeof(TsJobWorkerSlot));
	sh->database = MyDatabaseId;
	sh->authenticated_user = GetAuthenticatedUserId();
	sh->outer_user = OidIsValid(role) ? role : GetSessionUserId();
	sh->outer_is_superuser = superuser_arg(sh->outer_user);
	GetUserIdAndSecContext(&sh->current_user, &sh->sec_context);
	sh->leader_pid = MyProcPid;
	sh->nworkers = nworkers;
	pg_atomic_init_u32(&sh->stop, 0);
	pg_atomic_init_u32(&sh->next_call, 0);
	for (int i = 0; i < nworkers; i++)
		pg_atomic_init_u32(&sh->slots[i].state, TS_JOB_WORKER_STARTING);
	/* the workers share the leader's threads: a CPU-only server's cores bound them all */
	sh->cpu_threads = Max(1, ts_cpu_threads_now() / nworkers);
	next = (char *) &sh->slots[nworkers];
	sh->settings_offset = next - (char *) sh;
	SerializeGUCState(settings, next);
	return next + settings;
}

/* Fill the segment: who the workers act as, the run, the leader's settings. */
static TsJobShared *
fill_shared(FunctionCallInfo fcinfo, dsm_segment *seg, int nworkers, Size settings)
{
	TsJobShared *sh = dsm_segment_address(seg);
	char	   *next = ts_job_shared_init(sh, nworkers, settings);

	sh->job = PG_GETARG_INT64(1);
	sh->version = PG_GETARG_INT64(9);
	sh->bulk = PG_GETARG_BOOL(12);
	sh->range_rows = PG_GETARG_INT32(13);
	for (int a = 0; a < TS_JOB_TEXT_ARGS; a++)
	{
		text	   *t;

		sh->arg_null[a] = PG_ARGISNULL(text_args[a]);
		if (sh->arg_null[a])
			continue;
		t = PG_GETARG_TEXT_PP(text_args[a]);
		sh->arg_offset[a] = next - (char *) sh;
		memcpy(next, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		next[VARSIZE_ANY_EXHDR(t)] = '\0';
		next += VARSIZE_ANY_EXHDR(t) + 1;
	}
	return sh;
}

/* Start up to nworkers workers on the segment; the number started. */
static int
start_workers(dsm_segment *seg, int nworkers)
{
	BackgroundWorker worker;
	int			started = 0;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_treeshap");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "ts_job_worker_main");
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_treeshap job worker");
	worker.bgw_main_arg = UInt32GetDatum(dsm_segment_handle(seg));
	worker.bgw_notify_pid = MyProcPid;
	for (int i = 0; i < nworkers; i++)
	{
		pid_t		pid;

		snprintf(worker.bgw_name, BGW_MAXLEN, "pg_treeshap job worker %d of leader %d", i, MyProcPid);
		memcpy(worker.bgw_extra, &i, sizeof(i));
		if (!RegisterDynamicBackgroundWorker(&worker, &running[nrunning]))
			break;
		nrunning++;				/* stopped with the others if the wait is cancelled */
		/* one that stopped at once may have run and ended already: its slot says */
		(void) WaitForBackgroundWorkerStartup(running[nrunning - 1], &pid);
		started++;
	}
	return started;
}

/* Raise the error a worker ended with, or say that it ended without finishing. */
static void
raise_worker_error(TsJobShared *sh, int i)
{
	TsJobWorkerSlot *slot = &sh->slots[i];

	if (pg_atomic_read_u32(&slot->state) != TS_JOB_WORKER_FAILED)
		ereport(ERROR,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				 errmsg("explain_into worker %d ended before the run finished", i),
				 errdetail("It was terminated or crashed; what it had not committed is left for the next run."),
				 errhint("Run explain_into again: it explains the rest.")));
	ereport(ERROR,
			(errcode(slot->sqlerrcode),
			 errmsg_internal("%s", slot->message),
			 slot->detail[0] ? errdetail_internal("%s", slot->detail) : 0,
			 slot->hint[0] ? errhint("%s", slot->hint) : 0,
			 errcontext("explain_into worker %d", i)));
}

/*
 * Wait until every worker has ended; raise the first failure among them. A
 * run's other workers are stopped at once (ts_job_run_workers); a pool's end
 * the shard they run first, so that its shards' jobs are not left half-done
 * and still locked when the job runs them again.
 */
static void
watch_workers(TsJobShared *sh)
{
	int			failed = -1;
	int			draining_ms = 0;

	for (;;)
	{
		bool		alive = false;

		for (int i = 0; i < nrunning; i++)
		{
			pid_t		pid;

			uint32		state = pg_atomic_read_u32(&sh->slots[i].state);

			if (GetBackgroundWorkerPid(running[i], &pid) != BGWH_STOPPED)
				alive = true;
			else if (failed < 0 && (state == TS_JOB_WORKER_RUNNING || state == TS_JOB_WORKER_FAILED))
			{
				/* one never forked (STARTING) left its work to the others */
				if (sh->ncalls == 0)
					raise_worker_error(sh, i);
				failed = i;
				pg_atomic_write_u32(&sh->stop, 1);
			}
		}
		if (!alive)
		{
			if (failed >= 0)
				raise_worker_error(sh, failed);
			return;
		}
		/* a shard that does not end in time is stopped where it is */
		if (failed >= 0 && (draining_ms += 100) > TS_POOL_DRAIN_MS)
			raise_worker_error(sh, failed);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Start up to asked workers on a filled segment and watch them to the end
 * (asked at most TS_JOB_MAX_WORKERS); the number that started. A worker's
 * ERROR is raised here, and an error or a cancel here stops every worker
 * (within the second: they are sent SIGTERM and honour it like any backend).
 */
int
ts_job_run_workers(dsm_segment *seg, TsJobShared *sh, int asked)
{
	static bool exit_callback_set = false;
	int			started;

	if (!exit_callback_set)
	{
		before_shmem_exit(stop_workers_at_exit, (Datum) 0);
		exit_callback_set = true;
	}
	running_shared = sh;
	nrunning = 0;
	PG_TRY();
	{
		started = start_workers(seg, asked);
		if (started < asked)
			ereport(NOTICE,
					(errmsg("explain_into runs with %d of %d workers", started, asked),
					 errdetail("No more background worker slots were free."),
					 errhint("Raise max_worker_processes, or ask for fewer workers.")));
		watch_workers(sh);
	}
	PG_CATCH();
	{
		stop_workers();
		wait_workers_gone();
		nrunning = 0;
		running_shared = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	nrunning = 0;
	running_shared = NULL;
	return started;
}

/*
 * treeshap._job_workers(workers, job, model, layout, source, key, columns,
 * filter, target, version, key_type, key_collation, bulk, range_rows, plan)
 * returns int: up to `workers` background workers run treeshap._job_run_range
 * with these arguments, one range per transaction, and treeshap._job_draw when
 * no range is left to claim, until none is left to draw; the number
 * that started (0: none could, the caller runs the ranges itself). Only a
 * session that holds an explain_into run's lock starts them.
 */
Datum
treeshap_job_workers(PG_FUNCTION_ARGS)
{
	int			asked = PG_GETARG_INT32(0);
	Size		settings;
	dsm_segment *seg;
	int			started;

	if (!ts_job_lock_held())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("explain_into's workers start only inside explain_into")));
	if (asked < 1 || asked > TS_JOB_MAX_WORKERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("workers must be between 0 and %d, not %d", TS_JOB_MAX_WORKERS, asked)));
	if (PG_ARGISNULL(1) || PG_ARGISNULL(9) || PG_ARGISNULL(12) || PG_ARGISNULL(13) || PG_ARGISNULL(14))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the job, version, bulk, range rows and plan of explain_into's workers must not be null")));
	settings = EstimateGUCStateSpace();
	seg = dsm_create(shared_size(fcinfo, asked, settings), 0);
	started = ts_job_run_workers(seg, fill_shared(fcinfo, seg, asked, settings), asked);
	dsm_detach(seg);
	PG_RETURN_INT32(started);
}

/*
 * treeshap._job_workers_wanted(workers int) returns int: the workers a run
 * uses: the argument (0 to TS_JOB_MAX_WORKERS), else treeshap.job_workers,
 * whose -1 is one per core, up to half of max_worker_processes (the GPU
 * service and other extensions take slots too).
 */
Datum
treeshap_job_workers_wanted(PG_FUNCTION_ARGS)
{
	int			workers = PG_ARGISNULL(0) ? ts_job_workers : PG_GETARG_INT32(0);

	if (!PG_ARGISNULL(0) && (workers < 0 || workers > TS_JOB_MAX_WORKERS))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("workers must be between 0 and %d, not %d", TS_JOB_MAX_WORKERS, workers),
				 errhint("0 runs the job in this session alone.")));
	if (workers == -1)
		workers = (int) Max(1, Min(ts_usable_cores(), max_worker_processes / 2));
	PG_RETURN_INT32(workers);
}
