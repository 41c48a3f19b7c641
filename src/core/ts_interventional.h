/*
 * ts_interventional.h - exact interventional TreeSHAP against a background
 * data set (Lundberg et al. 2020, Algorithm 3; shap's
 * feature_perturbation="interventional"). For one row x and one background
 * row r, the value of a feature set S is the model's output on the hybrid
 * row that takes S's values from x and the others from r; a leaf is reached
 * by the hybrids whose set holds every feature A for which only x follows
 * the path and none of those B for which only r does, so feature i in A
 * gains v (|A|-1)! |B|! / (|A|+|B|)! and i in B loses v |A|! (|B|-1)! /
 * (|A|+|B|)!. A walk down each tree visits just the leaves some hybrid
 * reaches. The row's values are the mean over the background rows, and
 * the bias is the background's mean output, so that they add up to the
 * row's output.
 *
 * In probability space (the model's link applied), each background row's
 * margin values are scaled by (g(f(x)) - g(f(r))) / (f(x) - f(r)) per
 * output, shap's rule for a transformed output, which keeps them adding up
 * to g(f(x)) - g(f(r)); it needs a link that maps each output on its own.
 */
#ifndef TS_INTERVENTIONAL_H
#define TS_INTERVENTIONAL_H

#include <math.h>

#include "core/ts_paths.h"
#include "model/ts_model.h"

typedef struct TsBackground
{
	const TsModel *model;
	int64_t		nrows;
	float	   *x;				/* nrows x features, input rules applied */
	float	   *columns;		/* the same by feature, features x nrows, for the grouped
								 * route only (ts_background_add_columns); else NULL */
	double	   *output;			/* nrows x outputs: margin, or linked when probability */
	double	   *margin;			/* nrows x outputs, margin space */
	double	   *base;			/* per output: the mean of output over the rows */
	bool		probability;
	int32_t		max_sets;		/* most features a path can assign: side of the weight table */
	double	   *weight;			/* (max_sets + 1)^2: (a - 1)! b! / (a + b)! at [a][b] */
} TsBackground;

/*
 * A background as plain arrays, the form the GPU service receives: its
 * rows (input rules applied) and, in probability space, their margins and
 * linked outputs (margin and output NULL in margin space).
 */
typedef struct TsBackgroundRows
{
	const float *x;				/* nrows x features */
	const double *margin;		/* nrows x outputs, or NULL */
	const double *output;		/* nrows x outputs, or NULL */
	int64_t		nrows;
} TsBackgroundRows;

/*
 * shap's factor for a transformed output: its change between row x and a
 * background row r over the change of the margin, 1 where the margins are
 * equal (the margin values then sum to 0, and so does the output's change).
 */
static inline double
ts_interventional_factor(double margin_x, double output_x, double margin_r, double output_r)
{
	double		dm = margin_x - margin_r;

	return dm == 0.0 ? 1.0 : (output_x - output_r) / dm;
}

/* (a - 1)! b! / (a + b)! for a >= 1, from the background's table when it is that large. */
static inline double
ts_background_weight(const TsBackground *bg, int32_t a, int32_t b)
{
	if (a <= bg->max_sets && b <= bg->max_sets)
		return bg->weight[(size_t) a * (bg->max_sets + 1) + b];
	return exp(lgamma((double) a) + lgamma((double) b + 1.0) - lgamma((double) a + b + 1.0));
}

/* (a - 1)! b! / (a + b)! for a >= 1, by the recurrence the walk's table uses (the same bits). */
extern double ts_interventional_weight(int32_t a, int32_t b);

/*
 * The path form, for the paths a GPU leaves to the CPU and for the GPU
 * service's emulation: add to phi (pred_contribs layout; the bias column
 * untouched) the listed paths' values for row x against every background
 * row, averaged over them. A path is reached by the hybrids whose set holds
 * every element only x satisfies (A) and none only r satisfies (B), and by
 * none when an element is satisfied by neither. In probability space
 * margin_x and output_x are x's margins and linked outputs; each pair's
 * values are scaled by shap's rule as in ts_interventional_row.
 */
extern void ts_interventional_add_paths_row(const TsPathTable *pt, const int64_t *paths,
											int64_t num_paths, const TsBackgroundRows *bg,
											const float *x, const double *margin_x,
											const double *output_x, double *phi);

/*
 * A bound on shap's factor (g(f(x)) - g(f(r))) / (f(x) - f(r)) over every
 * pair of rows, the slope of the link between two margins: 1 for identity,
 * scale / 4 for the logistic, exp of the largest margin the trees can give
 * for exp; 0 when there is none (hinge, softmax, or past a double).
 */
extern double ts_interventional_rescale_bound(const TsModel *m);

/* Whether the model's link maps each output on its own (softmax does not). */
extern bool ts_interventional_link_ok(const TsModel *m);

/*
 * A background of nrows rows (copied; features already through
 * ts_model_prepare_row), its outputs and weights; nrows >= 1.
 */
extern TsBackground *ts_background_create(const TsModel *m, const float *x, int64_t nrows,
										  bool probability);

/* Its rows by feature (columns), once: what grouping per path reads, one column per element. */
extern void ts_background_add_columns(TsBackground *bg);

extern void ts_background_free(TsBackground *bg);

/* Scratch doubles one thread needs for ts_interventional_row. */
extern size_t ts_interventional_scratch_len(const TsBackground *bg);

/*
 * One row's values (float32 features, input rules applied) against the
 * background, in pred_contribs layout: outputs x (features + 1), the bias
 * last; phi is overwritten.
 */
extern void ts_interventional_row(const TsBackground *bg, const float *x, double *phi,
								  double *scratch);

#endif							/* TS_INTERVENTIONAL_H */
