/*
 * ts_alloc.c - the compute core's allocator: malloc by default (standalone
 * tools, the GPU service's executor), or the allocator a process installs
 * (backends install palloc, ts_alloc_pg.c). An exhausted malloc aborts the
 * process: tools and the executor have no error recovery to offer, and the
 * executor's parent reports its death to the requests it was serving.
 */
#include "base/ts_core.h"

#include <stdio.h>
#include <stdlib.h>

/* Report exhaustion and stop. */
static void *
checked(void *p, size_t size)
{
	if (p == NULL)
	{
		fprintf(stderr, "ts_alloc: out of memory (%zu bytes)\n", size);
		abort();
	}
	return p;
}

/* Allocate with malloc. */
static void *
malloc_alloc(size_t size)
{
	return checked(malloc(size == 0 ? 1 : size), size);
}

/* Allocate zeroed memory with calloc. */
static void *
malloc_alloc0(size_t size)
{
	return checked(calloc(1, size == 0 ? 1 : size), size);
}

/* Resize with realloc. */
static void *
malloc_realloc(void *ptr, size_t size)
{
	return checked(realloc(ptr, size == 0 ? 1 : size), size);
}

const TsAllocator ts_malloc_allocator = {malloc_alloc, malloc_alloc0, malloc_realloc, free};

/* per thread: the executor's planner thread tracks its blocks (ts_alloc_tracked.c) */
static __thread const TsAllocator *allocator = &ts_malloc_allocator;

/* Route every later ts_alloc of this thread through a (threads start with malloc's). */
void
ts_use_allocator(const TsAllocator *a)
{
	allocator = a;
}

void *
ts_alloc(size_t size)
{
	return allocator->alloc(size);
}

void *
ts_alloc0(size_t size)
{
	return allocator->alloc0(size);
}

void *
ts_realloc(void *ptr, size_t size)
{
	return allocator->realloc(ptr, size);
}

/* Release a block from ts_alloc; NULL is ignored. */
void
ts_free(void *ptr)
{
	if (ptr != NULL)
		allocator->free(ptr);
}
