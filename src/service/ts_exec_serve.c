/*
 * ts_exec_serve.c - the executor's load requests and the placements of
 * resident models on its devices (ts_exec_serve.h). Every field of a
 * segment's header comes from a backend: it is checked against the
 * mapping's size and the resident model before any copy.
 */
#include "service/ts_exec_serve.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ts_interventional.h"
#include "model/ts_model.h"
#include "service/ts_exec_planner.h"
#include "service/ts_request.h"

static int	num_devices = 0;
static const TsExecutorConfig *config = NULL;

void
ts_exec_serve_init(int segment_type, int devices, const TsExecutorConfig *cfg)
{
	ts_segments_init(segment_type);
	ts_exec_sched_init(devices);
	ts_planner_start();
	num_devices = devices;
	config = cfg;
}

/* Whether bytes at offset lie inside the segment. */
static bool
within(const TsSegment *seg, uint64_t offset, uint64_t bytes)
{
	return offset >= sizeof(TsRequestHeader) && offset <= seg->size && bytes <= seg->size - offset;
}

int32_t
ts_exec_answer(TsRequestHeader *h, int32_t status, const char *fmt,...)
{
	va_list		ap;

	h->status = status;
	va_start(ap, fmt);
	vsnprintf(h->message, sizeof(h->message), fmt, ap);
	va_end(ap);
	return status;
}

int32_t
ts_exec_device_failure(TsRequestHeader *h, TsGpuStatus rc, const char *msg, bool *fatal)
{
	if (rc == TS_GPU_OUT_OF_MEMORY)
		return ts_exec_answer(h, TS_REQUEST_OUT_OF_MEMORY, "%s", msg);
	*fatal = true;
	return ts_exec_answer(h, TS_REQUEST_FAILED, "GPU failure: %s (status %d)", msg, (int) rc);
}

/* The limit on a device's models and buffers now, in bytes (0: none). */
static size_t
memory_limit(void)
{
	int64_t		limit = __atomic_load_n(&config->memory_limit, __ATOMIC_RELAXED);

	return limit > 0 ? (size_t) limit : 0;
}

/*
 * Evict other models' placements on the device, least recently used first,
 * until need more bytes fit under treeshap.gpu_memory_limit.
 */
static TsGpuStatus
make_room(int device, const TsResidentModel *m, size_t need, const char *what, char *msg, size_t msglen)
{
	size_t		limit = memory_limit();
	size_t		used;

	while (limit > 0 && (used = ts_resident_device_bytes(device)) + need > limit)
		if (!ts_resident_evict_placement(device, m))
		{
			snprintf(msg, msglen, "%s needs %zu MB of GPU %d, where treeshap.gpu_memory_limit (%zu MB) leaves %zu MB",
					 what, need >> 20, device, limit >> 20, (limit > used ? limit - used : 0) >> 20);
			return TS_GPU_OUT_OF_MEMORY;
		}
	return TS_GPU_OK;
}

/* Upload a model to a device, evicting others while the device is full. */
static TsGpuStatus
upload(TsResidentModel *m, int device, char *msg, size_t msglen)
{
	TsPlacement *p = &m->on[device];
	size_t		need;
	TsGpuStatus rc;

	if (m->layout == NULL)
		m->layout = ts_dev_layout(m->model, m->paths);
	need = ts_dev_layout_bytes(m->layout);
	if ((rc = make_room(device, m, need, "the model", msg, msglen)) != TS_GPU_OK)
		return rc;
	while ((rc = ts_dev_upload(device, m->layout, &p->table, msg, msglen)) == TS_GPU_OUT_OF_MEMORY &&
		   ts_resident_evict_placement(device, m))
		;
	if (rc == TS_GPU_OK)
		p->table_bytes = need;
	return rc;
}

/* Whether a placement's runner was made for this job and has room for rows rows. */
static bool
runner_fits(const TsPlacement *p, const TsGpuJob *job, int32_t precision, int32_t rows,
			const TsPathTable *pt)
{
	return p->runner != NULL && p->job.kind == job->kind && p->job.algorithm == job->algorithm &&
		p->precision == precision && p->max_rows >= rows && p->job.selected == job->selected &&
		p->job.top_k == job->top_k &&
		(job->feature_slot == NULL ||
		 memcmp(p->feature_slot, job->feature_slot, (size_t) pt->num_features * sizeof(int32_t)) == 0) &&
		ts_exec_same_background(p->job.background, job->background, pt);
}

