/*
 * ts_exec_device.c - the executor's devices (ts_exec_device.h): each call
 * goes to CUDA, or to the emulation, which computes a launch when it is
 * submitted, on the executor's thread, with the core's CPU functions over
 * the paths a GPU would take (those of at most one warp's length).
 */
#include "service/ts_exec_device.h"

#include <stdio.h>
#include <string.h>

#include "core/ts_interactions.h"
#include "core/ts_interventional.h"
#include "core/ts_pack.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_topk.h"
#ifdef TS_WITH_CUDA
#include "gpu/ts_gpu.h"
#endif

/* About 50 ms of work per launch: an H100 does 6e11 element-rows a second on the large benchmark model. */
#define GPU_LAUNCH_WORK 3e10
/*
 * The emulation computes on the executor's thread when a launch starts, some
 * 1e8 to 1e9 element-rows a second, with four launches started in a row.
 */
#define EMULATED_LAUNCH_WORK 1e7

static bool emulated = false;
static int	num_probed = 0;			/* devices ts_dev_probe found */

struct TsDevLayout
{
	const TsModel *model;		/* emulated predictions walk its trees */
	const TsPathTable *pt;
	int64_t    *short_paths;	/* emulation: the paths a GPU takes */
	int64_t		num_short;
#ifdef TS_WITH_CUDA
	TsGpuPlan  *plan;
#endif
};

struct TsDevTable
{
	const TsDevLayout *layout;
#ifdef TS_WITH_CUDA
	TsGpuTable *gpu;
#endif
};

/* One slot of an emulated runner. */
typedef struct EmulatedSlot
{
	float	   *x;
	double	   *phi;
	double	   *rows;			/* importance: the rows' contributions before summing */
} EmulatedSlot;

struct TsDevRunner
{
	TsDevTable *table;
	TsGpuJob	job;
	int32_t		max_rows;
#ifdef TS_WITH_CUDA
	TsGpuRunner *gpu;
#endif
	TsFeatureSelection *selection;	/* emulated interactions */
	double	   *scratch;
	EmulatedSlot slot[2];
};

bool
ts_dev_emulated(void)
{
	return emulated;
}

double
ts_dev_launch_work(void)
{
	return emulated ? EMULATED_LAUNCH_WORK : GPU_LAUNCH_WORK;
}

/* Describe emulate emulated devices of 64 GB each. */
static int
probe_emulated(int emulate, TsExecutorReport *r)
{
	emulated = true;
	for (int i = 0; i < emulate && i < TS_EXECUTOR_MAX_DEVICES; i++)
	{
		TsGpuDeviceInfo *d = &r->devices[r->num_devices++];

		d->index = i;
		snprintf(d->name, sizeof(d->name), "emulated device %d (CPU arithmetic, for tests)", i);
		d->total_memory = 64LL << 30;
		d->multiprocessors = 1;
	}
	return r->num_devices;
}

/* Count GPU d as one this build cannot run, saying why and what to build for. */
static void
report_unusable(TsExecutorReport *r, const TsGpuDeviceInfo *d, const char *why)
{
	r->unusable++;
	snprintf(r->message, sizeof(r->message),
			 "GPU %d (%s, compute capability %d.%d): %s; rebuild with make CUDA_ARCHS=%d%d",
			 d->index, d->name, d->compute_major, d->compute_minor, why, d->compute_major, d->compute_minor);
}

/* Describe a GPU this build has no code for, as an sm_80-only build sees an H100 (for tests). */
static int
probe_unusable(TsExecutorReport *r)
{
	TsGpuDeviceInfo d = {.index = 0, .name = "emulated device", .compute_major = 9, .compute_minor = 0};

	report_unusable(r, &d, "this build has no code it can run (built for sm_80)");
	return 0;
}

#ifdef TS_WITH_CUDA
/*
 * Add GPU i to the report when this build can run on it; else count it as
 * unusable and say why, naming the device and the architecture to build for.
 */
