/*
 * ts_gpu_pg.c - the GPU path of a backend, as a client of the GPU service
 * (src/service/): no CUDA here. A run is a dynamic shared memory segment
 * with two areas of rows and results; each batch is one request, which the
 * service's executor answers on the GPU with the model it keeps resident,
 * shipping the model's bytes once when it is not. The backend then adds
 * what the CPU owes to SHAP runs (predictions walk whole trees on the GPU): the paths too long for a warp, the finishing of
 * interaction values, the importance sums of rows with long paths.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/dsm.h"
#include "storage/dsm_impl.h"
#include "utils/memutils.h"

#include "backend/ts_gpu_pg.h"
#include "backend/ts_settings.h"
#include "core/ts_pack.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_topk.h"
#include "cuda/ts_cuda.h"
#include "service/ts_executor.h"
#include "service/ts_pg_compat.h"
#include "service/ts_request.h"
#include "service/ts_service.h"

/* How often a run asks again after loading a model that was evicted before its batch ran. */
#define LOAD_ATTEMPTS 3

/* Room first offered for a model's interface: enough without dictionaries or long paths. */
#define INTERFACE_ROOM (64 * 1024)

struct TsGpuRun
{
	MemoryContext context;		/* owns this struct; its reset ends the run */
	MemoryContextCallback callback;
	TsCachedModel *entry;
	dsm_segment *segment;
	TsRequestHeader *header;	/* the segment's */
	TsRunSpec	spec;
	bool		host_importance;	/* importance summed here: long paths need whole rows */
	double	   *sums;			/* host_importance: the batch's sums */
	bool		host_top;		/* top features selected here, for the same reason */
	double	   *top;			/* host_top: the batch's records */
	double	   *scratch;		/* for long paths on the CPU */
	TsShapAlgorithm algorithm;	/* their CPU algorithm */
	uint64		pending;		/* the request in flight, 0 when none */
};

/* ERROR unless the service can map this server's dynamic shared memory by name. */
static void
check_segment_type(void)
{
	if (dynamic_shared_memory_type != DSM_IMPL_POSIX && dynamic_shared_memory_type != DSM_IMPL_MMAP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the GPU service needs dynamic_shared_memory_type posix or mmap"),
				 errhint("Set dynamic_shared_memory_type to posix, or treeshap.device to cpu.")));
}

/* The model's identity for the service: database, catalog version, size and digest of its bytes. */
static TsModelKey
model_key(const TsCachedModel *entry)
{
	TsModelKey	key = {MyDatabaseId, 0, entry->version, entry->length, entry->digest};

	return key;
}

/* ERROR for a request the service did not serve, with the message it wrote. */
static void
report_failure(const TsCachedModel *entry, int32 status, const TsRequestHeader *h)
{
	TsError		err = {(TsErrorCode) h->error_class, ""};

	switch (status)
	{
		case TS_REQUEST_BAD_MODEL:
			strlcpy(err.message, h->message, sizeof(err.message));
			ts_report_core_error(&err, entry->name);
		case TS_REQUEST_OUT_OF_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of GPU memory: %s", h->message),
					 errhint("Lower treeshap.batch_rows, raise treeshap.gpu_memory_limit, or set treeshap.device to cpu.")));
		case TS_REQUEST_FAILED:
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("%s", h->message)));
		default:
			elog(ERROR, "the GPU service refused a request (status %d): %s", status, h->message);
	}
}

/* What a load request answered. */
typedef struct LoadAnswer
{
	int32		status;
	int64		paths;			/* the resident model's */
	bool		loaded;			/* by this request */
	uint64		interface_len;	/* of the model's interface, when asked for */
} LoadAnswer;