/* Bytes of a background's rows, and of its margins and outputs together. */
static void
background_sizes(const TsGpuBackground *bg, const TsPathTable *pt, size_t *rows, size_t *values)
{
	*rows = (size_t) bg->nrows * pt->num_features * sizeof(float);
	*values = bg->link != TS_GPU_LINK_NONE ? 2 * (size_t) bg->nrows * pt->num_outputs * sizeof(double) : 0;
}

bool
ts_exec_same_background(const TsGpuBackground *a, const TsGpuBackground *b, const TsPathTable *pt)
{
	size_t		rows,
				values;

	if (a == NULL || b == NULL)
		return a == b;
	if (a->nrows != b->nrows || a->link != b->link || a->grouping != b->grouping)
		return false;
	background_sizes(a, pt, &rows, &values);
	return memcmp(a->x, b->x, rows) == 0 &&
		(values == 0 || (memcmp(a->margin, b->margin, values / 2) == 0 &&
						 memcmp(a->output, b->output, values / 2) == 0));
}

/* The placement's own copy of a job's background, which its runner keeps using. */
static void
keep_background(TsPlacement *p, const TsPathTable *pt)
{
	const TsGpuBackground *bg = p->job.background;
	size_t		rows,
				values;

	if (bg == NULL)
		return;
	background_sizes(bg, pt, &rows, &values);
	p->background = *bg;
	p->background_x = ts_alloc(rows);
	memcpy(p->background_x, bg->x, rows);
	p->background.x = p->background_x;
	if (values > 0)
	{
		p->background_values = ts_alloc(values);
		memcpy(p->background_values, bg->margin, values / 2);
		memcpy((char *) p->background_values + values / 2, bg->output, values / 2);
		p->background.margin = p->background_values;
		p->background.output = p->background_values + values / 2 / sizeof(double);
	}
	p->job.background = &p->background;
}

/*
 * Device bytes a new runner needing need bytes may add for its background's
 * groups: what treeshap.gpu_memory_limit leaves, or without a limit all a
 * device has (a grouping that does not fit is simply not made).
 */
static size_t
group_budget(int device, size_t need)
{
	size_t		limit = memory_limit();
	size_t		used = ts_resident_device_bytes(device) + need;

	if (limit == 0)
		return SIZE_MAX;
	return limit > used ? limit - used : 0;
}

/* A new runner for the job on a placement, evicting others while the device is full. */
static TsGpuStatus
new_runner(TsResidentModel *m, int device, const TsGpuJob *job, int32_t precision, int32_t rows,
		   char *msg, size_t msglen)
{
	TsPlacement *p = &m->on[device];
	size_t		slots = (size_t) m->paths->num_features * sizeof(int32_t);
	size_t		need = ts_dev_runner_bytes(m->paths, job, rows);
	TsGpuStatus rc;

	ts_resident_drop_runner(p);
	if ((rc = make_room(device, m, need, "the batch's buffers", msg, msglen)) != TS_GPU_OK)
		return rc;
	p->job = *job;
	if (job->feature_slot != NULL)
	{
		p->feature_slot = ts_alloc(slots);
		memcpy(p->feature_slot, job->feature_slot, slots);
		p->job.feature_slot = p->feature_slot;
	}
	keep_background(p, m->paths);
	p->background.group_budget = group_budget(device, need);
	p->precision = precision;
	p->max_rows = rows;
	while ((rc = ts_dev_runner_create(p->table, rows, precision, &p->job, &p->runner, msg, msglen)) ==
		   TS_GPU_OUT_OF_MEMORY && ts_resident_evict_placement(device, m))
		;
	if (rc == TS_GPU_OK)
		p->runner_bytes = need + ts_dev_runner_group_bytes(p->runner);
	else
		ts_resident_drop_runner(p);
	return rc;
}

/* Evict placements idle on a device, least recently used first, while it holds more than the limit (lowered since). */
static void
shrink_to_limit(int device)
{
	size_t		limit = memory_limit();

	while (limit > 0 && ts_resident_device_bytes(device) > limit && ts_resident_evict_placement(device, NULL))
		;
}

