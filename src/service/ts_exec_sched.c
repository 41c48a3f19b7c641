/*
 * ts_exec_sched.c - the executor's runs (ts_exec_serve.h): requests wait
 * in arrival order; each device takes two launches at a time (its
 * runner's two slots), so one launch computes while the next one's rows
 * go in and the last one's results out. A launch holds rows of one
 * request or, for SHAP and interaction values, of several requests on the
 * same model and job (cross-session batching). The executor copies a
 * launch's rows into the slot's buffers and its results out again, unless
 * it holds one request's rows and that request's segment is pinned: the
 * device's own copies then read and write them in place. A request
 * larger than a launch is cut into pieces that the devices share. Every
 * row's values are computed alone (fixed-point sums per row), so how rows
 * are grouped into launches, and on which device, never changes a bit of
 * them; importance sums, which add rows together, are cut at boundaries
 * that depend only on the model and added in piece order.
 */
#include "service/ts_exec_serve.h"

#include <string.h>

#define MAX_REQUESTS 4096
#define MAX_PIECES 64			/* requests one launch may serve */
#define LAUNCHES_PER_DEVICE 2
/* a launch that merges requests stops growing at this many rows or result bytes */
#define MERGE_ROWS 65536
#define MERGE_BYTES ((size_t) 64 << 20)

typedef struct Request
{
	TsExecMsg	msg;
	TsSegment	seg;
	TsResidentModel *m;
	TsGpuJob	job;			/* its feature_slot and background point into the segment */
	TsGpuBackground background;
	int32_t		precision;
	int32_t		nrows;
	int32_t		piece_rows;		/* the most rows one launch takes of it */
	int32_t		next_row;		/* first row not yet launched */
	int32_t		inflight;		/* launches holding rows of it */
	const float *input;
	double	   *output;
	double	   *pieces;			/* importance: each piece's sums, added in order at the end */
	int32_t		status;			/* TS_REQUEST_OK while it goes well */
	bool		cancelled;
} Request;

/* Rows [first, first + n) of a request, at row at of a launch. */
typedef struct Piece
{
	Request    *req;
	int32_t		first;
	int32_t		n;
	int32_t		at;
} Piece;

typedef struct Launch
{
	bool		busy;
	bool		in_place;		/* rows read from, results written to, the request's segment */
	int			device;
	int			slot;
	TsPlacement *place;
	int32_t		nrows;
	int			npieces;
	Piece		pieces[MAX_PIECES];
} Launch;

static Request *queue[MAX_REQUESTS];	/* in arrival order */
static int	queued;
static Launch launches[TS_EXECUTOR_MAX_DEVICES * LAUNCHES_PER_DEVICE];
static int	num_devices;
static uint64_t launch_count;
static uint64_t merged_count;

void
ts_exec_counts(uint64_t *launches_out, uint64_t *merged_out)
{
	*launches_out = launch_count;
	*merged_out = merged_count;
}

bool
ts_exec_busy(void)
{
	return queued > 0;
}

/* Doubles of results per row of a request's job (importance: per piece). */
static size_t
row_result(const Request *r)
{
	const TsPathTable *pt = r->m->paths;

	return ts_gpu_job_result_len(&r->job, pt->num_outputs, pt->num_features, 1);
}

/*
 * The most rows one launch takes of a job on a model: about 50 ms of a
 * device's work (ts_dev_launch_work), so that cancel and statement_timeout
 * land between launches, and never fewer than one.
 */
static int32_t
launch_rows(const TsResidentModel *m, const TsGpuJob *job)
{
	bool		interactions = job->kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS ||
		job->kind == TS_GPU_JOB_TAYLOR_INTERACTIONS;
	double		per_row = (double) m->paths->num_elements *
		(interactions ? (double) m->paths->max_path_len : 1.0);
	double		rows;

	/* a prediction visits one node per level of each tree */
	if (job->kind == TS_GPU_JOB_PREDICT)
		per_row = (double) m->model->num_trees * (m->model->max_depth + 1);
	/* interventional values test every element against every background row */
	if (job->kind == TS_GPU_JOB_INTERVENTIONAL)
		per_row *= (double) job->background->nrows;
	rows = ts_dev_launch_work() / (per_row > 1.0 ? per_row : 1.0);

	return rows >= 1e9 ? 1000000000 : (rows < 1.0 ? 1 : (int32_t) rows);
}

