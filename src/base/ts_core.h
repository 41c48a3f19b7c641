/*
 * ts_core.h - shared definitions of the compute core (readers, path table,
 * CPU SHAP). The core takes plain data and never calls fmgr or SPI; it
 * allocates through ts_alloc() so the extension can route memory into
 * PostgreSQL memory contexts while standalone tools use malloc.
 */
#ifndef TS_CORE_H
#define TS_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error classes of the core; the SQL layer maps each to an SQLSTATE. */
typedef enum TsErrorCode
{
	TS_OK = 0,
	TS_ERR_SYNTAX,				/* bytes are not a readable model */
	TS_ERR_INVALID,				/* readable, but a structural invariant fails */
	TS_ERR_UNSUPPORTED,			/* valid, but uses a feature we do not implement */
	TS_ERR_LIMIT				/* exceeds a size limit */
} TsErrorCode;

typedef struct TsError
{
	TsErrorCode code;
	char		message[512];
} TsError;

/* Record an error (first one wins) and return false, for "return ts_fail(...)". */
extern bool ts_fail(TsError *err, TsErrorCode code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* The allocator ts_alloc uses (base/ts_alloc.c): malloc unless a process installs another. */
typedef struct TsAllocator
{
	void	   *(*alloc) (size_t size);
	void	   *(*alloc0) (size_t size);
	void	   *(*realloc) (void *ptr, size_t size);
	void		(*free) (void *ptr);
} TsAllocator;

extern const TsAllocator ts_malloc_allocator;
extern void ts_use_allocator(const TsAllocator *a);

extern void *ts_alloc(size_t size);
extern void *ts_alloc0(size_t size);
extern void *ts_realloc(void *ptr, size_t size);
extern void ts_free(void *ptr);

/*
 * Cancellation: the core's long loops call ts_check_interrupts() between
 * bounded units of work (1,024 paths of one row, one tree of a path table
 * build). A process may install a check that does not return: a backend's
 * raises its pending ERROR, which is safe because the core allocates
 * through ts_alloc (memory contexts there) and keeps no other state across
 * these calls.
 */
typedef void (*TsInterruptCheck) (void);
/* per thread: the core's row pool (core/ts_row_pool.h) gives its threads their own */
extern __thread TsInterruptCheck ts_interrupt_check;
extern void ts_use_interrupt_check(TsInterruptCheck check);

static inline void
ts_check_interrupts(void)
{
	if (ts_interrupt_check != NULL)
		ts_interrupt_check();
}

/* Paths between two cancellation points of a loop over paths (a power of two). */
#define TS_INTERRUPT_PATHS 1024

#endif							/* TS_CORE_H */
