/*
 * ts_runner.cu - the GPU path's lifecycle behind ts_cuda.h: a path table
 * uploaded to a device, and the pipelined runner the service drives (two
 * slots of pinned and device buffers, each batch copied in, explained by
 * ts_shap.cu's enqueue_explain on its slot's stream, copied back), plus the
 * kernel benchmark.
 *
 * Every extern "C" entry point catches everything: only status codes leave.
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "ts_cuda_status.h"
#include "ts_device_array.cuh"
#include "ts_explain.cuh"

using namespace ts_explain;

struct TsGpuSlot
{
	cudaStream_t stream;
	float	   *host_x;
	double	   *host_phi;
	float	   *dev_x;
	float	   *dev_x_t;		/* quadrature and interventional: the input feature-major */
	double	   *dev_margin;		/* interventional in probability space: the rows' margins */
	unsigned long long *dev_acc;
	double	   *dev_phi;
};

struct TsGpuRunner
{
	const TsGpuTable *table;
	int32_t		max_rows;
	TsGpuPrecision precision;
	TsGpuJob	job;			/* feature_slot points at dev_slot */
	int32_t    *dev_slot;		/* interactions: per feature, selected row or -1 */
	TsIvBackground *background;	/* interventional: the job's background, on the device */
	TsGpuSlot	slot[2];
};

