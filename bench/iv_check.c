/*
 * iv_check.c - the interventional kernel alone, without PostgreSQL: rows and
 * a background drawn around the model's own split thresholds (5% missing),
 * the GPU runner's values against the CPU's tree walk
 * (core/ts_interventional.c), two GPU runs bitwise, and the time of one
 * batch. For compute-sanitizer and for the kernel's speed. In margin space
 * the runner groups the background per path unless "rows" asks it to visit
 * every row. IV_CHECK_ROWS (default 200) rows are checked against the CPU.
 *
 *     iv_check MODEL.json NROWS NBG [probability | rows]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/ts_tool.h"
#include "core/ts_interventional.h"
#include "core/ts_pack.h"
#include "gpu/ts_gpu.h"

/* A value near one of feature f's thresholds, or NaN now and then. */
static float
draw(const TsModel *m, int32_t f)
{
	int64_t		n = m->tree_offset[m->num_trees];

	if (rand() % 20 == 0)
		return NAN;
	for (int tries = 0; tries < 64; tries++)
	{
		int64_t		node = rand() % n;

		if (m->left[node] != -1 && m->split_feature[node] == f && m->cat_set[node] < 0)
			return m->threshold[node] + (float) ((rand() % 3) - 1) * 0.01f * (1.0f + fabsf(m->threshold[node]));
	}
	return (float) (rand() % 8);
}

/* Rows drawn, with the model's input rules applied. */
static float *
draw_rows(const TsModel *m, int32_t nrows)
{
	float	   *x = malloc(sizeof(float) * (size_t) nrows * m->num_features);

	for (int32_t i = 0; i < nrows; i++)
	{
		for (int32_t f = 0; f < m->num_features; f++)
			x[(size_t) i * m->num_features + f] = draw(m, f);
		ts_model_prepare_row(m, x + (size_t) i * m->num_features);
	}
	return x;
}

/* Device bytes of the last run's background groups. */
static size_t group_bytes;

/* One GPU run of nrows rows: its values into phi, its seconds returned (negative on failure). */
static double
gpu_run(const TsGpuPlan *plan, const TsGpuJob *job, const float *x, int32_t nrows, double *phi)
{
	TsGpuRunner *r;
	char		msg[256] = "";
	double	   *out;
	double		t0;
	size_t		len = ts_gpu_job_result_len(job, plan->paths->num_outputs, plan->paths->num_features, nrows);

	if (ts_gpu_runner_create(plan->table, nrows, TS_GPU_FLOAT64, job, &r, msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "iv_check: %s\n", msg);
		return -1.0;
	}
	group_bytes = ts_gpu_runner_group_bytes(r);
	memcpy(ts_gpu_runner_input(r, 0), x, sizeof(float) * (size_t) nrows * plan->paths->num_features);
	t0 = ts_tool_seconds();
	if (ts_gpu_runner_submit(r, 0, nrows, msg, sizeof(msg)) != TS_GPU_OK ||
		ts_gpu_runner_wait(r, 0, &out, msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "iv_check: %s\n", msg);
		ts_gpu_runner_free(r);
		return -1.0;
	}
	t0 = ts_tool_seconds() - t0;
	memcpy(phi, out, sizeof(double) * len);
	ts_gpu_runner_free(r);
	return t0;
}

