/*
 * ts_quadrature.c - the CPU SHAP path by Gauss-Legendre quadrature (see
 * ts_quadrature.h). Per (path, row): n = ceil(d / 2) nodes, and at each node
 * one pass of prefix products and one of suffix products over the d
 * factors, so every element's product over the others costs two
 * multiplications: about 1.5 d^2 multiply-adds, none of them divisions.
 */
#include "core/ts_quadrature.h"

#include "core/ts_shap_cpu.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* nodes of up to TS_QUAD_CACHED points (paths of 128 features) are computed once and kept */
static double quad_x[TS_QUAD_CACHED * (TS_QUAD_CACHED + 1) / 2];
static double quad_w[TS_QUAD_CACHED * (TS_QUAD_CACHED + 1) / 2];
static pthread_once_t quad_once = PTHREAD_ONCE_INIT;

/* Legendre polynomial P_n(x) and its derivative, by the three-term recurrence. */
static void
legendre(int32_t n, double x, double *p, double *dp)
{
	double		p0 = 1.0;
	double		p1 = x;

	for (int32_t k = 2; k <= n; k++)
	{
		double		p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;

		p0 = p1;
		p1 = p2;
	}
	*p = n == 0 ? 1.0 : p1;
	*dp = n * (x * p1 - p0) / (x * x - 1.0);
}

void
ts_gauss_legendre(int32_t n, double *x, double *w)
{
	for (int32_t i = 0; i < n; i++)
	{
		/* Newton from the classic estimate of the i-th root of P_n on [-1, 1] */
		double		r = cos(M_PI * (i + 0.75) / (n + 0.5));
		double		p,
					dp;

		for (int iter = 0; iter < 100; iter++)
		{
			double		step;

			legendre(n, r, &p, &dp);
			step = p / dp;
			r -= step;
			if (fabs(step) < 1e-16)
				break;
		}
		legendre(n, r, &p, &dp);
		x[i] = 0.5 * (1.0 - r);
		w[i] = 1.0 / ((1.0 - r * r) * dp * dp);	/* 2 / ((1 - r^2) P'^2), halved for [0, 1] */
	}
}

/* Every kept set of nodes, once per process (threads of a row pool may ask first at once). */
static void
fill_kept_nodes(void)
{
	for (int32_t n = 1; n <= TS_QUAD_CACHED; n++)
		ts_gauss_legendre(n, quad_x + (size_t) n * (n - 1) / 2, quad_w + (size_t) n * (n - 1) / 2);
}

/* Nodes and weights for n points: the kept ones, or computed into scratch (2 n doubles). */
void
ts_quad_nodes(int32_t n, const double **x, const double **w, double *scratch)
{
	if (n <= TS_QUAD_CACHED)
	{
		size_t		off = (size_t) n * (n - 1) / 2;

		pthread_once(&quad_once, fill_kept_nodes);
		*x = quad_x + off;
		*w = quad_w + off;
		return;
	}
	ts_gauss_legendre(n, scratch, scratch + n);
	*x = scratch;
	*w = scratch + n;
}

size_t
ts_quad_scratch_len(const TsPathTable *pt)
{
	size_t		len = (size_t) pt->max_path_len + 1;

	/* z, o, factor, prefix, sum; nodes and weights of long paths */
	return 5 * len + 2 * (len / 2 + 1);
}

void
ts_quad_path(const TsPathTable *pt, int64_t p, const float *row, double *phi, double *scratch)
{
	int64_t		start = pt->path_start[p];
	int32_t		len = (int32_t) (pt->path_start[p + 1] - start);
	int32_t		d = len - 1;	/* unique features; element 0 is the root */
	double	   *z = scratch;
	double	   *o = z + len;
	double	   *f = o + len;
	double	   *pre = f + len;
	double	   *sum = pre + len;
	const double *x,
			   *w;

	if (d < 1 || !ts_shap_fractions(pt, p, row, z, o))
		return;
	ts_quad_nodes((d + 1) / 2, &x, &w, sum + len);
	memset(sum, 0, sizeof(double) * (size_t) len);
	for (int32_t q = 0; q < (d + 1) / 2; q++)
	{
		double		t = x[q];
		double		acc = 1.0;

		for (int32_t e = 1; e <= d; e++)
		{
			f[e] = z[e] + t * (o[e] - z[e]);
			pre[e] = acc;
			acc *= f[e];
		}
		acc = w[q];
		for (int32_t e = d; e >= 1; e--)
		{
			sum[e] += pre[e] * acc;
			acc *= f[e];
		}
	}
	for (int32_t e = 1; e <= d; e++)
		ts_shap_add_share(pt, p, pt->feature[start + e], (o[e] - z[e]) * sum[e], phi);
}
