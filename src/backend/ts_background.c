/*
 * ts_background.c - reading an interventional call's background rows
 * (ts_background.h) through the batch reader, without a key column.
 */
#include "postgres.h"

#include "backend/ts_background.h"
#include "backend/ts_batch.h"

TsBackground *
ts_background_read(const char *query, const TsModel *model, bool probability)
{
	TsBatchReader reader;
	Size		nf = model->num_features;
	float	   *x = NULL;
	int64		rows = 0;
	int64		room = 0;
	uint64		n;
	TsBackground *bg;

	ts_batch_open(&reader, query, model, InvalidOid);
	reader.key_attno = TS_KEY_NONE;
	while ((n = ts_batch_next(&reader)) > 0)
	{
		if (rows + (int64) n > room)
		{
			room = Max(room * 2, rows + (int64) n);
			x = x == NULL ? palloc_extended(sizeof(float) * nf * room, MCXT_ALLOC_HUGE)
				: repalloc_huge(x, sizeof(float) * nf * room);
		}
		memcpy(x + rows * nf, reader.x, sizeof(float) * nf * n);
		rows += n;
	}
	ts_batch_close(&reader);
	if (rows == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("background query returned no rows"),
				 errhint("Interventional SHAP averages over the background rows; give it at least one.")));
	bg = ts_background_create(model, x, rows, probability);
	pfree(x);
	elog(DEBUG1, "treeshap: interventional SHAP against %lld background rows", (long long) rows);
	return bg;
}