/* Copy the entry's stored bytes to dest, freeing this backend's copy at once (up to a gigabyte). */
static void
copy_bytes(TsCachedModel *entry, char *dest)
{
	MemoryContext tmp = AllocSetContextCreate(CurrentMemoryContext, "treeshap model bytes",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(tmp);

	memcpy(dest, VARDATA_ANY(ts_model_bytes(entry)), entry->length);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(tmp);
}

/*
 * One load request for the entry's model: with its bytes (shipped from the
 * catalog), or without, asking only whether the service holds it; with
 * interface_room > 0 also for the model's interface, read into *in when it
 * fit (CurrentMemoryContext).
 */
static LoadAnswer
load_request(TsCachedModel *entry, bool with_bytes, uint64 interface_room, TsInterface *in)
{
	uint64		offset = ts_request_align(sizeof(TsRequestHeader));
	uint64		room_at = offset + ts_request_align(with_bytes ? entry->length : 0);
	dsm_segment *seg = dsm_create(room_at + interface_room, 0);
	TsRequestHeader *h = dsm_segment_address(seg);
	LoadAnswer	a;
	TsError		err = {0};
	uint64		seq;

	memset(h, 0, sizeof(*h));
	h->magic = TS_REQUEST_MAGIC;
	h->size = room_at + interface_room;
	h->model = model_key(entry);
	h->bytes_offset = with_bytes ? offset : 0;
	h->interface_offset = interface_room > 0 ? room_at : 0;
	h->interface_room = interface_room;
	if (with_bytes)
		copy_bytes(entry, (char *) h + offset);
	seq = ts_service_submit(TS_EXEC_LOAD, 0, dsm_segment_handle(seg), h);
	a.status = ts_service_wait(&seq, NULL);
	if (a.status != TS_REQUEST_OK && a.status != TS_REQUEST_NEED_MODEL)
		report_failure(entry, a.status, h);
	a.paths = h->paths;
	a.loaded = h->loaded != 0;
	a.interface_len = h->interface_len;
	if (a.status == TS_REQUEST_OK && interface_room > 0 && a.interface_len <= interface_room &&
		!ts_wire_read((char *) h + room_at, a.interface_len, in, &err))
		elog(ERROR, "the GPU service sent a damaged interface of model \"%s\": %s", entry->name, err.message);
	dsm_detach(seg);
	return a;
}

/* Load the model unless the service holds it: the bytes (up to a gigabyte) travel only then. */
static LoadAnswer
load_model(TsCachedModel *entry, uint64 interface_room, TsInterface *in)
{
	LoadAnswer	a;

	check_segment_type();
	a = load_request(entry, false, interface_room, in);
	if (a.status == TS_REQUEST_NEED_MODEL)
		a = load_request(entry, true, interface_room, in);
	if (a.status != TS_REQUEST_OK)
		elog(ERROR, "the GPU service did not keep model \"%s\"", entry->name);
	return a;
}

void
ts_gpu_load(TsCachedModel *entry, TsInterface *in, int64 *paths, bool *loaded)
{
	/* a larger interface asks again, with room for its length */
	LoadAnswer	a = load_model(entry, in != NULL ? INTERFACE_ROOM : 0, in);

	*paths = a.paths;
	*loaded = a.loaded;
	if (in != NULL && a.interface_len > INTERFACE_ROOM)
		a = load_model(entry, a.interface_len, in);
	if (in != NULL && in->model == NULL)
		elog(ERROR, "the GPU service sent no interface of model \"%s\"", entry->name);
}

/*
 * GPU runs of this session not yet ended: a treeshap call made by the query
 * of a GPU call (a function of the query's rows) runs on the CPU, since the
 * session has one request slot with the service and the outer call holds it.
 */
static int	live_runs = 0;

/* Reset callback of a run's context: drop the request in flight, unmap the segment. */
static void
end_run(void *arg)
{
	TsGpuRun   *run = (TsGpuRun *) arg;

	live_runs--;
	if (run->pending != 0)
		ts_service_abandon(run->pending);
	run->pending = 0;
	if (run->segment != NULL)
		dsm_detach(run->segment);
	run->segment = NULL;
}

/* The device job of a run over a model of num_paths paths. */
static TsGpuJob
job_for(const TsRunSpec *spec, bool host_reduces, int64 num_paths)
{
	TsGpuJob	job = {.kind = TS_GPU_JOB_SHAP,
	.algorithm = ts_gpu_quadrature(num_paths) ? TS_GPU_ALG_QUADRATURE : TS_GPU_ALG_TREESHAP};

	/* values against a background, reduced here for importance and top features */
	if (spec->background != NULL && spec->kind != TS_RUN_PREDICT)
		job.kind = TS_GPU_JOB_INTERVENTIONAL;
	else if (spec->kind == TS_RUN_INTERACTIONS)
	{
		job.kind = spec->method == TS_INTERACTION_TAYLOR ? TS_GPU_JOB_TAYLOR_INTERACTIONS
			: TS_GPU_JOB_SHAPLEY_INTERACTIONS;
		job.feature_slot = spec->selection->slot;
		job.selected = spec->selection->count;
	}
	else if (spec->kind == TS_RUN_IMPORTANCE && !host_reduces)
		job.kind = TS_GPU_JOB_IMPORTANCE;
	else if (spec->kind == TS_RUN_TOP_FEATURES && !host_reduces)
	{
		job.kind = TS_GPU_JOB_TOP_FEATURES;
		job.top_k = spec->top_k;
	}
	else if (spec->kind == TS_RUN_PREDICT)
		job.kind = TS_GPU_JOB_PREDICT;
	return job;
}

/*
 * ERROR 53200 when one batch's rows and results exceed the GPU's memory:
 * no launch could hold them, and shared memory that size would be wasted.
 */
static void
check_fits_device(int32 max_rows, size_t batch_bytes)
{
	TsServiceStatus st;

	ts_service_status(&st);
	if (st.found.num_devices > 0 && batch_bytes > (size_t) st.found.devices[0].total_memory)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of GPU memory: a batch of %d rows needs %zu MB for its rows and results, the GPU has %lld MB",
						max_rows, batch_bytes >> 20, st.found.devices[0].total_memory >> 20),
				 errhint("Lower treeshap.batch_rows, or set treeshap.device to cpu.")));
}

