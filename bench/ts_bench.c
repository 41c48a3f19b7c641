/*
 * ts_bench.c - kernel-level benchmark of the compute core on a GPU machine,
 * without PostgreSQL:
 *   ts_bench MODEL.json ROWS.f32 NROWS [REPS] [CHECK_ROWS] [INTERACTION_ROWS]
 * ROWS.f32 holds NROWS x num_features float32 values, row-major, NaN missing.
 * Prints one JSON object: model shape; for NF/FFD/BFD the packing time,
 * utilisation and bins; kernel-only rows/s (data already on the GPU) in
 * double and single precision; the worst deviation from the CPU double path
 * over CHECK_ROWS rows, relative to max(1, |margin|); and whether two runs
 * gave bitwise-identical output. With INTERACTION_ROWS, also the Shapley
 * interaction kernel (double) over that many rows, checked against the CPU
 * on two rows, and the feature-importance job over NROWS rows. Last, the
 * prediction kernel over TS_BENCH_PREDICT_ROWS rows (default 1,000,000: the
 * NROWS rows repeated), whose margins must equal the host's bit for bit.
 */
#include "gpu/ts_gpu.h"
#include "gpu/ts_gpu_quad.h"
#include "core/ts_interactions.h"
#include "model/ts_model.h"
#include "core/ts_shap_cpu.h"
#include "base/ts_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Print packing time, utilisation and bins of one algorithm. */
static void
report_packing(const TsPathTable *pt, TsPackAlgo algo)
{
	double		t0 = ts_tool_seconds();
	TsPacking  *pk = ts_pack_paths(pt, algo);
	double		ms = (ts_tool_seconds() - t0) * 1e3;

	printf("\"pack_%s\": {\"ms\": %.3f, \"utilisation\": %.6f, \"bins\": %lld}, ",
		   ts_pack_algo_name(algo), ms, ts_pack_utilisation(pk), (long long) pk->num_bins);
	ts_pack_free(pk);
}

/* Worst |gpu - cpu| / max(1, |margin|) over the first check_rows rows. */
static double
max_deviation(const TsPathTable *pt, const float *x, int32_t check_rows, const double *gpu)
{
	size_t		width = (size_t) pt->num_features + 1;
	double	   *cpu = malloc(sizeof(double) * width * pt->num_outputs);
	double	   *scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));
	double		worst = 0.0;

	for (int32_t r = 0; r < check_rows; r++)
	{
		const double *g = gpu + (size_t) r * width * pt->num_outputs;

		ts_cpu_shap_row(pt, TS_SHAP_TREESHAP, x + (size_t) r * pt->num_features, cpu, scratch);
		for (int32_t k = 0; k < pt->num_outputs; k++)
		{
			double		margin = 0.0;

			for (size_t j = 0; j < width; j++)
				margin += cpu[k * width + j];
			for (size_t j = 0; j < width; j++)
			{
				double		dev = fabs(g[k * width + j] - cpu[k * width + j]) / fmax(1.0, fabs(margin));

				if (!(dev <= worst))
					worst = dev;
			}
		}
	}
	free(cpu);
	free(scratch);
	return worst;
}

/* Time one kernel family and precision, check it against the CPU and against a second run. */
static int
report_kernel(const TsGpuPlan *plan, const float *x, int32_t nrows, int reps, int32_t check_rows,
			  TsGpuAlgorithm algorithm, TsGpuPrecision precision, const char *name)
{
	TsGpuJob	job = {.kind = TS_GPU_JOB_SHAP, .algorithm = algorithm};
	const TsPathTable *pt = plan->paths;
	size_t		count = (size_t) nrows * pt->num_outputs * (pt->num_features + 1);
	double	   *first = malloc(sizeof(double) * count);
	double	   *second = malloc(sizeof(double) * count);
	double	   *scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));
	double		seconds = 0.0,
				again = 0.0;
	char		msg[256] = "";
	bool		identical;

	if (ts_gpu_time_kernel(plan->table, x, nrows, precision, &job, reps, &seconds, first, msg, sizeof(msg)) != TS_GPU_OK ||
		ts_gpu_time_kernel(plan->table, x, nrows, precision, &job, 0, &again, second, msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "ts_bench: %s\n", msg);
		return 1;
	}
	identical = memcmp(first, second, sizeof(double) * count) == 0;
	ts_cpu_shap_add_paths_rows(pt, TS_SHAP_TREESHAP, plan->packing->long_paths, plan->packing->num_long,
							   x, check_rows, first, scratch);
	printf("\"kernel_%s_rows_per_s\": %.1f, \"kernel_%s_seconds\": %.6f, "
		   "\"max_dev_%s\": %.3e, \"deterministic_%s\": %s, ",
		   name, nrows / seconds, name, seconds, name, max_deviation(pt, x, check_rows, first),
		   name, identical ? "true" : "false");
	free(first);
	free(second);
	free(scratch);
	return 0;
}

