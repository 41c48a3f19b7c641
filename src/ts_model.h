/*
 * ts_model.h - an in-memory tree ensemble, independent of the file format it
 * came from. Node arrays of all trees are stored back to back; child indices
 * are local to their tree. Split semantics are XGBoost's: a present value x
 * goes left when (float) x < threshold; a missing value follows default_left.
 */
#ifndef TS_MODEL_H
#define TS_MODEL_H

#include "ts_core.h"

/* Hard limits that keep hostile headers from asking for absurd memory. */
#define TS_MAX_FEATURES		(1 << 22)
#define TS_MAX_OUTPUTS		(1 << 16)
#define TS_MAX_TREES		(1 << 24)
#define TS_MAX_NODES		(INT32_MAX / 2)

typedef enum TsLink
{
	TS_LINK_IDENTITY,
	TS_LINK_LOGISTIC,
	TS_LINK_EXP,
	TS_LINK_SOFTMAX,
	TS_LINK_HINGE
} TsLink;

typedef struct TsModel
{
	const char *format;			/* e.g. "xgboost-json" */
	int32_t		num_trees;
	int32_t		num_features;
	int32_t		num_outputs;
	int64_t		num_nodes;		/* over all trees */
	int64_t		num_leaves;
	int32_t		max_depth;		/* edges on the longest root-to-leaf path */

	int64_t    *tree_offset;	/* num_trees + 1 offsets into the node arrays */
	int32_t    *tree_group;		/* output each tree adds to */

	int32_t    *left;			/* -1 marks a leaf */
	int32_t    *right;
	int32_t    *split_feature;
	float	   *threshold;
	uint8_t    *default_left;
	double	   *leaf_value;		/* already scaled by any dart weight */
	double	   *cover;

	char	  **feature_names;	/* NULL when the model carries none */
	char	   *objective;
	TsLink		link;
	double	   *base_margin;	/* per output, margin space */
} TsModel;

/* Read an XGBoost JSON model; NULL with err set on any problem. */
extern TsModel *ts_xgboost_json_read(const char *buf, size_t len, TsError *err);

/* Detect the format from the bytes and read the model. */
extern TsModel *ts_model_read(const char *buf, size_t len, TsError *err);

/* Check every structural invariant; computes num_leaves and max_depth. */
extern bool ts_model_validate(TsModel *m, TsError *err);

/* Release everything ts_model_read allocated. */
extern void ts_model_free(TsModel *m);

/* Margin per output for one row (float32 features, NaN = missing). */
extern void ts_model_predict_margin(const TsModel *m, const float *row, double *margin);

/* Apply the objective's link to num_outputs margins. */
extern void ts_model_link(const TsModel *m, const double *margin, double *pred);

/* Objective name to link and base_score transform; false if unknown. */
extern TsLink ts_objective_link(const char *objective);

/* Convert a feature value to the float32 XGBoost compares with. */
static inline float
ts_feature_value(double x)
{
	float		f = (float) x;

	/* +inf must still satisfy "x < +inf" on unbounded right branches */
	if (f > 3.402823466e+38F)
		f = 3.402823466e+38F;
	return f;
}

#endif							/* TS_MODEL_H */