/* Copy the background into its area of the segment (ts_request.h's layout). */
static void
write_background(TsRequestHeader *h, const TsBackground *bg)
{
	char	   *area = (char *) h + h->background_offset;
	size_t		values = sizeof(double) * (size_t) bg->nrows * h->num_outputs;

	memcpy(area, bg->x, sizeof(float) * (size_t) bg->nrows * h->num_features);
	if (!h->probability)
		return;
	area += ts_request_background_margin_at(h->background_rows, h->num_features);
	memcpy(area, bg->margin, values);
	memcpy(area + values, bg->output, values);
}

/* Create the run's segment: header, feature slots, the background, then two areas of rows and of results. */
static void
create_segment(TsGpuRun *run, const TsGpuJob *job, int32 max_rows)
{
	const TsPathTable *pt = run->entry->paths;
	const TsBackground *bg = job->kind == TS_GPU_JOB_INTERVENTIONAL ? run->spec.background : NULL;
	size_t		bg_bytes = bg != NULL ? ts_request_background_bytes((int32) bg->nrows, pt->num_features,
																	 pt->num_outputs, bg->probability) : 0;
	size_t		slots_bytes = sizeof(int32) * pt->num_features;
	size_t		input_bytes = sizeof(float) * (size_t) max_rows * pt->num_features;
	size_t		output_len = ts_gpu_job_result_len(job, pt->num_outputs, pt->num_features, max_rows);
	uint64		at = ts_request_align(sizeof(TsRequestHeader));
	TsRequestHeader *h;

	check_segment_type();
	check_fits_device(max_rows, input_bytes + output_len * sizeof(double));
	run->segment = dsm_create(at + ts_request_align(slots_bytes) + ts_request_align(bg_bytes) +
							  TS_REQUEST_AREAS * (ts_request_align(input_bytes) +
												  ts_request_align(output_len * sizeof(double))), 0);
	dsm_pin_mapping(run->segment);	/* the run's context, not the resource owner, ends it */
	h = run->header = dsm_segment_address(run->segment);
	memset(h, 0, sizeof(*h));
	h->magic = TS_REQUEST_MAGIC;
	h->size = dsm_segment_map_length(run->segment);
	h->model = model_key(run->entry);
	h->job_kind = job->kind;
	h->algorithm = job->algorithm;
	h->precision = ts_gpu_precision == TS_GPU_PRECISION_SINGLE ? TS_GPU_FLOAT32 : TS_GPU_FLOAT64;
	h->selected = job->selected;
	h->top_k = job->top_k;
	h->num_features = pt->num_features;
	h->num_outputs = pt->num_outputs;
	h->max_rows = max_rows;
	h->output_len = output_len;
	h->feature_slot_offset = at;
	if (job->feature_slot != NULL)
		memcpy((char *) h + at, job->feature_slot, slots_bytes);
	at += ts_request_align(slots_bytes);
	if (bg != NULL)
	{
		h->background_offset = at;
		h->background_rows = (int32) bg->nrows;
		h->probability = bg->probability ? 1 : 0;
		h->grouping = ts_background_grouping == TS_GROUPING_NEVER ? TS_GPU_GROUP_NEVER
			: ts_background_grouping == TS_GROUPING_ALWAYS ? TS_GPU_GROUP_ALWAYS : TS_GPU_GROUP_AUTO;
		write_background(h, bg);
		at += ts_request_align(bg_bytes);
	}
	for (int a = 0; a < TS_REQUEST_AREAS; a++)
	{
		h->input_offset[a] = at;
		at += ts_request_align(input_bytes);
		h->output_offset[a] = at;
		at += ts_request_align(output_len * sizeof(double));
	}
}