/*
 * Time the Shapley interaction kernel over nrows rows (all features selected)
 * and compare two rows with the CPU; time the importance job over
 * importance_rows rows.
 */
static int
report_interactions(const TsGpuPlan *plan, const float *x, int32_t nrows, int32_t importance_rows,
					int reps)
{
	const TsPathTable *pt = plan->paths;
	TsFeatureSelection *sel = ts_selection_make(pt->num_features, NULL, 0);
	TsGpuJob	job = {.kind = TS_GPU_JOB_SHAPLEY_INTERACTIONS, .feature_slot = sel->slot, .selected = sel->count,
		.algorithm = TS_GPU_ALG_TREESHAP};
	TsGpuJob	importance = {.kind = TS_GPU_JOB_IMPORTANCE, .algorithm = TS_GPU_ALG_QUADRATURE};
	size_t		width = (size_t) pt->num_outputs * sel->count * pt->num_features;
	int32_t		check = nrows < 2 ? nrows : 2;
	double	   *gpu = malloc(sizeof(double) * width * nrows);
	double	   *cpu = malloc(sizeof(double) * width);
	double	   *scratch = malloc(sizeof(double) * ts_interactions_scratch_len(pt));
	double		seconds = 0.0,
				imp_seconds = 0.0,
				worst = 0.0;
	char		msg[256] = "";

	if (ts_gpu_time_kernel(plan->table, x, nrows, TS_GPU_FLOAT64, &job, reps, &seconds, gpu, msg,
						   sizeof(msg)) != TS_GPU_OK ||
		ts_gpu_time_kernel(plan->table, x, importance_rows, TS_GPU_FLOAT64, &importance, reps,
						   &imp_seconds, NULL, msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "ts_bench: %s\n", msg);
		return 1;
	}
	ts_interactions_add_paths_rows(pt, plan->packing->long_paths, plan->packing->num_long, x, check,
								   TS_INTERACTION_SHAPLEY, sel, gpu, scratch);
	for (int32_t r = 0; r < check; r++)
	{
		double	   *g = gpu + (size_t) r * width;

		ts_interactions_finish(pt->num_outputs, pt->num_features, TS_INTERACTION_SHAPLEY, sel, g);
		ts_interactions_row(pt, x + (size_t) r * pt->num_features, TS_INTERACTION_SHAPLEY, sel, cpu,
							scratch);
		for (size_t i = 0; i < width; i++)
			worst = fmax(worst, fabs(g[i] - cpu[i]) / fmax(1.0, fabs(cpu[i])));
	}
	printf("\"interactions_rows\": %d, \"interactions_rows_per_s\": %.3f, "
		   "\"max_dev_interactions\": %.3e, \"importance_rows_per_s\": %.1f, ",
		   nrows, nrows / seconds, worst, importance_rows / imp_seconds);
	free(gpu);
	free(cpu);
	free(scratch);
	ts_selection_free(sel);
	return 0;
}

/*
 * Time the prediction kernel over predict_rows rows (the nrows rows
 * repeated) and count the margins of the first nrows that differ in any bit
 * from the host's ts_model_predict_margin.
 */
