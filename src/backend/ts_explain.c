/*
 * ts_explain.c - the SQL functions that explain and predict: their
 * arguments (a query or a table, the options), the call's emitter, and the
 * device, for materialised set-returning functions whose rows ts_run.c
 * carries through (SHAP values, interaction values, global importance,
 * predictions); plus shap_values() for a single feature array.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "backend/ts_background.h"
#include "backend/ts_citus.h"
#include "backend/ts_run.h"
#include "backend/ts_settings.h"
#include "core/ts_interactions.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_topk.h"

PG_FUNCTION_INFO_V1(treeshap_explain_shap);
PG_FUNCTION_INFO_V1(treeshap_explain_shap_wide);
PG_FUNCTION_INFO_V1(treeshap_explain_interactions);
PG_FUNCTION_INFO_V1(treeshap_feature_importance);
PG_FUNCTION_INFO_V1(treeshap_feature_importance_segments);
PG_FUNCTION_INFO_V1(treeshap_predict);
PG_FUNCTION_INFO_V1(treeshap_explain_top_features);
PG_FUNCTION_INFO_V1(treeshap_explain_top_features_wide);
PG_FUNCTION_INFO_V1(treeshap_shap_values);
PG_FUNCTION_INFO_V1(treeshap_explain_write);

/*
 * The model name and the rows' source: the second argument is a query
 * (text) or a table (regclass), whose forms take the key column's name as
 * the third, except feature_importance(model, table). NULL model or source
 * is an error, not an empty set.
 */
static void
get_model_and_source(FunctionCallInfo fcinfo, TsResultKind kind, char **model, TsSource *src)
{
	bool		table = get_fn_expr_argtype(fcinfo->flinfo, 1) == REGCLASSOID;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model name and %s must not be null", table ? "source table" : "query")));
	*model = text_to_cstring(PG_GETARG_TEXT_PP(0));
	memset(src, 0, sizeof(*src));
	if (!table)
	{
		src->query = text_to_cstring(PG_GETARG_TEXT_PP(1));
		return;
	}
	src->relid = PG_GETARG_OID(1);
	if (kind != TS_RESULT_IMPORTANCE && !PG_ARGISNULL(2))
		src->key_column = pstrdup(NameStr(*PG_GETARG_NAME(2)));
}

/* A call's options, read before the model is. */
typedef struct TsCallOptions
{
	ArrayType  *features;		/* interactions: NULL for all */
	TsInteractionMethod method;
	int32		top_k;			/* top features: k as asked */
	char	   *background;		/* SHAP forms: the background query, NULL for path-dependent */
	bool		probability;	/* SHAP forms: model_output => 'probability' */
} TsCallOptions;

/*
 * The SHAP forms' last two arguments: model_output (treeshap.shap_output) and
 * background (a query). Probability space is defined against background
 * rows only, as in shap.
 */
static void
read_shap_options(FunctionCallInfo fcinfo, TsCallOptions *args)
{
	int			first = PG_NARGS() - 2;
	char	   *output;

	if (PG_ARGISNULL(first))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model_output must not be null")));
	output = DatumGetCString(DirectFunctionCall1(enum_out, PG_GETARG_DATUM(first)));
	args->probability = strcmp(output, "probability") == 0;
	args->background = PG_ARGISNULL(first + 1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(first + 1));
	if (args->probability && args->background == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model_output => 'probability' needs a background"),
				 errhint("Values of the linked output are defined against background rows (interventional SHAP), as in shap: pass background => 'SELECT ...'.")));
}

/* Read the call's background, if it has one, for the model (after the model is acquired). */
static void
load_background(TsEmitter *em, const TsCallOptions *args)
{
	em->background = NULL;
	em->probability = false;
	if (args == NULL || args->background == NULL)
		return;
	if (args->probability && !ts_interventional_link_ok(em->model))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model_output => 'probability' is not available for softmax models yet"),
				 errhint("Explain the margins (model_output => 'margin') against the background.")));
	em->background = ts_background_read(args->background, em->model, args->probability);
	em->spec.background = em->background;
	em->probability = args->probability;
}

/* Model feature index of a name (the model's own or f<index>), or -1. */
static int32
feature_index(const TsModel *m, const char *name)
{
	for (int32 j = 0; j < m->num_features; j++)
	{
		char	   *own = ts_feature_name(m, j);
		bool		same = strcmp(own, name) == 0;

		pfree(own);
		if (same)
			return j;
	}
	return -1;
}

