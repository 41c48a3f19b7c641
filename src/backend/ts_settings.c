/*
 * ts_settings.c - GUC definitions: treeshap.batch_rows, treeshap.device,
 * treeshap.gpu_precision, treeshap.algorithm, treeshap.match_columns,
 * treeshap.model_cache_size, treeshap.cpu_threads and treeshap.job_workers.
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "backend/ts_job_workers.h"
#include "backend/ts_settings.h"
#include "core/ts_row_pool.h"
#include "core/ts_shap_cpu.h"

int			ts_batch_rows = 10000;
int			ts_device = TS_DEVICE_AUTO;
int			ts_gpu_precision = TS_GPU_PRECISION_DOUBLE;
int			ts_algorithm = TS_ALGORITHM_AUTO;
int			ts_match_columns = TS_MATCH_NAME;
int			ts_model_cache_kb = 512 * 1024;
int			ts_cpu_threads = 0;
int			ts_background_plan_kb = 256 * 1024;
int			ts_background_grouping = TS_GROUPING_AUTO;
int			ts_job_workers = -1;

static const struct config_enum_entry device_options[] = {
	{"auto", TS_DEVICE_AUTO, false},
	{"cpu", TS_DEVICE_CPU, false},
	{"gpu", TS_DEVICE_GPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry precision_options[] = {
	{"double", TS_GPU_PRECISION_DOUBLE, false},
	{"single", TS_GPU_PRECISION_SINGLE, false},
	{NULL, 0, false}
};

static const struct config_enum_entry algorithm_options[] = {
	{"auto", TS_ALGORITHM_AUTO, false},
	{"quadrature", TS_ALGORITHM_QUADRATURE, false},
	{"treeshap", TS_ALGORITHM_TREESHAP, false},
	{NULL, 0, false}
};

static const struct config_enum_entry grouping_options[] = {
	{"auto", TS_GROUPING_AUTO, false},
	{"always", TS_GROUPING_ALWAYS, false},
	{"never", TS_GROUPING_NEVER, false},
	{NULL, 0, false}
};

static const struct config_enum_entry match_options[] = {
	{"name", TS_MATCH_NAME, false},
	{"position", TS_MATCH_POSITION, false},
	{NULL, 0, false}
};

/* Define the settings; called from _PG_init, touches no device. */
void
ts_settings_init(void)
{
	DefineCustomIntVariable("treeshap.batch_rows",
							"Rows fetched from the query and explained per batch.",
							"Bounds the memory an explain call holds at once.",
							&ts_batch_rows, 10000, 1, 10000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("treeshap.model_cache_size",
							"Memory a session keeps for the models it has used.",
							"Least recently used models beyond it are freed; models in use are kept.",
							&ts_model_cache_kb, 512 * 1024, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("treeshap.cpu_threads",
							"Threads a session computes CPU rows on, its own included; 0: one per core, at most 16.",
							"Results are the same bytes whatever the number; 1 keeps the work on the backend alone.",
							&ts_cpu_threads, 0, 0, TS_ROW_POOL_MAX_THREADS + 1,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("treeshap.background_plan_memory",
							"Memory an interventional call on the CPU may take to group its background rows per path; 0: none.",
							"Past it the CPU walks every tree once per (row, background row) pair: the same values, more slowly.",
							&ts_background_plan_kb, 256 * 1024, 0, MAX_KILOBYTES,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.background_grouping",
							 "Whether an interventional call groups its background rows per path: auto, always or never.",
							 "On the CPU auto groups when the call's first batch has the rows to pay for it; the GPU groups in margin space unless never. never visits every background row. The values agree to about 1e-13.",
							 &ts_background_grouping, TS_GROUPING_AUTO, grouping_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.device",
							 "Where SHAP values are computed: auto, cpu or gpu.",
							 "auto uses a GPU when one is available and the CPU otherwise.",
							 &ts_device, TS_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.gpu_precision",
							 "Arithmetic of the GPU kernel's dynamic programme: double or single.",
							 "Sums are exact int64 fixed point either way; single is faster and less exact.",
							 &ts_gpu_precision, TS_GPU_PRECISION_DOUBLE, precision_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.algorithm",
							 "SHAP algorithm: auto, quadrature or treeshap (EXTEND/UNWOUNDSUM).",
							 "auto picks quadrature on the CPU, and on the GPU for models of 500 paths or more; both are exact.",
							 &ts_algorithm, TS_ALGORITHM_AUTO, algorithm_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("treeshap.job_workers",
							"Background workers an explain_into run uses when it names none; -1: one per core, up to half of max_worker_processes.",
							"0 runs every job in the calling session alone; a run with workers needs a source whose key is unique.",
							&ts_job_workers, -1, -1, TS_JOB_MAX_WORKERS,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.match_columns",
							 "How query columns are matched to a named model's features: name or position.",
							 "position ignores the model's feature names: the columns after the row key are its features, in order.",
							 &ts_match_columns, TS_MATCH_NAME, match_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/* auto means quadrature: on the CPU it is the faster of the two everywhere measured. */
int
ts_cpu_algorithm(void)
{
	return ts_algorithm == TS_ALGORITHM_TREESHAP ? TS_SHAP_TREESHAP : TS_SHAP_QUADRATURE;
}

/*
 * On the GPU, auto means quadrature from TS_GPU_QUADRATURE_MIN_PATHS paths
 * on: bench/RESULTS.md has it 5.0 to 7.2 times the DP on every medium and
 * large model, and the DP up to 1.8 times faster on the small ones (80
 * paths), where a batch takes microseconds either way.
 */
#define TS_GPU_QUADRATURE_MIN_PATHS 500

bool
ts_gpu_quadrature(int64 num_paths)
{
	if (ts_algorithm == TS_ALGORITHM_AUTO)
		return num_paths >= TS_GPU_QUADRATURE_MIN_PATHS;
	return ts_algorithm == TS_ALGORITHM_QUADRATURE;
}
