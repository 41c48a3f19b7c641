/*
 * ts_catalog.c - the per-backend cache of parsed models (ts_model_store.c
 * writes treeshap.model_store). Every change of a model's bytes draws a new
 * version from a sequence; a backend compares its cached version and digest
 * with the catalog row on each use, so a replace or drop in any session
 * invalidates every cache.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "backend/ts_batch.h"
#include "backend/ts_catalog.h"
#include "backend/ts_gpu_pg.h"
#include "backend/ts_settings.h"

PG_FUNCTION_INFO_V1(treeshap_model_digest);

static TsCachedModel *cache_head = NULL;
static MemoryContext cache_context = NULL;
static uint64 cache_clock = 0;	/* ticks once per acquire, for least recently used */

/* Map a core error class to its SQLSTATE and raise it. */
void
ts_report_core_error(const TsError *err, const char *context)
{
	int			code;

	switch (err->code)
	{
		case TS_ERR_SYNTAX:
			code = ERRCODE_INVALID_TEXT_REPRESENTATION;
			break;
		case TS_ERR_UNSUPPORTED:
			code = ERRCODE_FEATURE_NOT_SUPPORTED;
			break;
		case TS_ERR_LIMIT:
			code = ERRCODE_PROGRAM_LIMIT_EXCEEDED;
			break;
		default:
			code = ERRCODE_INVALID_PARAMETER_VALUE;
			break;
	}
	ereport(ERROR,
			(errcode(code),
			 errmsg("could not read model \"%s\": %s", context, err->message)));
}

/* Parse and validate model bytes in the current memory context. */
TsModel *
ts_read_model_or_error(const char *name, bytea *bytes)
{
	TsError		err = {0};
	TsModel    *m = ts_model_read(VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes), &err);

	if (m == NULL)
		ts_report_core_error(&err, name);
	return m;
}

/* The model's feature names as text[], or NULL datum when it has none. */
Datum
ts_feature_names_array(const TsModel *m, bool *isnull)
{
	Datum	   *elems;

	*isnull = (m->feature_names == NULL);
	if (*isnull)
		return (Datum) 0;
	elems = palloc(sizeof(Datum) * m->num_features);
	for (int32 i = 0; i < m->num_features; i++)
		elems[i] = CStringGetTextDatum(m->feature_names[i]);
	return PointerGetDatum(construct_array(elems, m->num_features, TEXTOID, -1, false, TYPALIGN_INT));
}