/* The selection a features argument asks for: named features, in model order, once each. */
static TsFeatureSelection *
resolve_selection(const TsModel *m, ArrayType *features)
{
	Datum	   *names;
	bool	   *nulls;
	int			n;
	bool	   *wanted;
	int32	   *list;
	int32		count = 0;

	if (features == NULL)
		return ts_selection_make(m->num_features, NULL, 0);
	if (ARR_NDIM(features) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array")));
	deconstruct_array(features, TEXTOID, -1, false, TYPALIGN_INT, &names, &nulls, &n);
	wanted = palloc0(sizeof(bool) * Max(m->num_features, 1));
	for (int i = 0; i < n; i++)
	{
		char	   *name;
		int32		j;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("features must not contain nulls")));
		name = TextDatumGetCString(names[i]);
		j = feature_index(m, name);
		if (j < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("model has no feature \"%s\"", name)));
		wanted[j] = true;
	}
	list = palloc(sizeof(int32) * Max(m->num_features, 1));
	for (int32 j = 0; j < m->num_features; j++)
		if (wanted[j])
			list[count++] = j;
	return ts_selection_make(m->num_features, list, count);
}

/* Prepare per-call buffers for the chosen result kind and what the GPU is to compute. */
static void
emitter_init(TsEmitter *em, TsResultKind kind, ReturnSetInfo *rsinfo, TsCachedModel *cached,
			 const TsCallOptions *args)
{
	const TsModel *m = cached->model;
	size_t		columns = (size_t) m->num_outputs * m->num_features;

	em->spec.kind = kind == TS_RESULT_INTERACTIONS ? TS_RUN_INTERACTIONS
		: kind == TS_RESULT_IMPORTANCE ? TS_RUN_IMPORTANCE
		: ts_result_is_top(kind) ? TS_RUN_TOP_FEATURES
		: kind == TS_RESULT_PREDICT ? TS_RUN_PREDICT : TS_RUN_SHAP;
	em->spec.method = args != NULL ? args->method : TS_INTERACTION_SHAPLEY;
	em->spec.selection = kind == TS_RESULT_INTERACTIONS ? resolve_selection(m, args->features) : NULL;
	em->spec.background = NULL;	/* load_background sets it */
	em->kind = kind;
	em->store = rsinfo->setResult;
	em->desc = rsinfo->setDesc;
	em->model = m;
	em->paths = kind == TS_RESULT_PREDICT ? NULL : ts_model_paths(cached);
	em->algorithm = (TsShapAlgorithm) ts_cpu_algorithm();
	em->feature_text = NULL;
	em->rows = 0;
	em->template = NULL;
	em->template_tried = false;
	em->writer = NULL;
	em->top_wide = NULL;
	if (kind == TS_RESULT_IMPORTANCE)
		em->sums = palloc0(sizeof(double) * 2 * Max(columns, 1));
	if (kind == TS_RESULT_SEGMENTS)
		em->groups = ts_groups_create(TupleDescAttr(rsinfo->setDesc, 0)->atttypid, columns);
	if (ts_result_is_top(kind))
	{
		em->top_k = ts_topk_count(args->top_k, m->num_features);
		em->spec.top_k = em->top_k;
	}
	if (ts_result_is_top(kind) || kind == TS_RESULT_PREDICT)
		em->margins = palloc(sizeof(double) * 2 * m->num_outputs);
	if (kind != TS_RESULT_WIDE && kind != TS_RESULT_PREDICT)
	{
		em->feature_text = palloc(sizeof(Datum) * m->num_features);
		for (int32 j = 0; j < m->num_features; j++)
			em->feature_text[j] = CStringGetTextDatum(ts_feature_name(m, j));
	}
}

/* Free a call's GPU buffers and unpin its model, after success or ERROR. */
static void
end_call(TsGpuRun *run, TsCachedModel *cached)
{
	if (run != NULL)
		ts_gpu_run_end(run);
	if (cached != NULL)
		ts_model_release(cached);
}

/* Whether a call stays on the CPU whatever the device: interactions of no feature (no work at all). */
static bool
cpu_only(const TsCallOptions *args)
{
	return (args != NULL && args->features != NULL &&
		 ArrayGetNItems(ARR_NDIM(args->features), ARR_DIMS(args->features)) == 0);
}

/* Path-dependent SHAP weighs a split's children by their covers: a model without them needs a background. */
static void
require_covers(const TsModel *m, const char *model_name)
{
	if (m->covers_missing)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("model \"%s\" has no node sample counts, which path-dependent SHAP needs", model_name),
				 errdetail("Its Treelite checkpoint has neither data_count nor sum_hess for every node."),
				 errhint("Explain it against a background (background => 'SELECT ...'), which needs no counts; predict needs none either.")));
}

