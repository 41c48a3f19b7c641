/*
 * ts_exec_planner.h - the executor's planner: a thread that reads a model's
 * bytes and builds its path table, device layout and interface, off the
 * thread that serves requests. A model that takes seconds to plan then
 * stalls no other session's requests on resident models, and a cancelled
 * load stops within about a millisecond of its work, its memory freed
 * (tracked allocation, ts_core.h). One plan at a time. Plain C, executor
 * only.
 */
#ifndef TS_EXEC_PLANNER_H
#define TS_EXEC_PLANNER_H

#include <stdbool.h>

#include "core/ts_paths.h"
#include "service/ts_exec_device.h"
#include "service/ts_executor.h"
#include "service/ts_request.h"

/* A load to plan: the request, its bytes (ours), and once planned what they make. */
typedef struct TsPlanJob
{
	TsExecMsg	msg;
	TsModelKey	key;
	char	   *bytes;			/* malloc's */
	size_t		len;
	int32_t		status;			/* TsRequestStatus: OK, BAD_MODEL, INVALID, OUT_OF_MEMORY or CANCELLED */
	int32_t		error_class;	/* BAD_MODEL: the reader's TsErrorCode */
	char		message[256];
	TsModel    *model;			/* OK: all four, taken by whoever makes it resident */
	TsPathTable *paths;
	TsDevLayout *layout;
	char	   *interface;
	size_t		interface_len;
} TsPlanJob;

/* Start the thread (after the devices are probed); without one, plans run inline. */
extern void ts_planner_start(void);

/* Whether a job is planning, or planned and not yet taken back. */
extern bool ts_planner_busy(void);

/* Hand a job to the planner, which must not be busy; it owns job until taken back. */
extern void ts_planner_submit(TsPlanJob *job);

/* The job once planned (the planner is then idle), else NULL; never waits. */
extern TsPlanJob *ts_planner_take(void);

/* Stop the job planning now, if it is request (slot, seq): it ends CANCELLED. */
extern void ts_planner_cancel(int32_t slot, uint64_t seq);

/* A descriptor that turns readable when a job is planned (-1 without a thread). */
extern int	ts_planner_wake_fd(void);

/* Free a job and whatever it still holds. */
extern void ts_planner_free(TsPlanJob *job);

#endif							/* TS_EXEC_PLANNER_H */
