/*
 * ts_quad_lanes.h - path-dependent SHAP by quadrature (ts_quadrature.h) for
 * a block of rows at once: each path's Gauss-Legendre products are the same
 * operations for every row, so TS_QUAD_LANES rows go through a path together
 * in vector lanes. Each lane does what ts_quad_path does for its row, in
 * the same order, so a row's result does not depend on the rows beside it;
 * the instruction set (AVX-512, AVX2 or the plain x86-64 one) is chosen
 * once per process from the CPU.
 */
#ifndef TS_QUAD_LANES_H
#define TS_QUAD_LANES_H

#include "core/ts_paths.h"

/* Rows one block takes. */
#define TS_QUAD_LANES 8

/*
 * Scratch doubles a block skips to start its lane arrays on a 64-byte line:
 * a lane array of TS_QUAD_LANES doubles is one line, where it would straddle
 * two (every AVX-512 load and store twice the lines; 1.2x slower walks).
 */
#define TS_LANE_ALIGN_SLACK 7

/* The first 64-byte line boundary at or after p (p itself aligned to a double). */
static inline double *
ts_lane_align(double *p)
{
	return (double *) (((uintptr_t) p + 63) & ~(uintptr_t) 63);
}

/* Scratch doubles ts_quad_rows needs. */
extern size_t ts_quad_rows_scratch_len(const TsPathTable *pt);

/*
 * Contributions of rows x[0 .. nrows) (1 <= nrows <= TS_QUAD_LANES; rows of
 * num_features floats) into phi, one row of outputs x (features + 1) each,
 * bias included: what ts_cpu_shap_row writes for each.
 */
extern void ts_quad_rows(const TsPathTable *pt, const float *x, int32_t nrows, double *phi,
						 double *scratch);

/* The instruction set in use ("avx512", "avx2" or "x86-64"), or the one forced by name; NULL if unknown. */
extern const char *ts_quad_lanes_isa(const char *force);

/* The instruction set in use, choosing the CPU's widest if none was chosen yet. */
extern const char *ts_quad_lanes_isa_in_use(void);

#endif							/* TS_QUAD_LANES_H */
