/*
 * ts_interactions.h - exact SHAP interaction values on the CPU, conditioning
 * only on each path's own features (GPUTreeShap's O(T L D^3) scheme), for a
 * selection of features: row a of the (features x features) matrix for each
 * selected feature a. Two indices:
 *   Shapley (XGBoost's pred_interactions): entry (a, b) is half the change in
 *     b's SHAP value when a is switched on rather than off; the diagonal holds
 *     what remains of a's SHAP value, so each row sums to it.
 *   Shapley-Taylor (order 2): the diagonal holds v({a}) - v({}), and each pair
 *     index is split evenly between (a, b) and (b, a), so the whole matrix sums
 *     to the margin minus the bias.
 * Layout: outputs x selected x num_features doubles.
 */
#ifndef TS_INTERACTIONS_H
#define TS_INTERACTIONS_H

#include "core/ts_paths.h"

typedef enum TsInteractionMethod
{
	TS_INTERACTION_SHAPLEY = 0,
	TS_INTERACTION_TAYLOR = 1
} TsInteractionMethod;

/* The features whose matrix rows are wanted. */
typedef struct TsFeatureSelection
{
	int32_t		count;
	int32_t    *features;		/* count model features, ascending */
	int32_t    *slot;			/* per model feature: its position in features, or -1 */
} TsFeatureSelection;

/* Selection of the listed features (ascending, no repeats), or of all when features is NULL. */
extern TsFeatureSelection *ts_selection_make(int32_t num_features, const int32_t *features,
											 int32_t count);
extern void ts_selection_free(TsFeatureSelection *sel);

/* Whether any element of path p belongs to the selection. */
extern bool ts_path_selected(const TsPathTable *pt, int64_t p, const TsFeatureSelection *sel);

/* Scratch doubles the functions below need. */
extern size_t ts_interactions_scratch_len(const TsPathTable *pt);

/*
 * Add the listed paths' raw terms for one row to out (not cleared): the
 * off-diagonal entries, and on the diagonal the SHAP value (Shapley) or the
 * main effect (Taylor).
 */
extern void ts_interactions_add_paths(const TsPathTable *pt, const int64_t *paths, int64_t npaths,
									  const float *row, TsInteractionMethod method,
									  const TsFeatureSelection *sel, double *out, double *scratch);

/* The same for nrows rows of x into out (nrows x outputs x selected x features). */
extern void ts_interactions_add_paths_rows(const TsPathTable *pt, const int64_t *paths, int64_t npaths,
										   const float *x, int64_t nrows, TsInteractionMethod method,
										   const TsFeatureSelection *sel, double *out, double *scratch);

/* Turn raw terms into the result: for Shapley, diagonal minus its row's other entries. */
extern void ts_interactions_finish(int32_t num_outputs, int32_t num_features,
								   TsInteractionMethod method, const TsFeatureSelection *sel,
								   double *out);

/* One row's interaction values over every path into out (overwritten). */
extern void ts_interactions_row(const TsPathTable *pt, const float *row, TsInteractionMethod method,
								const TsFeatureSelection *sel, double *out, double *scratch);

#endif							/* TS_INTERACTIONS_H */
