/*
 * segments_check.c - the GPU service executor's mapping cache
 * (src/service/ts_exec_segments.c), with the devices' pinning counted by
 * stubs. A run's segment must be mapped and pinned once for all its
 * requests, although the backend's writes into pages it had not touched
 * move the object's change time on tmpfs (each batch did: 9-18 ms of a
 * 784-feature model's batch went to mapping and pinning it again). A new
 * object under the same name, and a dropped mapping, are mapped afresh.
 *
 *     build/segments_check        (prints "segments-check: PASS")
 */
#include "service/ts_exec_device.h"
#include "service/ts_exec_segments.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEGMENT_BYTES ((size_t) 8 << 20)	/* within the sizes the cache pins */
#define SLOT 3

static int	registered;
static int	unregistered;
static int	failures;

/* The devices, as the cache sees them: real ones (not emulated), whose pinning is counted. */
bool
ts_dev_emulated(void)
{
	return false;
}

bool
ts_dev_host_register(void *p, size_t len)
{
	(void) p;
	(void) len;
	registered++;
	return true;
}

void
ts_dev_host_unregister(void *p)
{
	(void) p;
	unregistered++;
}

/* Report a check. */
static void
expect(bool ok, const char *what)
{
	printf("%s %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

/* Stop on a system call's failure. */
static void
fail_on(bool failed, const char *what)
{
	if (failed)
	{
		perror(what);
		exit(2);
	}
}

/* A segment's POSIX name, as PostgreSQL gives it. */
static void
segment_name(uint32_t handle, char *name, size_t len)
{
	snprintf(name, len, "/PostgreSQL.%u", handle);
}

/* Create a segment of a name no object has (as dsm_create picks one); its handle. */
static uint32_t
create_new_segment(uint32_t from)
{
	char		name[64];
	int			fd;

	for (uint32_t handle = from;; handle++)
	{
		segment_name(handle, name, sizeof(name));
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd >= 0)
		{
			fail_on(ftruncate(fd, (off_t) SEGMENT_BYTES) != 0, "segments_check: ftruncate");
			close(fd);
			return handle;
		}
		fail_on(errno != EEXIST, "segments_check: shm_open");
	}
}

/* A backend's own mapping of a segment, to write through. */
static char *
backend_map(uint32_t handle, struct stat *st)
{
	char		name[64];
	int			fd;
	void	   *p;

	segment_name(handle, name, sizeof(name));
	fd = shm_open(name, O_RDWR, 0);
	fail_on(fd < 0, "segments_check: shm_open");
	fail_on(fstat(fd, st) != 0, "segments_check: fstat");
	p = mmap(NULL, SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	fail_on(p == MAP_FAILED, "segments_check: mmap");
	close(fd);
	return p;
}

/* Stamp request (slot, seq) into a segment's header, through a backend's mapping. */
static void
stamp(uint32_t handle, int32_t slot, uint64_t seq)
{
	struct stat st;
	TsRequestHeader *h = (TsRequestHeader *) backend_map(handle, &st);

	h->magic = TS_REQUEST_MAGIC;
	h->slot = slot;
	h->seq = seq;
	munmap(h, SEGMENT_BYTES);
}

/* Write into two pages no mapping had touched (as a backend fills a batch); whether the change time moved. */
static bool
fill_new_pages(uint32_t handle, size_t at)
{
	struct stat before,
				after;
	char	   *p = backend_map(handle, &before);
	char		name[64];
	int			fd;

	usleep(20000);				/* past the clock's granularity */
	memset(p + at, 1, 2 * 4096);
	munmap(p, SEGMENT_BYTES);
	segment_name(handle, name, sizeof(name));
	fd = shm_open(name, O_RDONLY, 0);
	fail_on(fd < 0 || fstat(fd, &after) != 0, "segments_check: fstat");
	close(fd);
	return before.st_ctim.tv_sec != after.st_ctim.tv_sec || before.st_ctim.tv_nsec != after.st_ctim.tv_nsec;
}

/* A run's requests: one mapping, pinned once, whatever the backend writes between them. */
static void
check_run(uint32_t handle)
{
	TsSegment	seg = {0};
	void	   *first;

	stamp(handle, SLOT, 1);
	expect(ts_segment_map(handle, true, &seg) && seg.pinned && registered == 1,
		   "a run's segment is mapped and pinned on its first request");
	first = seg.h;
	ts_segment_release(&seg);
	for (uint64_t seq = 2; seq <= 4; seq++)
	{
		if (!fill_new_pages(handle, (size_t) seq << 20) && seq == 2)
			fprintf(stderr, "segments_check: the change time did not move here, so the first checks would pass on the old cache too\n");
		stamp(handle, SLOT, seq);
		expect(ts_segment_map(handle, true, &seg) && seg.h == first && seg.h->seq == seq &&
			   registered == 1 && unregistered == 0,
			   "a later request of the run finds the same mapping, pinned once");
		ts_segment_release(&seg);
	}
}

/* New objects and dropped mappings: mapped afresh. */
static void
check_remaps(uint32_t handle)
{
	TsSegment	seg = {0};
	char		name[64];

	expect(ts_segment_map(handle, false, &seg) && seg.cached < 0 && registered == 1,
		   "a mapping of its own (a load) is neither kept nor pinned");
	ts_segment_release(&seg);

	segment_name(handle, name, sizeof(name));
	shm_unlink(name);
	fail_on(create_new_segment(handle) != handle, "segments_check: the name was taken");
	expect(ts_segment_map(handle, true, &seg) && registered == 2 && unregistered == 1,
		   "a new object under the name gets a mapping of its own, the old one unpinned");
	ts_segment_drop(&seg);
	expect(unregistered == 2, "a dropped mapping is unpinned and unmapped");
	expect(ts_segment_map(handle, true, &seg) && registered == 3, "after a drop the name is mapped afresh");
	ts_segment_release(&seg);
	shm_unlink(name);
	ts_segments_sweep();
	expect(unregistered == 3, "the sweep unmaps a mapping whose object is gone");
}

int
main(void)
{
	uint32_t	handle = create_new_segment(0x7e570000u + (uint32_t) getpid() % 65536u);

	ts_segments_init(TS_SEGMENT_POSIX);
	check_run(handle);
	check_remaps(handle);
	printf("segments-check: %s\n", failures == 0 ? "PASS" : "FAIL");
	return failures == 0 ? 0 : 1;
}
