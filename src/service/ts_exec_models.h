/*
 * ts_exec_models.h - the executor's resident models: one entry per model
 * version (TsModelKey), holding its path table and, with a GPU, its
 * uploaded layout and the runner of its last job. Entries are evicted
 * least recently used: when the table is full, or when the GPU runs out of
 * memory for another model. Plain C, executor only.
 */
#ifndef TS_EXEC_MODELS_H
#define TS_EXEC_MODELS_H

#include <stdbool.h>

#include "core/ts_paths.h"
#include "service/ts_executor.h"
#include "service/ts_request.h"
#ifdef TS_WITH_CUDA
#include "gpu/ts_gpu.h"
#endif

#define TS_EXEC_MAX_MODELS TS_EXECUTOR_MAX_MODELS

typedef struct TsResidentModel
{
	bool		used;
	TsModelKey	key;
	TsModel    *model;
	TsPathTable *paths;
	char	   *interface;		/* core/ts_wire.h bytes, written on first request, or NULL */
	size_t		interface_len;
	uint64_t	hits;			/* requests that found it resident */
	uint64_t	last_use;		/* a tick of the executor's request clock */
	int64_t		last_used;		/* the same in Unix microseconds, for the view */
#ifdef TS_WITH_CUDA
	TsGpuPlan  *plan;			/* NULL until uploaded */
	TsGpuRunner *runner;		/* of the last job run on it, or NULL */
	TsGpuJob	job;			/* that job; its feature_slot points at feature_slot */
	int32_t    *feature_slot;
	int32_t		precision;
	int32_t		max_rows;
#endif
} TsResidentModel;

/* The resident entry of key, marked used now, or NULL. */
extern TsResidentModel *ts_resident_find(const TsModelKey *key);

/* Make a model resident (taking model and paths), evicting the least recently used when full. */
extern TsResidentModel *ts_resident_add(const TsModelKey *key, TsModel *model, TsPathTable *paths);

/* Evict the least recently used entry other than keep; false when there is none. */
extern bool ts_resident_evict_one(const TsResidentModel *keep);

/* Free everything an entry holds, on the device and on the host. */
extern void ts_resident_remove(TsResidentModel *m);

/* The model's interface (core/ts_wire.h), written on first use; sets *len. */
extern const char *ts_resident_interface(TsResidentModel *m, size_t *len);

/* Free an entry's runner (its device buffers), keeping the model. */
extern void ts_resident_drop_runner(TsResidentModel *m);

/* Write the resident models and the request count into the parent's statistics. */
extern void ts_resident_publish(TsExecutorStats *stats, uint64_t requests);

#endif							/* TS_EXEC_MODELS_H */
