/*
 * ts_exec_models.h - the executor's resident models: one entry per model
 * version (TsModelKey), holding its path table, its layout for the devices
 * and, per device, its upload and the runner of its last job there.
 * Entries are evicted least recently used when the table is full; a
 * model's placement on a device, when that device runs out of memory or
 * reaches treeshap.gpu_memory_limit. Plain C, executor only.
 */
#ifndef TS_EXEC_MODELS_H
#define TS_EXEC_MODELS_H

#include <stdbool.h>

#include "core/ts_paths.h"
#include "service/ts_exec_device.h"
#include "service/ts_executor.h"
#include "service/ts_request.h"

#define TS_EXEC_MAX_MODELS TS_EXECUTOR_MAX_MODELS

/* A model on one device: its uploaded layout and the runner of its last job there. */
typedef struct TsPlacement
{
	TsDevTable *table;			/* NULL while not uploaded to this device */
	size_t		table_bytes;
	TsDevRunner *runner;		/* or NULL */
	size_t		runner_bytes;
	TsGpuJob	job;			/* the runner's job; its feature_slot points at feature_slot */
	int32_t    *feature_slot;
	TsGpuBackground background;	/* an interventional job's, its rows and values our copies */
	float	   *background_x;
	double	   *background_values;	/* margins, then outputs; NULL in margin space */
	int32_t		precision;
	int32_t		max_rows;
	bool		busy[2];		/* the runner's slots with a launch in flight */
	uint64_t	last_use;		/* a tick of the executor's clock */
} TsPlacement;

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
	int32_t		requests;		/* requests being served on it: it stays while any is */
	TsDevLayout *layout;		/* NULL until a device needs it */
	double		rescale_bound;	/* ts_interventional_rescale_bound, once; -1 before */
	TsPlacement on[TS_EXECUTOR_MAX_DEVICES];
} TsResidentModel;

/* The resident entry of key, marked used now, or NULL. */
extern TsResidentModel *ts_resident_find(const TsModelKey *key);

/*
 * Make a model resident (taking model and paths), evicting the least
 * recently used when full; NULL when every entry is serving a request.
 */
extern TsResidentModel *ts_resident_add(const TsModelKey *key, TsModel *model, TsPathTable *paths);

/* Evict the least recently used entry other than keep and those in use; false when there is none. */
extern bool ts_resident_evict_one(const TsResidentModel *keep);

/*
 * Free the least recently used placement on a device other than keep's
 * and those with a launch in flight; false when there is none.
 */
extern bool ts_resident_evict_placement(int device, const TsResidentModel *keep);

/* Device bytes the resident models hold on a device. */
extern size_t ts_resident_device_bytes(int device);

/* Free everything an entry holds, on the device and on the host. */
extern void ts_resident_remove(TsResidentModel *m);

/* The model's interface (core/ts_wire.h), written on first use; sets *len. */
extern const char *ts_resident_interface(TsResidentModel *m, size_t *len);

/* Free a placement's runner (its device buffers), keeping its table. */
extern void ts_resident_drop_runner(TsPlacement *p);

/* Free a placement: runner and table. */
extern void ts_resident_drop_placement(TsPlacement *p);

/* Mark a placement used now. */
extern void ts_resident_touch_placement(TsPlacement *p);

/* Write the resident models and the executor's counts into the parent's statistics. */
extern void ts_resident_publish(TsExecutorStats *stats, uint64_t requests, uint64_t launches,
								uint64_t merged);

#endif							/* TS_EXEC_MODELS_H */