int
main(int argc, char **argv)
{
	size_t		len;
	char	   *buf;
	TsError		err = {0};
	TsModel    *m;
	TsPathTable *pt;
	TsGpuPlan  *plan;
	int32_t		nrows,
				nbg,
				checked;
	bool		probability,
				rows;
	char		msg[256] = "";
	float	   *x,
			   *r;
	TsBackground *bg;
	TsGpuBackground gbg;
	TsGpuJob	job = {.kind = TS_GPU_JOB_INTERVENTIONAL, .algorithm = TS_GPU_ALG_QUADRATURE, .background = &gbg};
	size_t		width;
	double	   *phi,
			   *again,
			   *cpu,
			   *scratch,
				worst = 0.0,
				seconds;
	int64_t		num_long;

	if (argc < 4)
	{
		fprintf(stderr, "usage: iv_check MODEL.json NROWS NBG [probability | rows]\n");
		return 2;
	}
	nrows = atoi(argv[2]);
	nbg = atoi(argv[3]);
	probability = argc > 4 && strcmp(argv[4], "probability") == 0;
	rows = argc > 4 && strcmp(argv[4], "rows") == 0;
	checked = getenv("IV_CHECK_ROWS") ? atoi(getenv("IV_CHECK_ROWS")) : 200;
	buf = ts_tool_read_file(argv[1], &len);
	m = buf ? ts_model_read(buf, len, &err) : NULL;
	if (m == NULL)
	{
		fprintf(stderr, "iv_check: %s: %s\n", argv[1], buf ? err.message : "cannot read");
		return 1;
	}
	if (probability && !ts_interventional_link_ok(m))
	{
		fprintf(stderr, "iv_check: %s: no probability space per output (softmax)\n", argv[1]);
		return 0;
	}
	srand(7);
	pt = ts_paths_build(m);
	if (ts_gpu_plan_build(pt, m, TS_PACK_BEST_FIT_DECREASING, &plan, msg, sizeof(msg)) != TS_GPU_OK)
	{
		fprintf(stderr, "iv_check: %s\n", msg);
		return 1;
	}
	free(ts_pack_long_paths(pt, &num_long));
	x = draw_rows(m, nrows);
	r = draw_rows(m, nbg);
	bg = ts_background_create(m, r, nbg, probability);
	memset(&gbg, 0, sizeof(gbg));
	gbg.x = r;
	gbg.nrows = nbg;
	gbg.rescale_bound = 1.0;
	gbg.grouping = rows ? TS_GPU_GROUP_NEVER : TS_GPU_GROUP_AUTO;
	gbg.group_budget = SIZE_MAX;
	if (probability)
	{
		gbg.margin = bg->margin;
		gbg.output = bg->output;
		gbg.link = m->link == TS_LINK_LOGISTIC ? TS_GPU_LINK_LOGISTIC
			: m->link == TS_LINK_EXP ? TS_GPU_LINK_EXP : TS_GPU_LINK_IDENTITY;
		gbg.link_scale = m->link_scale;
		gbg.rescale_bound = ts_interventional_rescale_bound(m);
	}
	width = (size_t) m->num_outputs * (m->num_features + 1);
	phi = malloc(sizeof(double) * width * nrows);
	again = malloc(sizeof(double) * width * nrows);
	cpu = malloc(sizeof(double) * width);
	scratch = malloc(sizeof(double) * ts_interventional_scratch_len(bg));
	if (gpu_run(plan, &job, x, nrows, phi) < 0 || (seconds = gpu_run(plan, &job, x, nrows, again)) < 0)
		return 1;
	for (int32_t i = 0; i < nrows && i < checked; i++)
	{
		double		total = 0.0;

		ts_interventional_row(bg, x + (size_t) i * m->num_features, cpu, scratch);
		for (size_t j = 0; j < width; j++)
			total += fabs(cpu[j]);
		for (int32_t k = 0; k < m->num_outputs; k++)
			for (int32_t f = 0; f < m->num_features; f++)
			{
				size_t		j = (size_t) k * (m->num_features + 1) + f;

				worst = fmax(worst, fabs(phi[(size_t) i * width + j] - cpu[j]) / fmax(1.0, total));
			}
	}
	printf("{\"model\": \"%s\", \"rows\": %d, \"background\": %d, \"probability\": %s, \"group_bytes\": %zu, \"paths\": %lld, "
		   "\"long_paths\": %lld, \"batch_s\": %.4f, \"pairs_per_s\": %.4g, \"max_rel_diff\": %.3g, "
		   "\"bitwise\": %s}\n",
		   argv[1], nrows, nbg, probability ? "true" : "false", group_bytes,
		   (long long) pt->num_paths,
		   (long long) num_long, seconds, (double) nrows * nbg / seconds, worst,
		   memcmp(phi, again, sizeof(double) * width * nrows) == 0 ? "true" : "false");
	/* the long paths are the CPU's: the kernel's values miss them */
	return worst <= (num_long > 0 ? 1.0 : 1e-9) ? 0 : 1;
}
