/*
 * ts_exec_serve.c - the executor's load and run requests (ts_exec_serve.h).
 * Every field of a segment's header comes from a backend: it is checked
 * against the mapping's size and the resident model before any copy.
 */
#include "service/ts_exec_serve.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/ts_model.h"
#include "service/ts_exec_models.h"
#include "service/ts_request.h"

static int	segment_type = TS_SEGMENT_POSIX;
static bool have_device = false;

/* A mapped request segment. */
typedef struct Segment
{
	TsRequestHeader *h;
	size_t		size;
} Segment;

void
ts_exec_serve_init(int type, bool device)
{
	segment_type = type;
	have_device = device;
}

/* Map the segment of a handle by its name; false when it is gone (its backend left). */
static bool
map_segment(uint32_t handle, Segment *seg)
{
	char		name[64];
	struct stat st;
	void	   *p;
	int			fd;

	if (segment_type == TS_SEGMENT_MMAP)
	{
		snprintf(name, sizeof(name), "pg_dynshmem/mmap.%u", handle);
		fd = open(name, O_RDWR);
	}
	else
	{
		snprintf(name, sizeof(name), "/PostgreSQL.%u", handle);
		fd = shm_open(name, O_RDWR, 0);
	}
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || (size_t) st.st_size < sizeof(TsRequestHeader))
	{
		close(fd);
		return false;
	}
	p = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return false;
	seg->h = (TsRequestHeader *) p;
	seg->size = (size_t) st.st_size;
	return true;
}

/* Whether bytes at offset lie inside the segment. */
static bool
within(const Segment *seg, uint64_t offset, uint64_t bytes)
{
	return offset >= sizeof(TsRequestHeader) && offset <= seg->size && bytes <= seg->size - offset;
}

