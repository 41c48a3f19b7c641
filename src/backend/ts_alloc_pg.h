/*
 * ts_alloc_pg.h - the compute core's allocator inside a backend (palloc).
 */
#ifndef TS_ALLOC_PG_H
#define TS_ALLOC_PG_H

#include "base/ts_core.h"

extern const TsAllocator ts_pg_allocator;

#endif							/* TS_ALLOC_PG_H */
