/*
 * ts_quad_pairs.h - SHAP interaction values (Shapley, XGBoost's
 * pred_interactions) by quadrature for a block of rows in vector lanes. On
 * a path of d merged elements (zero fractions z, one fractions o, value v)
 * entry (i, j), i != j, takes
 *     1/2 v (o_i - z_i) (o_j - z_j) integral_0^1 prod_{l != i, j} (z_l + t (o_l - z_l)) dt
 * and the diagonal takes the SHAP value (ts_interactions_finish then
 * subtracts the row's other entries). The integrand has degree d - 2, so the
 * path's ceil(d / 2) Gauss-Legendre nodes are exact; per node the products
 * without two elements are prefix, running and suffix products (no
 * division), O(d^2) a node. bench/interactions_quadrature_check.py models it
 * against brute force. Paths longer than TS_QUAD_PAIRS_MAX elements take the
 * dynamic programme (ts_interactions.h), row by row.
 */
#ifndef TS_QUAD_PAIRS_H
#define TS_QUAD_PAIRS_H

#include "core/ts_interactions.h"
#include "core/ts_quad_lanes.h"

/* Longest path (merged elements) evaluated in lanes: its pair sums take d^2 lanes of scratch. */
#define TS_QUAD_PAIRS_MAX 64

/* Scratch doubles ts_quad_pairs_rows needs. */
extern size_t ts_quad_pairs_scratch_len(const TsPathTable *pt);

/*
 * Shapley interaction values of rows x[0 .. nrows) (1 <= nrows <=
 * TS_QUAD_LANES) into out, overwritten: nrows x outputs x selected x
 * features, what ts_interactions_row writes for each row.
 */
extern void ts_quad_pairs_rows(const TsPathTable *pt, const float *x, int32_t nrows,
							   const TsFeatureSelection *sel, double *out, double *scratch);

#endif							/* TS_QUAD_PAIRS_H */
