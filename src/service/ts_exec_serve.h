/*
 * ts_exec_serve.h - what the executor does with load and run requests: it
 * maps the request's segment, keeps models resident (read, laid out and
 * uploaded once per model version, the least recently used evicted when
 * the GPU is full), and explains batches on the GPU. Plain C, no
 * PostgreSQL: this runs in the executor (ts_executor.h).
 */
#ifndef TS_EXEC_SERVE_H
#define TS_EXEC_SERVE_H

#include <stdbool.h>

#include "service/ts_executor.h"

/* Whether the request being served was cancelled; reads the executor's pipe. */
typedef bool (*TsCancelCheck) (void *arg);

/* Once, after probing: how segments are named, and whether there is a GPU to serve with. */
extern void ts_exec_serve_init(int segment_type, bool have_device);

/*
 * Serve one LOAD or RUN message; returns its TsRequestStatus (also written
 * to the segment's header with a message). *fatal is set after a CUDA
 * fault, which may leave the context unusable: the executor then exits
 * and its parent starts a fresh one.
 */
extern int32_t ts_exec_serve(const TsExecMsg *msg, TsCancelCheck cancelled, void *arg, bool *fatal);

#endif							/* TS_EXEC_SERVE_H */
