/*
 * ts_batch.h - reading a user query through an SPI cursor in batches of
 * treeshap.batch_rows rows, converted to row-major float32 features (NaN for
 * missing) plus the row keys, in the layout the SHAP engines take.
 */
#ifndef TS_BATCH_H
#define TS_BATCH_H

#include "executor/spi.h"

#include "model/ts_model.h"

typedef struct TsBatchReader
{
	Portal		portal;
	const TsModel *model;
	int			batch_rows;
	Oid			key_type;		/* type the caller wants keys in */

	/* binding, made from the first batch's tuple descriptor */
	bool		bound;
	Oid			key_in_type;
	int		   *feature_attno;	/* per model feature: query column (0-based) */
	Oid		   *feature_type;	/* base type of that column */
	char	   *feature_text;	/* text-like column mapped by the model's dictionary:
								 * 't' text/varchar, 'b' char(n), 'e' enum; else 0 */

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

/* Feature name as users see it: the model's name or f<index>. */
extern char *ts_feature_name(const TsModel *model, int32 j);

#endif							/* TS_BATCH_H */
