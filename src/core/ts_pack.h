/*
 * ts_pack.h - bin packing of path-table paths into warps of 32 lanes
 * (GPUTreeShap's step 3). A path of n elements takes n consecutive lanes of
 * one bin and never straddles two bins; paths longer than a bin are listed
 * apart and explained by the CPU route.
 */
#ifndef TS_PACK_H
#define TS_PACK_H

#include "core/ts_paths.h"

#define TS_PACK_LANES 32

typedef enum TsPackAlgo
{
	TS_PACK_NEXT_FIT,			/* paths in table order, a new bin whenever one does not fit */
	TS_PACK_FIRST_FIT_DECREASING,	/* longest first, into the lowest-numbered bin with room */
	TS_PACK_BEST_FIT_DECREASING /* longest first, into the bin with least room that fits */
} TsPackAlgo;

typedef struct TsPacking
{
	TsPackAlgo	algo;
	int64_t		num_bins;
	int64_t    *bin_start;		/* num_bins + 1 offsets into paths */
	int64_t    *paths;			/* path indices, bin by bin, each bin's paths in lane order */
	int64_t		packed_elements;	/* sum of packed path lengths */
	int64_t		num_long;		/* paths longer than a bin */
	int64_t    *long_paths;
} TsPacking;

extern TsPacking *ts_pack_paths(const TsPathTable *pt, TsPackAlgo algo);
extern void ts_pack_free(TsPacking *pk);

/* The paths longer than a bin, in table order (what the CPU route explains), and their count. */
extern int64_t *ts_pack_long_paths(const TsPathTable *pt, int64_t *count);

/* Share of lanes that hold a path element: sum of lengths / (32 * bins). */
extern double ts_pack_utilisation(const TsPacking *pk);

extern const char *ts_pack_algo_name(TsPackAlgo algo);

#endif							/* TS_PACK_H */