/* How many paths the CPU adds to the GPU's results; listed once per cached model. */
static int64
long_paths_of(TsCachedModel *entry)
{
	if (entry->long_paths == NULL)
	{
		const TsPathTable *pt = ts_model_paths(entry);	/* built in the call's memory first */
		MemoryContext old = MemoryContextSwitchTo(entry->context);

		entry->long_paths = ts_pack_long_paths(pt, &entry->num_long);
		MemoryContextSwitchTo(old);
	}
	return entry->num_long;
}

TsGpuRun *
ts_gpu_run_start(TsCachedModel *entry, int32 max_rows, const TsRunSpec *spec)
{
	static const TsRunSpec shap = {TS_RUN_SHAP, TS_INTERACTION_SHAPLEY, NULL, 0, NULL};
	MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "treeshap gpu run",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(ctx);
	TsGpuRun   *run = palloc0(sizeof(TsGpuRun));
	const TsPathTable *pt = ts_model_paths(entry);
	TsGpuJob	job;
	int64		num_long;

	run->context = ctx;
	run->entry = entry;
	run->spec = spec != NULL ? *spec : shap;
	num_long = long_paths_of(entry);	/* every kind of run adds them on the CPU */
	/* sums and top features of values against a background are formed here from whole rows */
	run->host_importance = run->spec.kind == TS_RUN_IMPORTANCE &&
		(num_long > 0 || run->spec.background != NULL);
	run->sums = palloc0(sizeof(double) * 2 * pt->num_outputs * pt->num_features);
	run->host_top = run->spec.kind == TS_RUN_TOP_FEATURES &&
		(num_long > 0 || run->spec.background != NULL);
	if (run->host_top)
		run->top = palloc_extended(sizeof(double) * max_rows * pt->num_outputs *
								   ts_topk_width(run->spec.top_k), MCXT_ALLOC_HUGE);
	run->scratch = palloc(sizeof(double) * Max(Max(ts_cpu_scratch_len(pt), ts_interactions_scratch_len(pt)),
											   2 * (size_t) pt->num_outputs));
	run->algorithm = (TsShapAlgorithm) ts_cpu_algorithm();
	run->callback.func = end_run;
	run->callback.arg = run;
	MemoryContextRegisterResetCallback(ctx, &run->callback);
	live_runs++;
	MemoryContextSwitchTo(old);
	job = job_for(&run->spec, run->host_importance || run->host_top, entry->num_paths);
	create_segment(run, &job, max_rows);
	return run;
}

