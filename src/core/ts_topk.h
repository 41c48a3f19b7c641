/*
 * ts_topk.h - the k features of largest |SHAP value| per output of a row
 * (BigQuery's top_k_features): ties go to the feature that comes first in
 * the model, and the output's margin rides along as base value plus every
 * feature's contribution, summed in feature order. cuda/ts_shap.cu selects
 * the same way on the GPU, so a row's record does not depend on where its
 * values were selected.
 */
#ifndef TS_TOPK_H
#define TS_TOPK_H

#include <stddef.h>
#include <stdint.h>

/*
 * Doubles of one (row, output) record of k features: margin, base value,
 * then k contributions by decreasing |value|, then their feature indices.
 */
static inline size_t
ts_topk_width(int32_t k)
{
	return 2 + 2 * (size_t) k;
}

/* Features a record of asked features holds: k, or all of them when there are fewer. */
static inline int32_t
ts_topk_count(int32_t k, int32_t num_features)
{
	return k < num_features ? k : num_features;
}

/*
 * Records of one row (outputs x ts_topk_width(k) doubles into out) from its
 * contributions in pred_contribs layout (outputs x (features + 1), bias
 * last); k at most num_features.
 */
extern void ts_topk_row(const double *phi, int32_t num_outputs, int32_t num_features, int32_t k,
						double *out);

#endif							/* TS_TOPK_H */