static void
probe_device(int i, TsExecutorReport *r)
{
	TsGpuDeviceInfo *d = &r->devices[r->num_devices];
	char		why[sizeof(r->message)];

	if (ts_gpu_device_info(i, d, r->message, sizeof(r->message)) != TS_GPU_OK)
		return;
	switch (ts_gpu_device_runnable(i, why, sizeof(why)))
	{
		case TS_GPU_OK:
			r->num_devices++;
			return;
		case TS_GPU_UNUSABLE:
			report_unusable(r, d, why);
			return;
		default:
			snprintf(r->message, sizeof(r->message), "GPU %d (%s): %s", i, d->name, why);
			return;
	}
}
#endif

/* Find the GPUs this build can run on (a message says why there are none, or why some are left out). */
static int
probe_cuda(TsExecutorReport *r)
{
#ifdef TS_WITH_CUDA
	int			count = 0;
	TsGpuStatus rc = ts_gpu_device_count(&count, r->message, sizeof(r->message));

	if (rc == TS_GPU_UNUSABLE)
		r->unusable = 1;
	for (int i = 0; rc == TS_GPU_OK && i < count && r->num_devices < TS_EXECUTOR_MAX_DEVICES; i++)
		probe_device(i, r);
	/* no driver, or a driver that sees no GPU, is not an error: say which */
	if (r->num_devices == 0 && r->message[0] == '\0')
		snprintf(r->message, sizeof(r->message), "no GPU is visible to the CUDA runtime");
	if (r->num_devices > 0 && r->unusable == 0)
		r->message[0] = '\0';
#else
	snprintf(r->message, sizeof(r->message), "pg_treeshap was built without CUDA");
#endif
	return r->num_devices;
}

int
ts_dev_probe(int emulate, TsExecutorReport *r)
{
	memset(r, 0, sizeof(*r));
	if (emulate > 0)
		num_probed = probe_emulated(emulate, r);
	else if (emulate < 0)
		num_probed = probe_unusable(r);
	else
		num_probed = probe_cuda(r);
	return num_probed;
}

/* The paths a GPU takes: all but those longer than a warp, in table order. */
static int64_t *
short_paths(const TsPathTable *pt, int64_t *count)
{
	int64_t		num_long;
	int64_t    *long_paths = ts_pack_long_paths(pt, &num_long);
	int64_t    *list = ts_alloc(sizeof(int64_t) * (size_t) (pt->num_paths > 0 ? pt->num_paths : 1));
	int64_t		n = 0,
				l = 0;

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		if (l < num_long && long_paths[l] == p)
			l++;
		else
			list[n++] = p;
	}
	ts_free(long_paths);
	*count = n;
	return list;
}

TsDevLayout *
ts_dev_layout(const TsModel *model, const TsPathTable *pt)
{
	TsDevLayout *layout = ts_alloc0(sizeof(TsDevLayout));

	layout->model = model;
	layout->pt = pt;
	if (emulated)
		layout->short_paths = short_paths(pt, &layout->num_short);
#ifdef TS_WITH_CUDA
	else
		layout->plan = ts_gpu_plan_layout(pt, model, TS_PACK_BEST_FIT_DECREASING);
#endif
	return layout;
}

size_t
ts_dev_layout_bytes(const TsDevLayout *layout)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return layout->plan->device_bytes;
#endif
	/* what a GPU would hold: a 40-byte lane per element, as the packing lays them out, and the trees */
	return (size_t) layout->pt->num_elements * 40 + (size_t) layout->model->num_nodes * 16 +
		(size_t) layout->model->num_leaves * ts_leaf_size(layout->model) * sizeof(double) + 4096;
}

void
ts_dev_layout_free(TsDevLayout *layout)
{
	if (layout == NULL)
		return;
#ifdef TS_WITH_CUDA
	ts_gpu_plan_free(layout->plan);
#endif
	ts_free(layout->short_paths);
	ts_free(layout);
}

TsGpuStatus
ts_dev_upload(int device, const TsDevLayout *layout, TsDevTable **out, char *msg, size_t msglen)
{
	TsDevTable *table = ts_alloc0(sizeof(TsDevTable));

	table->layout = layout;
	*out = NULL;
#ifdef TS_WITH_CUDA
	if (!emulated)
	{
		TsGpuStatus rc = ts_gpu_use_device(device, msg, msglen);

		if (rc == TS_GPU_OK)
			rc = ts_gpu_plan_upload(layout->plan, &table->gpu, msg, msglen);
		if (rc != TS_GPU_OK)
		{
			ts_free(table);
			return rc;
		}
	}
#else
	(void) device;
	(void) msg;
	(void) msglen;
#endif
	*out = table;
	return TS_GPU_OK;
}

