/*
 * ts_exec_segments.c - the executor's mapping cache (ts_exec_segments.h):
 * a small table, least recently used first out, bounded in count and in
 * bytes so that the mappings of segments whose backends left pin little.
 */
#include "service/ts_exec_segments.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/ts_exec_device.h"
#include "service/ts_executor.h"

#define CACHE_ENTRIES 128
#define CACHE_BYTES ((size_t) 1 << 30)

/*
 * Mappings pinned for the devices' copies: at least PIN_MIN_BYTES on a GPU,
 * where pinning costs a driver call on the executor's one thread (3.7 ms
 * for 48 MB on an H200) and saves it copying each batch in and out (5.6-7.3
 * ms and 7.4-9.1 ms a 10,000-row batch of a 784-feature model's top
 * features); a smaller run keeps the copies it always had, and so does a
 * larger one than PIN_MAX_BYTES, whose pinning would hold up every other
 * session's launches. Emulated devices pin every mapping (it costs
 * nothing), so tests exercise launches in place.
 */
#define PIN_MIN_BYTES ((size_t) 4 << 20)
#define PIN_MAX_BYTES ((size_t) 256 << 20)

typedef struct CachedMapping
{
	void	   *p;				/* NULL: a free entry */
	size_t		size;
	uint32_t	handle;
	dev_t		dev;
	ino_t		ino;
	int			users;			/* requests being served from it */
	uint64_t	last_use;
	bool		pinned;			/* registered for the devices' copies */
} CachedMapping;

static int	segment_type = TS_SEGMENT_POSIX;
static CachedMapping cache[CACHE_ENTRIES];
static uint64_t clock_ticks;

void
ts_segments_init(int type)
{
	segment_type = type;
}

/* Open a handle's segment by its name; -1 when it is gone. */
static int
open_segment(uint32_t handle)
{
	char		name[64];

	if (segment_type == TS_SEGMENT_MMAP)
	{
		snprintf(name, sizeof(name), "pg_dynshmem/mmap.%u", handle);
		return open(name, O_RDWR);
	}
	snprintf(name, sizeof(name), "/PostgreSQL.%u", handle);
	return shm_open(name, O_RDWR, 0);
}

/*
 * Whether a cached mapping is of the object st describes. Not by its change
 * time: on tmpfs a process's first write to a page of a mapping moves it
 * (the backend filling rows it had not written, our answer through a new
 * mapping, pinning, which faults every page in for writing), so each
 * request found the segment changed and mapped and pinned it again: 9-18
 * ms of each batch of a 784-feature model's top features on an H200. A
 * new object under an old name and inode is caught by the request's stamp
 * instead (ts_exec_sched.c maps it afresh).
 */
static bool
same_object(const CachedMapping *c, uint32_t handle, const struct stat *st)
{
	return c->p != NULL && c->handle == handle && c->dev == st->st_dev && c->ino == st->st_ino &&
		c->size == (size_t) st->st_size;
}

/* Unmap cache entry i (no request uses it): unpinned first, so that no device copy can reach it. */
static void
forget(int i)
{
	if (cache[i].pinned)
		ts_dev_host_unregister(cache[i].p);
	munmap(cache[i].p, cache[i].size);
	memset(&cache[i], 0, sizeof(cache[i]));
}

/*
 * Unmap unused entries, least recently used first, until count and bytes
 * are within bounds; whether any was.
 */
static bool
shrink(size_t incoming)
{
	bool		evicted = false;

	for (;;)
	{
		size_t		bytes = incoming;
		int			count = 0,
					lru = -1;

		for (int i = 0; i < CACHE_ENTRIES; i++)
			if (cache[i].p != NULL)
			{
				bytes += cache[i].size;
				count++;
				if (cache[i].users == 0 && (lru < 0 || cache[i].last_use < cache[lru].last_use))
					lru = i;
			}
		if ((count < CACHE_ENTRIES && bytes <= CACHE_BYTES) || lru < 0)
			return evicted;
		forget(lru);
		evicted = true;
	}
}

/*
 * Whether to pin a new mapping of size bytes for the devices: within the
 * bounds above, a POSIX segment (pinning a file's page cache for DMA is
 * what filesystems refuse or mishandle), and no other mapping evicted to
 * make room (the cache is then cycling, and each batch would pin again).
 */
static bool
worth_pinning(size_t size, bool evicted)
{
	if (ts_dev_emulated())
		return true;
	return segment_type == TS_SEGMENT_POSIX && !evicted && size >= PIN_MIN_BYTES && size <= PIN_MAX_BYTES;
}

/* Keep a new mapping in the cache; -1 when every entry is in use. */
static int
remember(void *p, uint32_t handle, const struct stat *st)
{
	bool		evicted = shrink((size_t) st->st_size);

	for (int i = 0; i < CACHE_ENTRIES; i++)
		if (cache[i].p == NULL)
		{
			cache[i].p = p;
			cache[i].size = (size_t) st->st_size;
			cache[i].handle = handle;
			cache[i].dev = st->st_dev;
			cache[i].ino = st->st_ino;
			/* a run's rows and results then move by DMA, not through the executor's copies */
			cache[i].pinned = worth_pinning(cache[i].size, evicted) && ts_dev_host_register(p, cache[i].size);
			return i;
		}
	return -1;
}

/* The cache entry holding this object, or -1; an older mapping of the same handle is dropped. */
static int
lookup(uint32_t handle, const struct stat *st)
{
	for (int i = 0; i < CACHE_ENTRIES; i++)
	{
		if (same_object(&cache[i], handle, st))
			return i;
		if (cache[i].p != NULL && cache[i].handle == handle && cache[i].users == 0)
			forget(i);
	}
	return -1;
}

bool
ts_segment_map(uint32_t handle, bool keep, TsSegment *seg)
{
	struct stat st;
	void	   *p;
	int			fd = open_segment(handle);
	int			i;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || (size_t) st.st_size < sizeof(TsRequestHeader))
	{
		close(fd);
		return false;
	}
	i = keep ? lookup(handle, &st) : -1;
	if (i < 0)
	{
		p = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
		{
			close(fd);
			return false;
		}
		i = keep ? remember(p, handle, &st) : -1;
		seg->h = (TsRequestHeader *) p;
	}
	else
		seg->h = (TsRequestHeader *) cache[i].p;
	close(fd);
	seg->size = (size_t) st.st_size;
	seg->cached = i;
	seg->pinned = i >= 0 && cache[i].pinned;
	if (i >= 0)
	{
		cache[i].users++;
		cache[i].last_use = ++clock_ticks;
	}
	return true;
}

void
ts_segment_release(TsSegment *seg)
{
	if (seg->h == NULL)
		return;
	if (seg->cached >= 0)
		cache[seg->cached].users--;
	else
		munmap(seg->h, seg->size);
	seg->h = NULL;
}

void
ts_segment_drop(TsSegment *seg)
{
	int			i = seg->cached;

	ts_segment_release(seg);
	if (i >= 0 && cache[i].users == 0)
		forget(i);
}

void
ts_segments_sweep(void)
{
	for (int i = 0; i < CACHE_ENTRIES; i++)
	{
		struct stat st;
		int			fd;
		bool		alive;

		if (cache[i].p == NULL || cache[i].users > 0)
			continue;
		fd = open_segment(cache[i].handle);
		alive = fd >= 0 && fstat(fd, &st) == 0 && same_object(&cache[i], cache[i].handle, &st);
		if (fd >= 0)
			close(fd);
		if (!alive)
			forget(i);
	}
}
