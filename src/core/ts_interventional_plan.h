/*
 * ts_interventional_plan.h - interventional TreeSHAP on the CPU with the
 * background grouped per path. Whether a background row r reaches path p
 * alongside row x depends on r only through the elements of p that r
 * satisfies (its mask), so the plan keeps, per path, the distinct masks of
 * the background rows and how many rows have each (in probability space,
 * which rows: shap's factor differs per pair). A row then costs, per path,
 * one pass over the path's masks instead of one over the background rows:
 * a pair adds v (|A|-1)! |B|! / (|A|+|B|)! to each element of A (only x
 * satisfies it) and takes v |A|! (|B|-1)! / (|A|+|B|)! from each of B
 * (only r does), as in ts_interventional.h; a group whose mask misses an
 * element x does not satisfy reaches nothing. Paths of more than 32
 * features do not fit a mask and take the path form.
 *
 * Built in two passes over the paths, each on any number of threads (a
 * range of paths per call): count the groups, then, in the arrays sized
 * from the counts, fill them. Results do not depend on the threads.
 */
#ifndef TS_INTERVENTIONAL_PLAN_H
#define TS_INTERVENTIONAL_PLAN_H

#include "core/ts_interventional.h"

/* Elements (the root's excluded) a mask can hold. */
#define TS_IV_PLAN_MAX_ELEMENTS 32

typedef struct TsIvPlan
{
	const TsPathTable *pt;
	const TsBackground *bg;
	int64_t    *group_start;	/* num_paths + 1 offsets into the groups; a long path has none */
	uint32_t   *group_mask;		/* bit i: the path's element i + 1 is satisfied */
	uint32_t   *group_end;		/* rows of the path's groups up to this one's end */
	/* probability space: per path, its nrows background rows by group, 16 bits when they fit */
	uint16_t   *members16;
	uint32_t   *members;		/* more than 65,536 background rows */
	int64_t    *long_paths;		/* paths of more than TS_IV_PLAN_MAX_ELEMENTS features */
	int64_t		num_long;
} TsIvPlan;

/* Bytes of working memory one thread needs to build a plan for this background (zeroed before first use). */
extern size_t ts_iv_plan_build_scratch(const TsBackground *bg);

/* Groups of paths [first, first + count) into ngroups (0 for a long path); bg's columns made first. */
extern void ts_iv_plan_count(const TsPathTable *pt, const TsBackground *bg, int64_t first,
							 int64_t count, void *scratch, int64_t *ngroups);

/*
 * A plan for the paths' group counts, its arrays allocated and group_start
 * set, or NULL when its arrays would take more than budget bytes.
 */
extern TsIvPlan *ts_iv_plan_create(const TsPathTable *pt, const TsBackground *bg,
								   const int64_t *ngroups, size_t budget);

extern void ts_iv_plan_free(TsIvPlan *plan);

/*
 * Fill paths [first, first + count) of a plan whose group_start is set
 * (prefix sums of the counts) and whose arrays are allocated.
 */
extern void ts_iv_plan_fill(TsIvPlan *plan, int64_t first, int64_t count, void *scratch);

/* Scratch doubles one thread needs for ts_iv_plan_row. */
extern size_t ts_iv_plan_scratch_len(const TsPathTable *pt, const TsBackground *bg);

/*
 * Rows from which a plan pays for itself: building it costs about two
 * passes over every path element per background row, a row's walk about
 * one visit per tree level per background row, each some 10 times the
 * cost of an element's test (cal_housing-med, 1,000 background rows: a
 * 0.7 s build against 40 ms per row walked and 2.5 ms through the plan,
 * one thread). Fewer rows are walked.
 */
extern int64_t ts_iv_plan_min_rows(const TsPathTable *pt, const TsModel *m);

/* One row's values against the background, as ts_interventional_row gives them. */
extern void ts_iv_plan_row(const TsIvPlan *plan, const float *x, double *phi, double *scratch);

#endif							/* TS_INTERVENTIONAL_PLAN_H */
