/*
 * ts_alloc_std.c - the compute core's allocator for standalone tools
 * (core tests, fuzzers, benchmarks): plain malloc, abort on exhaustion.
 */
#include "base/ts_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Report exhaustion and stop: standalone tools have no error recovery to offer. */
static void *
ts_check(void *p, size_t size)
{
	if (p == NULL)
	{
		fprintf(stderr, "ts_alloc: out of memory (%zu bytes)\n", size);
		abort();
	}
	return p;
}

/* Allocate with malloc. */
void *
ts_alloc(size_t size)
{
	return ts_check(malloc(size == 0 ? 1 : size), size);
}

/* Allocate zeroed memory with calloc. */
void *
ts_alloc0(size_t size)
{
	return ts_check(calloc(1, size == 0 ? 1 : size), size);
}

/* Resize with realloc. */
void *
ts_realloc(void *ptr, size_t size)
{
	return ts_check(realloc(ptr, size == 0 ? 1 : size), size);
}

/* Release with free. */
void
ts_free(void *ptr)
{
	free(ptr);
}
