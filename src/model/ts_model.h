/*
 * ts_model.h - an in-memory tree ensemble, independent of the file format it
 * came from. Node arrays of all trees are stored back to back; child indices
 * are local to their tree. Split semantics are XGBoost's: a present value x
 * goes left when (float) x < threshold (+inf admits every value: inputs are
 * clamped to FLT_MAX); a missing value follows default_left.
 * A categorical node instead sends x left when its category is in the
 * node's left set (ts_catset.h). Readers whose library treats inputs
 * differently (LightGBM's zero-as-missing, say) record a per-feature input
 * rule that ts_model_prepare_row applies before any tree sees the row.
 */
#ifndef TS_MODEL_H
#define TS_MODEL_H

#include "base/ts_catset.h"
#include "base/ts_core.h"

/* Hard limits that keep hostile headers from asking for absurd memory. */
#define TS_MAX_FEATURES		(1 << 22)
#define TS_MAX_OUTPUTS		(1 << 16)
#define TS_MAX_TREES		(1 << 24)
#define TS_MAX_NODES		(INT32_MAX / 2)
#define TS_MAX_CAT_WORDS	(1 << 26)	/* 256 MB of category sets per model */

/* How a feature's raw value is mapped before the trees compare it. */
typedef enum TsInputRule
{
	TS_INPUT_PLAIN = 0,			/* NaN is missing (XGBoost; LightGBM missing type NaN) */
	TS_INPUT_ZERO_IS_MISSING,	/* |x| <= 1e-35 and NaN are missing (LightGBM type Zero) */
	TS_INPUT_NAN_IS_ZERO,		/* NaN is the value 0 (LightGBM type None) */
	TS_INPUT_CATEGORY_TRUNC		/* -1 < x < 0 is category 0 (LightGBM truncates) */
} TsInputRule;

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
	double	   *leaf_value;		/* leaf_size per node, already scaled by any dart weight */
	int32_t		leaf_size;		/* values per leaf: 0 or 1, or K for vector leaves
								 * (tree t adds value k to output tree_group[t] + k) */
	double	   *cover;
	bool		covers_missing;	/* the file has no node statistics (a Treelite model
								 * may lack them): covers are 0, and only SHAP
								 * against a background (no covers) is possible */
	int32_t    *cat_set;		/* categorical node: offset of its left set in cat_pool; else -1 */

	uint32_t   *cat_pool;		/* category sets, ts_catset.h layout */
	int64_t		cat_pool_len;	/* words */
	int64_t		cat_pool_cap;	/* words allocated (the pool grows by doubling) */
	uint8_t    *input_rule;		/* per feature TsInputRule; NULL when all are plain */

	char	  **feature_names;	/* NULL when the model carries none */
	bool		generated_names;	/* LightGBM's Column_<j> (feature_names NULL): a
									 * query with all of them is matched by name */
	uint8_t    *categorical;	/* per feature 1 if categorical; NULL when none is */

	/*
	 * Category dictionaries (XGBoost's "cats", LightGBM's
	 * pandas_categorical): feature j's categories, in code order, are
	 * dict_names[dict_start[j] .. dict_start[j + 1]); dict_sorted holds the
	 * same range's codes in byte order of their names, for lookups. NULL
	 * when the model carries none (ts_catdict.c).
	 */
	int32_t    *dict_start;
	char	  **dict_names;
	int32_t    *dict_sorted;
	int32_t		dict_cap;		/* names allocated while reading */
	int32_t		dict_last;		/* feature the last name was added to */
	bool		dict_hashed;	/* CatBoost: names are decimal CatBoost hashes of the
								 * categories, and a lookup hashes the input first */
	char	   *objective;
	TsLink		link;
	double		link_scale;		/* logistic links: p = 1 / (1 + exp(-scale * margin)) */
	double	   *base_margin;	/* per output, margin space */
} TsModel;

struct TsJsonDoc;

/* Build a CatBoost model from its parsed JSON document (the caller frees the document). */
extern TsModel *ts_catboost_from_doc(struct TsJsonDoc *doc, TsError *err);

/* Read a JSON model: CatBoost's (oblivious_trees at the top) or XGBoost's. */
extern TsModel *ts_json_model_read(const char *buf, size_t len, TsError *err);

