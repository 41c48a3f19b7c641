/*
 * ts_cpu_rows.h - the compute core's work on a batch of rows, on every
 * thread of a row pool: contributions, predictions or interaction values of
 * each row into its own slice of one output buffer. A row's result does not
 * depend on the thread that computes it, so any number of threads gives the
 * bytes one thread gives.
 */
#ifndef TS_CPU_ROWS_H
#define TS_CPU_ROWS_H

#include "core/ts_interactions.h"
#include "core/ts_interventional.h"
#include "core/ts_interventional_plan.h"
#include "core/ts_quad_lanes.h"
#include "core/ts_quad_pairs.h"
#include "core/ts_quad_tree.h"
#include "core/ts_row_pool.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_topk.h"
#include "model/ts_model.h"

typedef enum TsRowsKind
{
	TS_ROWS_SHAP,				/* outputs x (features + 1): pred_contribs */
	TS_ROWS_PREDICT,			/* outputs margins, then outputs predictions */
	TS_ROWS_INTERACTIONS,		/* outputs x selected x features */
	TS_ROWS_TOP_FEATURES		/* outputs x ts_topk_width(top_k): core/ts_topk.h */
} TsRowsKind;

/* What to compute over a batch, and where. */
typedef struct TsCpuRows
{
	TsRowsKind	kind;
	const TsModel *model;
	const TsPathTable *paths;
	TsShapAlgorithm algorithm;
	TsInteractionMethod method;
	const TsFeatureSelection *selection;	/* interactions only */
	int32_t		top_k;			/* top features: k, at most the model's features */
	const TsBackground *background;	/* SHAP and top features: interventional against
										 * it; NULL for path-dependent */
	const TsIvPlan *iv_plan;	/* the background grouped per path, or NULL: the walk;
								 * set by the caller before the first batch */
	const TsQuadTreePlan *tree_plan;	/* path-dependent quadrature carried down each tree
										 * (one that fits), or NULL: through the paths */
	int			threads;		/* threads the scratch is for, the caller's included */
	double	   *scratch;		/* per thread: scratch_len doubles each */
	size_t		scratch_len;
	/* the current run */
	int64_t		nrows;			/* set by ts_cpu_rows_run and ts_cpu_rows_start */
	const float *x;				/* rows x features */
	double	   *out;			/* rows x ts_cpu_rows_width() */
} TsCpuRows;

/* Doubles of one row's result. */
extern size_t ts_cpu_rows_width(const TsCpuRows *r);

/* Scratch doubles one thread needs. */
extern size_t ts_cpu_rows_scratch_len(const TsCpuRows *r);

/*
 * Compute nrows rows of r->x into r->out on the pool's threads (a pool of
 * more threads than r->threads runs on the caller alone); false when
 * stop_requested stopped the run part way (r->out is then partly written).
 */
extern bool ts_cpu_rows_run(TsCpuRows *r, TsRowPool *pool, int64_t nrows,
							TsStopRequested stop_requested);

/*
 * Start the same run on the pool's helpers alone (pool not NULL, with no
 * more threads than r->threads); ts_row_pool_finish() joins and ends it.
 */
extern void ts_cpu_rows_start(TsCpuRows *r, TsRowPool *pool, int64_t nrows,
							  TsStopRequested stop_requested);

#endif							/* TS_CPU_ROWS_H */