/* Per-output base score in margin space as float8[]. */
Datum
ts_base_score_array(const TsModel *m)
{
	Datum	   *elems = palloc(sizeof(Datum) * m->num_outputs);

	for (int32 k = 0; k < m->num_outputs; k++)
		elems[k] = Float8GetDatum(m->base_margin[k]);
	return PointerGetDatum(construct_array(elems, m->num_outputs, FLOAT8OID, 8,
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * The categorical features by name, and per feature the number of
 * categories its dictionary lists (NULL where the model lists none).
 */
void
ts_categorical_arrays(const TsModel *m, Datum *names, Datum *counts, bool *isnull)
{
	Datum	   *n = palloc(sizeof(Datum) * m->num_features);
	Datum	   *c = palloc(sizeof(Datum) * m->num_features);
	bool	   *c_null = palloc(sizeof(bool) * m->num_features);
	int			dims[1];
	int			lbs[1] = {1};
	int			count = 0;

	*isnull = m->categorical == NULL;
	if (*isnull)
		return;
	for (int32 j = 0; j < m->num_features; j++)
		if (m->categorical[j])
		{
			n[count] = CStringGetTextDatum(ts_feature_name(m, j));
			c[count] = Int32GetDatum(ts_catdict_size(m, j));
			c_null[count++] = ts_catdict_size(m, j) == 0;
		}
	dims[0] = count;
	*names = PointerGetDatum(construct_array(n, count, TEXTOID, -1, false, TYPALIGN_INT));
	*counts = PointerGetDatum(construct_md_array(c, c_null, 1, dims, lbs, INT4OID, 4, true,
												 TYPALIGN_INT));
}

/* treeshap._model_digest(bytes): CityHash64 of a model's bytes, as the model_store trigger stores it. */
Datum
treeshap_model_digest(PG_FUNCTION_ARGS)
{
	bytea	   *bytes = PG_GETARG_BYTEA_PP(0);

	PG_RETURN_INT64((int64) ts_cityhash64(VARDATA_ANY(bytes), VARSIZE_ANY_EXHDR(bytes)));
}

/* What the catalog says of a model's current version. */
typedef struct StoredModel
{
	bool		found;
	int64		version;
	uint64		length;			/* of its bytes (from the TOAST pointer: nothing is read) */
	uint64		digest;
} StoredModel;

/* The catalog row of a model, without its bytes. */
static StoredModel
lookup_model(const char *name)
{
	Oid			argtypes[1] = {TEXTOID};
	Datum		args[1] = {CStringGetTextDatum(name)};
	StoredModel stored = {false, 0, 0, 0};
	bool		isnull;

	if (SPI_execute_with_args("SELECT version, octet_length(model), digest FROM treeshap.model_store "
							  "WHERE name = $1", 1, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up model \"%s\"", name);
	if (SPI_processed == 0)
		return stored;
	stored.found = true;
	stored.version = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	stored.length = (uint64) DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	stored.digest = (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 3, &isnull));
	return stored;
}

/* Free a cache entry now if unused, or when its last user releases it. */
static void
retire_entry(TsCachedModel *entry)
{
	TsCachedModel **link;

	entry->retired = true;
	if (entry->pins > 0)
		return;
	for (link = &cache_head; *link != NULL; link = &(*link)->next)
		if (*link == entry)
		{
			*link = entry->next;
			break;
		}
	MemoryContextDelete(entry->context);
}

/*
 * The least recently used entry that no call is using and that is not the
 * one used last, or NULL: the last model stays, however large, so a session
 * working with one model larger than the bound does not parse it on every call.
 */
static TsCachedModel *
least_recent_unpinned(void)
{
	TsCachedModel *oldest = NULL;

	for (TsCachedModel *e = cache_head; e != NULL; e = e->next)
		if (!e->retired && e->pins == 0 && e->last_use != cache_clock &&
			(oldest == NULL || e->last_use < oldest->last_use))
			oldest = e;
	return oldest;
}

/* Free least recently used models until the cache fits treeshap.model_cache_size. */
static void
enforce_cache_size(void)
{
	Size		limit = (Size) ts_model_cache_kb * 1024;
	Size		total = cache_context != NULL ? MemoryContextMemAllocated(cache_context, true) : 0;
	TsCachedModel *victim;

	while (total > limit && (victim = least_recent_unpinned()) != NULL)
	{
		total -= Min(total, MemoryContextMemAllocated(victim->context, true));
		retire_entry(victim);
	}
}

/* Live (non-retired) cache entry for a name, or NULL. */
static TsCachedModel *
find_entry(const char *name)
{
	for (TsCachedModel *e = cache_head; e != NULL; e = e->next)
		if (!e->retired && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* The stored bytes of a model version, or NULL when that version is gone. */
static bytea *
stored_bytes(const char *name, int64 version)
{
	Oid			argtypes[2] = {TEXTOID, INT8OID};
	Datum		args[2] = {CStringGetTextDatum(name), Int64GetDatum(version)};
	bool		isnull;

	if (SPI_execute_with_args("SELECT model FROM treeshap.model_store WHERE name = $1 AND version = $2",
							  2, argtypes, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read model \"%s\"", name);
	if (SPI_processed != 1)
		return NULL;
	return DatumGetByteaPP(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

bytea *
ts_model_bytes(const TsCachedModel *entry)
{
	bytea	   *bytes = stored_bytes(entry->name, entry->version);

	/* the digest is the trigger's, and the executor checks the bytes against it */
	if (bytes == NULL || VARSIZE_ANY_EXHDR(bytes) != entry->length)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" was replaced or dropped during this call", entry->name)));
	return bytes;
}

/* A new entry for a stored version, in a context of its own under the current one. */
static TsCachedModel *
new_entry(const char *name, const StoredModel *stored)
{
	MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "treeshap cached model",
											  ALLOCSET_DEFAULT_SIZES);
	TsCachedModel *entry = MemoryContextAllocZero(ctx, sizeof(TsCachedModel));

	entry->name = MemoryContextStrdup(ctx, name);
	entry->version = stored->version;
	entry->length = stored->length;
	entry->digest = stored->digest;
	entry->context = ctx;
	return entry;
}

/* Add a complete entry to the cache; until then an ERROR frees it with its parent. */
static TsCachedModel *
cache_entry(TsCachedModel *entry)
{
	if (cache_context == NULL)
		cache_context = AllocSetContextCreate(TopMemoryContext, "treeshap model cache",
											  ALLOCSET_SMALL_SIZES);
	MemoryContextSetParent(entry->context, cache_context);
	MemoryContextSetIdentifier(entry->context, entry->name);	/* pg_backend_memory_contexts shows it */
	entry->next = cache_head;
	cache_head = entry;
	return entry;
}

/* Read the stored bytes and parse the model; its path table waits for a call that needs it. */
static TsCachedModel *
build_entry(const char *name, const StoredModel *stored)
{
	TsCachedModel *entry = new_entry(name, stored);
	bytea	   *bytes = stored_bytes(name, stored->version);
	MemoryContext old;

	if (bytes == NULL)
		elog(ERROR, "could not read model \"%s\"", name);
	old = MemoryContextSwitchTo(entry->context);
	entry->model = ts_read_model_or_error(name, bytes);
	MemoryContextSwitchTo(old);
	return cache_entry(entry);
}

/*
 * The entry's path table, built at its first use. It is built in a context
 * of the call's until complete, so that a cancel halfway frees it all.
 */
const TsPathTable *
ts_model_paths(TsCachedModel *entry)
{
	if (entry->paths == NULL)
	{
		MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "treeshap path table",
												  ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(ctx);
		TsPathTable *pt = ts_paths_build(entry->model);

		MemoryContextSwitchTo(old);
		MemoryContextSetParent(ctx, entry->context);
		entry->paths = pt;
		entry->num_paths = pt->num_paths;
	}
	return entry->paths;
}

/* The entry's tree plan, built at its first use in a context of the call's (as the path table is). */
const TsQuadTreePlan *
ts_model_tree_plan(TsCachedModel *entry)
{
	if (!entry->tree_plan_tried && !entry->interface_only)
	{
		MemoryContext ctx = AllocSetContextCreate(CurrentMemoryContext, "treeshap tree plan",
												  ALLOCSET_SMALL_SIZES);
		MemoryContext old = MemoryContextSwitchTo(ctx);
		TsQuadTreePlan *plan = ts_quad_tree_plan(entry->model);

		MemoryContextSwitchTo(old);
		if (ts_quad_tree_fits(entry->model, plan))
		{
			MemoryContextSetParent(ctx, entry->context);
			entry->tree_plan = plan;
		}
		else
			MemoryContextDelete(ctx);
		entry->tree_plan_tried = true;
	}
	return entry->tree_plan;
}

/* Take the model's interface from the GPU service, which holds (or now loads) the model. */
static TsCachedModel *
build_interface_entry(const char *name, const StoredModel *stored)
{
	TsCachedModel *entry = new_entry(name, stored);
	MemoryContext old = MemoryContextSwitchTo(entry->context);
	TsInterface in;
	int64		paths;
	bool		loaded;

	ts_gpu_load(entry, &in, &paths, &loaded);
	entry->interface_only = true;
	entry->model = in.model;
	entry->paths = in.long_paths;
	entry->num_paths = in.num_paths;
	entry->num_long = in.long_paths->num_paths;
	entry->long_paths = palloc(sizeof(int64) * (entry->num_long + 1));
	for (int64 p = 0; p < entry->num_long; p++)
		entry->long_paths[p] = p;
	MemoryContextSwitchTo(old);
	return cache_entry(entry);
}

/* Current model for a name, rebuilt when the catalog version moved on. */
TsCachedModel *
ts_model_acquire(const char *name, bool gpu)
{
	StoredModel stored = lookup_model(name);
	TsCachedModel *entry = find_entry(name);

	/* a CPU call needs the trees, which an entry from the service lacks */
	if (entry != NULL && (!stored.found || entry->version != stored.version ||
						  entry->digest != stored.digest || entry->length != stored.length ||
						  (entry->interface_only && !gpu)))
	{
		retire_entry(entry);
		entry = NULL;
	}
	if (!stored.found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name),
				 errhint("Load it with treeshap.load_model().")));
	if (entry == NULL)
		entry = gpu ? build_interface_entry(name, &stored) : build_entry(name, &stored);
	entry->pins++;
	entry->last_use = ++cache_clock;
	enforce_cache_size();
	return entry;
}

/* A stored model's identity alone, outside the cache: enough to ship its bytes. */
TsCachedModel *
ts_model_identity(const char *name)
{
	StoredModel stored = lookup_model(name);

	if (!stored.found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	return new_entry(name, &stored);
}

/* Drop the caller's pin; a retired entry is freed with its last pin. */
void
ts_model_release(TsCachedModel *entry)
{
	entry->pins--;
	if (entry->retired && entry->pins == 0)
		retire_entry(entry);
	else if (entry->pins == 0)
		enforce_cache_size();	/* it may have been kept over the size while in use */
}