void
ts_dev_table_free(TsDevTable *table)
{
	if (table == NULL)
		return;
#ifdef TS_WITH_CUDA
	ts_gpu_table_free(table->gpu);
#endif
	ts_free(table);
}

size_t
ts_dev_runner_bytes(const TsPathTable *pt, const TsGpuJob *job, int32_t max_rows)
{
	size_t		x = (size_t) max_rows * pt->num_features * sizeof(float);
	size_t		result = ts_gpu_job_result_len(job, pt->num_outputs, pt->num_features, max_rows);
	size_t		acc = result;
	size_t		bg = 0;
	TsGpuJob	shap = {.kind = TS_GPU_JOB_SHAP, .algorithm = job->algorithm};

	/* importance and top features accumulate every row's contributions first */
	if (job->kind == TS_GPU_JOB_IMPORTANCE || job->kind == TS_GPU_JOB_TOP_FEATURES)
		acc = ts_gpu_job_result_len(&shap, pt->num_outputs, pt->num_features, max_rows);
	else if (job->kind == TS_GPU_JOB_PREDICT)
		acc = 0;				/* margins are summed in place */
	/* an interventional runner holds its background, rows and transpose, margins, outputs */
	if (job->kind == TS_GPU_JOB_INTERVENTIONAL && job->background != NULL)
		bg = 2 * (size_t) job->background->nrows * pt->num_features * sizeof(float) +
			2 * (size_t) job->background->nrows * pt->num_outputs * sizeof(double) +
			(size_t) max_rows * pt->num_outputs * sizeof(double) * 2;
	/* per slot: rows and their transpose, accumulators and results */
	return 2 * (2 * x + (acc + result) * sizeof(double)) + bg;
}

/* The emulated runner's selection of an interaction job. */
static TsFeatureSelection *
emulated_selection(const TsPathTable *pt, const TsGpuJob *job)
{
	int32_t    *features = ts_alloc(sizeof(int32_t) * (size_t) (pt->num_features + 1));
	int32_t		count = 0;
	TsFeatureSelection *sel;

	for (int32_t f = 0; f < pt->num_features; f++)
		if (job->feature_slot[f] >= 0)
			features[count++] = f;
	sel = ts_selection_make(pt->num_features, features, count);
	ts_free(features);
	return sel;
}

/* Buffers of an emulated runner. */
static void
emulated_runner(TsDevRunner *r)
{
	const TsPathTable *pt = r->table->layout->pt;
	TsGpuJob	shap = {.kind = TS_GPU_JOB_SHAP, .algorithm = r->job.algorithm};
	size_t		scratch = ts_cpu_scratch_len(pt);

	if (scratch < ts_interactions_scratch_len(pt))
		scratch = ts_interactions_scratch_len(pt);
	if (scratch < 2 * (size_t) pt->num_outputs)
		scratch = 2 * (size_t) pt->num_outputs;	/* a row's margins and outputs */
	r->scratch = ts_alloc(sizeof(double) * scratch);
	if (r->job.kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS || r->job.kind == TS_GPU_JOB_TAYLOR_INTERACTIONS)
	{
		r->selection = emulated_selection(pt, &r->job);
		r->job.feature_slot = r->selection->slot;
	}
	for (int s = 0; s < 2; s++)
	{
		r->slot[s].x = ts_alloc(sizeof(float) * (size_t) r->max_rows * pt->num_features);
		r->slot[s].phi = ts_alloc(sizeof(double) *
								  ts_gpu_job_result_len(&r->job, pt->num_outputs, pt->num_features, r->max_rows));
		if (r->job.kind == TS_GPU_JOB_IMPORTANCE || r->job.kind == TS_GPU_JOB_TOP_FEATURES)
			r->slot[s].rows = ts_alloc(sizeof(double) *
									   ts_gpu_job_result_len(&shap, pt->num_outputs, pt->num_features, r->max_rows));
	}
}