/* Read an XGBoost UBJSON model (the default file format since XGBoost 2.1). */
extern TsModel *ts_xgboost_ubj_read(const char *buf, size_t len, TsError *err);

/* Read a Treelite checkpoint, format v4 (scikit-learn's and cuML's models, via Treelite). */
extern TsModel *ts_treelite_read(const char *buf, size_t len, TsError *err);

/* Read a LightGBM text model (as saved by save_model / model_to_string). */
extern TsModel *ts_lightgbm_read(const char *buf, size_t len, TsError *err);

/* Detect the format from the bytes and read the model. */
extern TsModel *ts_model_read(const char *buf, size_t len, TsError *err);

/* Check every structural invariant; computes num_leaves and max_depth. */
extern bool ts_model_validate(TsModel *m, TsError *err);

/* Release everything ts_model_read allocated. */
extern void ts_model_free(TsModel *m);

/* Values per leaf (1 but for vector-leaf models). */
static inline int32_t
ts_leaf_size(const TsModel *m)
{
	return m->leaf_size > 1 ? m->leaf_size : 1;
}

/* Allocate the node arrays for m->num_nodes nodes (readers fill them). */
extern void ts_model_alloc_nodes(TsModel *m);

/* Append an empty category set to the pool; its offset, or -1 past the limits. */
extern int64_t ts_model_add_catset(TsModel *m, uint32_t nbits, bool others);

/* Start empty dictionaries for every feature (readers then add in feature order). */
extern void ts_catdict_open(TsModel *m);

/* Append the next category (code = its position) to feature j's dictionary. */
extern bool ts_catdict_add(TsModel *m, int32_t j, const char *name, size_t len, TsError *err);

/* Finish the dictionaries: sort for lookups, refuse duplicate names. */
extern bool ts_catdict_close(TsModel *m, TsError *err);

/* Categories in feature j's dictionary (0 without one). */
extern int32_t ts_catdict_size(const TsModel *m, int32_t j);

/* Code of the category named name[0 .. len) of feature j, or -1 if unseen. */
extern int32_t ts_catdict_lookup(const TsModel *m, int32_t j, const char *name, size_t len);

/* CityHash64 (version 1) of s[0 .. n), and CatBoost's 32-bit category hash of a name. */
extern uint64_t ts_cityhash64(const char *s, size_t n);
extern int32_t ts_catboost_category_hash(const char *s, size_t n);

/* Mark feature j categorical. */
extern void ts_model_mark_categorical(TsModel *m, int32_t j);

/* Apply the model's per-feature input rules to one converted row in place. */
extern void ts_model_prepare_row(const TsModel *m, float *row);

/* Whether value x (NaN = missing) of node g's split feature goes to its left child. */
static inline bool
ts_node_goes_left(const TsModel *m, int64_t g, float x)
{
	if (x != x)
		return m->default_left[g] != 0;
	if (m->cat_set[g] != -1)
		return ts_catset_contains(m->cat_pool + m->cat_set[g], x);
	return x < m->threshold[g];
}

/*
 * A library's split on a double threshold t, as "x < threshold" on the
 * float32 inputs the trees compare (t not NaN): "x <= t" holds exactly when
 * x < ts_threshold_le(t), "x < t" exactly when x < ts_threshold_lt(t).
 */
extern float ts_threshold_le(double t);
extern float ts_threshold_lt(double t);

/* Margin per output for one row (float32 features, NaN = missing). */
extern void ts_model_predict_margin(const TsModel *m, const float *row, double *margin);

/* Apply the objective's link to num_outputs margins. */
extern void ts_model_link(const TsModel *m, const double *margin, double *pred);

/* Objective name to link and base_score transform; false if unknown. */
extern TsLink ts_objective_link(const char *objective);

/*
 * Whether a finite double rounds to a finite float: below FLT_MAX plus half
 * its last place (2^128 - 2^103), as the libraries' own "3.4028235E38" does.
 */
static inline bool
ts_rounds_to_float(double x)
{
	return x > -3.4028235677973366e+38 && x < 3.4028235677973366e+38;
}

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