float *
ts_gpu_run_input(TsGpuRun *run, int slot)
{
	return (float *) ((char *) run->header + run->header->input_offset[slot]);
}

void
ts_gpu_run_submit(TsGpuRun *run, int slot, int32 nrows)
{
	Assert(run->pending == 0 && nrows >= 1 && nrows <= run->header->max_rows);
	run->header->area = slot;
	run->header->nrows = nrows;
	run->pending = ts_service_submit(TS_EXEC_RUN, 0, dsm_segment_handle(run->segment), run->header);
}

/*
 * Finish values against the background: its mean output as the bias, and
 * the paths too long for a warp, with each row's margins and outputs in
 * probability space.
 */
static void
finish_interventional(TsGpuRun *run, const float *x, int32 nrows, double *result)
{
	const TsBackground *bg = run->spec.background;
	const TsPathTable *pt = run->entry->paths;
	const TsModel *m = run->entry->model;
	TsBackgroundRows rows = {bg->x, bg->probability ? bg->margin : NULL,
	bg->probability ? bg->output : NULL, bg->nrows};
	size_t		stride = (size_t) pt->num_features + 1;
	double	   *margin = run->scratch;
	double	   *output = run->scratch + pt->num_outputs;

	for (int32 i = 0; i < nrows; i++)
	{
		const float *row = x + (size_t) i * pt->num_features;
		double	   *out = result + (size_t) i * pt->num_outputs * stride;

		for (int32 k = 0; k < pt->num_outputs; k++)
			out[k * stride + pt->num_features] = bg->base[k];
		if (run->entry->num_long == 0)
			continue;
		if (bg->probability)
		{
			ts_model_predict_margin(m, row, margin);
			ts_model_link(m, margin, output);
		}
		ts_interventional_add_paths_row(pt, run->entry->long_paths, run->entry->num_long, &rows,
										row, margin, output, out);
	}
}

/* Add the paths too long for a warp to a batch's per-row values (against the background, if any). */
static void
add_long_paths(TsGpuRun *run, const float *x, int32 nrows, double *result)
{
	if (run->spec.background != NULL)
		finish_interventional(run, x, nrows, result);
	else
		ts_cpu_shap_add_paths_rows(run->entry->paths, run->algorithm, run->entry->long_paths,
								   run->entry->num_long, x, nrows, result, run->scratch);
}

/* Add what the CPU owes a finished batch: the paths too long for a warp. */
static double *
complete_batch(TsGpuRun *run, const float *x, int32 nrows, double *result)
{
	const TsPathTable *pt = run->entry->paths;
	const int64 *long_paths = run->entry->long_paths;
	int64		num_long = run->entry->num_long;

	switch (run->spec.kind)
	{
		case TS_RUN_PREDICT:
			return result;		/* the GPU walked whole trees: no path is left over */
		case TS_RUN_SHAP:
			add_long_paths(run, x, nrows, result);
			return result;
		case TS_RUN_INTERACTIONS:
			ts_interactions_add_paths_rows(pt, long_paths, num_long, x, nrows,
										   run->spec.method, run->spec.selection, result, run->scratch);
			for (int32 r = 0; r < nrows; r++)
				ts_interactions_finish(pt->num_outputs, pt->num_features, run->spec.method,
									   run->spec.selection,
									   result + (size_t) r * pt->num_outputs *
									   run->spec.selection->count * pt->num_features);
			return result;
		case TS_RUN_IMPORTANCE:
			if (!run->host_importance)
				return result;
			add_long_paths(run, x, nrows, result);
			memset(run->sums, 0, sizeof(double) * 2 * pt->num_outputs * pt->num_features);
			ts_importance_add_rows(result, nrows, pt->num_outputs, pt->num_features, run->sums);
			return run->sums;
		case TS_RUN_TOP_FEATURES:
			if (!run->host_top)
				return result;
			add_long_paths(run, x, nrows, result);
			for (int32 r = 0; r < nrows; r++)
				ts_topk_row(result + (size_t) r * pt->num_outputs * (pt->num_features + 1),
							pt->num_outputs, pt->num_features, run->spec.top_k,
							run->top + (size_t) r * pt->num_outputs * ts_topk_width(run->spec.top_k));
			return run->top;
	}
	pg_unreachable();
}

