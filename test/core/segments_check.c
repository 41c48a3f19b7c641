/*
 * segments_check.c - the GPU service executor's mapping cache
 * (src/service/ts_exec_segments.c), with the devices' pinning counted by
 * stubs. A run's segment must be mapped and pinned once for all its
 * requests, although the backend's writes into pages it had not touched
 * move the object's change time on tmpfs (each batch did: 10-17 ms of a
 * 784-feature model's batch went to mapping and pinning it again). A new
 * object under the same name, and a dropped mapping, are mapped afresh.
 *
 *     build/segments_check        (prints "segments-check: PASS")
 */
#include "service/ts_exec_device.h"
#include "service/ts_exec_segments.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEGMENT_BYTES ((size_t) 8 << 20)	/* within the sizes the cache pins */

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

/* Create (or create again) the POSIX object PostgreSQL would name for handle. */
static void
create_object(const char *name)
{
	int			fd;

	shm_unlink(name);
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, (off_t) SEGMENT_BYTES) != 0)
	{
		perror("segments_check: shm_open");
		exit(2);
	}
	close(fd);
}

/* Write into pages no mapping had touched, through a mapping of its own (as a backend fills a batch); the object's change time before and after. */
static void
backend_writes(const char *name, size_t at, struct timespec *before, struct timespec *after)
{
	int			fd = shm_open(name, O_RDWR, 0);
	struct stat st;
	char	   *p;

	fstat(fd, &st);
	*before = st.st_ctim;
	p = mmap(NULL, SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	usleep(20000);				/* past the clock's granularity */
	memset(p + at, 1, 2 * 4096);
	munmap(p, SEGMENT_BYTES);
	fstat(fd, &st);
	*after = st.st_ctim;
	close(fd);
}

int
main(void)
{
	uint32_t	handle = 0x7e570000u | (uint32_t) (getpid() & 0xffff);
	char		name[64];
	TsSegment	seg;
	void	   *first;
	struct timespec before,
				after;

	snprintf(name, sizeof(name), "/PostgreSQL.%u", handle);
	create_object(name);
	ts_segments_init(TS_SEGMENT_POSIX);

	expect(ts_segment_map(handle, true, &seg) && seg.pinned && registered == 1,
		   "a run's segment is mapped and pinned on its first request");
	first = seg.h;
	memset((char *) seg.h, 0, sizeof(TsRequestHeader));	/* the executor's answer, through its mapping */
	ts_segment_release(&seg);

	for (int batch = 1; batch <= 3; batch++)
	{
		backend_writes(name, (size_t) batch << 20, &before, &after);
		if (batch == 1)
			printf("(the object's change time %s when the backend wrote new pages)\n",
				   before.tv_sec != after.tv_sec || before.tv_nsec != after.tv_nsec ? "moved" : "did not move");
		expect(ts_segment_map(handle, true, &seg) && seg.h == first && seg.pinned &&
			   registered == 1 && unregistered == 0,
			   "a later request of the run finds the same mapping, pinned once");
		ts_segment_release(&seg);
	}

	create_object(name);		/* the backend left; a new one made a segment of the same name */
	expect(ts_segment_map(handle, true, &seg) && registered == 2 && unregistered == 1,
		   "a new object under the name gets a mapping of its own, the old one unpinned");
	ts_segment_drop(&seg);
	expect(unregistered == 2, "a dropped mapping is unpinned and unmapped");
	expect(ts_segment_map(handle, true, &seg) && registered == 3,
		   "after a drop the name is mapped afresh");
	ts_segment_release(&seg);

	shm_unlink(name);
	ts_segments_sweep();
	expect(unregistered == 3, "the sweep unmaps a mapping whose object is gone");
	printf("segments-check: %s\n", failures == 0 ? "PASS" : "FAIL");
	return failures == 0 ? 0 : 1;
}
