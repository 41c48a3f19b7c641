/*
 * ts_tool.h - for the standalone tools only (test/core/ts_cli, bench/ts_bench,
 * bench/interrupt_cost), never the extension: reading a whole file, since the
 * core does no I/O, and the clock of their timings.
 */
#ifndef TS_TOOL_H
#define TS_TOOL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double
ts_tool_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The whole file in a malloc'd buffer (NUL-terminated), or NULL. */
static inline char *
ts_tool_read_file(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	char	   *buf;
	long		n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = n >= 0 ? malloc((size_t) n + 1) : NULL;
	if (buf != NULL && fread(buf, 1, (size_t) n, f) != (size_t) n)
	{
		free(buf);
		buf = NULL;
	}
	if (buf != NULL)
		buf[n] = '\0';
	fclose(f);
	*len = buf != NULL ? (size_t) n : 0;
	return buf;
}

#endif							/* TS_TOOL_H */
