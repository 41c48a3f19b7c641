/*
 * ts_background.h - the background data set of an interventional call: the
 * rows of the user's background query, every column a feature (matched as
 * the explained rows' are), read whole before the first row is explained.
 */
#ifndef TS_BACKGROUND_H
#define TS_BACKGROUND_H

#include "postgres.h"

#include "core/ts_interventional.h"

/* Read every row of query (SPI connected) into a background; ERROR when it has none. */
extern TsBackground *ts_background_read(const char *query, const TsModel *model, bool probability);

#endif							/* TS_BACKGROUND_H */