/*
 * The rows of each piece of a request of nrows rows, at most most each:
 * as many equal pieces as a multiple of the devices, so that a request cut
 * into pieces ends on every device at about the same time instead of one
 * device computing the last piece while the others wait (1.76x on two GPUs
 * with 10,000-row requests cut into 13 pieces).
 */
static int32_t
even_pieces(int32_t nrows, int32_t most, int devices)
{
	int64_t		pieces;

	if (nrows <= most || devices < 1)
		return most;
	pieces = ((int64_t) nrows + most - 1) / most;
	pieces = (pieces + devices - 1) / devices * devices;
	return (int32_t) (((int64_t) nrows + pieces - 1) / pieces);
}

/* Whether two requests run the same job on the same model, so that one launch can serve both. */
static bool
mergeable(const Request *a, const Request *b)
{
	return a->m == b->m && a->job.kind == b->job.kind && a->job.kind != TS_GPU_JOB_IMPORTANCE &&
		a->job.algorithm == b->job.algorithm && a->precision == b->precision &&
		a->job.selected == b->job.selected && a->job.top_k == b->job.top_k &&
		(a->job.feature_slot == NULL ||
		 memcmp(a->job.feature_slot, b->job.feature_slot,
				sizeof(int32_t) * (size_t) a->m->paths->num_features) == 0) &&
		ts_exec_same_background(a->job.background, b->job.background, a->m->paths);
}

/* Rows a runner for a request holds: one piece, or for merging jobs as many as a merged launch takes. */
static int32_t
runner_rows(const Request *r)
{
	size_t		bytes_rows = MERGE_BYTES / (row_result(r) * sizeof(double) + 1);
	int32_t		merge = (int32_t) (bytes_rows < MERGE_ROWS ? bytes_rows : MERGE_ROWS);

	if (r->job.kind == TS_GPU_JOB_IMPORTANCE || merge < r->piece_rows)
		return r->piece_rows;
	return merge < launch_rows(r->m, &r->job) ? merge : launch_rows(r->m, &r->job);
}

/* Take a run's header into a request; its answer now when it cannot run. */
static int32_t
admit(Request *r)
{
	TsRequestHeader *h = r->seg.h;
	int32_t		per_launch;

	r->m = ts_resident_find(&h->model);
	if (r->m == NULL || r->m->layout == NULL)
		return ts_exec_answer(h, TS_REQUEST_NEED_MODEL, "%s", "");
	if (!ts_exec_valid_run(&r->seg, r->m))
		return ts_exec_answer(h, TS_REQUEST_INVALID, "the request does not match its model");
	r->job.kind = (TsGpuJobKind) h->job_kind;
	r->job.algorithm = (TsGpuAlgorithm) h->algorithm;
	r->job.selected = r->job.kind == TS_GPU_JOB_SHAPLEY_INTERACTIONS ||
		r->job.kind == TS_GPU_JOB_TAYLOR_INTERACTIONS ? h->selected : 0;
	r->job.feature_slot = r->job.selected > 0 ? (const int32_t *) ((const char *) h + h->feature_slot_offset) : NULL;
	r->job.top_k = r->job.kind == TS_GPU_JOB_TOP_FEATURES ? h->top_k : 0;
	if (r->job.kind == TS_GPU_JOB_INTERVENTIONAL)
	{
		if (!ts_exec_background(h, r->m, &r->background))
			return ts_exec_answer(h, TS_REQUEST_FAILED, "the model's link has no GPU form in probability space");
		r->job.background = &r->background;
	}
	r->precision = h->precision;
	r->nrows = h->nrows;
	r->input = (const float *) ((const char *) h + h->input_offset[h->area]);
	r->output = (double *) ((char *) h + h->output_offset[h->area]);
	per_launch = launch_rows(r->m, &r->job);
	r->piece_rows = per_launch < h->max_rows ? per_launch : h->max_rows;
	/* importance sums are cut where only the model says, so that every device count adds alike */
	if (r->job.kind != TS_GPU_JOB_IMPORTANCE)
		r->piece_rows = even_pieces(r->nrows, r->piece_rows, num_devices);
	if (r->job.kind == TS_GPU_JOB_IMPORTANCE)
		r->pieces = ts_alloc0(sizeof(double) * row_result(r) *
							  (size_t) ((r->nrows + r->piece_rows - 1) / r->piece_rows));
	r->status = TS_REQUEST_OK;
	r->m->requests++;
	return TS_EXEC_PENDING;
}

