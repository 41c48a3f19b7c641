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

/*
 * Tracked allocation, for a thread that may stop halfway (ts_alloc_tracked.c):
 * from ts_tracked_begin on, this thread's ts_alloc hands out malloc blocks and
 * remembers the live ones; on exhaustion it calls on_exhausted, which must
 * not return (it jumps out of the work). ts_tracked_end frees the blocks still
 * live when free_all, else leaves them to their holders as plain malloc
 * blocks, and gives the thread malloc's allocator back.
 */
typedef void (*TsExhausted) (size_t size);
extern void ts_tracked_begin(TsExhausted on_exhausted);
extern void ts_tracked_end(bool free_all);

extern void *ts_alloc(size_t size);
extern void *ts_alloc0(size_t size);
extern void *ts_realloc(void *ptr, size_t size);
extern void ts_free(void *ptr);

/*
 * Cancellation: the core's long loops call ts_check_interrupts_after(work)
 * as they go, with the work just done in units of about one multiply-add
 * or one node visited, and every TS_INTERRUPT_WORK units (about a
 * millisecond, whatever the model's shape) that calls ts_check_interrupts().
 * A process may install a check that does not return: a backend's raises
 * its pending ERROR, which is safe because the core allocates through
 * ts_alloc (memory contexts there) and keeps no other state across these
 * calls.
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

/* Work units between two cancellation points. */
#define TS_INTERRUPT_WORK ((int64_t) 1 << 20)

/* per thread: units left until the next cancellation point */
extern __thread int64_t ts_interrupt_work_left;

/* Count work units done; past TS_INTERRUPT_WORK of them, a cancellation point. */
static inline void
ts_check_interrupts_after(int64_t work)
{
	ts_interrupt_work_left -= work;
	if (ts_interrupt_work_left <= 0)
	{
		ts_interrupt_work_left = TS_INTERRUPT_WORK;
		ts_check_interrupts();
	}
}

#endif							/* TS_CORE_H */