TsGpuStatus
ts_dev_runner_create(TsDevTable *table, int32_t max_rows, int32_t precision, const TsGpuJob *job,
					 TsDevRunner **out, char *msg, size_t msglen)
{
	TsDevRunner *r = ts_alloc0(sizeof(TsDevRunner));

	r->table = table;
	r->job = *job;
	r->max_rows = max_rows;
	*out = NULL;
	if (emulated)
		emulated_runner(r);
#ifdef TS_WITH_CUDA
	else
	{
		TsGpuStatus rc = ts_gpu_runner_create(table->gpu, max_rows, (TsGpuPrecision) precision, job,
											  &r->gpu, msg, msglen);

		if (rc != TS_GPU_OK)
		{
			ts_free(r);
			return rc;
		}
	}
#else
	(void) precision;
	(void) msg;
	(void) msglen;
#endif
	*out = r;
	return TS_GPU_OK;
}

size_t
ts_dev_runner_group_bytes(const TsDevRunner *r)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return ts_gpu_runner_group_bytes(r->gpu);
#endif
	(void) r;
	return 0;
}

float *
ts_dev_runner_input(TsDevRunner *r, int slot)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return ts_gpu_runner_input(r->gpu, slot);
#endif
	return r->slot[slot].x;
}

/* An emulated SHAP launch: the bias, then every short path, per row. */
static void
emulated_shap(TsDevRunner *r, const float *x, int32_t nrows, double *phi)
{
	const TsDevLayout *l = r->table->layout;
	const TsPathTable *pt = l->pt;
	size_t		width = (size_t) pt->num_features + 1;
	TsShapAlgorithm alg = r->job.algorithm == TS_GPU_ALG_QUADRATURE ? TS_SHAP_QUADRATURE : TS_SHAP_TREESHAP;

	memset(phi, 0, sizeof(double) * (size_t) nrows * pt->num_outputs * width);
	for (int32_t i = 0; i < nrows; i++)
		for (int32_t k = 0; k < pt->num_outputs; k++)
			phi[((size_t) i * pt->num_outputs + k) * width + width - 1] = pt->bias[k];
	ts_cpu_shap_add_paths_rows(pt, alg, l->short_paths, l->num_short, x, nrows, phi, r->scratch);
}

/*
 * An emulated interventional launch: the bias, then every short path's
 * values against the background, per row, with its margins and outputs in
 * probability space.
 */
static void
emulated_interventional(TsDevRunner *r, const float *x, int32_t nrows, double *phi)
{
	const TsDevLayout *l = r->table->layout;
	const TsPathTable *pt = l->pt;
	const TsGpuBackground *g = r->job.background;
	TsBackgroundRows bg = {g->x, g->margin, g->output, g->nrows};
	size_t		width = (size_t) pt->num_outputs * (pt->num_features + 1);
	double	   *margin = r->scratch;
	double	   *output = r->scratch + pt->num_outputs;

	for (int32_t i = 0; i < nrows; i++)
	{
		const float *row = x + (size_t) i * pt->num_features;
		double	   *out = phi + (size_t) i * width;

		memset(out, 0, sizeof(double) * width);
		for (int32_t k = 0; k < pt->num_outputs; k++)
			out[(size_t) k * (pt->num_features + 1) + pt->num_features] = pt->bias[k];
		if (g->link != TS_GPU_LINK_NONE)
		{
			ts_model_predict_margin(l->model, row, margin);
			ts_model_link(l->model, margin, output);
		}
		ts_interventional_add_paths_row(pt, l->short_paths, l->num_short, &bg, row, margin, output, out);
	}
}

