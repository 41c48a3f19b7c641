/*
 * ts_groups.c - importance sums per segment: open addressing over the
 * segment type's own hash and equality (the type cache's, as GROUP BY uses
 * them), so that values GROUP BY calls equal share one segment.
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "backend/ts_groups.h"

typedef struct TsGroup
{
	Datum		value;
	bool		isnull;
	uint32		hash;
	int64		rows;
	double	   *sums;
} TsGroup;

struct TsGroups
{
	Oid			type;
	Oid			collation;
	int16		typlen;
	bool		typbyval;
	FmgrInfo   *hash_fn;
	FmgrInfo   *eq_fn;
	Size		columns;
	TsGroup    *groups;			/* in order of first appearance */
	int			count;
	int			room;
	int		   *slots;			/* index into groups, -1 empty; a power of two */
	int			num_slots;
};

TsGroups *
ts_groups_create(Oid type, Size columns)
{
	TsGroups   *g = palloc0(sizeof(TsGroups));
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_HASH_PROC_FINFO | TYPECACHE_EQ_OPR_FINFO);

	if (!OidIsValid(tc->hash_proc) || !OidIsValid(tc->eq_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("segments of type %s cannot be grouped: the type has no hash function",
						format_type_be(type))));
	g->type = type;
	g->collation = get_typcollation(type);
	get_typlenbyval(type, &g->typlen, &g->typbyval);
	g->hash_fn = &tc->hash_proc_finfo;
	g->eq_fn = &tc->eq_opr_finfo;
	g->columns = columns;
	g->room = 16;
	g->groups = palloc(sizeof(TsGroup) * g->room);
	g->num_slots = 32;
	g->slots = palloc(sizeof(int) * g->num_slots);
	memset(g->slots, -1, sizeof(int) * g->num_slots);
	return g;
}

/* Hash of a segment value (NULL hashes to 0, as GROUP BY's hash does). */
static uint32
group_hash(const TsGroups *g, Datum value, bool isnull)
{
	if (isnull)
		return 0;
	return DatumGetUInt32(FunctionCall1Coll(g->hash_fn, g->collation, value));
}

/* Whether segment i holds this value. */
static bool
group_equal(const TsGroups *g, const TsGroup *e, Datum value, bool isnull, uint32 hash)
{
	if (e->isnull || isnull)
		return e->isnull && isnull;
	return e->hash == hash &&
		DatumGetBool(FunctionCall2Coll(g->eq_fn, g->collation, e->value, value));
}

/* Double the slots and place every segment again. */
static void
grow_slots(TsGroups *g)
{
	pfree(g->slots);
	g->num_slots *= 2;
	g->slots = palloc_extended(sizeof(int) * g->num_slots, MCXT_ALLOC_HUGE);
	memset(g->slots, -1, sizeof(int) * g->num_slots);
	for (int i = 0; i < g->count; i++)
	{
		uint32		s = g->groups[i].hash & (g->num_slots - 1);

		while (g->slots[s] >= 0)
			s = (s + 1) & (g->num_slots - 1);
		g->slots[s] = i;
	}
}

/* Append a new segment (a copy of the value) in slot s. */
static TsGroup *
add_group(TsGroups *g, uint32 s, Datum value, bool isnull, uint32 hash)
{
	TsGroup    *e;

	if (g->count == g->room)
	{
		g->room *= 2;
		g->groups = repalloc_huge(g->groups, sizeof(TsGroup) * g->room);
	}
	e = &g->groups[g->count];
	e->isnull = isnull;
	e->value = isnull ? (Datum) 0 : datumCopy(value, g->typbyval, g->typlen);
	e->hash = hash;
	e->rows = 0;
	e->sums = palloc0(sizeof(double) * 2 * Max(g->columns, 1));
	g->slots[s] = g->count++;
	return e;
}

double *
ts_groups_find(TsGroups *g, Datum value, bool isnull, int64 **rows)
{
	uint32		hash = group_hash(g, value, isnull);
	uint32		s = hash & (g->num_slots - 1);
	TsGroup    *e;

	for (; g->slots[s] >= 0; s = (s + 1) & (g->num_slots - 1))
	{
		e = &g->groups[g->slots[s]];
		if (group_equal(g, e, value, isnull, hash))
		{
			*rows = &e->rows;
			return e->sums;
		}
	}
	e = add_group(g, s, value, isnull, hash);
	if (2 * g->count > g->num_slots)
		grow_slots(g);			/* keeps the table at most half full */
	*rows = &e->rows;
	return e->sums;
}

int
ts_groups_count(const TsGroups *g)
{
	return g->count;
}

double *
ts_groups_get(const TsGroups *g, int i, Datum *value, bool *isnull, int64 *rows)
{
	*value = g->groups[i].value;
	*isnull = g->groups[i].isnull;
	*rows = g->groups[i].rows;
	return g->groups[i].sums;
}