/* Whether the call explains against a background (its rows' outputs need the trees here). */
static bool
has_background(const TsCallOptions *args)
{
	return args != NULL && args->background != NULL;
}

/*
 * Explain the source's rows into the call's emitter: its tuplestore, or the
 * explain_into target `target` (rows stamped with `version`) when that is
 * valid; the source rows written into the target.
 */
static int64
explain_rows(TsResultKind kind, ReturnSetInfo *rsinfo, const char *model_name, const TsSource *src,
			 Oid key_type, const TsCallOptions *args, Oid target, int64 version)
{
	TsCachedModel *volatile cached = NULL;
	TsGpuRun   *volatile run = NULL;
	TsEmitter	em;
	bool		use_gpu = !cpu_only(args) && ts_device_use_gpu(true);
	int64		written = 0;

	SPI_connect();
	PG_TRY();
	{
		cached = ts_model_acquire(model_name, use_gpu && !has_background(args));
		if (kind != TS_RESULT_PREDICT && !has_background(args))
			require_covers(cached->model, model_name);
		/* a link whose factor has no bound (hinge) stays on the CPU in probability space */
		if (has_background(args) && !ts_gpu_interventional_ok(cached->model, args->probability))
			use_gpu = false;
		emitter_init(&em, kind, rsinfo, cached, args);
		load_background(&em, args);
		if (OidIsValid(target))
			em.writer = ts_bulk_begin(target, key_type, version);
		if (use_gpu)
			ts_run_gpu(&em, (TsGpuRun **) &run, cached, src, key_type);
		else
			ts_run_cpu(&em, cached, src, key_type);
		ts_emit_totals(&em);
		if (em.writer != NULL)
			written = ts_bulk_end(em.writer);
	}
	PG_FINALLY();
	{
		end_call(run, cached);
	}
	PG_END_TRY();
	SPI_finish();
	return written;
}

/* Common body of the set-returning functions; args only for interactions. */
static Datum
explain_common(FunctionCallInfo fcinfo, TsResultKind kind, const TsCallOptions *args)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *model_name;
	TsSource	src;
	Oid			key_type;

	get_model_and_source(fcinfo, kind, &model_name, &src);
	InitMaterializedSRF(fcinfo, 0);
	key_type = kind == TS_RESULT_IMPORTANCE ? InvalidOid : TupleDescAttr(rsinfo->setDesc, 0)->atttypid;
	(void) explain_rows(kind, rsinfo, model_name, &src, key_type, args, InvalidOid, 0);
	return (Datum) 0;
}

/* A SHAP form: its model_output and background options, then the common body. */
static Datum
explain_shap_form(FunctionCallInfo fcinfo, TsResultKind kind)
{
	TsCallOptions args = {NULL, TS_INTERACTION_SHAPLEY, 0, NULL, false};

	read_shap_options(fcinfo, &args);
	return explain_common(fcinfo, kind, &args);
}

/* The wide form's columns, keyed by key_type. */
static TupleDesc
wide_desc(Oid key_type)
{
	TupleDesc	desc = CreateTemplateTupleDesc(4);

	TupleDescInitEntry(desc, 1, "row_key", key_type, -1, 0);
	TupleDescInitEntry(desc, 2, "output", INT4OID, -1, 0);
	TupleDescInitEntry(desc, 3, "base_value", FLOAT8OID, -1, 0);
	TupleDescInitEntry(desc, 4, "shap_values", FLOAT8ARRAYOID, -1, 0);
	return desc;
}

/*
 * treeshap._explain_write(model, query, target, version, key_type) returns
 * bigint: the wide explanations of the query's rows written straight into
 * an explain_into target (ts_bulk_write.h), stamped with the model version;
 * the source rows written.
 */
Datum
treeshap_explain_write(PG_FUNCTION_ARGS)
{
	ReturnSetInfo rsinfo = {0};
	TsCallOptions args = {NULL, TS_INTERACTION_SHAPLEY, 0, NULL, false};
	TsSource	src = {0};
	Oid			key_type = PG_GETARG_OID(4);

	src.query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	rsinfo.setDesc = wide_desc(key_type);
	PG_RETURN_INT64(explain_rows(TS_RESULT_WIDE, &rsinfo, text_to_cstring(PG_GETARG_TEXT_PP(0)), &src,
								 key_type, &args, PG_GETARG_OID(2), PG_GETARG_INT64(3)));
}

