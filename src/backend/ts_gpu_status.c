/*
 * ts_gpu_status.c - treeshap._gpu_status(), behind the view
 * treeshap.gpu_status: the GPU service's state, its worker and executor
 * processes and its devices, read from shared memory (no CUDA call in the
 * backend), one row per device, or one row with NULL device columns when
 * the service has none or is not loaded; and two diagnostics of the
 * request path: treeshap._service_ping() and treeshap._service_load().
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "backend/ts_catalog.h"
#include "backend/ts_gpu_pg.h"
#include "executor/spi.h"
#include "service/ts_service.h"

/* 0.1.0's function declares the first 17: a tuple takes as many values as its descriptor has */
#define GPU_STATUS_COLUMNS 18

PG_FUNCTION_INFO_V1(treeshap_gpu_status);
PG_FUNCTION_INFO_V1(treeshap_gpu_models);
PG_FUNCTION_INFO_V1(treeshap_service_ping);
PG_FUNCTION_INFO_V1(treeshap_service_load);

/* The service's counters as treeshap.gpu_status shows them. */
typedef struct ServiceLoad
{
	uint64		requests_served;
	int			queue_depth;
	uint64		launches;		/* device launches */
	uint64		merged;			/* launches that served several requests at once */
	uint64		retried;		/* requests sent again after the service failed them */
	int64		device_bytes[TS_EXECUTOR_MAX_DEVICES];	/* the service's models and buffers per device */
} ServiceLoad;

/* One row: the service's columns, then device i's (NULL when i < 0), then the message. */
static void
put_row(ReturnSetInfo *rsinfo, const TsServiceStatus *st, const ServiceLoad *load, int i)
{
	Datum		values[GPU_STATUS_COLUMNS];
	bool		nulls[GPU_STATUS_COLUMNS];
	const TsGpuDeviceInfo *d = i >= 0 ? &st->found.devices[i] : NULL;
	bool		loaded = st->state != TS_SERVICE_NOT_LOADED;

	memset(nulls, 0, sizeof(nulls));
	values[0] = CStringGetTextDatum(ts_service_state_name(st->state));
	values[1] = Int32GetDatum(st->pid);
	nulls[1] = st->pid == 0;
	values[2] = TimestampTzGetDatum(st->started_at);
	nulls[2] = st->pid == 0;
	values[3] = Int32GetDatum(st->starts);
	nulls[3] = !loaded;
	values[4] = Int32GetDatum(st->executor_pid);
	nulls[4] = st->executor_pid == 0;
	values[5] = Int32GetDatum(st->executor_starts);
	nulls[5] = st->pid == 0;
	values[6] = Int64GetDatum((int64) load->requests_served);
	nulls[6] = !loaded;
	values[7] = Int32GetDatum(load->queue_depth);
	nulls[7] = !loaded;
	values[8] = Int64GetDatum((int64) load->launches);
	nulls[8] = !loaded;
	values[9] = Int64GetDatum((int64) load->merged);
	nulls[9] = !loaded;
	if (d != NULL)
	{
		values[10] = Int32GetDatum(d->index);
		values[11] = CStringGetTextDatum(d->name);
		values[12] = Int64GetDatum(d->total_memory);
		values[13] = Int64GetDatum(load->device_bytes[i]);
		values[14] = CStringGetTextDatum(psprintf("%d.%d", d->compute_major, d->compute_minor));
		values[15] = Int32GetDatum(d->multiprocessors);
	}
	else
		nulls[10] = nulls[11] = nulls[12] = nulls[13] = nulls[14] = nulls[15] = true;
	values[16] = CStringGetTextDatum(!loaded
									 ? "add pg_treeshap to shared_preload_libraries and restart the server"
									 : st->found.message);
	nulls[16] = loaded && st->found.message[0] == '\0';
	values[17] = Int64GetDatum((int64) load->retried);
	nulls[17] = !loaded;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* treeshap._gpu_status(): the worker's and the executor's columns, the load, a device's, a message. */
Datum
treeshap_gpu_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TsServiceStatus st;
	TsExecutorStats stats;
	ServiceLoad load;

	InitMaterializedSRF(fcinfo, 0);
	ts_service_status(&st);
	ts_service_stats(&stats);
	load.requests_served = stats.requests;
	load.queue_depth = ts_service_queue_depth();
	load.launches = stats.launches;
	load.merged = stats.merged;
	load.retried = ts_service_shared() != NULL ? pg_atomic_read_u64(&ts_service_shared()->retried) : 0;
	memcpy(load.device_bytes, stats.device_bytes, sizeof(load.device_bytes));
	if (st.found.num_devices == 0)
		put_row(rsinfo, &st, &load, -1);
	for (int i = 0; i < st.found.num_devices; i++)
		put_row(rsinfo, &st, &load, i);
	return (Datum) 0;
}