/* Whether a segment is stamped with this request (its backend's slot and request number). */
static bool
stamped(const TsSegment *seg, const TsExecMsg *msg)
{
	return seg->h->magic == TS_REQUEST_MAGIC && seg->h->slot == msg->slot && seg->h->seq == msg->seq;
}

/*
 * Map a request's segment, kept between requests. A kept mapping without
 * the request's stamp may be of an older object that had the name and
 * inode number: it is dropped and the name mapped again, once.
 */
static bool
map_request(const TsExecMsg *msg, TsSegment *seg)
{
	if (!ts_segment_map(msg->segment, true, seg))
		return false;
	if (stamped(seg, msg) || seg->cached < 0)
		return true;
	ts_segment_drop(seg);
	return ts_segment_map(msg->segment, true, seg);
}

int32_t
ts_exec_run(const TsExecMsg *msg)
{
	Request    *r;
	int32_t		status;

	r = ts_alloc0(sizeof(Request));
	r->msg = *msg;
	if (!map_request(msg, &r->seg))
		status = TS_REQUEST_INVALID;
	else if (!stamped(&r->seg, msg))
		status = TS_REQUEST_INVALID;	/* not this request's segment: never write it */
	else if (num_devices == 0)
		status = ts_exec_answer(r->seg.h, TS_REQUEST_FAILED, "the GPU service has no device");
	else if (queued >= MAX_REQUESTS)
		status = ts_exec_answer(r->seg.h, TS_REQUEST_FAILED, "the GPU service has %d requests queued", queued);
	else
		status = admit(r);
	if (status != TS_EXEC_PENDING)
	{
		ts_segment_release(&r->seg);
		ts_free(r);
		return status;
	}
	queue[queued++] = r;
	return TS_EXEC_PENDING;
}

void
ts_exec_sched_init(int devices)
{
	num_devices = devices;
}

void
ts_exec_cancel(int32_t slot, uint64_t seq)
{
	for (int i = 0; i < queued; i++)
		if (queue[i]->msg.slot == slot && queue[i]->msg.seq == seq)
			queue[i]->cancelled = true;
}

/* Whether a request still has rows to launch. */
static bool
wants_rows(const Request *r)
{
	return r->next_row < r->nrows && r->status == TS_REQUEST_OK && !r->cancelled;
}

/* Launches in flight on a device. */
static int
device_load(int device)
{
	int			n = 0;

	for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
		n += launches[i].busy && launches[i].device == device;
	return n;
}

/* A free launch, or NULL. */
static Launch *
free_launch(void)
{
	for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
		if (!launches[i].busy)
			return &launches[i];
	return NULL;
}

/*
 * The device for a request's next launch: among those with a free launch,
 * one that holds the model, then the least loaded; -1 when none is free.
 */
static int
pick_device(const Request *r)
{
	int			best = -1;

	for (int d = 0; d < num_devices; d++)
	{
		int			load = device_load(d);
		bool		holds = r->m->on[d].table != NULL;

		if (load >= LAUNCHES_PER_DEVICE)
			continue;
		if (best < 0 || (holds && r->m->on[best].table == NULL) ||
			(holds == (r->m->on[best].table != NULL) && load < device_load(best)))
			best = d;
	}
	return best;
}