/* treeshap.explain_shap(model, query [, key_type], model_output, background): one row per (row, output, feature). */
Datum
treeshap_explain_shap(PG_FUNCTION_ARGS)
{
	return explain_shap_form(fcinfo, TS_RESULT_LONG);
}

/* treeshap.explain_shap_wide(model, query [, key_type], model_output, background): one row per (row, output). */
Datum
treeshap_explain_shap_wide(PG_FUNCTION_ARGS)
{
	return explain_shap_form(fcinfo, TS_RESULT_WIDE);
}

/* treeshap.predict(model, query [, key_type]): margin and linked prediction per output. */
Datum
treeshap_predict(PG_FUNCTION_ARGS)
{
	return explain_common(fcinfo, TS_RESULT_PREDICT, NULL);
}

/* A top-features form: k, then the SHAP forms' options, then the common body. */
static Datum
explain_top_form(FunctionCallInfo fcinfo, TsResultKind kind)
{
	TsCallOptions args = {NULL, TS_INTERACTION_SHAPLEY, 0, NULL, false};
	int			k_arg = PG_NARGS() - 3; /* then output and background */

	if (PG_ARGISNULL(k_arg) || PG_GETARG_INT32(k_arg) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be a positive number of features")));
	args.top_k = PG_GETARG_INT32(k_arg);
	read_shap_options(fcinfo, &args);
	return explain_common(fcinfo, kind, &args);
}

/*
 * treeshap.explain_top_features(model, query [, key_type], k): per (row,
 * output), the k features of largest |SHAP value|, ties to the earlier
 * feature, one row each.
 */
Datum
treeshap_explain_top_features(PG_FUNCTION_ARGS)
{
	return explain_top_form(fcinfo, TS_RESULT_TOP);
}

/*
 * treeshap.explain_top_features_wide(model, query [, key_type], k): the same
 * features and values as two arrays in rank order, one row per (row, output).
 */
Datum
treeshap_explain_top_features_wide(PG_FUNCTION_ARGS)
{
	return explain_top_form(fcinfo, TS_RESULT_TOP_WIDE);
}

/* The method argument: 'shapley' (XGBoost's pred_interactions) or 'taylor'. */
static TsInteractionMethod
interaction_method(text *arg)
{
	char	   *name = text_to_cstring(arg);

	if (pg_strcasecmp(name, "shapley") == 0)
		return TS_INTERACTION_SHAPLEY;
	if (pg_strcasecmp(name, "taylor") == 0)
		return TS_INTERACTION_TAYLOR;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown interaction method \"%s\"", name),
			 errhint("Use 'shapley' (as XGBoost's pred_interactions) or 'taylor' (Shapley-Taylor).")));
	pg_unreachable();
}

/*
 * treeshap.explain_interactions(model, query [, key_type], features, method):
 * one row per (row, output, feature_a, feature_b) with feature_a selected.
 */
Datum
treeshap_explain_interactions(PG_FUNCTION_ARGS)
{
	int			first = PG_NARGS() - 2;	/* features, then method; key_type before them */
	TsCallOptions args = {NULL, TS_INTERACTION_SHAPLEY, 0, NULL, false};

	args.features = PG_ARGISNULL(first) ? NULL : PG_GETARG_ARRAYTYPE_P(first);
	if (PG_ARGISNULL(first + 1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("method must not be null")));
	args.method = interaction_method(PG_GETARG_TEXT_PP(first + 1));
	return explain_common(fcinfo, TS_RESULT_INTERACTIONS, &args);
}

/* treeshap.feature_importance(model, query, model_output, background): mean |SHAP| and mean SHAP per (output, feature). */
Datum
treeshap_feature_importance(PG_FUNCTION_ARGS)
{
	/*
	 * A distributed table's shards are summed where they lie, by sessions of
	 * their own: only while this transaction has written nothing, so that they
	 * see what it sees (else the rows it changed, and the locks it holds, are
	 * its alone).
	 */
	if (get_fn_expr_argtype(fcinfo->flinfo, 1) == REGCLASSOID && !PG_ARGISNULL(0) &&
		!PG_ARGISNULL(1) && !PG_ARGISNULL(2) && ts_citus_distributed(PG_GETARG_OID(1)) &&
		ts_citus_nothing_written())
		return ts_citus_importance(fcinfo);
	return explain_shap_form(fcinfo, TS_RESULT_IMPORTANCE);
}

/*
 * treeshap.feature_importance(model, query, segment_type): the same per
 * segment, the value of the query's first column (of segment_type), as
 * GROUP BY that column over explain_shap would give.
 */