TsGpuStatus
ts_exec_place(TsResidentModel *m, int device, const TsGpuJob *job, int32_t precision, int32_t rows,
			  char *msg, size_t msglen)
{
	TsPlacement *p = &m->on[device];
	TsGpuStatus rc;

	shrink_to_limit(device);
	ts_resident_touch_placement(p);
	if (p->table == NULL && (rc = upload(m, device, msg, msglen)) != TS_GPU_OK)
		return rc;
	if (runner_fits(p, job, precision, rows, m->paths))
		return TS_GPU_OK;
	if (p->busy[0] || p->busy[1])
		return TS_GPU_NOT_READY;
	return new_runner(m, device, job, precision, rows, msg, msglen);
}

/* Write the model's interface into the request's room for it, when it fits there. */
static void
answer_interface(TsSegment *seg, TsResidentModel *m)
{
	TsRequestHeader *h = seg->h;
	size_t		len;
	const char *interface;

	if (h->interface_room == 0)
		return;
	interface = ts_resident_interface(m, &len);
	h->interface_len = len;
	if (len <= h->interface_room && within(seg, h->interface_offset, len))
		memcpy((char *) h + h->interface_offset, interface, len);
}

/*
 * Upload a newly resident model to every device; it stays when at least
 * one took it, so that a run finds it where it fits.
 */
static int32_t
upload_everywhere(TsResidentModel *m, TsRequestHeader *h, bool *fatal)
{
	char		msg[256] = "";
	TsGpuStatus rc = TS_GPU_OK;
	int			placed = 0;

	for (int d = 0; d < num_devices && !*fatal; d++)
	{
		if (m->on[d].table != NULL)
			placed++;
		else if ((rc = upload(m, d, msg, sizeof(msg))) == TS_GPU_OK)
			placed++;
		else if (rc != TS_GPU_OUT_OF_MEMORY)
			return ts_exec_device_failure(h, rc, msg, fatal);
	}
	if (placed == 0 && num_devices > 0)
		return ts_exec_device_failure(h, rc, msg, fatal);
	return TS_REQUEST_OK;
}

/*
 * A resident model's answer to its load request: its interface, and an
 * upload to every device.
 */
static int32_t
answer_resident(TsSegment *seg, TsResidentModel *m, bool *fatal)
{
	TsRequestHeader *h = seg->h;
	int32_t		status;

	h->paths = m->paths->num_paths;
	answer_interface(seg, m);
	status = upload_everywhere(m, h, fatal);
	if (status != TS_REQUEST_OK)
	{
		if (m->requests == 0)
			ts_resident_remove(m);	/* never resident on no device */
		return status;
	}
	return ts_exec_answer(h, TS_REQUEST_OK, "%s", "");
}

/* Loads waiting for the planner, in arrival order (a cancelled one has result CANCELLED). */
#define LOADS_WAITING 1024
static TsExecMsg waiting[LOADS_WAITING];
static int	waiting_head = 0;
static int	waiting_count = 0;

/*
 * Plan a load request's model off this thread: its bytes copied (its
 * backend may go while they are read), or the request queued while the
 * planner is busy; TS_EXEC_PENDING, or the answer when it cannot wait.
 */
static int32_t
plan_model(TsSegment *seg, const TsExecMsg *msg)
{
	TsRequestHeader *h = seg->h;
	TsModelKey	key = h->model;		/* read once: the backend could change the header */
	uint64_t	offset = h->bytes_offset;
	TsPlanJob  *job;
	char	   *bytes;

	if (!within(seg, offset, key.length))
		return ts_exec_answer(h, TS_REQUEST_INVALID, "the model's bytes lie outside the request");
	if (ts_planner_busy())
	{
		if (waiting_count == LOADS_WAITING)
			return ts_exec_answer(h, TS_REQUEST_FAILED, "%d models wait for the GPU service to plan them",
								  LOADS_WAITING);
		waiting[(waiting_head + waiting_count++) % LOADS_WAITING] = *msg;
		return TS_EXEC_PENDING;
	}
	/* malloc, not ts_alloc, which ends the executor when memory runs out */
	if ((bytes = malloc(key.length > 0 ? key.length : 1)) == NULL)
		return ts_exec_answer(h, TS_REQUEST_OUT_OF_MEMORY,
							  "the GPU service has no host memory for the model's %llu bytes",
							  (unsigned long long) key.length);
	memcpy(bytes, (const char *) h + offset, key.length);
	job = ts_alloc0(sizeof(TsPlanJob));
	job->msg = *msg;
	job->key = key;
	job->len = key.length;
	job->bytes = bytes;
	ts_planner_submit(job);
	return TS_EXEC_PENDING;
}

