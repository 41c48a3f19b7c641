/*
 * ts_catalog.h - the model catalog (treeshap.model_store) and the
 * per-backend cache of parsed models and their path tables.
 */
#ifndef TS_CATALOG_H
#define TS_CATALOG_H

#include "core/ts_paths.h"
#include "core/ts_quad_tree.h"
#include "service/ts_pg_compat.h"

typedef struct TsCachedModel TsCachedModel;

struct TsCachedModel
{
	TsCachedModel *next;
	char	   *name;
	int64		version;		/* treeshap.model_store.version it was built from */
	uint64		length;			/* of its stored bytes */
	uint64		digest;			/* CityHash64 of them: the GPU service's key, with the version */
	MemoryContext context;		/* owns the entry, model and path table */
	bool		interface_only; /* from the GPU service: no trees, paths holds the long ones only */
	TsModel    *model;
	TsPathTable *paths;			/* NULL until ts_model_paths builds it */
	int64		num_paths;		/* of the whole path table, once built */
	TsQuadTreePlan *tree_plan;	/* the quadrature walk's plan, once built (NULL: none yet, or none fits) */
	bool		tree_plan_tried;	/* whether ts_model_tree_plan has been asked */
	int64	   *long_paths;		/* paths too long for the GPU, listed on first GPU use */
	int64		num_long;
	int			pins;			/* calls using it now; retired entries wait for 0 */
	uint64		last_use;		/* tick of the cache's clock at its last acquire */
	bool		retired;
};

/*
 * Current version of the named model, pinned for the caller; SPI must be
 * connected. ERROR if the model does not exist. For a GPU call the model's
 * interface from the GPU service suffices (ts_gpu_interface: no parsing,
 * no path table in this backend); a CPU call needs the model parsed.
 */
extern TsCachedModel *ts_model_acquire(const char *name, bool gpu);
extern void ts_model_release(TsCachedModel *entry);

/* The entry's path table, built at its first use (predictions walk the trees without one). */
extern const TsPathTable *ts_model_paths(TsCachedModel *entry);

/*
 * The plan of the quadrature carried down each tree, built at its first use;
 * NULL for an entry without trees (from the GPU service) or trees too deep
 * to walk (ts_quad_tree_fits): the path table's lanes serve those.
 */
extern const TsQuadTreePlan *ts_model_tree_plan(TsCachedModel *entry);

/*
 * A model's catalog identity (name, version, length, digest) in an entry
 * outside the cache, without model or paths: what shipping it needs.
 */
extern TsCachedModel *ts_model_identity(const char *name);

/* The model's fields as treeshap.model_store stores them, for the diagnostics. */
extern TsModel *ts_read_model_or_error(const char *name, bytea *bytes);
extern Datum ts_feature_names_array(const TsModel *m, bool *isnull);
extern Datum ts_base_score_array(const TsModel *m);
extern void ts_categorical_arrays(const TsModel *m, Datum *names, Datum *counts, bool *isnull);

/*
 * The entry's stored bytes again (to ship them to the GPU service); SPI
 * must be connected. ERROR when that version is no longer stored.
 */
extern bytea *ts_model_bytes(const TsCachedModel *entry);

/* Report a core error as an ERROR with the SQLSTATE of its class. */
pg_noreturn extern void ts_report_core_error(const TsError *err, const char *context);

#endif							/* TS_CATALOG_H */
