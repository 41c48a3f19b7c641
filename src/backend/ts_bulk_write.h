/*
 * ts_bulk_write.h - explanations written straight into an explain_into
 * target, as COPY FROM writes: rows gathered into slots, handed to the
 * table access method's multi-insert with a bulk-insert state, then their
 * index entries. For plain tables with exactly the wide layout's columns and
 * nothing that would need the executor's INSERT (triggers, row level
 * security, check constraints, generated columns); others take SQL's INSERT.
 */
#ifndef TS_BULK_WRITE_H
#define TS_BULK_WRITE_H

#include "postgres.h"

#include "utils/array.h"

typedef struct TsBulkWriter TsBulkWriter;

/* A float8[] of n values (the wide forms' shap_values). */
extern ArrayType *ts_float8_array(const double *values, int32 n);

/*
 * A one-dimensional array of n elements of elemtype, no NULLs, in nbytes
 * (zeroed): its header written, its elements left to the caller.
 */
extern ArrayType *ts_array_shell(Oid elemtype, int32 n, Size nbytes);

/* Whether the current user's rows can be bulk-written into the relation. */
extern bool ts_bulk_target_ok(Oid relid);

/* Open the target for key_type keys' rows stamped with this model version (42809 if it cannot take them). */
extern TsBulkWriter *ts_bulk_begin(Oid relid, Oid key_type, int64 version);

/* Add one (key, output, base value, values) row; written when the buffer fills. */
extern void ts_bulk_put(TsBulkWriter *w, Datum key, bool key_null, int32 output, double base_value,
						const double *values, int32 n);

/* Write what is buffered and close the target; the rows of output 0 written. */
extern int64 ts_bulk_end(TsBulkWriter *w);

#endif							/* TS_BULK_WRITE_H */