double *
ts_gpu_run_wait(TsGpuRun *run, int slot, int32 nrows)
{
	int32		status;
	bool		gone = false;

	for (int attempt = 1;; attempt++)
	{
		/* under auto a service that does not come back leaves the batch to the CPU */
		status = ts_service_wait(&run->pending, ts_device == TS_DEVICE_AUTO ? &gone : NULL);
		run->pending = 0;
		if (gone)
			return NULL;
		if (status != TS_REQUEST_NEED_MODEL || attempt > LOAD_ATTEMPTS)
			break;
		(void) load_request(run->entry, true, 0, NULL);	/* the run found it missing */
		ts_gpu_run_submit(run, slot, nrows);
	}
	if (status != TS_REQUEST_OK)
		report_failure(run->entry, status, run->header);
	return complete_batch(run, ts_gpu_run_input(run, slot), nrows,
						  (double *) ((char *) run->header + run->header->output_offset[slot]));
}

void
ts_gpu_run_end(TsGpuRun *run)
{
	MemoryContextDelete(run->context);
}

bool
ts_gpu_interventional_ok(const TsModel *m, bool probability)
{
	return !probability || (ts_interventional_link_ok(m) && ts_interventional_rescale_bound(m) > 0.0);
}

/*
 * Say once a session that a GPU is there but this build cannot use it, so auto
 * computes on the CPU (a server with no GPU at all expects that and hears nothing).
 */
static void
notice_cpu_fallback(const TsServiceStatus *st)
{
	static bool said = false;

	if (said)
		return;
	said = true;
	ereport(NOTICE,
			(errmsg("treeshap.device is auto and the GPU cannot be used: computing on the CPU"),
			 errdetail("%s", st->found.message),
			 errhint("treeshap.gpu_status shows the service's devices.")));
}

bool
ts_device_use_gpu(bool batches)
{
	TsServiceStatus st;

	/* a call nested in a GPU call's query: the session's one request slot is taken */
	if (ts_device == TS_DEVICE_CPU || live_runs > 0)
		return false;
	ts_service_status(&st);
	if (ts_device == TS_DEVICE_AUTO)
	{
		if (batches && st.state == TS_SERVICE_NO_DEVICE && st.found.unusable > 0)
			notice_cpu_fallback(&st);
		return batches && st.state == TS_SERVICE_READY;
	}
	if (st.state == TS_SERVICE_NOT_LOADED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("treeshap.device is gpu, but the GPU service is not running"),
				 errdetail("Every GPU computation runs in the GPU service, which starts with the server."),
				 errhint("Add pg_treeshap to shared_preload_libraries and restart the server, or set treeshap.device to auto or cpu.")));
	if (st.state != TS_SERVICE_READY)
		st = ts_service_await_start();
	if (st.state != TS_SERVICE_READY)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("treeshap.device is gpu, but no GPU can be used"),
				 st.found.message[0] != '\0' ? errdetail("%s", st.found.message) :
				 errdetail("The GPU service is %s.", ts_service_state_name(st.state)),
				 errhint("Set treeshap.device to auto or cpu.")));
	return true;
}
