/*
 * ts_cityhash.c - CityHash64 (version 1, Pike and Alakuijala, 2011), the
 * hash CatBoost gives a category name: a one-hot split of a CatBoost model
 * compares the low 32 bits of the row's category hash with its value.
 * Written from the published algorithm; little-endian loads.
 */
#include "model/ts_model.h"

#include <string.h>

#define K0 0xc3a5c85c97cb3127ULL
#define K1 0xb492b66fbe98f273ULL
#define K2 0x9ae16a3b2f90404fULL
#define K3 0xc949d7c7509e6557ULL

typedef struct
{
	uint64_t	a;
	uint64_t	b;
} Pair64;

/* Little-endian 64- and 32-bit loads at any alignment. */
static uint64_t
load64(const unsigned char *p)
{
	uint64_t	v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t
load32(const unsigned char *p)
{
	return (uint64_t) p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16 | (uint64_t) p[3] << 24;
}

/* Rotate right by s bits (0 allowed). */
static uint64_t
rotr(uint64_t v, int s)
{
	return s == 0 ? v : (v >> s) | (v << (64 - s));
}

static uint64_t
shift_mix(uint64_t v)
{
	return v ^ (v >> 47);
}

/* Two words to one (Murmur-inspired mixing of a 128-bit value). */
static uint64_t
mix16(uint64_t u, uint64_t v)
{
	const uint64_t mul = 0x9ddfea08eb382d69ULL;
	uint64_t	a = (u ^ v) * mul;
	uint64_t	b;

	a ^= a >> 47;
	b = (v ^ a) * mul;
	b ^= b >> 47;
	return b * mul;
}

static uint64_t
hash_upto16(const unsigned char *s, size_t n)
{
	if (n > 8)
	{
		uint64_t	a = load64(s);
		uint64_t	b = load64(s + n - 8);

		return mix16(a, rotr(b + n, (int) n)) ^ b;
	}
	if (n >= 4)
		return mix16(n + (load32(s) << 3), load32(s + n - 4));
	if (n > 0)
	{
		uint32_t	y = (uint32_t) s[0] + ((uint32_t) s[n >> 1] << 8);
		uint32_t	z = (uint32_t) n + ((uint32_t) s[n - 1] << 2);

		return shift_mix(y * K2 ^ z * K3) * K2;
	}
	return K2;
}

static uint64_t
hash_17to32(const unsigned char *s, size_t n)
{
	uint64_t	a = load64(s) * K1;
	uint64_t	b = load64(s + 8);
	uint64_t	c = load64(s + n - 8) * K2;
	uint64_t	d = load64(s + n - 16) * K0;

	return mix16(rotr(a - b, 43) + rotr(c, 30) + d, a + rotr(b ^ K3, 20) - c + n);
}

/* 16 bytes of state from 32 bytes of input and two seeds. */
static Pair64
weak32(const unsigned char *s, uint64_t a, uint64_t b)
{
	uint64_t	w = load64(s),
				x = load64(s + 8),
				y = load64(s + 16),
				z = load64(s + 24);
	uint64_t	c;

	a += w;
	b = rotr(b + a + z, 21);
	c = a;
	a += x + y;
	b += rotr(a, 44);
	return (Pair64) {a + z, b + c};
}

static uint64_t
hash_33to64(const unsigned char *s, size_t n)
{
	uint64_t	z = load64(s + 24);
	uint64_t	a = load64(s) + (n + load64(s + n - 16)) * K0;
	uint64_t	b = rotr(a + z, 52);
	uint64_t	c = rotr(a, 37);
	uint64_t	vf,
				vs,
				wf,
				ws;

	a += load64(s + 8);
	c += rotr(a, 7);
	a += load64(s + 16);
	vf = a + z;
	vs = b + rotr(a, 31) + c;
	a = load64(s + 16) + load64(s + n - 32);
	z = load64(s + n - 8);
	b = rotr(a + z, 52);
	c = rotr(a, 37);
	a += load64(s + n - 24);
	c += rotr(a, 7);
	a += load64(s + n - 16);
	wf = a + z;
	ws = b + rotr(a, 31) + c;
	return shift_mix(shift_mix((vf + ws) * K2 + (wf + vs) * K0) * K0 + vs) * K2;
}

/* CityHash64 of s[0 .. n). */
uint64_t
ts_cityhash64(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *) str;
	uint64_t	x,
				y,
				z,
				t;
	Pair64		v,
				w;

	if (n <= 16)
		return hash_upto16(s, n);
	if (n <= 32)
		return hash_17to32(s, n);
	if (n <= 64)
		return hash_33to64(s, n);
	/* longer: the tail first, then 64-byte blocks from the start */
	x = load64(s);
	y = load64(s + n - 16) ^ K1;
	z = load64(s + n - 56) ^ K0;
	v = weak32(s + n - 64, n, y);
	w = weak32(s + n - 32, n * K1, K0);
	z += shift_mix(v.b) * K1;
	x = rotr(z + x, 39) * K1;
	y = rotr(y, 33) * K1;
	for (size_t left = (n - 1) & ~(size_t) 63; left > 0; left -= 64, s += 64)
	{
		x = rotr(x + y + v.a + load64(s + 16), 37) * K1;
		y = rotr(y + v.b + load64(s + 48), 42) * K1;
		x ^= w.b;
		y ^= v.a;
		z = rotr(z ^ w.a, 33);
		v = weak32(s, v.b * K1, x + w.a);
		w = weak32(s + 32, z + w.b, y);
		t = z;
		z = x;
		x = t;
	}
	return mix16(mix16(v.a, w.a) + shift_mix(y) * K1 + z, mix16(v.b, w.b) + x);
}

/* CatBoost's category hash: the low 32 bits of CityHash64, as a signed value. */
int32_t
ts_catboost_category_hash(const char *s, size_t n)
{
	return (int32_t) (uint32_t) (ts_cityhash64(s, n) & 0xffffffffu);
}
