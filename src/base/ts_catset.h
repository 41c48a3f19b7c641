/*
 * ts_catset.h - category sets of categorical splits, stored in a pool of
 * uint32 words: word 0 is the number of bits n, word 1 says whether values
 * outside 0..n-1 (negative, or n and above) belong, then ceil(n / 32) words
 * of bits. A present value x is category (int) x; 2.7 is category 2, and
 * -0.5 is outside (readers whose library truncates it to 0 map it first).
 */
#ifndef TS_CATSET_H
#define TS_CATSET_H

#include <stdbool.h>
#include <stdint.h>

#define TS_MAX_CATEGORIES	(1 << 20)	/* bits of one set */

/* Words a set of nbits categories takes in the pool, header included. */
static inline int64_t
ts_catset_len(uint32_t nbits)
{
	return 2 + ((int64_t) nbits + 31) / 32;
}

/* Whether category x (a present value, not NaN) is in the set at set. */
static inline bool
ts_catset_contains(const uint32_t *set, float x)
{
	uint32_t	c;

	if (!(x >= 0.0f) || x >= (float) set[0])
		return set[1] != 0;
	c = (uint32_t) x;
	return (set[2 + c / 32] >> (c % 32)) & 1u;
}

/* Membership of category c >= 0 (any size) in a set. */
static inline bool
ts_catset_has(const uint32_t *set, int64_t c)
{
	if (c >= (int64_t) set[0])
		return set[1] != 0;
	return (set[2 + c / 32] >> (c % 32)) & 1u;
}

/* Whether offset names a well-formed set inside a pool of len words. */
static inline bool
ts_catset_valid(const uint32_t *pool, int64_t len, int64_t offset)
{
	return offset >= 0 && offset + 2 <= len && pool[offset] <= TS_MAX_CATEGORIES &&
		pool[offset + 1] <= 1 && offset + ts_catset_len(pool[offset]) <= len;
}

#endif							/* TS_CATSET_H */
