/*
 * ts_emit.h - the result rows of the explain and predict functions: each
 * result kind's columns, built from a batch's results (per row, or summed)
 * into the call's tuplestore.
 */
#ifndef TS_EMIT_H
#define TS_EMIT_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "utils/array.h"
#include "utils/tuplestore.h"

#include "backend/ts_bulk_write.h"
#include "backend/ts_gpu_pg.h"
#include "backend/ts_groups.h"
#include "core/ts_interventional.h"
#include "core/ts_shap_cpu.h"

typedef enum TsResultKind
{
	TS_RESULT_LONG,				/* (key, output, feature, shap_value) */
	TS_RESULT_WIDE,				/* (key, output, base_value, shap_values[]) */
	TS_RESULT_PREDICT,			/* (key, output, margin, prediction) */
	TS_RESULT_INTERACTIONS,		/* (key, output, feature_a, feature_b, interaction) */
	TS_RESULT_IMPORTANCE,		/* (output, feature, mean_abs_shap, mean_shap, rows), at the end */
	TS_RESULT_SEGMENTS,			/* the same per segment (the query's first column), at the end */
	TS_RESULT_TOP,				/* (key, output, prediction, base_value, rank, feature, shap_value) */
	TS_RESULT_TOP_WIDE			/* (key, output, prediction, base_value, features[], shap_values[]) */
} TsResultKind;

/* Whether a result kind is made of top-k records (ts_topk.h), k rows or one row per (row, output). */
static inline bool
ts_result_is_top(TsResultKind kind)
{
	return kind == TS_RESULT_TOP || kind == TS_RESULT_TOP_WIDE;
}


/* A result tuple reused row after row (ts_emit.c). */
typedef struct TsTupleTemplate TsTupleTemplate;
#define TS_TEMPLATE_MAX_COLUMNS 8

/* State shared by the emitters of one call. */
typedef struct TsEmitter
{
	TsResultKind kind;
	Tuplestorestate *store;
	TupleDesc	desc;
	const TsModel *model;
	const TsPathTable *paths;
	Datum	   *feature_text;	/* feature names as text, for the long forms */
	TsShapAlgorithm algorithm;	/* CPU SHAP algorithm (treeshap.algorithm) */
	TsRunSpec	spec;			/* what the GPU computes, and the interaction options */
	double	   *sums;			/* importance: sums of |phi| and of phi per (output, feature) */
	TsGroups   *groups;			/* segmented importance: those sums per segment */
	int32		top_k;			/* top features: k, at most the model's features */
	double	   *margins;		/* top features, predict: a row's margins, then its predictions */
	int64		rows;			/* importance: rows seen */
	const TsBackground *background;	/* interventional SHAP against it; NULL for path-dependent */
	bool		probability;	/* values explain the linked output (interventional only) */
	TsTupleTemplate *template;	/* predict, wide: the reused result tuple, NULL when none fits */
	TsBulkWriter *writer;		/* wide: rows go into a target (explain_into), not the store */
	bool		template_tried;
	struct TsTopWide *top_wide;	/* top features, wide: the reused arrays (ts_emit_top.c) */
} TsEmitter;

/* Emit (key, output, margin, prediction) rows of one input row from its margins, then its predictions. */
extern void ts_emit_prediction(TsEmitter *em, Datum key, bool key_null, const double *margin);

/*
 * Emit (or, for importance, add up) n rows' results in the GPU layouts of
 * the call's kind (predictions as margins, linked here).
 */
extern void ts_emit_batch(TsEmitter *em, const Datum *keys, const bool *key_null, int32 n,
						  const double *result);

/*
 * Emit one input row's top-feature records (outputs x ts_topk_width(top_k),
 * core/ts_topk.h): k rows per output by rank, or one row of two arrays
 * (ts_emit_top.c).
 */
extern void ts_emit_top_records(TsEmitter *em, Datum key, bool key_null, const double *top);

/*
 * The offsets heap_fill_tuple gives desc's first n columns, all fixed-width
 * and none NULL: each at its alignment; returns where the n-th ends.
 */
extern int	ts_fixed_offsets(TupleDesc desc, int n, int *offsets);

/* Emit what is emitted at the end: importance, overall or per segment; nothing for other kinds. */
extern void ts_emit_totals(TsEmitter *em);

#endif							/* TS_EMIT_H */
