/*
 * tree_walk.c - the CPU tree walk's rows/s on one thread, without PostgreSQL
 * (issue 46): ts_quad_tree_contribs over a model's float32 rows, in blocks
 * of the plan's block_rows (TS_BENCH_BLOCK rows instead where set), best of
 * ROUNDS; OUT, when named, gets the first round's
 * contributions as doubles (row-major) to compare two builds bit for bit.
 *
 *     build/tree_walk MODEL ROWS_F32 ROWS [ROUNDS [OUT]]
 *
 * ROWS_F32 as bench/grid.py writes it (NAME.rows.f32: rows of the model's
 * features as float32). TS_BENCH_ISA forces an instruction set (avx512, avx2,
 * x86-64) instead of the CPU's widest.
 */
#include "base/ts_tool.h"
#include "core/ts_paths.h"
#include "core/ts_quad_lanes.h"
#include "core/ts_quad_tree.h"
#include "model/ts_model.h"

#include <stdio.h>
#include <stdlib.h>

/* One round over the rows: its seconds; the contributions to out when out is not NULL. */
static double
one_round(const TsModel *m, const TsQuadTreePlan *plan, const double *bias, const float *x, int rows, int block,
		  double *phi, double *scratch, FILE *out)
{
	size_t		width = (size_t) m->num_outputs * ((size_t) m->num_features + 1);
	double		t0 = ts_tool_seconds();

	for (int i = 0; i < rows; i += block)
	{
		int			n = rows - i < block ? rows - i : block;

		ts_quad_tree_contribs(m, plan, bias, x + (size_t) i * m->num_features, n, phi, scratch);
		if (out != NULL && fwrite(phi, sizeof(double), width * (size_t) n, out) != width * (size_t) n)
			return -1.0;
	}
	return ts_tool_seconds() - t0;
}

int
main(int argc, char **argv)
{
	size_t		len = 0,
				row_bytes = 0;
	char	   *buf = argc > 3 ? ts_tool_read_file(argv[1], &len) : NULL;
	char	   *rows_buf = argc > 3 ? ts_tool_read_file(argv[2], &row_bytes) : NULL;
	int			rows = argc > 3 ? atoi(argv[3]) : 0;
	int			rounds = argc > 4 ? atoi(argv[4]) : 3;
	FILE	   *out = argc > 5 ? fopen(argv[5], "wb") : NULL;
	const char *isa = getenv("TS_BENCH_ISA");
	const char *block_env = getenv("TS_BENCH_BLOCK");
	bool		isa_ok = isa == NULL || ts_quad_lanes_isa(isa) != NULL;
	TsError		err = {0};
	TsModel    *m = buf != NULL && rows_buf != NULL ? ts_model_read(buf, len, &err) : NULL;
	TsPathTable *pt;
	TsQuadTreePlan *plan;
	double	   *phi,
			   *scratch,
				best = 1e30;
	int			block;

	if (m == NULL || rows < 1 || (size_t) rows * (size_t) m->num_features * sizeof(float) > row_bytes
		|| (argc > 5 && out == NULL) || !isa_ok)
	{
		fprintf(stderr, "usage: tree_walk MODEL ROWS_F32 ROWS [ROUNDS [OUT]] (%s)\n",
				m == NULL ? err.message : !isa_ok ? "TS_BENCH_ISA names no instruction set this CPU runs"
				: "too few rows in ROWS_F32, or OUT not writable");
		return 1;
	}
	pt = ts_paths_build(m);		/* the walk takes its bias */
	plan = ts_quad_tree_plan(m);
	block = block_env != NULL ? atoi(block_env) : plan->block_rows;
	block = block < 1 || block > plan->block_rows ? plan->block_rows : block;
	phi = malloc(sizeof(double) * (size_t) m->num_outputs * ((size_t) m->num_features + 1) * (size_t) block);
	scratch = malloc(sizeof(double) * ts_quad_tree_rows_scratch_len(m, plan, block));
	for (int r = 0; r < rounds; r++)
	{
		double		s = one_round(m, plan, pt->bias, (const float *) rows_buf, rows, block, phi, scratch,
								  r == 0 ? out : NULL);

		if (s < 0.0)
		{
			fprintf(stderr, "tree_walk: could not write %s\n", argv[5]);
			return 1;
		}
		best = s < best ? s : best;
	}
	printf("%s: %d rows in blocks of %d, %d trees, %lld leaves, %s: best of %d %.3f s, %.0f rows/s\n", argv[1], rows, block,
		   m->num_trees, (long long) m->num_leaves, ts_quad_lanes_isa_in_use(), rounds, best, rows / best);
	if (out != NULL)
		fclose(out);
	ts_quad_tree_plan_free(plan);
	ts_paths_free(pt);
	ts_model_free(m);
	free(phi);
	free(scratch);
	free(buf);
	free(rows_buf);
	return 0;
}
