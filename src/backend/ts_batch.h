/*
 * ts_batch.h - reading the rows to explain in batches of treeshap.batch_rows
 * rows, converted to row-major float32 features (NaN for missing) plus the
 * row keys, in the layout the SHAP engines take. The rows come from a user
 * query (an SPI cursor) or from a table (a direct scan where PostgreSQL would
 * read the table the same way, else a generated query: see ts_table_source.c).
 */
#ifndef TS_BATCH_H
#define TS_BATCH_H

#include "access/tableam.h"
#include "executor/spi.h"
#include "utils/rel.h"

#include "model/ts_model.h"

/* Key "columns" of a table that are none: the whole row (row_key is the source row itself), or no key. */
#define TS_KEY_WHOLE_ROW (-1)
#define TS_KEY_NONE (-2)

typedef struct TsBatchReader
{
	Portal		portal;			/* query input, or a table read through a query */
	Relation	rel;			/* table input, open (and locked) while reading */
	TableScanDesc scan;			/* direct scan of rel; NULL when read through a query */
	TupleTableSlot *slot;
	bool		scan_done;		/* the scan returned its last row */
	int			key_attno;		/* key column (0-based), or TS_KEY_WHOLE_ROW */
	bool		positional;		/* features are the columns after the key, in model order */
	const TsModel *model;
	int			batch_rows;
	Oid			key_type;		/* type the caller wants keys in */
	Oid			key_base;		/* key_type, or the type its domain is over */
	const char *what;			/* what the query is, in messages: "query", "background query" */

	/* binding, made from the first batch's tuple descriptor */
	bool		bound;
	Oid			key_in_type;
	int16		key_len;		/* direct scans copy the key out of the slot */
	bool		key_byval;
	int		   *feature_attno;	/* per model feature: column (0-based) */
	int			natts_read;		/* columns deformed per row: up to the last one used */
	Oid		   *feature_type;	/* base type of that column */
	char	   *feature_text;	/* text-like column mapped by the model's dictionary:
								 * 't' text/varchar, 'b' char(n), 'e' enum; else 0 */
	int		   *fixed_offset;	/* per model feature: its column's byte offset in a
								 * tuple without NULLs, where every column read has a
								 * fixed width (ts_batch_convert_tuple); else NULL */
	int16	   *fixed_len;		/* and its width (every feature type there is by value) */
	int			key_offset;		/* the key's, likewise */
	bool		fixed_float4_run;	/* every feature a float4 column, in model order and
									 * next to each other: one run of floats to copy */

	/* the current batch */
	float	   *x_target;		/* if set, rows are converted into it (batch_rows rows of room) */
	uint64		nrows;
	float	   *x;				/* nrows x num_features */
	Datum	   *keys;
	bool	   *key_null;
	Datum	   *values;			/* deform buffers of one tuple */
	bool	   *isnull;
	MemoryContext batch_context;	/* reset before each batch */
} TsBatchReader;

/*
 * Open a read-only cursor over query; SPI must be connected. key_type
 * InvalidOid takes keys of any type as they come (for callers that ignore them).
 */
extern void ts_batch_open(TsBatchReader *r, const char *query, const TsModel *model, Oid key_type);

/* Fetch and convert the next batch; returns its row count, 0 at the end. */
extern uint64 ts_batch_next(TsBatchReader *r);

extern void ts_batch_close(TsBatchReader *r);

/*
 * Read a table's rows, keyed by key_column (NULL: the whole row, when
 * key_type is the table's row type); the relation is locked for the read.
 */
extern void ts_batch_open_table(TsBatchReader *r, Oid relid, const char *key_column,
								const TsModel *model, Oid key_type);

/* Where a call's rows come from: a query, or a table with its key column. */
typedef struct TsSource
{
	char	   *query;			/* NULL for a table */
	Oid			relid;
	char	   *key_column;		/* NULL: the whole row, or no key */
} TsSource;

/* Open the reader on a call's source. */
extern void ts_batch_open_source(TsBatchReader *r, const TsSource *src, const TsModel *model,
								 Oid key_type);

/*
 * Keys of one batch kept past the next fetch, which frees the reader's
 * (pipelines hold a batch's keys while the next one is read).
 */
typedef struct TsKeySlot
{
	Datum	   *keys;
	bool	   *key_null;
	MemoryContext context;		/* by-reference key copies */
	int16		key_len;
	bool		key_byval;
} TsKeySlot;

/* Room for rows keys of key_type (InvalidOid: keys never looked at). */
extern void ts_key_slot_init(TsKeySlot *ks, int64 rows, Oid key_type);

/* Keep the reader's current batch's keys in a slot. */
extern void ts_batch_keep_keys(const TsBatchReader *r, TsKeySlot *ks);

/* Common to both sources (ts_batch.c), used by ts_table_source.c. */
extern void ts_batch_init(TsBatchReader *r, const TsModel *model, Oid key_type);
extern void ts_batch_open_query(TsBatchReader *r, const char *query);
extern void ts_batch_bind(TsBatchReader *r, TupleDesc desc);
extern void ts_batch_start(TsBatchReader *r, uint64 room);
extern void ts_batch_convert_row(TsBatchReader *r, uint64 i, Datum key, bool key_null,
								 const Datum *values, const bool *isnull);
extern bool ts_batch_convert_tuple(TsBatchReader *r, uint64 i, HeapTuple tuple);

/* Direct scans (ts_table_source.c). */
extern uint64 ts_table_scan_next(TsBatchReader *r);
extern void ts_table_scan_close(TsBatchReader *r);

/* Feature name as users see it: the model's name or f<index>. */
extern char *ts_feature_name(const TsModel *model, int32 j);

#endif							/* TS_BATCH_H */
