/*
 * ts_executor.h - the process that holds the CUDA contexts. The service's
 * worker (a postmaster child) forks it and never touches CUDA itself: the
 * postmaster answers the abnormal exit of any of its children by ending
 * every session, so the one process that may die of a GPU fault or a
 * SIGKILL must not be one of them (measured: a SIGKILLed worker took an
 * unrelated session's connection with it). The executor uses no
 * PostgreSQL code and no PostgreSQL shared memory: it reports through a
 * shared anonymous mapping and a pipe, and the worker relays.
 */
#ifndef TS_EXECUTOR_H
#define TS_EXECUTOR_H

#include <sys/types.h>

#include "cuda/ts_cuda.h"

#define TS_EXECUTOR_MAX_DEVICES 16

/* What the executor found, written before it reports ready. */
typedef struct TsExecutorReport
{
	int			num_devices;
	TsGpuDeviceInfo devices[TS_EXECUTOR_MAX_DEVICES];
	char		message[256];	/* why there is no device, when there is none */
} TsExecutorReport;

/* A running executor as its parent sees it. */
typedef struct TsExecutor
{
	pid_t		pid;			/* 0 when none runs */
	int			pipe_fd;		/* read end: a byte when ready, end of file when gone */
	TsExecutorReport *report;	/* shared with the child */
} TsExecutor;

/* Map the report shared between parent and children (once, before any fork). */
extern TsExecutorReport *ts_executor_map_report(void);

/*
 * Fork an executor: the child probes the GPUs, fills the report, writes
 * one byte to its pipe and then waits for work; it dies with its parent.
 * Returns false (errno set) when the pipe or the fork fails.
 */
extern bool ts_executor_start(TsExecutor *ex);

/* Kill the executor, if any, and reap it. */
extern void ts_executor_stop(TsExecutor *ex);

/* After its pipe reads end of file: reap the executor; its exit status. */
extern int	ts_executor_reap(TsExecutor *ex);

#endif							/* TS_EXECUTOR_H */
