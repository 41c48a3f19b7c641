/*
 * ts_exec_models.c - the executor's resident models (ts_exec_models.h).
 * A linear table: a server keeps a handful of models on its GPUs, and a
 * lookup is one comparison of 32 bytes per entry.
 */
#include "service/ts_exec_models.h"

#include "core/ts_wire.h"

#include <string.h>
#include <time.h>

static TsResidentModel models[TS_EXEC_MAX_MODELS];
static uint64_t request_clock;

/* Mark an entry used now. */
static void
touch(TsResidentModel *m)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	m->last_use = ++request_clock;
	m->last_used = (int64_t) now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

/* Whether two keys name the same model version with the same bytes. */
static bool
same_key(const TsModelKey *a, const TsModelKey *b)
{
	return a->database == b->database && a->version == b->version &&
		a->length == b->length && a->digest == b->digest;
}

void
ts_resident_touch_placement(TsPlacement *p)
{
	p->last_use = ++request_clock;
}

void
ts_resident_drop_runner(TsPlacement *p)
{
	ts_dev_runner_free(p->runner);
	p->runner = NULL;
	p->runner_bytes = 0;
	ts_free(p->feature_slot);
	p->feature_slot = NULL;
	ts_free(p->background_x);
	ts_free(p->background_values);
	p->background_x = NULL;
	p->background_values = NULL;
	memset(&p->background, 0, sizeof(p->background));
	p->job.background = NULL;
}

void
ts_resident_drop_placement(TsPlacement *p)
{
	ts_resident_drop_runner(p);
	ts_dev_table_free(p->table);
	memset(p, 0, sizeof(*p));
}

void
ts_resident_remove(TsResidentModel *m)
{
	for (int d = 0; d < TS_EXECUTOR_MAX_DEVICES; d++)
		ts_resident_drop_placement(&m->on[d]);
	ts_dev_layout_free(m->layout);
	ts_paths_free(m->paths);
	ts_model_free(m->model);
	ts_free(m->interface);
	memset(m, 0, sizeof(*m));
}

const char *
ts_resident_interface(TsResidentModel *m, size_t *len)
{
	if (m->interface == NULL)
		m->interface = ts_wire_interface(m->model, m->paths, &m->interface_len);
	*len = m->interface_len;
	return m->interface;
}

TsResidentModel *
ts_resident_find(const TsModelKey *key)
{
	for (int i = 0; i < TS_EXEC_MAX_MODELS; i++)
		if (models[i].used && same_key(&models[i].key, key))
		{
			models[i].hits++;
			touch(&models[i]);
			return &models[i];
		}
	return NULL;
}

/* The least recently used entry other than keep and those in use, or NULL. */
static TsResidentModel *
least_recent(const TsResidentModel *keep)
{
	TsResidentModel *lru = NULL;

	for (int i = 0; i < TS_EXEC_MAX_MODELS; i++)
		if (models[i].used && &models[i] != keep && models[i].requests == 0 &&
			(lru == NULL || models[i].last_use < lru->last_use))
			lru = &models[i];
	return lru;
}

bool
ts_resident_evict_placement(int device, const TsResidentModel *keep)
{
	TsPlacement *lru = NULL;

	for (int i = 0; i < TS_EXEC_MAX_MODELS; i++)
	{
		TsPlacement *p = &models[i].on[device];

		if (models[i].used && &models[i] != keep && p->table != NULL && !p->busy[0] && !p->busy[1] &&
			(lru == NULL || p->last_use < lru->last_use))
			lru = p;
	}
	if (lru == NULL)
		return false;
	ts_resident_drop_placement(lru);
	return true;
}

size_t
ts_resident_device_bytes(int device)
{
	size_t		bytes = 0;

	for (int i = 0; i < TS_EXEC_MAX_MODELS; i++)
		if (models[i].used)
			bytes += models[i].on[device].table_bytes + models[i].on[device].runner_bytes;
	return bytes;
}

bool
ts_resident_evict_one(const TsResidentModel *keep)
{
	TsResidentModel *lru = least_recent(keep);

	if (lru == NULL)
		return false;
	ts_resident_remove(lru);
	return true;
}

TsResidentModel *
ts_resident_add(const TsModelKey *key, TsModel *model, TsPathTable *paths)
{
	TsResidentModel *m = NULL;

	for (int i = 0; i < TS_EXEC_MAX_MODELS && m == NULL; i++)
		if (!models[i].used)
			m = &models[i];
	if (m == NULL && (m = least_recent(NULL)) == NULL)
		return NULL;			/* every entry is serving a request */
	if (m->used)
		ts_resident_remove(m);
	m->used = true;
	m->key = *key;
	m->model = model;
	m->paths = paths;
	m->rescale_bound = -1.0;	/* until an interventional request in probability space asks */
	touch(m);
	return m;
}

void
ts_resident_publish(TsExecutorStats *stats, uint64_t requests, uint64_t launches, uint64_t merged)
{
	int32_t		n = 0;

	__atomic_store_n(&stats->version, stats->version + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	stats->requests = requests;
	stats->launches = launches;
	stats->merged = merged;
	for (int d = 0; d < TS_EXECUTOR_MAX_DEVICES; d++)
		stats->device_bytes[d] = (int64_t) ts_resident_device_bytes(d);
	for (int i = 0; i < TS_EXEC_MAX_MODELS; i++)
		if (models[i].used)
		{
			TsResidentInfo *info = &stats->models[n++];

			info->key = models[i].key;
			info->paths = models[i].paths->num_paths;
			info->hits = models[i].hits;
			info->last_used = models[i].last_used;
			info->device_bytes = 0;
			info->devices = 0;
			for (int d = 0; d < TS_EXECUTOR_MAX_DEVICES; d++)
			{
				info->device_bytes += (int64_t) (models[i].on[d].table_bytes + models[i].on[d].runner_bytes);
				info->devices += models[i].on[d].table != NULL;
			}
		}
	stats->num_models = n;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&stats->version, stats->version + 1, __ATOMIC_RELAXED);
}
