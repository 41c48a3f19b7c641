/*
 * ts_run.h - running a call's rows: read batch by batch from its source,
 * computed on the GPU service or on the session's CPU threads, and handed
 * to the call's emitter.
 */
#ifndef TS_RUN_H
#define TS_RUN_H

#include "backend/ts_batch.h"
#include "backend/ts_catalog.h"
#include "backend/ts_emit.h"
#include "backend/ts_gpu_pg.h"

/*
 * On the session's CPU threads: while they compute a batch, the backend
 * emits the previous one and reads the next; the model stays pinned.
 */
extern void ts_run_cpu(TsEmitter *em, TsCachedModel *cached, const TsSource *src, Oid key_type);

/*
 * On the GPU service: while the GPU computes batch k, the backend emits
 * batch k-1 and reads batch k+1 into the other slot. *runp holds the run's
 * buffers (NULL for no rows), which the caller ends after success or ERROR.
 */
extern void ts_run_gpu(TsEmitter *em, TsGpuRun **runp, TsCachedModel *cached,
					   const TsSource *src, Oid key_type);

#endif							/* TS_RUN_H */
