/*
 * ts_service_relay.h - the worker's side of the request slots
 * (ts_service.h): dispatch to the executor, completion, failure.
 */
#ifndef TS_SERVICE_RELAY_H
#define TS_SERVICE_RELAY_H

#include "service/ts_executor.h"
#include "service/ts_service.h"

/*
 * Send every queued request to the executor, or fail it when none is
 * ready; tell the executor to stop every request its backend abandoned.
 */
extern void ts_relay_dispatch(TsServiceShared *sh, TsExecutor *ex, bool ready);

/* The executor answered a request: mark its slot done and wake its backend. */
extern void ts_relay_complete(TsServiceShared *sh, const TsExecMsg *msg);

/* Fail every request queued or in flight with msg (the executor or the worker went). */
extern void ts_relay_fail_all(TsServiceShared *sh, const char *msg);

#endif							/* TS_SERVICE_RELAY_H */
