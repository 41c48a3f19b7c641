/*
 * ts_groups.h - importance sums per segment (feature_importance's
 * segment_type form): a hash table from a segment value of any hashable type,
 * NULL included, to its sums of |phi| and of phi per (output, feature) and its
 * row count, kept in the order segments first appear.
 */
#ifndef TS_GROUPS_H
#define TS_GROUPS_H

#include "postgres.h"

typedef struct TsGroups TsGroups;

/* An empty table for segments of type type, each with 2 x columns sums; ERROR if the type has no hash. */
extern TsGroups *ts_groups_create(Oid type, Size columns);

/* The sums of a segment (added, zeroed, on first sight), and its row counter. */
extern double *ts_groups_find(TsGroups *g, Datum value, bool isnull, int64 **rows);

/* Segments seen so far. */
extern int	ts_groups_count(const TsGroups *g);

/* The i-th segment in order of first appearance. */
extern double *ts_groups_get(const TsGroups *g, int i, Datum *value, bool *isnull, int64 *rows);

#endif							/* TS_GROUPS_H */