Datum
treeshap_feature_importance_segments(PG_FUNCTION_ARGS)
{
	return explain_shap_form(fcinfo, TS_RESULT_SEGMENTS);
}

/* Feature array argument as float32 features; NULL elements are missing. */
static float *
features_from_array(ArrayType *arr, const TsModel *model)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	float	   *x;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("features must be a one-dimensional array")));
	deconstruct_array(arr, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE, &elems, &nulls, &n);
	if (n != model->num_features)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("features has %d elements, but the model has %d features", n,
						model->num_features)));
	x = palloc(sizeof(float) * n);
	for (int i = 0; i < n; i++)
		x[i] = nulls[i] ? NAN : ts_feature_value(DatumGetFloat8(elems[i]));
	ts_model_prepare_row(model, x);
	return x;
}

/* pred_contribs layout: 1-D (features+1) for one output, else outputs x (features+1). */
static ArrayType *
contribs_array(const double *phi, int32 num_outputs, int32 num_features)
{
	int			width = num_features + 1;
	int			total = num_outputs * width;
	Datum	   *elems = palloc(sizeof(Datum) * total);
	int			dims[2] = {num_outputs, width};
	int			lbs[2] = {1, 1};

	for (int i = 0; i < total; i++)
		elems[i] = Float8GetDatum(phi[i]);
	if (num_outputs == 1)
		return construct_array(elems, width, FLOAT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
	return construct_md_array(elems, NULL, 2, dims, lbs, FLOAT8OID, 8, FLOAT8PASSBYVAL,
							  TYPALIGN_DOUBLE);
}

/* One row's contributions on the GPU (used when treeshap.device = gpu). */
static double *
shap_row_gpu(TsCachedModel *cached, const float *x, TsGpuRun **run)
{
	*run = ts_gpu_run_start(cached, 1, NULL);
	memcpy(ts_gpu_run_input(*run, 0), x, sizeof(float) * cached->model->num_features);
	ts_gpu_run_submit(*run, 0, 1);
	return ts_gpu_run_wait(*run, 0, 1);
}

/*
 * One row's contributions on the CPU: by quadrature down each tree as the
 * table forms compute them (the same bytes), else through the paths.
 */
static double *
shap_row_cpu(TsCachedModel *cached, const float *x)
{
	const TsModel *m = cached->model;
	const TsPathTable *pt = ts_model_paths(cached);
	TsShapAlgorithm algorithm = (TsShapAlgorithm) ts_cpu_algorithm();
	const TsQuadTreePlan *plan = algorithm == TS_SHAP_QUADRATURE ? ts_model_tree_plan(cached) : NULL;
	double	   *phi = palloc(sizeof(double) * (size_t) m->num_outputs * (m->num_features + 1));

	if (plan != NULL)
		ts_quad_tree_contribs(m, plan, pt->bias, x, 1, phi,
							  palloc(sizeof(double) * ts_quad_tree_rows_scratch_len(m, plan, 1)));
	else
		ts_cpu_shap_row(pt, algorithm, x, phi, palloc(sizeof(double) * ts_cpu_scratch_len(pt)));
	return phi;
}

/*
 * treeshap.shap_values(model, features float8[]): one row's contributions.
 * One row is quicker on the CPU, so auto stays there; gpu forces the GPU.
 */
Datum
treeshap_shap_values(PG_FUNCTION_ARGS)
{
	char	   *model_name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	TsCachedModel *volatile cached = NULL;
	TsGpuRun   *volatile run = NULL;
	ArrayType  *result = NULL;
	bool		use_gpu = ts_device_use_gpu(false);

	SPI_connect();
	PG_TRY();
	{
		const TsModel *m;
		float	   *x;
		double	   *phi;

		cached = ts_model_acquire(model_name, use_gpu);
		m = cached->model;
		require_covers(m, model_name);
		x = features_from_array(arr, m);
		if (use_gpu)
			phi = shap_row_gpu(cached, x, (TsGpuRun **) &run);
		else
			phi = shap_row_cpu(cached, x);
		result = contribs_array(phi, m->num_outputs, m->num_features);
		/* copy out of SPI's memory before SPI_finish frees it */
		result = (ArrayType *) DatumGetPointer(SPI_datumTransfer(PointerGetDatum(result), false, -1));
	}
	PG_FINALLY();
	{
		end_call(run, cached);
	}
	PG_END_TRY();
	SPI_finish();
	PG_RETURN_ARRAYTYPE_P(result);
}
