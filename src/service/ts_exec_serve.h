/*
 * ts_exec_serve.h - what the executor does with load and run requests: it
 * maps the request's segment, keeps models resident (read and laid out
 * once per model version, uploaded once per device, the least recently
 * used evicted when a device is full or at treeshap.gpu_memory_limit) and
 * explains batches on the devices (ts_exec_sched.c). Plain C, no
 * PostgreSQL: this runs in the executor (ts_executor.h).
 */
#ifndef TS_EXEC_SERVE_H
#define TS_EXEC_SERVE_H

#include <stdbool.h>

#include "service/ts_exec_models.h"
#include "service/ts_exec_segments.h"
#include "service/ts_executor.h"

/* A run's answer is not known yet: ts_exec_progress gives it later. */
#define TS_EXEC_PENDING (-100)

/* How the executor sends an answer (ts_executor.c). */
typedef void (*TsExecAnswer) (const TsExecMsg *msg, int32_t result, void *arg);

/* Once, after probing: how segments are named, the devices, and the parent's settings. */
extern void ts_exec_serve_init(int segment_type, int num_devices, const TsExecutorConfig *config);

/*
 * Take a LOAD message: its TsRequestStatus (also written to the segment's
 * header with a message) when the model is resident or the request cannot
 * be served, else TS_EXEC_PENDING while the planner (ts_exec_planner.h)
 * reads and plans the model. *fatal is set after a CUDA fault, which may
 * leave the context unusable: the executor then exits and its parent starts
 * a fresh one.
 */
extern int32_t ts_exec_load(const TsExecMsg *msg, bool *fatal);

/*
 * Make the model the planner finished resident, and serve the loads that
 * waited for the planner; answers each load done. Returns whether anything
 * happened. *fatal as above.
 */
extern bool ts_exec_load_progress(TsExecAnswer answer, void *arg, bool *fatal);

/* A backend abandoned load (slot, seq): stop its plan, or drop it from the queue. */
extern void ts_exec_load_cancel(int32_t slot, uint64_t seq);


/* Take a RUN message: TS_EXEC_PENDING, or its answer when it cannot run. */
extern int32_t ts_exec_run(const TsExecMsg *msg);

/* A backend abandoned request (slot, seq): stop it, answer it once its launches end. */
extern void ts_exec_cancel(int32_t slot, uint64_t seq);

/* Whether runs are queued or on a device. */
extern bool ts_exec_busy(void);

/*
 * Start launches on free devices, finish those done, and answer the runs
 * that completed; returns whether anything happened. *fatal as above.
 */
extern bool ts_exec_progress(TsExecAnswer answer, void *arg, bool *fatal);

/* Launches made, and those that served more than one request, since the executor started. */
extern void ts_exec_counts(uint64_t *launches, uint64_t *merged);

/* (between ts_exec_serve.c and ts_exec_sched.c) */

/* The scheduler's devices. */
extern void ts_exec_sched_init(int num_devices);

/* Write an answer into a header; returns status. */
extern int32_t ts_exec_answer(TsRequestHeader *h, int32_t status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Whether a run's header describes a job of this model, inside its segment. */
extern bool ts_exec_valid_run(const TsSegment *seg, const TsResidentModel *m);

/*
 * An interventional run's background, pointing into its (valid) segment,
 * with the model's link in probability space; false when that link has no
 * bound on shap's factor (the backend keeps such calls on its CPU).
 */
extern bool ts_exec_background(const TsRequestHeader *h, TsResidentModel *m, TsGpuBackground *bg);

/* Whether two jobs' backgrounds are the same rows (both NULL included). */
extern bool ts_exec_same_background(const TsGpuBackground *a, const TsGpuBackground *b,
									const TsPathTable *pt);

/*
 * Make a model's placement on a device ready for a launch of up to rows
 * rows of job: uploaded, with a runner for the job. TS_GPU_NOT_READY when
 * its runner must change while a launch of it is in flight.
 */
extern TsGpuStatus ts_exec_place(TsResidentModel *m, int device, const TsGpuJob *job, int32_t precision,
								 int32_t rows, char *msg, size_t msglen);

/* The answer to a failed device step: out of memory, or a fault that ends the executor. */
extern int32_t ts_exec_device_failure(TsRequestHeader *h, TsGpuStatus rc, const char *msg, bool *fatal);

#endif							/* TS_EXEC_SERVE_H */
