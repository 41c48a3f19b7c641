/*
 * ts_alloc_tracked.c - tracked allocation (ts_core.h): a thread that may be
 * stopped halfway through the core's work (the GPU service's planner, which
 * jumps out of a cancelled plan) remembers every block it holds in a hash
 * set of its own, so the jump leaks nothing. The blocks are plain malloc
 * blocks: whoever keeps them frees them with free.
 */
#include "base/ts_core.h"

#include <stdlib.h>

#define TOMBSTONE ((void *) 1)

/* Open addressing over block addresses; its own storage is untracked malloc. */
typedef struct TrackedSet
{
	void	  **slots;
	size_t		cap;			/* a power of two, or 0 */
	size_t		filled;			/* live blocks and tombstones */
	size_t		live;
	TsExhausted on_exhausted;
} TrackedSet;

static __thread TrackedSet tracked;

/* The first slot to probe for block p. */
static size_t
home(const void *p, size_t cap)
{
	uint64_t	h = (uint64_t) (uintptr_t) p * UINT64_C(0x9E3779B97F4A7C15);

	return (size_t) (h >> 32) & (cap - 1);
}

/* Put p in a free slot of slots (cap of them); whether that slot was empty, not a tombstone. */
static bool
place(void **slots, size_t cap, void *p)
{
	size_t		i = home(p, cap);

	while (slots[i] != NULL && slots[i] != TOMBSTONE)
		i = (i + 1) & (cap - 1);
	if (slots[i] == TOMBSTONE)
	{
		slots[i] = p;
		return false;
	}
	slots[i] = p;
	return true;
}

/*
 * Remember block p. At half full (tombstones count) the set is rebuilt
 * without tombstones: twice as large when a quarter or more is live, else
 * the same size, so its size follows the live blocks, not the allocations.
 */
static void
remember(void *p)
{
	if ((tracked.filled + 1) * 2 > tracked.cap)
	{
		size_t		cap = tracked.cap < 64 ? 64 :
			(tracked.live + 1) * 4 > tracked.cap ? tracked.cap * 2 : tracked.cap;
		void	  **slots = calloc(cap, sizeof(void *));

		if (slots == NULL)
		{
			free(p);
			tracked.on_exhausted(cap * sizeof(void *));
		}
		tracked.filled = 0;
		for (size_t i = 0; i < tracked.cap; i++)
			if (tracked.slots[i] != NULL && tracked.slots[i] != TOMBSTONE)
			{
				place(slots, cap, tracked.slots[i]);
				tracked.filled++;
			}
		free(tracked.slots);
		tracked.slots = slots;
		tracked.cap = cap;
	}
	if (place(tracked.slots, tracked.cap, p))
		tracked.filled++;
	tracked.live++;
}

/* Forget block p (a tombstone keeps later probes going). */
static void
forget(void *p)
{
	if (tracked.cap == 0)
		return;
	for (size_t i = home(p, tracked.cap); tracked.slots[i] != NULL; i = (i + 1) & (tracked.cap - 1))
		if (tracked.slots[i] == p)
		{
			tracked.slots[i] = TOMBSTONE;
			tracked.live--;
			return;
		}
}

/* A block from malloc or calloc, remembered; exhaustion jumps out. */
static void *
tracked_block(void *p, size_t size)
{
	if (p == NULL)
		tracked.on_exhausted(size);
	remember(p);
	return p;
}

/* Allocate a remembered block. */
static void *
tracked_alloc(size_t size)
{
	return tracked_block(malloc(size == 0 ? 1 : size), size);
}

/* Allocate a remembered zeroed block. */
static void *
tracked_alloc0(size_t size)
{
	return tracked_block(calloc(1, size == 0 ? 1 : size), size);
}

/* Resize a remembered block; on exhaustion the old block stays remembered. */
static void *
tracked_realloc(void *ptr, size_t size)
{
	void	   *p;

	if (ptr == NULL)
		return tracked_alloc(size);
	forget(ptr);
	p = realloc(ptr, size == 0 ? 1 : size);
	if (p == NULL)
	{
		remember(ptr);			/* still the caller's, and freed with the rest */
		tracked.on_exhausted(size);
	}
	remember(p);
	return p;
}

/* Free a remembered block. */
static void
tracked_free(void *ptr)
{
	forget(ptr);
	free(ptr);
}

static const TsAllocator tracked_allocator = {tracked_alloc, tracked_alloc0, tracked_realloc, tracked_free};

void
ts_tracked_begin(TsExhausted on_exhausted)
{
	tracked = (TrackedSet) {.on_exhausted = on_exhausted};
	ts_use_allocator(&tracked_allocator);
}

void
ts_tracked_end(bool free_all)
{
	for (size_t i = 0; free_all && i < tracked.cap; i++)
		if (tracked.slots[i] != NULL && tracked.slots[i] != TOMBSTONE)
			free(tracked.slots[i]);
	free(tracked.slots);
	tracked = (TrackedSet) {0};
	ts_use_allocator(&ts_malloc_allocator);
}
