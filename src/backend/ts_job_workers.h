/*
 * ts_job_workers.h - what the leader of a parallel explain_into run shares
 * with its workers (dynamic background workers) in one DSM segment: who they
 * act as, the statement each runs once per key range, the settings they
 * take from the leader, and one slot per worker for its state and error.
 */
#ifndef TS_JOB_WORKERS_H
#define TS_JOB_WORKERS_H

#include "port/atomics.h"

/* At most this many workers for one run. */
#define TS_JOB_MAX_WORKERS 64

/* A worker's state, written by the worker, read by the leader. */
typedef enum TsJobWorkerState
{
	TS_JOB_WORKER_STARTING = 0,
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

/* The segment's head; the statement and the settings follow the slots. */
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
	pg_atomic_uint32 stop;		/* set by the leader: end after the current range */
	Size		statement_offset;	/* NUL-terminated */
	Size		settings_offset;	/* name NUL value NUL ..., then an empty name */
	TsJobWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} TsJobShared;

#endif							/* TS_JOB_WORKERS_H */