/* Write the answer into the header; returns status. */
static int32_t answer(TsRequestHeader *h, int32_t status, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int32_t
answer(TsRequestHeader *h, int32_t status, const char *fmt,...)
{
	va_list		ap;

	h->status = status;
	va_start(ap, fmt);
	vsnprintf(h->message, sizeof(h->message), fmt, ap);
	va_end(ap);
	return status;
}

#ifdef TS_WITH_CUDA
/* The answer to a failed GPU step; any fault but out of memory ends the executor. */
static int32_t
gpu_failure(TsRequestHeader *h, TsGpuStatus rc, const char *msg, bool *fatal)
{
	if (rc == TS_GPU_OUT_OF_MEMORY)
		return answer(h, TS_REQUEST_OUT_OF_MEMORY, "%s", msg);
	*fatal = true;
	return answer(h, TS_REQUEST_FAILED, "GPU failure: %s (status %d)", msg, (int) rc);
}

/* Upload a new model's layout, evicting others while the GPU is out of memory. */
static int32_t
upload(TsResidentModel *m, TsRequestHeader *h, bool *fatal)
{
	char		msg[256] = "";
	TsGpuStatus rc;

	while ((rc = ts_gpu_plan_build(m->paths, TS_PACK_BEST_FIT_DECREASING, &m->plan, msg,
								   sizeof(msg))) == TS_GPU_OUT_OF_MEMORY && ts_resident_evict_one(m))
		;
	return rc == TS_GPU_OK ? TS_REQUEST_OK : gpu_failure(h, rc, msg, fatal);
}
#endif

/* Write the model's interface into the request's room for it, when it fits there. */
static void
answer_interface(Segment *seg, TsResidentModel *m)
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
 * A load request: read the bytes, build the path table and, with a GPU,
 * upload it; a request without bytes only asks whether it is resident.
 */
static int32_t
load(Segment *seg, bool *fatal)
{
	TsRequestHeader *h = seg->h;
	TsResidentModel *m = ts_resident_find(&h->model);
	const char *bytes = (const char *) h + h->bytes_offset;
	TsError		err = {0};
	TsModel    *model;

	h->loaded = m == NULL;
	if (m == NULL && h->bytes_offset == 0)
		return answer(h, TS_REQUEST_NEED_MODEL, "%s", "");
	if (m == NULL)
	{
		if (!within(seg, h->bytes_offset, h->model.length))
			return answer(h, TS_REQUEST_INVALID, "the model's bytes lie outside the request");
		if (ts_cityhash64(bytes, h->model.length) != h->model.digest)
			return answer(h, TS_REQUEST_INVALID, "the model's bytes do not match their digest");
		model = ts_model_read(bytes, h->model.length, &err);
		if (model == NULL)
		{
			h->error_class = err.code;
			return answer(h, TS_REQUEST_BAD_MODEL, "%s", err.message);
		}
		m = ts_resident_add(&h->model, model, ts_paths_build(model));
	}
	h->paths = m->paths->num_paths;
	answer_interface(seg, m);
#ifdef TS_WITH_CUDA
	if (have_device && m->plan == NULL)
	{
		int32_t		status = upload(m, h, fatal);

		if (status != TS_REQUEST_OK)
		{
			ts_resident_remove(m);	/* never resident without its layout */
			return status;
		}
	}
#else
	(void) fatal;
#endif
	return answer(h, TS_REQUEST_OK, "%s", "");
}

#ifdef TS_WITH_CUDA
/* Whether a run's job computes interaction values (and so carries feature slots). */
static bool
interaction_job(const TsRequestHeader *h)
{
	return h->job_kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS || h->job_kind == TS_GPU_JOB_TAYLOR_INTERACTIONS;
}

/* Whether a run's header describes a job this model can run, inside the segment. */
static bool
valid_run(const Segment *seg, const TsResidentModel *m)
{
	const TsRequestHeader *h = seg->h;
	const TsPathTable *pt = m->paths;
	TsGpuJob	job = {(TsGpuJobKind) h->job_kind, NULL, h->selected, (TsGpuAlgorithm) h->algorithm};
	bool		interactions = interaction_job(h);
	size_t		input = (size_t) h->max_rows * pt->num_features * sizeof(float);

	if (h->num_features != pt->num_features || h->num_outputs != pt->num_outputs ||
		h->max_rows < 1 || h->nrows < 1 || h->nrows > h->max_rows ||
		h->area < 0 || h->area >= TS_REQUEST_AREAS ||
		h->job_kind < TS_GPU_JOB_SHAP || h->job_kind > TS_GPU_JOB_IMPORTANCE ||
		h->algorithm < TS_GPU_ALG_TREESHAP || h->algorithm > TS_GPU_ALG_QUADRATURE ||
		h->precision < TS_GPU_FLOAT64 || h->precision > TS_GPU_FLOAT32)
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

/* Whether the model's runner was made for this request's job and has room for it. */
static bool
runner_fits(const TsResidentModel *m, const TsRequestHeader *h)
{
	bool		interactions = interaction_job(h);

	return m->runner != NULL && m->job.kind == (TsGpuJobKind) h->job_kind &&
		m->job.algorithm == (TsGpuAlgorithm) h->algorithm && m->precision == h->precision &&
		m->max_rows >= h->max_rows && m->job.selected == (interactions ? h->selected : 0) &&
		(!interactions || memcmp(m->feature_slot, (const char *) h + h->feature_slot_offset,
								 (size_t) m->paths->num_features * sizeof(int32_t)) == 0);
}

/* A runner for the request's job: the model's own when it fits, else a new one. */
static TsGpuStatus
make_runner(TsResidentModel *m, const TsRequestHeader *h, char *msg, size_t msglen)
{
	bool		interactions = interaction_job(h);
	size_t		slots = (size_t) m->paths->num_features * sizeof(int32_t);
	TsGpuStatus rc;

	if (runner_fits(m, h))
		return TS_GPU_OK;
	ts_resident_drop_runner(m);
	memset(&m->job, 0, sizeof(m->job));
	m->job.kind = (TsGpuJobKind) h->job_kind;
	m->job.algorithm = (TsGpuAlgorithm) h->algorithm;
	if (interactions)
	{
		m->feature_slot = ts_alloc(slots);
		memcpy(m->feature_slot, (const char *) h + h->feature_slot_offset, slots);
		m->job.feature_slot = m->feature_slot;
		m->job.selected = h->selected;
	}
	m->precision = h->precision;
	m->max_rows = h->max_rows;
	while ((rc = ts_gpu_runner_create(m->plan->table, h->max_rows, (TsGpuPrecision) h->precision, &m->job,
									  &m->runner, msg, msglen)) == TS_GPU_OUT_OF_MEMORY &&
		   ts_resident_evict_one(m))
		;
	return rc;
}

/* Sleep 20 microseconds between polls of a running batch. */
static void
pause_briefly(void)
{
	struct timespec ts = {0, 20000};

	nanosleep(&ts, NULL);
}

/* A run request: copy the batch in, run it, copy the result out. */
static int32_t
run(Segment *seg, TsCancelCheck cancelled, void *arg, bool *fatal)
{
	TsRequestHeader *h = seg->h;
	TsResidentModel *m = ts_resident_find(&h->model);
	char		msg[256] = "";
	bool		stopped = false;
	double	   *phi = NULL;
	TsGpuStatus rc;

	if (m == NULL || m->plan == NULL)
		return answer(h, TS_REQUEST_NEED_MODEL, "%s", "");
	if (!valid_run(seg, m))
		return answer(h, TS_REQUEST_INVALID, "the request does not match its model");
	if ((rc = make_runner(m, h, msg, sizeof(msg))) != TS_GPU_OK)
	{
		ts_resident_drop_runner(m);
		return gpu_failure(h, rc, msg, fatal);
	}
	memcpy(ts_gpu_runner_input(m->runner, 0), (const char *) h + h->input_offset[h->area],
		   (size_t) h->nrows * h->num_features * sizeof(float));
	rc = ts_gpu_runner_submit(m->runner, 0, h->nrows, msg, sizeof(msg));
	if (rc == TS_GPU_OK)
		while ((rc = ts_gpu_runner_poll(m->runner, 0, msg, sizeof(msg))) == TS_GPU_NOT_READY)
		{
			stopped = stopped || cancelled(arg);
			pause_briefly();
		}
	if (rc == TS_GPU_OK)
		rc = ts_gpu_runner_wait(m->runner, 0, &phi, msg, sizeof(msg));
	if (rc != TS_GPU_OK)
		return gpu_failure(h, rc, msg, fatal);
	if (stopped)
		return TS_REQUEST_CANCELLED;
	memcpy((char *) h + h->output_offset[h->area], phi,
		   ts_gpu_job_result_len(&m->job, h->num_outputs, h->num_features, h->nrows) * sizeof(double));
	return answer(h, TS_REQUEST_OK, "%s", "");
}
#else
/* Without CUDA there is nothing to run on. */
static int32_t
run(Segment *seg, TsCancelCheck cancelled, void *arg, bool *fatal)
{
	(void) cancelled;
	(void) arg;
	(void) fatal;
	return answer(seg->h, TS_REQUEST_FAILED, "pg_treeshap was built without CUDA");
}
#endif

int32_t
ts_exec_serve(const TsExecMsg *msg, TsCancelCheck cancelled, void *arg, bool *fatal)
{
	Segment		seg;
	int32_t		status;

	*fatal = false;
	if (!map_segment(msg->segment, &seg))
		return TS_REQUEST_INVALID;
	if (seg.h->magic != TS_REQUEST_MAGIC || seg.h->slot != msg->slot || seg.h->seq != msg->seq)
		status = TS_REQUEST_INVALID;	/* not this request's segment: never write it */
	else if (msg->kind == TS_EXEC_LOAD)
		status = load(&seg, fatal);
	else if (!have_device)
		status = answer(seg.h, TS_REQUEST_FAILED, "the GPU service has no device");
	else
		status = run(&seg, cancelled, arg, fatal);
	munmap(seg.h, seg.size);
	return status;
}
