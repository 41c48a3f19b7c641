/*
 * ts_quad_lanes.c - quadrature SHAP of TS_QUAD_LANES rows at once (see
 * ts_quad_lanes.h). Per path: the rows' one fractions (which rows satisfy
 * each element) into lanes, then for each node the prefix and suffix
 * products of ts_quad_path in every lane, then each live lane's shares
 * added to its row. The lanes are GCC vector types; the same body is built
 * for AVX-512, AVX2 (both with FMA) and plain x86-64, and the widest the CPU
 * has is taken.
 */
#include "core/ts_quad_lanes.h"

#include "core/ts_lane_fractions.h"
#include "core/ts_quadrature.h"
#include "core/ts_shap_cpu.h"

#include <string.h>

/*
 * The path's lanes, TS_QUAD_LANES doubles per element each: one fractions,
 * factors, prefix products, sums. Plain doubles, read and written a lane at
 * a time where rows differ and a vector at a time in the products.
 */
typedef struct LaneArrays
{
	double	   *o;
	double	   *f;
	double	   *pre;
	double	   *f1;				/* the second node's factors and prefixes */
	double	   *pre1;
	double	   *sum;
	double	   *nodes;			/* nodes and weights of long paths */
} LaneArrays;

typedef void (*LanesFn) (const TsPathTable *pt, const float *x, int32_t nrows, double *phi,
						 const LaneArrays *a);

/*
 * The block's evaluation (ts_quad_lanes_body.h) for each instruction set,
 * each with vectors of its native width: GCC builds the wider ones under
 * their target; other compilers build the plain one alone.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
#define LANES_NAME lanes_avx512
#define LANES_WIDTH 8
#include "core/ts_quad_lanes_body.h"
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define LANES_NAME lanes_avx2
#define LANES_WIDTH 4
#include "core/ts_quad_lanes_body.h"
#pragma GCC pop_options
#define TS_LANES_WIDE 1
#endif
#define LANES_NAME lanes_plain
#define LANES_WIDTH 2
#include "core/ts_quad_lanes_body.h"

/* The instruction sets, widest first. */
static const struct
{
	const char *name;
	LanesFn		fn;
}			isas[] = {
#ifdef TS_LANES_WIDE
	{"avx512", lanes_avx512},
	{"avx2", lanes_avx2},
#endif
	{"x86-64", lanes_plain}
};

/* Index into isas of the set in use; -1 until the first block chooses. */
static int	isa_chosen = -1;

/* Whether this CPU runs instruction set i. */
static bool
cpu_has(int i)
{
	(void) i;
#ifdef TS_LANES_WIDE
	__builtin_cpu_init();
	if (strcmp(isas[i].name, "avx512") == 0)
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
			__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (strcmp(isas[i].name, "avx2") == 0)
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
	return true;
}

/* Choose the widest instruction set the CPU runs, or the one forced by name; its name, NULL if unavailable. */
const char *
ts_quad_lanes_isa(const char *force)
{
	int			n = (int) (sizeof(isas) / sizeof(isas[0]));
	int			chosen = n - 1;

	for (int i = n - 1; i >= 0; i--)
		if (force != NULL ? strcmp(isas[i].name, force) == 0 && cpu_has(i) : cpu_has(i))
			chosen = i;
	if (force != NULL && strcmp(isas[chosen].name, force) != 0)
		return NULL;
	__atomic_store_n(&isa_chosen, chosen, __ATOMIC_RELAXED);
	return isas[chosen].name;
}

/* The instruction set in use, the CPU's widest unless one was forced. */
const char *
ts_quad_lanes_isa_in_use(void)
{
	int			isa = __atomic_load_n(&isa_chosen, __ATOMIC_RELAXED);

	return isa < 0 ? ts_quad_lanes_isa(NULL) : isas[isa].name;
}

/* Scratch doubles of one block. */
size_t
ts_quad_rows_scratch_len(const TsPathTable *pt)
{
	size_t		len = (size_t) pt->max_path_len + 1;

	/* six lane arrays (from a 64-byte line) and the nodes of long paths */
	return TS_LANE_ALIGN_SLACK + 6 * len * TS_QUAD_LANES + 2 * (len / 2 + 1);
}

/* A block's contributions, bias included, on the chosen instruction set. */
void
ts_quad_rows(const TsPathTable *pt, const float *x, int32_t nrows, double *phi, double *scratch)
{
	size_t		len = (size_t) pt->max_path_len + 1;
	size_t		width = (size_t) pt->num_features + 1;
	LaneArrays	a;
	int			isa = __atomic_load_n(&isa_chosen, __ATOMIC_RELAXED);

	if (isa < 0)
	{
		(void) ts_quad_lanes_isa(NULL);
		isa = __atomic_load_n(&isa_chosen, __ATOMIC_RELAXED);
	}
	a.o = ts_lane_align(scratch);
	a.f = a.o + len * TS_QUAD_LANES;
	a.pre = a.f + len * TS_QUAD_LANES;
	a.f1 = a.pre + len * TS_QUAD_LANES;
	a.pre1 = a.f1 + len * TS_QUAD_LANES;
	a.sum = a.pre1 + len * TS_QUAD_LANES;
	a.nodes = a.sum + len * TS_QUAD_LANES;
	memset(phi, 0, sizeof(double) * (size_t) nrows * pt->num_outputs * width);
	isas[isa].fn(pt, x, nrows, phi, &a);
	for (int32_t l = 0; l < nrows; l++)
		for (int32_t k = 0; k < pt->num_outputs; k++)
			phi[((size_t) l * pt->num_outputs + k) * width + width - 1] = pt->bias[k];
}
