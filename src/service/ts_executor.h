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

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cuda/ts_cuda.h"
#include "service/ts_request.h"

#define TS_EXECUTOR_MAX_DEVICES 16

/* What the executor found, written before it reports ready. */
typedef struct TsExecutorReport
{
	int			num_devices;
	TsGpuDeviceInfo devices[TS_EXECUTOR_MAX_DEVICES];
	int			unusable;		/* GPUs seen that this build cannot run on (an old driver: 1) */
	char		message[256];	/* why there is no device, or why some are left out */
} TsExecutorReport;

/* A model the executor holds, as treeshap.gpu_models shows it. */
typedef struct TsResidentInfo
{
	TsModelKey	key;
	int64_t		paths;
	uint64_t	hits;			/* requests that found it resident */
	int64_t		last_used;		/* Unix time in microseconds */
	int64_t		device_bytes;	/* its uploads and runners, on every device */
	int32_t		devices;		/* devices it is uploaded to */
	int32_t		unused;
} TsResidentInfo;

#define TS_EXECUTOR_MAX_MODELS 64

/*
 * What the executor has done, rewritten after every request before its
 * answer is sent. One writer (the executor) and one reader (its parent):
 * version is odd while it is being written, and a reader copies until it
 * sees the same even version before and after.
 */
typedef struct TsExecutorStats
{
	uint64_t	version;
	uint64_t	requests;		/* answered by this executor */
	uint64_t	launches;		/* device launches it made */
	uint64_t	merged;			/* launches that served more than one request */
	int64_t		device_bytes[TS_EXECUTOR_MAX_DEVICES];	/* models and buffers on each device */
	int32_t		num_models;
	TsResidentInfo models[TS_EXECUTOR_MAX_MODELS];
} TsExecutorStats;

/*
 * The settings the executor follows, written by its parent (at start and
 * on a configuration reload) into memory they share.
 */
typedef struct TsExecutorConfig
{
	int64_t		memory_limit;	/* bytes of models and buffers per GPU; 0: the GPU's memory */
	int32_t		emulate;		/* emulated devices instead of the GPUs (tests); read at start */
	int32_t		unused;
} TsExecutorConfig;

/* Messages on the executor's pipes (each written whole: smaller than PIPE_BUF). */
typedef enum TsExecMsgKind
{
	TS_EXEC_READY = 1,			/* executor -> worker: the report is filled */
	TS_EXEC_PING = 2,			/* worker -> executor: wait arg ms, then answer */
	TS_EXEC_DONE = 3,			/* executor -> worker: request (slot, seq) answered */
	TS_EXEC_CANCEL = 4,			/* worker -> executor: request (slot, seq) was abandoned */
	TS_EXEC_LOAD = 5,			/* worker -> executor: make the segment's model resident */
	TS_EXEC_RUN = 6				/* worker -> executor: explain the segment's batch */
} TsExecMsgKind;

typedef struct TsExecMsg
{
	int32_t		kind;			/* TsExecMsgKind */
	int32_t		slot;			/* the requesting backend's slot */
	uint64_t	seq;			/* which of its requests */
	int32_t		arg;
	int32_t		result;			/* DONE: 0 or a TsRequestStatus */
	uint32_t	segment;		/* LOAD, RUN: the payload's dynamic shared memory handle */
	int32_t		unused;
} TsExecMsg;

/*
 * How payload segments are named (PostgreSQL's dynamic_shared_memory_type,
 * whose values these mirror): POSIX shared memory "/PostgreSQL.<handle>",
 * or the file "pg_dynshmem/mmap.<handle>" under the data directory, the
 * executor's working directory.
 */
#define TS_SEGMENT_POSIX 1
#define TS_SEGMENT_MMAP 4

/* A running executor as its parent sees it. */
typedef struct TsExecutor
{
	pid_t		pid;			/* 0 when none runs */
	int			pipe_fd;		/* read end of its messages; end of file when it is gone */
	int			request_fd;		/* write end of its requests */
	TsExecutorReport *report;	/* shared with the child */
	TsExecutorStats *stats;		/* shared with the child */
	TsExecutorConfig *config;	/* shared with the child */
	int			segment_type;	/* TS_SEGMENT_POSIX or TS_SEGMENT_MMAP */
} TsExecutor;

/* Map size bytes shared between parent and children (once, before any fork); NULL on failure. */
extern void *ts_executor_map_shared(size_t size);

/* A consistent copy of the executor's statistics; false when none could be taken now. */
extern bool ts_executor_read_stats(const TsExecutorStats *src, TsExecutorStats *dst);

/*
 * Fork an executor: the child probes the GPUs, fills the report, sends
 * TS_EXEC_READY and then answers requests in order; it dies with its
 * parent. Returns false (errno set) when a pipe or the fork fails.
 */
extern bool ts_executor_start(TsExecutor *ex);

/* Kill the executor, if any, and reap it. */
extern void ts_executor_stop(TsExecutor *ex);

/* After its pipe reads end of file: reap the executor; its exit status. */
extern int	ts_executor_reap(TsExecutor *ex);

/* Send one request; false when the executor is gone (its pipe is closed). */
extern bool ts_executor_send(TsExecutor *ex, const TsExecMsg *msg);

#endif							/* TS_EXECUTOR_H */