/*
 * treeshap._gpu_models(): the models the service holds: database, catalog
 * version, stored size, paths, hits and last use (the view treeshap.gpu_models
 * adds the names).
 */
Datum
treeshap_gpu_models(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TsExecutorStats stats;

	InitMaterializedSRF(fcinfo, 0);
	ts_service_stats(&stats);
	for (int i = 0; i < stats.num_models; i++)
	{
		const TsResidentInfo *m = &stats.models[i];
		Datum		values[8];
		bool		nulls[8] = {false, false, false, false, false, false, false, false};

		values[0] = ObjectIdGetDatum(m->key.database);
		values[1] = Int64GetDatum(m->key.version);
		values[2] = Int64GetDatum((int64) m->key.length);
		values[3] = Int64GetDatum(m->paths);
		values[4] = Int64GetDatum((int64) m->hits);
		values[5] = TimestampTzGetDatum(time_t_to_timestamptz(0) + m->last_used);
		values[6] = Int64GetDatum(m->device_bytes);
		values[7] = Int32GetDatum(m->devices);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * treeshap._service_ping(wait_ms): a request through the GPU service to its
 * executor, which waits wait_ms before answering; the round trip in ms. A
 * diagnostic of the request path (queue, latches, failures, cancel).
 */
Datum
treeshap_service_ping(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(ts_service_ping(PG_GETARG_INT32(0)));
}

/* The columns of _service_load: what the executor answered, and the interface it sent. */
static HeapTuple
load_row(TupleDesc desc, int64 paths, bool loaded, const TsInterface *in)
{
	Datum		values[9];
	bool		nulls[9] = {false};

	values[0] = Int64GetDatum(paths);
	values[1] = BoolGetDatum(loaded);
	values[2] = Int64GetDatum(in->long_paths->num_paths);
	values[3] = Int32GetDatum(in->model->num_features);
	values[4] = Int32GetDatum(in->model->num_outputs);
	values[5] = ts_feature_names_array(in->model, &nulls[5]);
	values[6] = ts_base_score_array(in->model);
	ts_categorical_arrays(in->model, &values[7], &values[8], &nulls[7]);
	nulls[8] = nulls[7];
	return heap_form_tuple(BlessTupleDesc(desc), values, nulls);
}

/*
 * treeshap._service_load(model): make the model's current version resident
 * in the GPU service (its executor reads the bytes shipped to it, and
 * uploads them when it has a GPU): its paths as the executor counts them,
 * whether this call loaded it or found it resident, and the interface a
 * GPU call takes from the service instead of parsing the model.
 */
Datum
treeshap_service_load(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	TupleDesc	desc;
	HeapTuple	row;
	TsInterface in;
	int64		paths;
	bool		loaded;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext old;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	SPI_connect();
	ts_gpu_load(ts_model_identity(name), &in, &paths, &loaded);
	/* the row outlives SPI_finish, which frees SPI's memory (the interface's too) */
	old = MemoryContextSwitchTo(caller);
	row = load_row(desc, paths, loaded, &in);
	MemoryContextSwitchTo(old);
	SPI_finish();
	PG_RETURN_DATUM(HeapTupleGetDatum(row));
}
