/*
 * ts_quadrature.h - exact path-dependent TreeSHAP by Gauss-Legendre
 * quadrature (Quadrature-TreeSHAP, Wettenstein, Mitchell, Yu): for one path
 * with leaf value v and unique features j (zero fraction z_j, one fraction
 * o_j), phi_k = v (o_k - z_k) * integral over [0, 1] of
 * prod_{j != k} (z_j + t (o_j - z_j)) dt. The integrand is a polynomial of
 * degree d - 1, so ceil(d / 2) nodes integrate it exactly. No divisions
 * in the inner loops. ts_shap_cpu.h runs it over rows and paths.
 */
#ifndef TS_QUADRATURE_H
#define TS_QUADRATURE_H

#include "core/ts_paths.h"

/* Scratch doubles ts_quad_path needs. */
extern size_t ts_quad_scratch_len(const TsPathTable *pt);

/* Add path p's contributions for row to phi (outputs x (features + 1)). */
extern void ts_quad_path(const TsPathTable *pt, int64_t p, const float *row, double *phi,
						 double *scratch);

/* Point counts up to which ts_quad_nodes keeps nodes and weights, computed once per process. */
#define TS_QUAD_CACHED 64

/* Nodes and weights for n points: kept ones up to 64 points, else computed into scratch (2 n doubles). */
extern void ts_quad_nodes(int32_t n, const double **x, const double **w, double *scratch);

/* The n Gauss-Legendre nodes and weights on [0, 1] (weights sum to 1). */
extern void ts_gauss_legendre(int32_t n, double *x, double *w);

#endif							/* TS_QUADRATURE_H */