/* Add rows of a request to a launch: at most room rows, copied into the slot's input unless it is NULL. */
static int32_t
take_rows(Launch *l, Request *r, int32_t room, float *input)
{
	int32_t		features = r->m->paths->num_features;
	int32_t		n = r->nrows - r->next_row;
	Piece	   *p = &l->pieces[l->npieces++];

	if (n > room)
		n = room;
	if (n > r->piece_rows)
		n = r->piece_rows;
	p->req = r;
	p->first = r->next_row;
	p->n = n;
	p->at = l->nrows;
	if (input != NULL)
		memcpy(input + (size_t) l->nrows * features, r->input + (size_t) r->next_row * features,
			   sizeof(float) * (size_t) n * features);
	r->next_row += n;
	r->inflight++;
	l->nrows += n;
	return n;
}

/* Fail a request (answered once its launches end). */
static void
fail(Request *r, int32_t status)
{
	if (r->status == TS_REQUEST_OK)
		r->status = status;
}

/*
 * Whether request queue[i]'s next launch, of at most room rows, can read
 * its rows and write its results where they are, in its pinned segment:
 * results per row (not importance sums), and no later request that could
 * share the launch, unless this request's rows fill it.
 */
static bool
launch_in_place(int i, int32_t room)
{
	Request    *r = queue[i];
	int32_t		rows = r->nrows - r->next_row;

	if (!r->seg.pinned || r->job.kind == TS_GPU_JOB_IMPORTANCE)
		return false;
	if ((rows < r->piece_rows ? rows : r->piece_rows) >= room)
		return true;
	for (int j = i + 1; j < queued; j++)
		if (wants_rows(queue[j]) && mergeable(r, queue[j]))
			return false;
	return true;
}

/* Submit a launch that holds one piece of its request, in place in the request's segment. */
static TsGpuStatus
submit_in_place(Launch *l, char *msg, size_t msglen)
{
	const Piece *p = &l->pieces[0];
	const Request *r = p->req;

	return ts_dev_runner_submit_at(l->place->runner, l->slot, l->nrows,
								   r->input + (size_t) p->first * r->m->paths->num_features,
								   r->output + (size_t) p->first * row_result(r), msg, msglen);
}

/*
 * Start one launch for request queue[i] on a device: its rows, then rows of
 * the requests after it that can share the launch (copied into the slot's
 * buffers), or its rows alone in place. False when it cannot start now.
 */
static bool
start_launch(int i, bool *fatal)
{
	Request    *r = queue[i];
	int			device = pick_device(r);
	Launch	   *l = free_launch();
	char		msg[256] = "";
	TsPlacement *place;
	TsGpuStatus rc;
	int32_t		room;
	float	   *input;

	if (device < 0 || l == NULL)
		return false;
	rc = ts_exec_place(r->m, device, &r->job, r->precision, runner_rows(r), msg, sizeof(msg));
	/* no room to merge under the memory limit: a runner of one piece still serves */
	if (rc == TS_GPU_OUT_OF_MEMORY && runner_rows(r) > r->piece_rows)
		rc = ts_exec_place(r->m, device, &r->job, r->precision, r->piece_rows, msg, sizeof(msg));
	if (rc == TS_GPU_NOT_READY)
		return false;
	if (rc != TS_GPU_OK)
	{
		fail(r, ts_exec_device_failure(r->seg.h, rc, msg, fatal));
		return false;
	}
	place = &r->m->on[device];
	memset(l, 0, sizeof(*l));
	l->device = device;
	l->place = place;
	l->slot = place->busy[0] ? 1 : 0;
	l->in_place = launch_in_place(i, place->max_rows);
	input = l->in_place ? NULL : ts_dev_runner_input(place->runner, l->slot);
	room = place->max_rows;
	room -= take_rows(l, r, room, input);
	for (int j = i + 1; !l->in_place && j < queued && room > 0 && l->npieces < MAX_PIECES; j++)
		if (wants_rows(queue[j]) && mergeable(r, queue[j]))
			room -= take_rows(l, queue[j], room, input);
	rc = l->in_place ? submit_in_place(l, msg, sizeof(msg))
		: ts_dev_runner_submit(place->runner, l->slot, l->nrows, msg, sizeof(msg));
	l->busy = true;
	place->busy[l->slot] = true;
	launch_count++;
	merged_count += l->npieces > 1;
	if (rc != TS_GPU_OK)
		for (int k = 0; k < l->npieces; k++)
			fail(l->pieces[k].req, ts_exec_device_failure(l->pieces[k].req->seg.h, rc, msg, fatal));
	return true;
}