/*
 * A load request: answered at once when the model is resident; otherwise
 * its bytes go to the planner (a request without bytes only asks whether
 * the model is resident).
 */
static int32_t
load(TsSegment *seg, const TsExecMsg *msg, bool *fatal)
{
	TsRequestHeader *h = seg->h;
	TsResidentModel *m = ts_resident_find(&h->model);

	h->loaded = m == NULL;
	if (m == NULL && h->bytes_offset == 0)
		return ts_exec_answer(h, TS_REQUEST_NEED_MODEL, "%s", "");
	if (m == NULL)
		return plan_model(seg, msg);
	return answer_resident(seg, m, fatal);
}

/* Map a request's segment; false when it no longer holds that request. */
static bool
map_request(const TsExecMsg *msg, TsSegment *seg)
{
	if (!ts_segment_map(msg->segment, false, seg))
		return false;
	if (seg->h->magic == TS_REQUEST_MAGIC && seg->h->slot == msg->slot && seg->h->seq == msg->seq)
		return true;
	ts_segment_release(seg);	/* not this request's segment: never write it */
	return false;
}

int32_t
ts_exec_load(const TsExecMsg *msg, bool *fatal)
{
	TsSegment	seg;
	int32_t		status;

	*fatal = false;
	if (!map_request(msg, &seg))
		return TS_REQUEST_INVALID;
	status = load(&seg, msg, fatal);
	ts_segment_release(&seg);
	return status;
}

/* Make a planned model resident (it stays so even if its request went) and answer its request. */
static int32_t
finish_load(TsPlanJob *job, bool *fatal)
{
	TsResidentModel *m = NULL;
	TsSegment	seg;
	int32_t		status;

	if (job->status == TS_REQUEST_OK && (m = ts_resident_add(&job->key, job->model, job->paths)) != NULL)
	{
		m->layout = job->layout;
		m->interface = job->interface;
		m->interface_len = job->interface_len;
		job->model = NULL;
		job->paths = NULL;
		job->layout = NULL;
		job->interface = NULL;
	}
	if (job->status == TS_REQUEST_CANCELLED)
		return TS_REQUEST_CANCELLED;
	if (!map_request(&job->msg, &seg))
		return TS_REQUEST_INVALID;
	if (job->status != TS_REQUEST_OK)
	{
		seg.h->error_class = job->error_class;
		status = ts_exec_answer(seg.h, job->status, "%s", job->message);
	}
	else if (m == NULL)
		status = ts_exec_answer(seg.h, TS_REQUEST_FAILED, "every model the GPU service holds is serving a request");
	else
	{
		seg.h->loaded = true;
		status = answer_resident(&seg, m, fatal);
	}
	ts_segment_release(&seg);
	return status;
}

bool
ts_exec_load_progress(TsExecAnswer answer, void *arg, bool *fatal)
{
	TsPlanJob  *job = ts_planner_take();
	bool		any = job != NULL;

	if (job != NULL)
	{
		answer(&job->msg, finish_load(job, fatal), arg);
		ts_planner_free(job);
	}
	while (!*fatal && !ts_planner_busy() && waiting_count > 0)
	{
		TsExecMsg	msg = waiting[waiting_head];
		int32_t		status = msg.result;

		waiting_head = (waiting_head + 1) % LOADS_WAITING;
		waiting_count--;
		if (status != TS_REQUEST_CANCELLED)
			status = ts_exec_load(&msg, fatal);
		if (status != TS_EXEC_PENDING)
			answer(&msg, status, arg);
		any = true;
	}
	return any;
}

void
ts_exec_load_cancel(int32_t slot, uint64_t seq)
{
	ts_planner_cancel(slot, seq);
	for (int i = 0; i < waiting_count; i++)
	{
		TsExecMsg  *w = &waiting[(waiting_head + i) % LOADS_WAITING];

		if (w->slot == slot && w->seq == seq)
			w->result = TS_REQUEST_CANCELLED;
	}
}

