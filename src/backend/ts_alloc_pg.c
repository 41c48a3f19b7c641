/*
 * ts_alloc_pg.c - the compute core's hooks inside a backend: memory goes
 * to CurrentMemoryContext, so an ERROR anywhere frees it with the context,
 * which is what lets the core's cancellation points raise cancel and
 * statement_timeout from inside its loops. _PG_init installs both.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "backend/ts_alloc_pg.h"

/* Allocate from the current memory context; huge sizes allowed, OOM is an ERROR. */
static void *
pg_alloc(size_t size)
{
	return palloc_extended(size == 0 ? 1 : size, MCXT_ALLOC_HUGE);
}

/* Zeroed variant of pg_alloc. */
static void *
pg_alloc0(size_t size)
{
	return palloc_extended(size == 0 ? 1 : size, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
}

/* Grow or shrink a block from pg_alloc (NULL behaves like pg_alloc). */
static void *
pg_realloc(void *ptr, size_t size)
{
	if (ptr == NULL)
		return pg_alloc(size);
	return repalloc_huge(ptr, size == 0 ? 1 : size);
}

const TsAllocator ts_pg_allocator = {pg_alloc, pg_alloc0, pg_realloc, pfree};

/* The core's cancellation point: cancel, statement_timeout and terminate raise here. */
void
ts_pg_check_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}
