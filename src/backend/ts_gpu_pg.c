/*
 * ts_gpu_pg.c - the GPU path inside a backend. CUDA is first touched here, on
 * the first call that wants a GPU, never in the postmaster or _PG_init.
 * Device and pinned memory hang off memory contexts through reset callbacks,
 * so an ERROR or a cancel frees them with the context; waits poll the stream
 * and CHECK_FOR_INTERRUPTS meanwhile.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/memutils.h"

#include "backend/ts_gpu_pg.h"
#include "backend/ts_settings.h"

#ifdef TS_WITH_CUDA
#include "gpu/ts_gpu.h"
#include "core/ts_shap_cpu.h"

struct TsGpuRun
{
	MemoryContext context;		/* owns this struct; its reset frees the runner */
	MemoryContextCallback callback;
	TsGpuPlan  *plan;
	TsGpuRunner *runner;
	TsRunSpec	spec;
	bool		host_importance;	/* importance summed here: long paths need whole rows */
	double	   *sums;			/* host_importance: the batch's sums */
	double	   *scratch;		/* for long paths on the CPU */
	TsShapAlgorithm algorithm;	/* their CPU algorithm */
};

/* A plan's device table, freed when the cached model's context goes. */
typedef struct TsPlanOwner
{
	MemoryContextCallback callback;
	TsGpuPlan  *plan;
} TsPlanOwner;

static int	gpu_count = -1;		/* -1 until probed in this backend */
static char gpu_probe_message[256];

/* Count GPUs once per backend; a failed probe counts as none. */
static bool
gpu_present(void)
{
	if (gpu_count < 0)
	{
		int			n = 0;

		if (ts_gpu_device_count(&n, gpu_probe_message, sizeof(gpu_probe_message)) != TS_GPU_OK)
			n = 0;
		gpu_count = n;
	}
	return gpu_count > 0;
}

/* ERROR for a failed GPU step: out of memory gets its own SQLSTATE and a hint. */
static void
report_gpu_error(TsGpuStatus rc, const char *msg)
{
	if (rc == TS_GPU_OUT_OF_MEMORY)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of GPU memory: %s", msg),
				 errhint("Lower treeshap.batch_rows, or set treeshap.device to cpu.")));
	ereport(ERROR,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("GPU failure: %s", msg)));
}

/* Reset callback of a cached model's context. */
static void
free_plan_device(void *arg)
{
	TsPlanOwner *owner = (TsPlanOwner *) arg;

	if (owner->plan != NULL)
		ts_gpu_plan_release_device(owner->plan);
}

/* The model's GPU plan: packed (best fit decreasing) and uploaded once per model version. */
static TsGpuPlan *
plan_for(TsCachedModel *entry)
{
	char		msg[256] = "";
	MemoryContext old;
	TsPlanOwner *owner;
	TsGpuPlan  *plan;
	TsGpuStatus rc;

	if (entry->gpu_plan != NULL)
		return (TsGpuPlan *) entry->gpu_plan;
	old = MemoryContextSwitchTo(entry->context);
	owner = palloc0(sizeof(TsPlanOwner));
	rc = ts_gpu_plan_build(entry->paths, TS_PACK_BEST_FIT_DECREASING, &plan, msg, sizeof(msg));
	MemoryContextSwitchTo(old);
	if (rc != TS_GPU_OK)
		report_gpu_error(rc, msg);
	owner->plan = plan;
	owner->callback.func = free_plan_device;
	owner->callback.arg = owner;
	MemoryContextRegisterResetCallback(entry->context, &owner->callback);
	entry->gpu_plan = plan;
	return plan;
}

/* Reset callback of a run's context: waits for its streams, frees its buffers. */
static void
free_runner(void *arg)
{
	TsGpuRun   *run = (TsGpuRun *) arg;

	ts_gpu_runner_free(run->runner);
	run->runner = NULL;
}

/* The device job of a run over a model of num_paths paths. */
static TsGpuJob
job_for(const TsRunSpec *spec, bool host_importance, int64 num_paths)
{
	TsGpuJob	job = {TS_GPU_JOB_SHAP, NULL, 0,
	ts_gpu_quadrature(num_paths) ? TS_GPU_ALG_QUADRATURE : TS_GPU_ALG_TREESHAP};

	if (spec->kind == TS_RUN_INTERACTIONS)
	{
		job.kind = spec->method == TS_INTERACTION_TAYLOR ? TS_GPU_JOB_TAYLOR_INTERACTIONS
			: TS_GPU_JOB_SHAPLEY_INTERACTIONS;
		job.feature_slot = spec->selection->slot;
		job.selected = spec->selection->count;
	}
	else if (spec->kind == TS_RUN_IMPORTANCE && !host_importance)
		job.kind = TS_GPU_JOB_IMPORTANCE;
	return job;
}

