/*
 * ts_catalog.h - the model catalog (treeshap.model_store) and the
 * per-backend cache of parsed models and their path tables.
 */
#ifndef TS_CATALOG_H
#define TS_CATALOG_H

#include "core/ts_paths.h"

typedef struct TsCachedModel TsCachedModel;

struct TsCachedModel
{
	TsCachedModel *next;
	char	   *name;
	int64		version;		/* treeshap.model_store.version it was built from */
	uint64		length;			/* of its stored bytes */
	uint64		digest;			/* CityHash64 of them: the GPU service's key, with the version */
	MemoryContext context;		/* owns the entry, model and path table */
	TsModel    *model;
	TsPathTable *paths;
	int64	   *long_paths;		/* paths too long for the GPU, listed on first GPU use */
	int64		num_long;
	int			pins;			/* calls using it now; retired entries wait for 0 */
	bool		retired;
};

/*
 * Current version of the named model, parsed and with its path table, pinned
 * for the caller; SPI must be connected. ERROR if the model does not exist.
 */
extern TsCachedModel *ts_model_acquire(const char *name);
extern void ts_model_release(TsCachedModel *entry);

/*
 * The entry's stored bytes again (to ship them to the GPU service); SPI
 * must be connected. ERROR when that version is no longer stored.
 */
extern bytea *ts_model_bytes(const TsCachedModel *entry);

/* Report a core error as an ERROR with the SQLSTATE of its class. */
extern void ts_report_core_error(const TsError *err, const char *context) pg_attribute_noreturn();

#endif							/* TS_CATALOG_H */
