/*
 * ts_job_workers.h - what the leader of a parallel explain_into run shares
 * with its workers (dynamic background workers) in one DSM segment: who they
 * act as, the run whose ranges they claim (treeshap._job_run_range's
 * arguments), the leader's settings (SerializeGUCState), and one slot per
 * worker for its state and error. The same workers also run a node's shards
 * of a job over a Citus table, as a pool that draws one shard's call at a
 * time (ts_citus_pool.c). Also the job lock's test (ts_jobs.c).
 */
#ifndef TS_JOB_WORKERS_H
#define TS_JOB_WORKERS_H

#include "port/atomics.h"
#include "storage/dsm.h"

/* At most this many workers for one run. */
#define TS_JOB_MAX_WORKERS 64

/* treeshap._job_workers' text arguments: _job_run_range's after the job, then the plan. */
#define TS_JOB_TEXT_ARGS 10
#define TS_JOB_ARG_SOURCE 2
#define TS_JOB_ARG_KEY 3
#define TS_JOB_ARG_FILTER 5
#define TS_JOB_ARG_KEY_TYPE 7
#define TS_JOB_ARG_PLAN 9

/* A worker's state, written by the worker, read by the leader. */
typedef enum TsJobWorkerState
{
	TS_JOB_WORKER_STARTING = 0, /* not attached yet: it may never run */
	TS_JOB_WORKER_RUNNING,
	TS_JOB_WORKER_DONE,			/* no range left: ended cleanly */
	TS_JOB_WORKER_FAILED		/* ended with the error in its slot */
} TsJobWorkerState;

/* One worker's slot: its state, what it wrote, and the error that ended it. */
typedef struct TsJobWorkerSlot
{
	pg_atomic_uint32 state;
	int64		ranges;
	int			sqlerrcode;
	char		message[1024];
	char		detail[1024];
	char		hint[512];
} TsJobWorkerSlot;

/* The segment's head; the settings and the run's arguments follow the slots. */
typedef struct TsJobShared
{
	Oid			database;
	Oid			authenticated_user;
	Oid			outer_user;		/* the current role, or the session user */
	bool		outer_is_superuser;
	Oid			current_user;
	int			sec_context;
	int			leader_pid;
	int			nworkers;
	pg_atomic_uint32 stop;		/* set by the leader (or a pool's failing worker): end after this range or call */
	int			ncalls;			/* a pool's calls (0: a run's ranges) */
	pg_atomic_uint32 next_call;	/* the next call a worker of the pool draws */
	Size		calls_offset;	/* the calls: NUL-terminated texts one after another */
	int64		job;
	int64		version;
	bool		bulk;
	int32		range_rows;		/* keys per range a worker draws */
	int			cpu_threads;	/* each worker's share of the leader's threads */
	bool		arg_null[TS_JOB_TEXT_ARGS];
	Size		arg_offset[TS_JOB_TEXT_ARGS];	/* NUL-terminated texts */
	Size		settings_offset;	/* SerializeGUCState's bytes */
	TsJobWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} TsJobShared;

/* Whether this session holds an explain_into run's lock (ts_jobs.c). */
extern bool ts_job_lock_held(void);

/* The bytes of a segment's head, its nworkers slots and settings bytes of the leader's settings (ts_job_leader.c). */
extern Size ts_job_shared_size(int nworkers, Size settings);

/* Fill a segment's head: who the workers act as, their slots, the leader's settings; where the rest may go (ts_job_leader.c). */
extern char *ts_job_shared_init(TsJobShared *sh, int nworkers, Size settings);

/* Start up to asked workers on a filled segment and watch them to the end; the number started (ts_job_leader.c). */
extern int	ts_job_run_workers(dsm_segment *seg, TsJobShared *sh, int asked);

/* Connect a worker as the leader's session, with its settings and identity (ts_job_worker.c). */
extern void ts_job_become_caller(TsJobShared *sh);

/* Whether a worker's leader still runs and wants more work (ts_job_worker.c). */
extern bool ts_job_leader_wants_more(TsJobShared *sh);

/* A worker of a pool: draw the pool's calls and run each until none is left (ts_citus_pool.c). */
extern void ts_citus_pool_work(TsJobShared *sh, TsJobWorkerSlot *slot);

#endif							/* TS_JOB_WORKERS_H */
