/*
 * ts_alloc_pg.c - the compute core's allocator inside PostgreSQL: memory goes
 * to CurrentMemoryContext, so an ERROR anywhere frees it with the context.
 */
#include "postgres.h"

#include "base/ts_core.h"

/* Allocate from the current memory context; huge sizes allowed, OOM is an ERROR. */
void *
ts_alloc(size_t size)
{
	return palloc_extended(size == 0 ? 1 : size, MCXT_ALLOC_HUGE);
}

/* Zeroed variant of ts_alloc. */
void *
ts_alloc0(size_t size)
{
	return palloc_extended(size == 0 ? 1 : size, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
}

/* Grow or shrink a block from ts_alloc (NULL behaves like ts_alloc). */
void *
ts_realloc(void *ptr, size_t size)
{
	if (ptr == NULL)
		return ts_alloc(size);
	return repalloc_huge(ptr, size == 0 ? 1 : size);
}

/* Release a block from ts_alloc; NULL is ignored. */
void
ts_free(void *ptr)
{
	if (ptr != NULL)
		pfree(ptr);
}
