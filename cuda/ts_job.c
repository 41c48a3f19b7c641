/*
 * ts_job.c - the result layout of a GPU job, in plain C: the backend sizes
 * its request segments with it and the service's executor checks them,
 * in builds with or without CUDA.
 */
#include "cuda/ts_cuda.h"

size_t
ts_gpu_job_result_len(const TsGpuJob *job, int32_t num_outputs, int32_t num_features, int32_t nrows)
{
	size_t		rows = (size_t) (nrows > 0 ? nrows : 0);

	if (job == NULL || job->kind == TS_GPU_JOB_SHAP || job->kind == TS_GPU_JOB_INTERVENTIONAL)
		return rows * num_outputs * ((size_t) num_features + 1);
	if (job->kind == TS_GPU_JOB_IMPORTANCE)
		return 2 * (size_t) num_outputs * num_features;
	if (job->kind == TS_GPU_JOB_PREDICT)
		return rows * num_outputs;
	if (job->kind == TS_GPU_JOB_TOP_FEATURES)
		return rows * num_outputs * (2 + 2 * (size_t) job->top_k);
	return rows * num_outputs * (size_t) job->selected * num_features;
}
