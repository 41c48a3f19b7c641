/*
 * interrupt_cost.c - what the core's cancellation points cost on the CPU
 * path: SHAP values of the same rows with no check installed and with a check
 * as cheap as PostgreSQL's CHECK_FOR_INTERRUPTS (a volatile flag read),
 * alternated over several rounds in one run; prints the best time of each
 * and their ratio. Two timings of the same work differ by a few per cent
 * from run to run, more than the checks can cost, so it also bounds their
 * cost directly: the time of one check (100 million calls through the core's
 * hook), times the checks a row makes, over the time of a row.
 *     bench/build/interrupt_cost MODEL [ROWS] [ROUNDS]
 */
#include "base/ts_tool.h"
#include "core/ts_shap_cpu.h"
#include "model/ts_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int interrupt_pending = 0;

/* The shape of CHECK_FOR_INTERRUPTS: read a volatile flag, act only when set. */
static void
check_like_postgres(void)
{
	if (interrupt_pending)
		abort();
}

/* Seconds for SHAP values of rows rows (quadrature, the CPU default). */
static double
time_rows(const TsPathTable *pt, int rows, double *phi, double *scratch, float *x)
{
	double		t0 = ts_tool_seconds();

	for (int r = 0; r < rows; r++)
	{
		for (int32_t j = 0; j < pt->num_features; j++)
			x[j] = (float) ((r * 31 + j * 17) % 100) / 10.0f;
		ts_cpu_shap_row(pt, TS_SHAP_QUADRATURE, x, phi, scratch);
	}
	return ts_tool_seconds() - t0;
}

/* Nanoseconds per ts_check_interrupts() with the check installed. */
static double
check_ns(void)
{
	const long	calls = 100000000L;
	double		t0;

	ts_use_interrupt_check(check_like_postgres);
	t0 = ts_tool_seconds();
	for (long i = 0; i < calls; i++)
		ts_check_interrupts();
	return (ts_tool_seconds() - t0) * 1e9 / (double) calls;
}

int
main(int argc, char **argv)
{
	size_t		len;
	char	   *buf = argc > 1 ? ts_tool_read_file(argv[1], &len) : NULL;
	int			rows = argc > 2 ? atoi(argv[2]) : 2000;
	int			rounds = argc > 3 ? atoi(argv[3]) : 7;
	TsError		err = {0};
	TsModel    *m = buf ? ts_model_read(buf, len, &err) : NULL;
	TsPathTable *pt;
	double		best[2] = {1e30, 1e30};
	double	   *phi,
			   *scratch;
	float	   *x;

	if (m == NULL)
	{
		fprintf(stderr, "usage: interrupt_cost MODEL [ROWS] [ROUNDS] (%s)\n", err.message);
		return 1;
	}
	pt = ts_paths_build(m);
	phi = malloc(sizeof(double) * (size_t) pt->num_outputs * (pt->num_features + 1));
	scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));
	x = malloc(sizeof(float) * pt->num_features);
	for (int round = 0; round < rounds; round++)
		for (int i = 0; i < 2; i++)
		{
			int			with = (round + i) % 2;	/* alternate which goes first */
			double		s;

			ts_use_interrupt_check(with ? check_like_postgres : NULL);
			s = time_rows(pt, rows, phi, scratch, x);
			best[with] = s < best[with] ? s : best[with];
		}
	{
		/* ts_cpu_shap_row checks once every TS_INTERRUPT_WORK units of its paths' work */
		double		work = 0.0;
		double		checks;

		for (int64_t p = 0; p < pt->num_paths; p++)
			work += (double) ts_path_work(pt, p);
		checks = (double) rows * work / (double) TS_INTERRUPT_WORK;
		double		ns = check_ns();

		printf("{\"paths\": %lld, \"rows\": %d, \"rounds\": %d, \"no_check_s\": %.4f, \"check_s\": %.4f, "
			   "\"ratio\": %.4f, \"check_ns\": %.2f, \"checks\": %.0f, \"cost_bound\": %.2e}\n",
			   (long long) pt->num_paths, rows, rounds, best[0], best[1], best[1] / best[0], ns, checks,
			   checks * ns * 1e-9 / best[0]);
	}
	return 0;
}