namespace
{

/* cudaMalloc that leaves *ptr NULL on failure. */
template <typename T>
cudaError_t
device_alloc(T **ptr, size_t count)
{
	void	   *p = nullptr;
	cudaError_t rc = cudaMalloc(&p, count * sizeof(T) + (count == 0 ? 8 : 0));

	*ptr = rc == cudaSuccess ? (T *) p : nullptr;
	return rc;
}

/* Copy a vector-leaf model's path values, which its lanes point into. */
cudaError_t
upload_values(TsGpuTable *t, const TsGpuTableDesc *desc)
{
	t->value_width = desc->value_width > 1 ? desc->value_width : 1;
	if (t->value_width == 1)
		return cudaSuccess;
	if (desc->values == nullptr)
		return cudaErrorInvalidValue;
	return ts_upload_array(&t->values, desc->values, desc->num_values);
}

/* Copy the category sets, if the model has any, next to the lanes. */
cudaError_t
upload_cat_pool(TsGpuTable *t, const TsGpuTableDesc *desc)
{
	if (desc->cat_pool_len == 0)
		return cudaSuccess;
	return ts_upload_array(&t->cat_pool, desc->cat_pool, desc->cat_pool_len);
}

static_assert(sizeof(TsGpuLane) == 40, "a lane is 40 bytes: five 8-byte loads");

/* Pinned host allocation that leaves *ptr NULL on failure. */
template <typename T>
cudaError_t
pinned_alloc(T **ptr, size_t count)
{
	void	   *p = nullptr;
	cudaError_t rc = cudaHostAlloc(&p, count * sizeof(T) + (count == 0 ? 8 : 0), cudaHostAllocDefault);

	*ptr = rc == cudaSuccess ? (T *) p : nullptr;
	return rc;
}

/* Allocate one slot of a runner. */
cudaError_t
slot_create(TsGpuSlot *s, const TsGpuTable *t, int32_t max_rows, const TsGpuJob &job,
			const TsIvBackground *bg)
{
	size_t		rows = (size_t) max_rows;
	size_t		acc = rows * acc_per_row(t, job);
	size_t		phi = ts_gpu_job_result_len(&job, t->num_outputs, t->num_features, max_rows);
	cudaError_t rc;

	if ((rc = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
		(rc = pinned_alloc(&s->host_x, rows * t->num_features)) != cudaSuccess ||
		(rc = pinned_alloc(&s->host_phi, phi)) != cudaSuccess ||
		(rc = device_alloc(&s->dev_x, rows * t->num_features)) != cudaSuccess ||
		(column_major(t, job) &&
		 (rc = device_alloc(&s->dev_x_t, ts_quad_input_len(t->quad, max_rows))) != cudaSuccess) ||
		(bg != nullptr && ts_iv_probability(bg) &&
		 (rc = device_alloc(&s->dev_margin, rows * t->num_outputs)) != cudaSuccess) ||
		(rc = device_alloc(&s->dev_acc, acc)) != cudaSuccess ||
		(rc = device_alloc(&s->dev_phi, phi)) != cudaSuccess)
		return rc;
	return cudaSuccess;
}

/* Free one slot after its stream drained; tolerates missing parts. */
void
slot_free(TsGpuSlot *s)
{
	if (s->stream != nullptr)
	{
		cudaStreamSynchronize(s->stream);
		cudaStreamDestroy(s->stream);
	}
	cudaFreeHost(s->host_x);
	cudaFreeHost(s->host_phi);
	cudaFree(s->dev_x);
	cudaFree(s->dev_x_t);
	cudaFree(s->dev_margin);
	cudaFree(s->dev_acc);
	cudaFree(s->dev_phi);
	memset(s, 0, sizeof(*s));
	cudaGetLastError();
}

/* The job, NULL meaning SHAP values; checked against the table. */
bool
job_or_default(const TsGpuJob *in, const TsGpuTable *t, TsGpuJob *job, char *msg, size_t msglen)
{
	TsGpuJob	shap = {TS_GPU_JOB_SHAP, nullptr, 0, TS_GPU_ALG_TREESHAP, 0, nullptr};

	*job = in != nullptr ? *in : shap;
	if (is_interaction(*job) &&
		(job->feature_slot == nullptr || job->selected < 0 || job->selected > t->num_features))
	{
		snprintf(msg, msglen, "interaction job without a valid feature selection");
		return false;
	}
	if (job->kind == TS_GPU_JOB_TOP_FEATURES && (job->top_k < 1 || job->top_k > t->num_features))
	{
		snprintf(msg, msglen, "top features job of %d features on a model of %d", job->top_k,
				 t->num_features);
		return false;
	}
	if (job->kind == TS_GPU_JOB_PREDICT && t->forest == nullptr)
	{
		snprintf(msg, msglen, "predict job on a table uploaded without its trees");
		return false;
	}
	if (job->kind == TS_GPU_JOB_INTERVENTIONAL &&
		(job->background == nullptr || job->background->nrows < 1 || t->quad == nullptr ||
		 (job->background->link != TS_GPU_LINK_NONE && t->forest == nullptr)))
	{
		snprintf(msg, msglen, "interventional job without a background, or on a table without its layout or trees");
		return false;
	}
	return true;
}

/* Device copy of an interaction job's feature slots (nullptr otherwise). */
cudaError_t
upload_slots(const TsGpuTable *t, const TsGpuJob &job, int32_t **dev_slot)
{
	*dev_slot = nullptr;
	if (!is_interaction(job))
		return cudaSuccess;
	return ts_upload_array(dev_slot, job.feature_slot, (int64_t) t->num_features);
}

}								/* namespace */

extern "C" TsGpuStatus
ts_gpu_table_upload(const TsGpuTableDesc *desc, TsGpuTable **out, char *msg, size_t msglen)
{
	TsGpuTable *t = nullptr;

	*out = nullptr;
	try
	{
		size_t		nlanes = (size_t) desc->num_bins * TS_GPU_LANES;
		int			dev = 0;
		cudaError_t rc;

		t = new TsGpuTable();
		t->num_bins = desc->num_bins;
		t->num_features = desc->num_features;
		t->num_outputs = desc->num_outputs;
		t->scale = desc->fixed_scale;
		rc = cudaGetDevice(&dev);
		t->device = dev;
		if (rc != cudaSuccess ||
			(rc = cudaDeviceGetAttribute(&t->multiprocessors, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
			(rc = device_alloc(&t->lanes, nlanes)) != cudaSuccess ||
			(rc = device_alloc(&t->bias, (size_t) desc->num_outputs)) != cudaSuccess ||
			(rc = cudaMemcpy(t->lanes, desc->lanes, nlanes * sizeof(TsGpuLane), cudaMemcpyHostToDevice)) != cudaSuccess ||
			(rc = cudaMemcpy(t->bias, desc->bias, desc->num_outputs * sizeof(double), cudaMemcpyHostToDevice)) != cudaSuccess ||
			(rc = upload_cat_pool(t, desc)) != cudaSuccess ||
			(rc = upload_values(t, desc)) != cudaSuccess ||
			(desc->quad != nullptr &&
			 (rc = ts_quad_upload(desc->quad, desc->num_features, desc->num_outputs, &t->quad)) != cudaSuccess) ||
			(desc->forest != nullptr &&
			 (rc = ts_forest_upload(desc->forest, desc->num_outputs, &t->forest)) != cudaSuccess))
		{
			ts_gpu_table_free(t);
			return ts_cuda_status(rc, "uploading the path table", msg, msglen);
		}
		*out = t;
		return TS_GPU_OK;
	}
	catch (...)
	{
		ts_gpu_table_free(t);
		return ts_cuda_unexpected("ts_gpu_table_upload", msg, msglen);
	}
}

extern "C" void
ts_gpu_table_free(TsGpuTable *table)
{
	try
	{
		if (table == nullptr)
			return;
		cudaSetDevice(table->device);
		cudaFree(table->lanes);
		cudaFree(table->bias);
		cudaFree(table->cat_pool);
		cudaFree(table->values);
		ts_quad_free(table->quad);
		ts_forest_free(table->forest);
		cudaGetLastError();
		delete table;
	}
	catch (...)
	{
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_create(const TsGpuTable *table, int32_t max_rows, TsGpuPrecision precision,
					 const TsGpuJob *job, TsGpuRunner **out, char *msg, size_t msglen)
{
	TsGpuRunner *r = nullptr;

	*out = nullptr;
	try
	{
		cudaError_t rc;

		if ((rc = cudaSetDevice(table->device)) != cudaSuccess)
			return ts_cuda_status(rc, "cudaSetDevice", msg, msglen);
		r = new TsGpuRunner();
		r->table = table;
		r->max_rows = max_rows;
		r->precision = precision;
		if (!job_or_default(job, table, &r->job, msg, msglen))
		{
			delete r;
			return TS_GPU_ERROR;
		}
		if ((rc = upload_slots(table, r->job, &r->dev_slot)) != cudaSuccess)
		{
			ts_gpu_runner_free(r);
			return ts_cuda_status(rc, "uploading the feature selection", msg, msglen);
		}
		r->job.feature_slot = r->dev_slot;
		if (r->job.kind == TS_GPU_JOB_INTERVENTIONAL &&
			(rc = ts_iv_upload(r->job.background, table->quad, table->cat_pool, table->num_features,
							   table->num_outputs, &r->background)) != cudaSuccess)
		{
			ts_gpu_runner_free(r);
			return ts_cuda_status(rc, "uploading the background", msg, msglen);
		}
		r->job.background = nullptr;	/* the caller's rows: the device copy serves */
		for (int s = 0; s < 2; s++)
		{
			rc = slot_create(&r->slot[s], table, max_rows, r->job, r->background);

			if (rc != cudaSuccess)
			{
				ts_gpu_runner_free(r);
				return ts_cuda_status(rc, "allocating batch buffers", msg, msglen);
			}
		}
		*out = r;
		return TS_GPU_OK;
	}
	catch (...)
	{
		ts_gpu_runner_free(r);
		return ts_cuda_unexpected("ts_gpu_runner_create", msg, msglen);
	}
}

extern "C" float *
ts_gpu_runner_input(TsGpuRunner *runner, int slot)
{
	return runner->slot[slot].host_x;
}

extern "C" TsGpuStatus
ts_gpu_runner_submit_at(TsGpuRunner *runner, int slot, int32_t nrows, const float *x, double *phi,
						char *msg, size_t msglen)
{
	try
	{
		TsGpuSlot  *s = &runner->slot[slot];
		const TsGpuTable *t = runner->table;
		size_t		x_bytes = (size_t) nrows * t->num_features * sizeof(float);
		size_t		phi_bytes = ts_gpu_job_result_len(&runner->job, t->num_outputs, t->num_features, nrows) *
			sizeof(double);
		cudaError_t rc;

		if (nrows < 0 || nrows > runner->max_rows)
		{
			snprintf(msg, msglen, "batch of %d rows exceeds the runner's %d", nrows, runner->max_rows);
			return TS_GPU_ERROR;
		}
		if ((rc = cudaSetDevice(t->device)) != cudaSuccess ||
			(rc = cudaMemcpyAsync(s->dev_x, x, x_bytes, cudaMemcpyHostToDevice, s->stream)) != cudaSuccess ||
			(rc = enqueue_explain(t, s->dev_x, s->dev_x_t, nrows, runner->precision, runner->job,
								  runner->dev_slot, runner->background, s->dev_margin, s->dev_acc,
								  s->dev_phi, s->stream)) != cudaSuccess ||
			(rc = cudaMemcpyAsync(phi, s->dev_phi, phi_bytes, cudaMemcpyDeviceToHost, s->stream)) != cudaSuccess)
			return ts_cuda_status(rc, "starting a batch", msg, msglen);
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_runner_submit_at", msg, msglen);
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_submit(TsGpuRunner *runner, int slot, int32_t nrows, char *msg, size_t msglen)
{
	return ts_gpu_runner_submit_at(runner, slot, nrows, runner->slot[slot].host_x,
								   runner->slot[slot].host_phi, msg, msglen);
}

extern "C" TsGpuStatus
ts_gpu_host_register(void *p, size_t len, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaHostRegister(p, len, cudaHostRegisterPortable);

		return rc == cudaSuccess ? TS_GPU_OK : ts_cuda_status(rc, "cudaHostRegister", msg, msglen);
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_host_register", msg, msglen);
	}
}

extern "C" void
ts_gpu_host_unregister(void *p)
{
	try
	{
		cudaHostUnregister(p);
		cudaGetLastError();
	}
	catch (...)
	{
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_wait(TsGpuRunner *runner, int slot, double **phi, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaSetDevice(runner->table->device);

		if (rc == cudaSuccess)
			rc = cudaStreamSynchronize(runner->slot[slot].stream);

		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "computing a batch", msg, msglen);
		*phi = runner->slot[slot].host_phi;
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_runner_wait", msg, msglen);
	}
}

extern "C" TsGpuStatus
ts_gpu_runner_poll(TsGpuRunner *runner, int slot, char *msg, size_t msglen)
{
	try
	{
		cudaError_t rc = cudaSetDevice(runner->table->device);

		if (rc == cudaSuccess)
			rc = cudaStreamQuery(runner->slot[slot].stream);

		if (rc == cudaErrorNotReady)
			return TS_GPU_NOT_READY;
		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "computing a batch", msg, msglen);
		return TS_GPU_OK;
	}
	catch (...)
	{
		return ts_cuda_unexpected("ts_gpu_runner_poll", msg, msglen);
	}
}

extern "C" size_t
ts_gpu_runner_group_bytes(const TsGpuRunner *runner)
{
	return runner != nullptr ? ts_iv_group_bytes(runner->background) : 0;
}

extern "C" void
ts_gpu_runner_free(TsGpuRunner *runner)
{
	try
	{
		if (runner == nullptr)
			return;
		cudaSetDevice(runner->table->device);
		slot_free(&runner->slot[0]);
		slot_free(&runner->slot[1]);
		cudaFree(runner->dev_slot);
		ts_iv_free(runner->background);
		cudaGetLastError();
		delete runner;
	}
	catch (...)
	{
	}
}

extern "C" TsGpuStatus
ts_gpu_time_kernel(const TsGpuTable *table, const float *x, int32_t nrows,
				   TsGpuPrecision precision, const TsGpuJob *job_in, int reps, double *seconds,
				   double *phi, char *msg, size_t msglen)
{
	TsGpuSlot	s;
	int32_t    *dev_slot = nullptr;

	memset(&s, 0, sizeof(s));
	try
	{
		TsGpuJob	job;
		size_t		phi_count;
		cudaEvent_t start = nullptr,
					stop = nullptr;
		cudaError_t rc;
		float		best = -1.0f;

		if (!job_or_default(job_in, table, &job, msg, msglen))
			return TS_GPU_ERROR;
		if (job.kind == TS_GPU_JOB_INTERVENTIONAL)
		{
			snprintf(msg, msglen, "the kernel benchmark does not time interventional jobs");
			return TS_GPU_ERROR;
		}
		phi_count = ts_gpu_job_result_len(&job, table->num_outputs, table->num_features, nrows);
		if ((rc = upload_slots(table, job, &dev_slot)) != cudaSuccess ||
			(rc = device_alloc(&s.dev_x, (size_t) nrows * table->num_features)) != cudaSuccess ||
			(uses_quadrature(table, job) &&
			 (rc = device_alloc(&s.dev_x_t, ts_quad_input_len(table->quad, nrows))) != cudaSuccess) ||
			(rc = device_alloc(&s.dev_acc, (size_t) nrows * acc_per_row(table, job))) != cudaSuccess ||
			(rc = device_alloc(&s.dev_phi, phi_count)) != cudaSuccess ||
			(rc = cudaMemcpy(s.dev_x, x, (size_t) nrows * table->num_features * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
			(rc = cudaEventCreate(&start)) != cudaSuccess ||
			(rc = cudaEventCreate(&stop)) != cudaSuccess)
		{
			slot_free(&s);
			cudaFree(dev_slot);
			return ts_cuda_status(rc, "preparing the kernel benchmark", msg, msglen);
		}
		for (int i = 0; i <= reps && rc == cudaSuccess; i++)
		{
			float		ms = 0.0f;

			cudaEventRecord(start, 0);
			rc = enqueue_explain(table, s.dev_x, s.dev_x_t, nrows, precision, job, dev_slot, nullptr,
								 nullptr, s.dev_acc, s.dev_phi, 0);
			cudaEventRecord(stop, 0);
			if (rc == cudaSuccess)
				rc = cudaEventSynchronize(stop);
			if (rc == cudaSuccess)
				rc = cudaEventElapsedTime(&ms, start, stop);
			if (i > 0 && (best < 0 || ms < best))
				best = ms;	/* run 0 warms up */
		}
		if (rc == cudaSuccess && phi != nullptr)
			rc = cudaMemcpy(phi, s.dev_phi, phi_count * sizeof(double), cudaMemcpyDeviceToHost);
		cudaEventDestroy(start);
		cudaEventDestroy(stop);
		slot_free(&s);
		cudaFree(dev_slot);
		if (rc != cudaSuccess)
			return ts_cuda_status(rc, "running the kernel benchmark", msg, msglen);
		*seconds = (reps > 0 ? best : 0.0f) / 1000.0;
		return TS_GPU_OK;
	}
	catch (...)
	{
		slot_free(&s);
		cudaFree(dev_slot);
		return ts_cuda_unexpected("ts_gpu_time_kernel", msg, msglen);
	}
}
