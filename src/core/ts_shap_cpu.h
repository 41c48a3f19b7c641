/*
 * ts_shap_cpu.h - exact path-dependent TreeSHAP on the CPU, in double
 * precision, over a path table: EXTEND over each path and UNWOUNDSUM per
 * element, or quadrature (ts_quadrature.h). Output layout is XGBoost's
 * pred_contribs: for each output, num_features contributions, then the bias.
 */
#ifndef TS_SHAP_CPU_H
#define TS_SHAP_CPU_H

#include "core/ts_paths.h"

/* The CPU algorithms: EXTEND/UNWOUNDSUM (GPUTreeShap's) or Gauss-Legendre quadrature. */
typedef enum TsShapAlgorithm
{
	TS_SHAP_TREESHAP,
	TS_SHAP_QUADRATURE
} TsShapAlgorithm;

/* Scratch doubles either algorithm needs. */
extern size_t ts_cpu_scratch_len(const TsPathTable *pt);

/*
 * The same for nrows rows of x into phi (nrows x outputs x (features + 1)):
 * how GPU results are completed with the paths too long for a warp.
 */
extern void ts_cpu_shap_add_paths_rows(const TsPathTable *pt, TsShapAlgorithm alg, const int64_t *paths,
									   int64_t npaths, const float *x, int64_t nrows, double *phi,
									   double *scratch);

/*
 * Contributions of one row (float32 features, NaN = missing) into phi, of
 * num_outputs * (num_features + 1) doubles; phi is overwritten.
 */
extern void ts_cpu_shap_row(const TsPathTable *pt, TsShapAlgorithm alg, const float *row,
							double *phi, double *scratch);

/* Add the contributions of the listed paths to phi (not cleared; no bias). */
extern void ts_cpu_shap_add_paths(const TsPathTable *pt, TsShapAlgorithm alg, const int64_t *paths,
								  int64_t npaths, const float *row, double *phi, double *scratch);

/*
 * Add rows of contributions (nrows x outputs x (features + 1)) to importance
 * sums: outputs x features sums of |phi|, then outputs x features sums of phi.
 */
extern void ts_importance_add_rows(const double *phi, int64_t nrows, int32_t num_outputs,
								   int32_t num_features, double *sums);

/* Add share times each of path p's values to feature f's contribution to its outputs. */
extern void ts_shap_add_share(const TsPathTable *pt, int64_t p, int32_t f, double share, double *phi);

/* Path helpers shared with the interaction values (ts_interactions.c). */
extern bool ts_shap_fractions(const TsPathTable *pt, int64_t p, const float *row, double *z, double *o);
extern void ts_shap_extend(double *w, const double *z, const double *o, int32_t n);
extern double ts_shap_unwound_sum(const double *w, int32_t d, double z, double o);

#endif							/* TS_SHAP_CPU_H */