/*
 * Start launches while a device is free and a request has rows for it: one
 * launch per request per round, in arrival order, so that a long request
 * shares the devices with those that come after it.
 */
static bool
dispatch(bool *fatal)
{
	bool		started = false;
	bool		round;

	do
	{
		round = false;
		for (int i = 0; i < queued && !*fatal; i++)
			if (wants_rows(queue[i]) && start_launch(i, fatal))
				round = started = true;
	} while (round && !*fatal);
	return started;
}

/* Put a finished piece's results in its request's output. */
static void
store(const Piece *p, const double *phi)
{
	Request    *r = p->req;
	size_t		per_row = row_result(r);

	if (r->status != TS_REQUEST_OK || r->cancelled)
		return;
	if (r->job.kind == TS_GPU_JOB_IMPORTANCE)
		memcpy(r->pieces + (size_t) (p->first / r->piece_rows) * per_row, phi, sizeof(double) * per_row);
	else
		memcpy(r->output + (size_t) p->first * per_row, phi + (size_t) p->at * per_row,
			   sizeof(double) * per_row * (size_t) p->n);
}

/* Finish a launch whose device is done; false while it runs. */
static bool
finish_launch(Launch *l, bool *fatal)
{
	TsDevRunner *runner = l->place->runner;
	char		msg[256] = "";
	double	   *phi = NULL;
	TsGpuStatus rc = ts_dev_runner_poll(runner, l->slot, msg, sizeof(msg));

	if (rc == TS_GPU_NOT_READY)
		return false;
	if (rc == TS_GPU_OK)
		rc = ts_dev_runner_wait(runner, l->slot, &phi, msg, sizeof(msg));
	for (int k = 0; k < l->npieces; k++)
	{
		if (rc == TS_GPU_OK)
		{
			if (!l->in_place)	/* in place, the results are where they belong already */
				store(&l->pieces[k], phi);
		}
		else
			fail(l->pieces[k].req, ts_exec_device_failure(l->pieces[k].req->seg.h, rc, msg, fatal));
		l->pieces[k].req->inflight--;
	}
	l->busy = false;
	l->place->busy[l->slot] = false;
	return true;
}

/* Importance: the pieces' sums added in piece order, whatever order they finished in. */
static void
fold_pieces(Request *r)
{
	size_t		per_piece = row_result(r);
	int32_t		npieces = (r->nrows + r->piece_rows - 1) / r->piece_rows;

	memcpy(r->output, r->pieces, sizeof(double) * per_piece);
	for (int32_t k = 1; k < npieces; k++)
		for (size_t i = 0; i < per_piece; i++)
			r->output[i] += r->pieces[(size_t) k * per_piece + i];
}

/* Whether a request is over: every launched row back, and none left to launch. */
static bool
request_over(const Request *r)
{
	return r->inflight == 0 && !wants_rows(r);
}

/* Answer a request that is over and forget it. */
static void
complete(int i, TsExecAnswer answer, void *arg)
{
	Request    *r = queue[i];
	int32_t		status = r->cancelled ? TS_REQUEST_CANCELLED : r->status;

	if (status == TS_REQUEST_OK)
	{
		if (r->job.kind == TS_GPU_JOB_IMPORTANCE)
			fold_pieces(r);
		ts_exec_answer(r->seg.h, TS_REQUEST_OK, "%s", "");
	}
	answer(&r->msg, status, arg);
	r->m->requests--;
	ts_segment_release(&r->seg);
	ts_free(r->pieces);
	ts_free(r);
	memmove(&queue[i], &queue[i + 1], sizeof(queue[0]) * (size_t) (queued - i - 1));
	queued--;
}

bool
ts_exec_progress(TsExecAnswer answer, void *arg, bool *fatal)
{
	bool		progress = dispatch(fatal);

	for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++)
		if (launches[i].busy && finish_launch(&launches[i], fatal))
			progress = true;
	for (int i = 0; i < queued; i++)
		if (request_over(queue[i]))
		{
			complete(i--, answer, arg);
			progress = true;
		}
	return progress;
}