static int
report_predict(const TsGpuPlan *plan, const TsModel *m, const float *x, int32_t nrows,
			   int32_t predict_rows, int reps)
{
	TsGpuJob	job = {.kind = TS_GPU_JOB_PREDICT, .algorithm = TS_GPU_ALG_TREESHAP};
	size_t		nf = (size_t) m->num_features;
	float	   *big = malloc(sizeof(float) * nf * predict_rows);
	double	   *gpu = malloc(sizeof(double) * m->num_outputs * predict_rows);
	double	   *host = malloc(sizeof(double) * m->num_outputs);
	double		seconds = 0.0;
	int64_t		differ = 0;
	char		msg[256] = "";

	for (int32_t r = 0; r < predict_rows; r++)
		memcpy(big + r * nf, x + (size_t) (r % nrows) * nf, sizeof(float) * nf);
	if (ts_gpu_time_kernel(plan->table, big, predict_rows, TS_GPU_FLOAT64, &job, reps, &seconds, gpu,
						   msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "ts_bench: %s\n", msg);
		return 1;
	}
	for (int32_t r = 0; r < nrows && r < predict_rows; r++)
	{
		ts_model_predict_margin(m, x + (size_t) r * nf, host);
		differ += memcmp(host, gpu + (size_t) r * m->num_outputs, sizeof(double) * m->num_outputs) != 0;
	}
	printf("\"predict_rows\": %d, \"predict_rows_per_s\": %.1f, \"predict_rows_differing\": %lld, ",
		   predict_rows, predict_rows / seconds, (long long) differ);
	free(big);
	free(gpu);
	free(host);
	return differ == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	size_t		len,
				xlen;
	char	   *buf;
	float	   *x;
	TsError		err = {0};
	TsModel    *m;
	TsPathTable *pt;
	TsGpuPlan  *plan;
	int32_t		nrows,
				check_rows,
				interaction_rows;
	int			reps;
	char		msg[256] = "";
	double		t0;

	if (argc < 4)
	{
		fprintf(stderr, "usage: ts_bench MODEL.json ROWS.f32 NROWS [REPS] [CHECK_ROWS]\n");
		return 2;
	}
	nrows = atoi(argv[3]);
	reps = argc > 4 ? atoi(argv[4]) : 3;
	check_rows = argc > 5 ? atoi(argv[5]) : 200;
	interaction_rows = argc > 6 ? atoi(argv[6]) : 0;
	buf = ts_tool_read_file(argv[1], &len);
	m = buf ? ts_model_read(buf, len, &err) : NULL;
	if (m == NULL)
	{
		fprintf(stderr, "ts_bench: %s: %s\n", argv[1], buf ? err.message : "cannot read");
		return 1;
	}
	free(buf);
	x = (float *) ts_tool_read_file(argv[2], &xlen);
	if (x == NULL || xlen < (size_t) nrows * m->num_features * sizeof(float))
	{
		fprintf(stderr, "ts_bench: %s holds fewer than %d rows\n", argv[2], nrows);
		return 1;
	}
	if (check_rows > nrows)
		check_rows = nrows;

	t0 = ts_tool_seconds();
	pt = ts_paths_build(m);
	printf("{\"model\": \"%s\", \"trees\": %d, \"leaves\": %lld, \"features\": %d, \"outputs\": %d, "
		   "\"paths\": %lld, \"max_path_len\": %d, \"path_table_ms\": %.1f, ",
		   argv[1], m->num_trees, (long long) m->num_leaves, m->num_features, m->num_outputs,
		   (long long) pt->num_paths, pt->max_path_len, (ts_tool_seconds() - t0) * 1e3);
	report_packing(pt, TS_PACK_NEXT_FIT);
	report_packing(pt, TS_PACK_FIRST_FIT_DECREASING);
	report_packing(pt, TS_PACK_BEST_FIT_DECREASING);
	if (getenv("TS_QUAD_SLOTS") != NULL)
		ts_gpu_quad_slot_cap = atoi(getenv("TS_QUAD_SLOTS"));
	if (getenv("TS_QUAD_CHUNK") != NULL)
		ts_gpu_quad_chunk_elems = atoi(getenv("TS_QUAD_CHUNK"));
	if (ts_gpu_plan_build(pt, m, TS_PACK_BEST_FIT_DECREASING, &plan, msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "ts_bench: %s\n", msg);
		return 1;
	}
	printf("\"long_paths\": %lld, \"rows\": %d, \"check_rows\": %d, ",
		   (long long) plan->packing->num_long, nrows, check_rows);
	if ((getenv("TS_BENCH_QUAD_ONLY") == NULL &&
		 (report_kernel(plan, x, nrows, reps, check_rows, TS_GPU_ALG_TREESHAP, TS_GPU_FLOAT64, "double") != 0 ||
		  report_kernel(plan, x, nrows, reps, check_rows, TS_GPU_ALG_TREESHAP, TS_GPU_FLOAT32, "single") != 0)) ||
		report_kernel(plan, x, nrows, reps, check_rows, TS_GPU_ALG_QUADRATURE, TS_GPU_FLOAT64, "quad_double") != 0 ||
		report_kernel(plan, x, nrows, reps, check_rows, TS_GPU_ALG_QUADRATURE, TS_GPU_FLOAT32, "quad_single") != 0 ||
		(interaction_rows > 0 &&
		 report_interactions(plan, x, interaction_rows < nrows ? interaction_rows : nrows, nrows, reps) != 0) ||
		report_predict(plan, m, x, nrows,
					   getenv("TS_BENCH_PREDICT_ROWS") ? atoi(getenv("TS_BENCH_PREDICT_ROWS")) : 1000000,
					   reps) != 0)
		return 1;
	printf("\"ok\": true}\n");
	ts_gpu_plan_release_device(plan);
	return 0;
}
