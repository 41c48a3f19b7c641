/*
 * ts_exec_segments.h - the executor's mappings of request segments. A
 * backend keeps one segment for a whole run (every batch of a call), so
 * the executor keeps its mapping between requests rather than mapping and
 * faulting in its pages for each batch. A mapping is reused only while
 * the name still opens the same object (inode and size: the mapping keeps
 * its inode alive, so no other object gets that number while it is
 * cached, short of a 32-bit inode counter wrapping), and a request is
 * served only from a segment stamped with it (ts_exec_sched.c), which is
 * the guard against any other; one
 * whose backend left keeps its memory until it is evicted, which makes a
 * late write harmless. A kept mapping of 4 to 256 MB is also pinned for
 * the devices when they allow it, so a launch copies a run's rows in and
 * its results out by DMA, where the executor's own copies took about a
 * third as long as the kernel on a 784-feature model. Plain C, executor
 * only.
 */
#ifndef TS_EXEC_SEGMENTS_H
#define TS_EXEC_SEGMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service/ts_request.h"

typedef struct TsSegment
{
	TsRequestHeader *h;
	size_t		size;
	int			cached;			/* index in the cache, or -1 for a mapping of its own */
	bool		pinned;			/* the devices may read and write it in place (ts_dev_host_register) */
} TsSegment;

/* How segments are named: TS_SEGMENT_POSIX or TS_SEGMENT_MMAP (ts_executor.h). */
extern void ts_segments_init(int segment_type);

/*
 * Map the segment of a handle, through the cache when keep is true (run
 * requests); false when it is gone (its backend left).
 */
extern bool ts_segment_map(uint32_t handle, bool keep, TsSegment *seg);

/* Done with a mapping: a cached one stays mapped, another is unmapped. */
extern void ts_segment_release(TsSegment *seg);

/*
 * Done with a mapping that may be of an older object: unmapped, cached or
 * not, unless another request uses it (it then stays, and is found again).
 */
extern void ts_segment_drop(TsSegment *seg);

/* Unmap the cached mappings whose backends have removed their segments (when idle). */
extern void ts_segments_sweep(void);

#endif							/* TS_EXEC_SEGMENTS_H */
