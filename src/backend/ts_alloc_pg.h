/*
 * ts_alloc_pg.h - the compute core's hooks inside a backend: its allocator
 * (palloc) and its cancellation point (CHECK_FOR_INTERRUPTS).
 */
#ifndef TS_ALLOC_PG_H
#define TS_ALLOC_PG_H

#include "base/ts_core.h"

extern const TsAllocator ts_pg_allocator;
extern void ts_pg_check_interrupts(void);

#endif							/* TS_ALLOC_PG_H */