/* Whether a run's job computes interaction values (and so carries feature slots). */
static bool
interaction_job(const TsRequestHeader *h)
{
	return h->job_kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS || h->job_kind == TS_GPU_JOB_TAYLOR_INTERACTIONS;
}

/* The GPU's name of a model's link. */
static TsGpuLink
gpu_link(const TsModel *m)
{
	switch (m->link)
	{
		case TS_LINK_LOGISTIC:
			return TS_GPU_LINK_LOGISTIC;
		case TS_LINK_EXP:
			return TS_GPU_LINK_EXP;
		default:
			return TS_GPU_LINK_IDENTITY;
	}
}

bool
ts_exec_background(const TsRequestHeader *h, TsResidentModel *m, TsGpuBackground *bg)
{
	const char *area = (const char *) h + h->background_offset;
	uint64_t	at = ts_request_background_margin_at(h->background_rows, m->paths->num_features);

	memset(bg, 0, sizeof(*bg));
	bg->x = (const float *) area;
	bg->nrows = h->background_rows;
	bg->link = TS_GPU_LINK_NONE;
	bg->rescale_bound = 1.0;
	/* a grouped background is margin space's; its budget is set when a runner is made */
	bg->grouping = h->probability || h->grouping < TS_GPU_GROUP_NEVER || h->grouping > TS_GPU_GROUP_ALWAYS
		? TS_GPU_GROUP_NEVER : h->grouping;
	if (!h->probability)
		return true;
	/* an exp link's bound walks every leaf: once per resident model, not per batch */
	if (m->rescale_bound < 0.0)
		m->rescale_bound = ts_interventional_rescale_bound(m->model);
	bg->rescale_bound = m->rescale_bound;
	if (bg->rescale_bound <= 0.0 || !ts_interventional_link_ok(m->model))
		return false;
	bg->link = gpu_link(m->model);
	bg->link_scale = m->model->link_scale;
	bg->margin = (const double *) (area + at);
	bg->output = bg->margin + (size_t) h->background_rows * m->paths->num_outputs;
	return true;
}

bool
ts_exec_valid_run(const TsSegment *seg, const TsResidentModel *m)
{
	const TsRequestHeader *h = seg->h;
	const TsPathTable *pt = m->paths;
	TsGpuJob	job = {.kind = (TsGpuJobKind) h->job_kind, .selected = h->selected,
	.algorithm = (TsGpuAlgorithm) h->algorithm, .top_k = h->top_k};
	bool		interactions = interaction_job(h);
	size_t		input = (size_t) h->max_rows * pt->num_features * sizeof(float);

	if (h->num_features != pt->num_features || h->num_outputs != pt->num_outputs ||
		h->max_rows < 1 || h->nrows < 1 || h->nrows > h->max_rows ||
		h->area < 0 || h->area >= TS_REQUEST_AREAS ||
		h->job_kind < TS_GPU_JOB_SHAP || h->job_kind > TS_GPU_JOB_INTERVENTIONAL ||
		h->algorithm < TS_GPU_ALG_TREESHAP || h->algorithm > TS_GPU_ALG_QUADRATURE ||
		h->precision < TS_GPU_FLOAT64 || h->precision > TS_GPU_FLOAT32)
		return false;
	if (h->job_kind == TS_GPU_JOB_TOP_FEATURES && (h->top_k < 1 || h->top_k > pt->num_features))
		return false;
	if (h->job_kind == TS_GPU_JOB_INTERVENTIONAL &&
		(h->background_rows < 1 || h->probability < 0 || h->probability > 1 ||
		 !within(seg, h->background_offset,
				 ts_request_background_bytes(h->background_rows, pt->num_features, pt->num_outputs,
											 h->probability))))
		return false;
	if (interactions && (h->selected < 1 || h->selected > pt->num_features ||
						 !within(seg, h->feature_slot_offset, (size_t) pt->num_features * sizeof(int32_t))))
		return false;
	for (int32_t j = 0; interactions && j < pt->num_features; j++)
	{
		int32_t		s = ((const int32_t *) ((const char *) h + h->feature_slot_offset))[j];

		if (s < -1 || s >= h->selected)
			return false;
	}
	return h->output_len >= ts_gpu_job_result_len(&job, pt->num_outputs, pt->num_features, h->max_rows) &&
		within(seg, h->input_offset[h->area], input) &&
		within(seg, h->output_offset[h->area], h->output_len * sizeof(double));
}