TsGpuRun *
ts_gpu_run_start(TsCachedModel *entry, int32 max_rows, const TsRunSpec *spec)
{
	static const TsRunSpec shap = {TS_RUN_SHAP, TS_INTERACTION_SHAPLEY, NULL};
	char		msg[256] = "";
	TsGpuPlan  *plan = plan_for(entry);
	MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "treeshap gpu run",
											  ALLOCSET_SMALL_SIZES);
	TsGpuRun   *run = MemoryContextAllocZero(ctx, sizeof(TsGpuRun));
	const TsPathTable *pt = entry->paths;
	TsGpuJob	job;
	TsGpuStatus rc;

	run->context = ctx;
	run->plan = plan;
	run->spec = spec != NULL ? *spec : shap;
	run->host_importance = run->spec.kind == TS_RUN_IMPORTANCE && plan->packing->num_long > 0;
	run->sums = MemoryContextAllocZero(ctx, sizeof(double) * 2 * pt->num_outputs * pt->num_features);
	run->scratch = MemoryContextAlloc(ctx, sizeof(double) *
									  Max(ts_cpu_scratch_len(pt), ts_interactions_scratch_len(pt)));
	run->algorithm = (TsShapAlgorithm) ts_cpu_algorithm();
	run->callback.func = free_runner;
	run->callback.arg = run;
	MemoryContextRegisterResetCallback(ctx, &run->callback);
	job = job_for(&run->spec, run->host_importance, pt->num_paths);
	rc = ts_gpu_runner_create(plan->table, max_rows,
							  ts_gpu_precision == TS_GPU_PRECISION_SINGLE ? TS_GPU_FLOAT32 : TS_GPU_FLOAT64,
							  &job, &run->runner, msg, sizeof(msg));
	if (rc != TS_GPU_OK)
	{
		MemoryContextDelete(ctx);
		report_gpu_error(rc, msg);
	}
	return run;
}

float *
ts_gpu_run_input(TsGpuRun *run, int slot)
{
	return ts_gpu_runner_input(run->runner, slot);
}

void
ts_gpu_run_submit(TsGpuRun *run, int slot, int32 nrows)
{
	char		msg[256] = "";
	TsGpuStatus rc = ts_gpu_runner_submit(run->runner, slot, nrows, msg, sizeof(msg));

	if (rc != TS_GPU_OK)
		report_gpu_error(rc, msg);
}

/* Add what the CPU owes a finished batch: the paths too long for a warp. */
static double *
complete_batch(TsGpuRun *run, const float *x, int32 nrows, double *result)
{
	const TsPathTable *pt = run->plan->paths;

	switch (run->spec.kind)
	{
		case TS_RUN_SHAP:
			ts_gpu_plan_add_long_paths(run->plan, run->algorithm, x, nrows, result, run->scratch);
			return result;
		case TS_RUN_INTERACTIONS:
			ts_gpu_plan_add_long_interactions(run->plan, x, nrows, run->spec.method,
											  run->spec.selection, result, run->scratch);
			for (int32 r = 0; r < nrows; r++)
				ts_interactions_finish(pt->num_outputs, pt->num_features, run->spec.method,
									   run->spec.selection,
									   result + (size_t) r * pt->num_outputs *
									   run->spec.selection->count * pt->num_features);
			return result;
		case TS_RUN_IMPORTANCE:
			if (!run->host_importance)
				return result;
			ts_gpu_plan_add_long_paths(run->plan, run->algorithm, x, nrows, result, run->scratch);
			memset(run->sums, 0, sizeof(double) * 2 * pt->num_outputs * pt->num_features);
			ts_importance_add_rows(result, nrows, pt->num_outputs, pt->num_features, run->sums);
			return run->sums;
	}
	pg_unreachable();
}

double *
ts_gpu_run_wait(TsGpuRun *run, int slot, int32 nrows)
{
	char		msg[256] = "";
	double	   *phi = NULL;
	TsGpuStatus rc;

	while ((rc = ts_gpu_runner_poll(run->runner, slot, msg, sizeof(msg))) == TS_GPU_NOT_READY)
	{
		CHECK_FOR_INTERRUPTS();
		pg_usleep(50);
	}
	if (rc == TS_GPU_OK)
		rc = ts_gpu_runner_wait(run->runner, slot, &phi, msg, sizeof(msg));
	if (rc != TS_GPU_OK)
		report_gpu_error(rc, msg);
	return complete_batch(run, ts_gpu_runner_input(run->runner, slot), nrows, phi);
}

void
ts_gpu_run_end(TsGpuRun *run)
{
	MemoryContextDelete(run->context);
}

#else							/* !TS_WITH_CUDA */

/* A build without CUDA has no GPU path; ts_device_use_gpu never chooses it. */
static bool
gpu_present(void)
{
	return false;
}

TsGpuRun *
ts_gpu_run_start(TsCachedModel *entry pg_attribute_unused(), int32 max_rows pg_attribute_unused(),
				 const TsRunSpec *spec pg_attribute_unused())
{
	elog(ERROR, "pg_treeshap was built without CUDA");
	return NULL;
}

float *
ts_gpu_run_input(TsGpuRun *run pg_attribute_unused(), int slot pg_attribute_unused())
{
	return NULL;
}

void
ts_gpu_run_submit(TsGpuRun *run pg_attribute_unused(), int slot pg_attribute_unused(),
				  int32 nrows pg_attribute_unused())
{
}

double *
ts_gpu_run_wait(TsGpuRun *run pg_attribute_unused(), int slot pg_attribute_unused(),
				int32 nrows pg_attribute_unused())
{
	return NULL;
}

void
ts_gpu_run_end(TsGpuRun *run pg_attribute_unused())
{
}
#endif

bool
ts_device_use_gpu(bool batches)
{
	if (ts_device == TS_DEVICE_CPU)
		return false;
	if (ts_device == TS_DEVICE_AUTO)
		return batches && gpu_present();
	if (!gpu_present())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("treeshap.device is gpu, but no GPU can be used"),
#ifdef TS_WITH_CUDA
				 gpu_probe_message[0] != '\0' ? errdetail("%s", gpu_probe_message) :
				 errdetail("No CUDA device is visible to this server."),
#else
				 errdetail("This build of pg_treeshap has no CUDA support."),
#endif
				 errhint("Set treeshap.device to auto or cpu.")));
	return true;
}
