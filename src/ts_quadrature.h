/*
 * ts_quadrature.h - exact path-dependent TreeSHAP by Gauss-Legendre
 * quadrature (Quadrature-TreeSHAP, Wettenstein, Mitchell, Yu): for one path
 * with leaf value v and unique features j (zero fraction z_j, one fraction
 * o_j), phi_k = v (o_k - z_k) * integral over [0, 1] of
 * prod_{j != k} (z_j + t (o_j - z_j)) dt. The integrand is a polynomial of
 * degree d - 1, so ceil(d / 2) nodes integrate it exactly. Same output
 * layout as ts_shap_cpu.h; no divisions in the inner loops.
 */
#ifndef TS_QUADRATURE_H
#define TS_QUADRATURE_H

#include "ts_paths.h"

/* Scratch doubles ts_quad_row and ts_quad_add_paths need. */
extern size_t ts_quad_scratch_len(const TsPathTable *pt);

/* Contributions of one row into phi (overwritten), as ts_shap_row. */
extern void ts_quad_row(const TsPathTable *pt, const float *row, double *phi, double *scratch);

/* Add the contributions of the listed paths to phi (not cleared; no bias). */
extern void ts_quad_add_paths(const TsPathTable *pt, const int64_t *paths, int64_t npaths,
							  const float *row, double *phi, double *scratch);

/* The n Gauss-Legendre nodes and weights on [0, 1] (weights sum to 1). */
extern void ts_gauss_legendre(int32_t n, double *x, double *w);

#endif							/* TS_QUADRATURE_H */
