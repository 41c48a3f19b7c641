/*
 * ts_wire.h - a model's interface as flat bytes: all a backend needs to
 * explain rows on the GPU service without the model's trees. That is what
 * reads its rows (feature names, input rules, categories and their
 * dictionaries), what shapes its results (outputs, link, base margins), and
 * the paths too long for a warp, which the backend adds on its own CPU.
 * The service writes it once per resident model, so a new session reads a
 * few kilobytes instead of parsing the model and building its path table.
 * Both sides are the same build on the same machine: native byte order.
 */
#ifndef TS_WIRE_H
#define TS_WIRE_H

#include "core/ts_paths.h"

typedef struct TsInterface
{
	TsModel    *model;			/* no trees: num_trees and num_nodes only count them */
	TsPathTable *long_paths;	/* the long paths alone, numbered from 0 */
	int64_t		num_paths;		/* of the whole path table */
} TsInterface;

/*
 * Write the interface of model m and its path table pt, whose long paths
 * are long_paths[0 .. num_long), into buf when it has room (cap bytes);
 * returns the length either way.
 */
extern size_t ts_wire_write(const TsModel *m, const TsPathTable *pt, const int64_t *long_paths,
							int64_t num_long, char *buf, size_t cap);

/* The interface of m and its path table in a new ts_alloc'd buffer of *len bytes. */
extern char *ts_wire_interface(const TsModel *m, const TsPathTable *pt, size_t *len);

/* Read an interface that ts_wire_write wrote; false with err when the bytes are not one. */
extern bool ts_wire_read(const char *buf, size_t len, TsInterface *out, TsError *err);

/* Free what ts_wire_read allocated. */
extern void ts_wire_free(TsInterface *in);

#endif							/* TS_WIRE_H */
