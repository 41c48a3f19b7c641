/*
 * ts_xgboost.h - parts of the XGBoost reader shared between its files.
 */
#ifndef TS_XGBOOST_H
#define TS_XGBOOST_H

#include "model/ts_json.h"
#include "model/ts_model.h"

/*
 * The model's categorical features (feature_types "c") and the category
 * names XGBoost >= 3.1 saves beside the trees ("cats").
 */
extern bool ts_xgboost_read_categories(TsModel *m, const TsJson *learner, const TsJson *model,
									   TsError *err);

#endif							/* TS_XGBOOST_H */