/* An emulated launch of nrows rows read from x into phi, computed now. */
static void
emulated_submit(TsDevRunner *r, int slot, int32_t nrows, const float *x, double *phi)
{
	const TsDevLayout *l = r->table->layout;
	const TsPathTable *pt = l->pt;
	EmulatedSlot *s = &r->slot[slot];
	size_t		len = ts_gpu_job_result_len(&r->job, pt->num_outputs, pt->num_features, nrows);

	switch (r->job.kind)
	{
		case TS_GPU_JOB_SHAP:
			emulated_shap(r, x, nrows, phi);
			break;
		case TS_GPU_JOB_INTERVENTIONAL:
			emulated_interventional(r, x, nrows, phi);
			break;
		case TS_GPU_JOB_IMPORTANCE:
			emulated_shap(r, x, nrows, s->rows);
			memset(phi, 0, sizeof(double) * len);
			ts_importance_add_rows(s->rows, nrows, pt->num_outputs, pt->num_features, phi);
			break;
		case TS_GPU_JOB_TOP_FEATURES:
			emulated_shap(r, x, nrows, s->rows);
			for (int32_t i = 0; i < nrows; i++)
				ts_topk_row(s->rows + (size_t) i * pt->num_outputs * (pt->num_features + 1),
							pt->num_outputs, pt->num_features, r->job.top_k,
							phi + (size_t) i * pt->num_outputs * ts_topk_width(r->job.top_k));
			break;
		case TS_GPU_JOB_PREDICT:
			for (int32_t i = 0; i < nrows; i++)
				ts_model_predict_margin(l->model, x + (size_t) i * pt->num_features,
										phi + (size_t) i * pt->num_outputs);
			break;
		case TS_GPU_JOB_SHAPLEY_INTERACTIONS:
		case TS_GPU_JOB_TAYLOR_INTERACTIONS:
			memset(phi, 0, sizeof(double) * len);
			ts_interactions_add_paths_rows(pt, l->short_paths, l->num_short, x, nrows,
										   r->job.kind == TS_GPU_JOB_TAYLOR_INTERACTIONS
										   ? TS_INTERACTION_TAYLOR : TS_INTERACTION_SHAPLEY,
										   r->selection, phi, r->scratch);
			break;
	}
}

TsGpuStatus
ts_dev_runner_submit_at(TsDevRunner *r, int slot, int32_t nrows, const float *x, double *phi,
						char *msg, size_t msglen)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return ts_gpu_runner_submit_at(r->gpu, slot, nrows, x, phi, msg, msglen);
#endif
	if (nrows < 0 || nrows > r->max_rows)
	{
		snprintf(msg, msglen, "batch of %d rows exceeds the runner's %d", nrows, r->max_rows);
		return TS_GPU_ERROR;
	}
	emulated_submit(r, slot, nrows, x, phi);
	return TS_GPU_OK;
}

TsGpuStatus
ts_dev_runner_submit(TsDevRunner *r, int slot, int32_t nrows, char *msg, size_t msglen)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return ts_gpu_runner_submit(r->gpu, slot, nrows, msg, msglen);
#endif
	return ts_dev_runner_submit_at(r, slot, nrows, r->slot[slot].x, r->slot[slot].phi, msg, msglen);
}

bool
ts_dev_host_register(void *p, size_t len)
{
#ifdef TS_WITH_CUDA
	char		msg[256];

	/* without a usable GPU, registering would only start a CUDA context for nothing */
	if (!emulated && num_probed > 0)
		return ts_gpu_host_register(p, len, msg, sizeof(msg)) == TS_GPU_OK;
#endif
	(void) p;
	(void) len;
	return emulated && num_probed > 0;
}

void
ts_dev_host_unregister(void *p)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		ts_gpu_host_unregister(p);
#endif
	(void) p;
}

TsGpuStatus
ts_dev_runner_poll(TsDevRunner *r, int slot, char *msg, size_t msglen)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return ts_gpu_runner_poll(r->gpu, slot, msg, msglen);
#else
	(void) r;
	(void) slot;
	(void) msg;
	(void) msglen;
#endif
	return TS_GPU_OK;
}

TsGpuStatus
ts_dev_runner_wait(TsDevRunner *r, int slot, double **phi, char *msg, size_t msglen)
{
#ifdef TS_WITH_CUDA
	if (!emulated)
		return ts_gpu_runner_wait(r->gpu, slot, phi, msg, msglen);
#else
	(void) msg;
	(void) msglen;
#endif
	*phi = r->slot[slot].phi;
	return TS_GPU_OK;
}

void
ts_dev_runner_free(TsDevRunner *r)
{
	if (r == NULL)
		return;
#ifdef TS_WITH_CUDA
	ts_gpu_runner_free(r->gpu);
#endif
	for (int s = 0; s < 2; s++)
	{
		ts_free(r->slot[s].x);
		ts_free(r->slot[s].phi);
		ts_free(r->slot[s].rows);
	}
	ts_selection_free(r->selection);
	ts_free(r->scratch);
	ts_free(r);
}
