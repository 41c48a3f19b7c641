/*
 * ts_background.h - the background data set of an interventional call: the
 * rows of the user's background query, every column a feature (matched as
 * the explained rows' are), read whole before the first row is explained.
 */
#ifndef TS_BACKGROUND_H
#define TS_BACKGROUND_H

#include "postgres.h"

#include "core/ts_interventional_plan.h"

/* Read every row of query (SPI connected) into a background; ERROR when it has none. */
extern TsBackground *ts_background_read(const char *query, const TsModel *model, bool probability);

/*
 * The background grouped per path for the CPU, built on threads threads;
 * NULL when it would take more than treeshap.background_plan_memory.
 */
extern TsIvPlan *ts_background_plan(const TsPathTable *pt, const TsBackground *bg, int threads);

#endif							/* TS_BACKGROUND_H */
