/*
 * ts_cli.c - standalone driver of the compute core, without PostgreSQL:
 *   ts_cli contribs MODEL CSV [treeshap|quadrature|tree-lanes[:ISA]|tree-row[:ISA]|gpu-layout|lanes[:ISA]]
 *                               print pred_contribs rows (outputs x (features+1));
 *                               lanes: quadrature in blocks of rows (ts_quad_rows), on
 *                               the CPU's widest instruction set or the one named
 *                               (avx512, avx2, x86-64; exit 2 if the CPU lacks it)
 *                               tree-lanes: quadrature carried down each tree
 *                               (ts_quad_tree), in blocks of the plan's block_rows
 *                               rows; tree-row: the same, a row at a time
 *                               gpu-layout evaluates the GPU quadrature layout
 *                               (src/gpu/ts_gpu_quad.c) on the host as the kernel does
 *   ts_cli margin MODEL CSV     print margins
 *   ts_cli interactions MODEL CSV [shapley|taylor|lanes[:ISA] [F,F...]]
 *                               print interaction rows (outputs x selected x features)
 *                               of the listed feature indices, or of all
 *   ts_cli load MODEL...        read each model, print "ok" or the error
 *   ts_cli pack MODEL           pack with NF, FFD and BFD; check every packing is
 *                               valid (each short path once, no bin over 32 lanes),
 *                               and the GPU quadrature layout (slots, offsets), the
 *                               GPU's tree layout (walked as the predict kernel walks
 *                               it, margins bitwise the host's), and the model's
 *                               interface for the GPU service (wire_check.c)
 * CSV rows hold feature values only; an empty field or "nan" is missing.
 */
#include "gpu/ts_gpu_forest.h"
#include "gpu/ts_gpu_quad.h"
#include "core/ts_interactions.h"
#include "core/ts_quad_pairs.h"
#include "model/ts_model.h"
#include "core/ts_pack.h"
#include "core/ts_quad_lanes.h"
#include "core/ts_quad_tree.h"
#include "core/ts_paths.h"
#include "core/ts_shap_cpu.h"
#include "base/ts_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int			ts_cli_check_wire(const TsModel *m, const TsPathTable *pt);	/* wire_check.c */

/* Parse one CSV line of num_features values into row. */
static void
parse_row(char *line, float *row, const TsModel *m)
{
	char	   *s = line;

	for (int32_t j = 0; j < m->num_features; j++)
	{
		char	   *end;
		double		d = strtod(s, &end);

		row[j] = (end == s) ? NAN : ts_feature_value(d);
		s = strchr(end, ',');
		if (s == NULL)
			s = end;
		else
			s++;
	}
	ts_model_prepare_row(m, row);
}

/* Whether x satisfies layout element e, as cuda/ts_quad.cu tests it. */
static bool
layout_satisfies(const TsPathTable *pt, const TsGpuQuadDesc *q, int64_t e, float x)
{
	const TsGpuQuadElem *el = &q->elems[e];

	if (isnan(x))
		return (el->slot_flags & TS_GPU_QUAD_MISSING) != 0;
	if (!(el->lower <= x && x < el->upper))
		return false;
	return (el->slot_flags & TS_GPU_QUAD_CATEGORICAL) == 0 ||
		ts_catset_contains(pt->cat_pool + q->elem_cat[e], x);
}

/* One layout path for one row, added to the chunk's slot sums (cuda/ts_quad.cu's quad_path). */
static void
layout_path(const TsPathTable *pt, const TsGpuQuadDesc *q, int64_t index, int32_t target,
			const float *row, double *slot_sum)
{
	const TsGpuQuadPath *path = &q->paths[index];
	int32_t		n = path->n;
	int32_t		np = n + (n & 1);
	const double *c = q->coef + path->coef;
	double		g[TS_GPU_QUAD_MAX_POINTS];
	double		unsat_sum = 0.0;
	uint32_t	unsat = 0;

	for (int32_t i = 0; i < n; i++)
		g[i] = q->values != NULL ? c[i] * q->values[index * q->value_width + target] : c[i];
	for (int32_t k = 0; k < path->d; k++)
	{
		int64_t		e = path->elem + k;

		if (layout_satisfies(pt, q, e, row[q->elems[e].feature]))
			continue;
		unsat |= 1u << k;
		for (int32_t i = 0; i < n; i++)
			g[i] *= c[np + 2 * np * k + i];
	}
	for (int32_t i = 0; i < n; i++)
		unsat_sum += g[i] * q->unsat_weight[n][i];
	for (int32_t k = 0; k < path->d; k++)
	{
		double		s = 0.0;

		for (int32_t i = 0; i < n; i++)
			s += g[i] * c[np + 2 * np * k + np + i];
		slot_sum[q->elems[path->elem + k].slot_flags & 0xffff] += (unsat >> k) & 1u ? -unsat_sum : s;
	}
}

/* A pred_contribs row from the GPU layout, the CPU route's long paths and the bias. */
static void
layout_shap_row(const TsPathTable *pt, const TsGpuQuadDesc *q, const TsPacking *pk,
				const float *row, double *phi, double *scratch)
{
	size_t		width = (size_t) pt->num_features + 1;
	double		slot_sum[TS_GPU_QUAD_MAX_SLOTS];

	memset(phi, 0, sizeof(double) * width * (size_t) pt->num_outputs);
	for (int32_t k = 0; k < pt->num_outputs; k++)
		phi[k * width + pt->num_features] = pt->bias[k];
	for (int64_t c = 0; c < q->num_chunks; c++)
	{
		const TsGpuQuadChunk *ch = &q->chunks[c];

		memset(slot_sum, 0, sizeof(slot_sum));
		for (int64_t p = ch->path_lo; p < ch->path_hi; p++)
			layout_path(pt, q, p, ch->target, row, slot_sum);
		for (int64_t s = 0; s < ch->slots; s++)
		{
			int32_t		col = q->slot_column[ch->slot_start + s];

			phi[(size_t) (col / pt->num_features) * width + col % pt->num_features] += slot_sum[s];
		}
	}
	ts_cpu_shap_add_paths(pt, TS_SHAP_QUADRATURE, pk->long_paths, pk->num_long, row, phi, scratch);
}

/* Predict and explain a few rows of edge values, interactions too (under the sanitisers, for the fuzz run). */
static void
exercise(const TsModel *m, const TsPathTable *pt)
{
	const float values[] = {NAN, 0.0f, -0.5f, 1.5f, 3.0f, 1e9f, -1.0f, 1e-36f};
	size_t		width = (size_t) m->num_outputs * (size_t) (m->num_features + 1);
	float	   *row = malloc(sizeof(float) * (size_t) m->num_features);
	double	   *phi = malloc(sizeof(double) * width);
	double	   *margin = malloc(sizeof(double) * (size_t) m->num_outputs);
	size_t		scratch_len = ts_interactions_scratch_len(pt);
	double	   *scratch;
	TsFeatureSelection *sel = ts_selection_make(m->num_features, NULL, 0);
	size_t		inter_len = (size_t) m->num_outputs * sel->count * m->num_features;
	/* interactions only of models up to ~1000 features (below), so no room beyond that */
	double	   *inter = malloc(sizeof(double) * (inter_len > 0 && inter_len <= 1 << 20 ? inter_len : 1));

	TsGpuQuadDesc *q = ts_gpu_quad_build(pt);
	TsPacking  *pk = ts_pack_paths(pt, TS_PACK_NEXT_FIT);	/* its long paths: the GPU's CPU route */

	if (ts_cpu_scratch_len(pt) > scratch_len)
		scratch_len = ts_cpu_scratch_len(pt);
	scratch = malloc(sizeof(double) * scratch_len);
	for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++)
	{
		for (int32_t j = 0; j < m->num_features; j++)
			row[j] = values[(v + (size_t) j) % (sizeof(values) / sizeof(values[0]))];
		ts_model_prepare_row(m, row);
		ts_model_predict_margin(m, row, margin);
		ts_cpu_shap_row(pt, TS_SHAP_TREESHAP, row, phi, scratch);
		ts_cpu_shap_row(pt, TS_SHAP_QUADRATURE, row, phi, scratch);
		layout_shap_row(pt, q, pk, row, phi, scratch);
		if (inter_len <= 1 << 20)	/* interactions of models up to ~1000 features */
		{
			ts_interactions_row(pt, row, TS_INTERACTION_SHAPLEY, sel, inter, scratch);
			ts_interactions_row(pt, row, TS_INTERACTION_TAYLOR, sel, inter, scratch);
		}
	}
	free(inter);
	ts_selection_free(sel);
	ts_gpu_quad_free(q);
	ts_pack_free(pk);
	free(row);
	free(phi);
	free(margin);
	free(scratch);
}

/*
 * Contribs of every CSV line in blocks of rows, on the instruction set
 * named or the CPU's widest: through each path (ts_quad_rows, blocks of
 * TS_QUAD_LANES), or down each tree (tree: ts_quad_tree_contribs, blocks of
 * the plan's block_rows, or of one row where one_row).
 */
static int
run_blocks(const TsModel *m, const char *csv, const char *isa, bool tree, bool one_row)
{
	TsPathTable *pt;
	TsQuadTreePlan *plan = NULL;
	FILE	   *f;
	char	   *line = NULL;
	size_t		cap = 0;
	size_t		width = (size_t) m->num_outputs * (size_t) (m->num_features + 1);
	float	   *rows;
	double	   *phi;
	double	   *scratch;
	int32_t		n = 0,
				block;
	bool		more = true;

	/* before anything is allocated: an instruction set this CPU lacks is exit 2, nothing leaked */
	if (ts_quad_lanes_isa(isa[0] != '\0' ? isa : NULL) == NULL || (f = fopen(csv, "r")) == NULL)
		return 2;
	pt = ts_paths_build(m);		/* the tree walk takes its bias */
	if (tree)
		plan = ts_quad_tree_plan(m);
	block = tree ? (one_row ? 1 : plan->block_rows) : TS_QUAD_LANES;
	rows = malloc(sizeof(float) * (size_t) m->num_features * (size_t) block);
	phi = malloc(sizeof(double) * width * (size_t) block);
	scratch = malloc(sizeof(double) * (tree ? ts_quad_tree_rows_scratch_len(m, plan, block) : ts_quad_rows_scratch_len(pt)));
	while (more)
	{
		more = getline(&line, &cap, f) > 0;
		if (more)
			parse_row(line, rows + (size_t) n++ * m->num_features, m);
		if (n < block && (more || n == 0))
			continue;
		if (tree)
			ts_quad_tree_contribs(m, plan, pt->bias, rows, n, phi, scratch);
		else
			ts_quad_rows(pt, rows, n, phi, scratch);
		for (int32_t l = 0; l < n; l++, printf("\n"))
			for (size_t i = 0; i < width; i++)
				printf(i ? ",%.17g" : "%.17g", phi[(size_t) l * width + i]);
		n = 0;
	}
	fclose(f);
	free(line);
	free(rows);
	free(phi);
	free(scratch);
	ts_quad_tree_plan_free(plan);
	ts_paths_free(pt);
	return 0;
}

/* Run contribs (by the algorithm named: treeshap, quadrature, gpu-layout) or margin over every CSV line. */
static int
run_rows(const TsModel *m, const char *csv, bool contribs, const char *algorithm)
{
	TsPathTable *pt = ts_paths_build(m);
	FILE	   *f = fopen(csv, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	size_t		width = (size_t) m->num_outputs * (size_t) (m->num_features + 1);
	float	   *row = malloc(sizeof(float) * (size_t) m->num_features);
	double	   *phi = malloc(sizeof(double) * width);
	double	   *scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));
	bool		layout = strcmp(algorithm, "gpu-layout") == 0;
	TsGpuQuadDesc *q = layout ? ts_gpu_quad_build(pt) : NULL;
	TsPacking  *pk = ts_pack_paths(pt, TS_PACK_NEXT_FIT);	/* its long paths: the GPU's CPU route */

	if (f == NULL)
		return 2;
	while (getline(&line, &cap, f) > 0)
	{
		parse_row(line, row, m);
		if (contribs && layout)
			layout_shap_row(pt, q, pk, row, phi, scratch);
		else if (contribs)
			ts_cpu_shap_row(pt, strcmp(algorithm, "quadrature") == 0 ? TS_SHAP_QUADRATURE : TS_SHAP_TREESHAP,
							row, phi, scratch);
		if (contribs)
		{
			for (size_t i = 0; i < width; i++)
				printf(i ? ",%.17g" : "%.17g", phi[i]);
		}
		else
		{
			ts_model_predict_margin(m, row, phi);
			for (int32_t k = 0; k < m->num_outputs; k++)
				printf(k ? ",%.17g" : "%.17g", phi[k]);
		}
		printf("\n");
	}
	fclose(f);
	free(line);
	free(row);
	free(phi);
	free(scratch);
	ts_pack_free(pk);
	ts_gpu_quad_free(q);
	ts_paths_free(pt);
	return 0;
}

/*
 * Interaction rows of every CSV line for a method (shapley, taylor, or
 * lanes[:ISA]: Shapley by quadrature in blocks, ts_quad_pairs_rows) and a
 * feature list ("all" or "3,0,5").
 */
static int
run_interactions(const TsModel *m, const char *csv, const char *method, const char *list)
{
	bool		lanes = strncmp(method, "lanes", 5) == 0;
	TsPathTable *pt;
	FILE	   *f;
	char	   *line = NULL;
	size_t		cap = 0;
	int32_t    *wanted;
	int32_t		count = 0,
				n = 0;
	TsFeatureSelection *sel;
	float	   *rows;
	double	   *out;
	double	   *scratch;
	TsInteractionMethod how = strcmp(method, "taylor") == 0 ? TS_INTERACTION_TAYLOR
		: TS_INTERACTION_SHAPLEY;
	size_t		width;
	bool		more = true;

	/* before anything is allocated: an instruction set this CPU lacks is exit 2 */
	if ((lanes && ts_quad_lanes_isa(method[5] == ':' ? method + 6 : NULL) == NULL) || (f = fopen(csv, "r")) == NULL)
		return 2;
	pt = ts_paths_build(m);
	wanted = calloc((size_t) m->num_features + 1, sizeof(int32_t));
	rows = malloc(sizeof(float) * (size_t) m->num_features * TS_QUAD_LANES);
	scratch = malloc(sizeof(double) * (lanes ? ts_quad_pairs_scratch_len(pt) : ts_interactions_scratch_len(pt)));
	for (int32_t j = 0; list != NULL && j < m->num_features; j++)
	{
		char		key[16];

		snprintf(key, sizeof(key), ",%d,", j);
		if (strstr(list, key) != NULL)
			wanted[count++] = j;
	}
	sel = ts_selection_make(m->num_features, list != NULL ? wanted : NULL, count);
	width = (size_t) m->num_outputs * sel->count * m->num_features;
	out = malloc(sizeof(double) * (width > 0 ? width : 1) * TS_QUAD_LANES);
	while (more)
	{
		more = getline(&line, &cap, f) > 0;
		if (more)
			parse_row(line, rows + (size_t) n++ * m->num_features, m);
		if (n < (lanes ? TS_QUAD_LANES : 1) && (more || n == 0))
			continue;
		if (lanes)
			ts_quad_pairs_rows(pt, rows, n, sel, out, scratch);
		else
			ts_interactions_row(pt, rows, how, sel, out, scratch);
		for (int32_t l = 0; l < n; l++, printf("\n"))
			for (size_t i = 0; i < width; i++)
				printf(i ? ",%.17g" : "%.17g", out[(size_t) l * width + i]);
		n = 0;
	}
	fclose(f);
	free(line);
	free(rows);
	free(out);
	free(scratch);
	free(wanted);
	ts_selection_free(sel);
	ts_paths_free(pt);
	return 0;
}

/* Check one packing's invariants; print its figures. Returns 0 when valid. */
static int
check_packing(const TsPathTable *pt, TsPackAlgo algo)
{
	TsPacking  *pk = ts_pack_paths(pt, algo);
	char	   *seen = calloc((size_t) pt->num_paths + 1, 1);
	int64_t		placed = 0;
	int			bad = 0;

	for (int64_t b = 0; b < pk->num_bins; b++)
	{
		int64_t		lanes = 0;

		for (int64_t i = pk->bin_start[b]; i < pk->bin_start[b + 1]; i++)
		{
			int64_t		p = pk->paths[i];

			lanes += pt->path_start[p + 1] - pt->path_start[p];
			bad |= seen[p]++ != 0;
			placed++;
		}
		bad |= lanes > TS_PACK_LANES || lanes == 0;
	}
	for (int64_t i = 0; i < pk->num_long; i++)
	{
		int64_t		p = pk->long_paths[i];

		bad |= seen[p]++ != 0 || pt->path_start[p + 1] - pt->path_start[p] <= TS_PACK_LANES;
		placed++;
	}
	bad |= placed != pt->num_paths;
	printf("%s bins=%lld utilisation=%.4f long=%lld %s\n", ts_pack_algo_name(algo),
		   (long long) pk->num_bins, ts_pack_utilisation(pk), (long long) pk->num_long,
		   bad ? "INVALID" : "valid");
	free(seen);
	ts_pack_free(pk);
	return bad;
}

/*
 * Check the GPU quadrature layout's invariants: each path of 1 to 31 unique
 * features once, with its elements, nodes and coefficients where the path
 * says; no chunk over TS_GPU_QUAD_MAX_SLOTS slots; every element's slot
 * naming its own output x feature column; for vector leaves, the K runs of
 * each chunk side by side, run k on output k's columns (elements and
 * coefficients laid out once). Returns 0 when valid.
 */
static int
check_layout(const TsPathTable *pt)
{
	TsGpuQuadDesc *q = ts_gpu_quad_build(pt);
	int32_t		width = pt->value_width;
	int64_t		expected = 0,
				elems = 0,
				coefs = 0;
	int			bad = 0;

	for (int64_t p = 0; p < pt->num_paths; p++)
	{
		int64_t		d = pt->path_start[p + 1] - pt->path_start[p] - 1;

		expected += d >= 1 && d < TS_PACK_LANES;
	}
	bad |= q->num_paths != expected || q->value_width != width || (width > 1) != (q->values != NULL) ||
		q->num_chunks % width != 0;
	for (int64_t c = 0; c < q->num_chunks; c++)
	{
		const TsGpuQuadChunk *ch = &q->chunks[c];
		const TsGpuQuadChunk *first = &q->chunks[c - c % width];
		int32_t		k = (int32_t) (c % width);

		bad |= ch->slots > TS_GPU_QUAD_MAX_SLOTS || ch->path_lo >= ch->path_hi || ch->target != k ||
			ch->path_lo != first->path_lo || ch->path_hi != first->path_hi ||
			(c >= width && k == 0 && ch->path_lo != q->chunks[c - width].path_hi);
		for (int64_t i = ch->path_lo; i < ch->path_hi; i++)
		{
			const TsGpuQuadPath *path = &q->paths[i];

			if (k == 0)
				bad |= path->elem != elems || path->coef != coefs;
			bad |= path->n != (path->d + 1) / 2 || path->n > q->max_points;
			for (int32_t e = 0; e < path->d; e++)
			{
				int32_t		slot = q->elems[path->elem + e].slot_flags & 0xffff;
				int32_t		col = slot < ch->slots ? q->slot_column[ch->slot_start + slot] : -1;

				bad |= col < 0 || col % pt->num_features != q->elems[path->elem + e].feature ||
					col != q->slot_column[first->slot_start + slot] + k * pt->num_features;
			}
			if (k == 0)
			{
				elems += path->d;
				coefs += (int64_t) (path->n + (path->n & 1)) * (1 + 2 * path->d);
			}
		}
	}
	bad |= (q->num_chunks > 0 && q->chunks[q->num_chunks - 1].path_hi != q->num_paths) ||
		elems != q->num_elems || coefs != q->num_coef;
	printf("quadrature layout paths=%lld chunks=%lld slots=%lld nodes<=%d values/path=%d %s\n",
		   (long long) q->num_paths, (long long) q->num_chunks, (long long) q->num_slots,
		   q->max_points, width, bad ? "INVALID" : "valid");
	ts_gpu_quad_free(q);
	return bad;
}

/* Next value of a fixed 64-bit LCG: the forest check's rows are the same on every run. */
static uint64_t
lcg_next(uint64_t *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return *state >> 33;
}

/*
 * A row that reaches many branches: per feature, a threshold of a node that
 * splits on it, or the float just below one, or a category 0..63, or NaN.
 */
static void
probe_row(const TsModel *m, uint64_t *state, float *row)
{
	for (int32_t j = 0; j < m->num_features; j++)
		row[j] = (float) (lcg_next(state) % 64);
	for (int64_t g = 0; g < m->num_nodes; g++)
	{
		uint64_t	r = lcg_next(state) % 8;

		if (m->left[g] == -1 || m->cat_set[g] != -1 || r > 1)
			continue;
		row[m->split_feature[g]] = r == 0 ? m->threshold[g] : nextafterf(m->threshold[g], -INFINITY);
	}
	for (int32_t j = 0; j < m->num_features; j++)
		if (lcg_next(state) % 10 == 0)
			row[j] = NAN;
}

/* A row's margins walked over the GPU's tree layout as cuda/ts_predict.cu walks it. */
static void
forest_margin(const TsGpuForestDesc *f, int32_t num_outputs, const float *row, double *margin)
{
	for (int32_t k = 0; k < num_outputs; k++)
		margin[k] = f->base_margin[k];
	for (int32_t t = 0; t < f->num_trees; t++)
	{
		TsGpuNode	n = f->nodes[f->roots[t]];

		while (n.left >= 0)
		{
			float		x = row[n.flags_feature & TS_GPU_NODE_FEATURE];
			bool		left;

			if (isnan(x))
				left = (n.flags_feature & TS_GPU_NODE_DEFAULT_LEFT) != 0;
			else if (n.flags_feature & TS_GPU_NODE_CATEGORICAL)
				left = ts_catset_contains(f->cat_pool + n.cat, x);
			else
				left = x < n.threshold;
			n = f->nodes[left ? n.left : n.right];
		}
		for (int32_t k = 0; k < f->leaf_width; k++)
			margin[f->groups[t] + k] += f->values[(int64_t) n.right * f->leaf_width + k];
	}
}

/* The GPU's tree layout against ts_model_predict_margin, bit for bit, on 500 probe rows. */
static int
check_forest(const TsModel *m)
{
	TsGpuForestDesc *f = ts_gpu_forest_build(m);
	float	   *row = malloc(sizeof(float) * (size_t) (m->num_features + 1));
	double	   *host = malloc(sizeof(double) * m->num_outputs);
	double	   *walked = malloc(sizeof(double) * m->num_outputs);
	uint64_t	state = 42;
	int			differ = 0;

	for (int r = 0; r < 500; r++)
	{
		probe_row(m, &state, row);
		ts_model_predict_margin(m, row, host);
		forest_margin(f, m->num_outputs, row, walked);
		differ += memcmp(host, walked, sizeof(double) * m->num_outputs) != 0;
	}
	printf("tree layout nodes=%lld leaves=%lld values/leaf=%d: %d of 500 probe rows differ %s\n",
		   (long long) f->num_nodes, (long long) f->num_leaves, f->leaf_width, differ,
		   differ ? "INVALID" : "valid");
	free(row);
	free(host);
	free(walked);
	ts_gpu_forest_free(f);
	return differ != 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "pack") == 0)
	{
		size_t		len;
		char	   *buf = ts_tool_read_file(argv[2], &len);
		TsError		err = {0};
		TsModel    *m = buf ? ts_model_read(buf, len, &err) : NULL;
		TsPathTable *pt;
		int			bad;

		if (m == NULL)
		{
			fprintf(stderr, "error %s: %s\n", argv[2], err.message);
			return 1;
		}
		pt = ts_paths_build(m);
		bad = check_packing(pt, TS_PACK_NEXT_FIT) + check_packing(pt, TS_PACK_FIRST_FIT_DECREASING) +
			check_packing(pt, TS_PACK_BEST_FIT_DECREASING) + check_layout(pt) + check_forest(m) +
			ts_cli_check_wire(m, pt);
		ts_paths_free(pt);
		ts_model_free(m);
		free(buf);
		return bad ? 1 : 0;
	}
	if (argc >= 3 && strcmp(argv[1], "load") == 0)
	{
		int			bad = 0;

		for (int i = 2; i < argc; i++)
		{
			size_t		len;
			char	   *buf = ts_tool_read_file(argv[i], &len);
			TsError		err = {0};
			TsModel    *m = buf ? ts_model_read(buf, len, &err) : NULL;

			if (m != NULL)
			{
				TsPathTable *pt = ts_paths_build(m);

				exercise(m, pt);
				printf("ok %s trees=%d leaves=%lld paths=%lld elements=%lld values/path=%d bytes=%zu\n",
					   argv[i], m->num_trees, (long long) m->num_leaves, (long long) pt->num_paths,
					   (long long) pt->num_elements, pt->value_width, ts_paths_bytes(pt));
				ts_paths_free(pt);
				ts_model_free(m);
			}
			else
			{
				printf("error %s: %s\n", argv[i], err.message);
				bad++;
			}
			free(buf);
		}
		return bad > 0 ? 1 : 0;
	}
	if (argc >= 4 && argc <= 6)
	{
		size_t		len;
		char	   *buf = ts_tool_read_file(argv[2], &len);
		TsError		err = {0};
		TsModel    *m = buf ? ts_model_read(buf, len, &err) : NULL;
		int			rc;

		if (m == NULL)
		{
			fprintf(stderr, "error: %s\n", err.message);
			return 1;
		}
		if (strcmp(argv[1], "interactions") == 0)
			rc = run_interactions(m, argv[3], argc > 4 ? argv[4] : "shapley",
								  argc > 5 ? argv[5] : NULL);
		else
			rc = argc > 4 && strncmp(argv[4], "tree-lanes", 10) == 0 && strcmp(argv[1], "contribs") == 0
				? run_blocks(m, argv[3], argv[4][10] == ':' ? argv[4] + 11 : "", true, false)
				: argc > 4 && strncmp(argv[4], "tree-row", 8) == 0 && strcmp(argv[1], "contribs") == 0
				? run_blocks(m, argv[3], argv[4][8] == ':' ? argv[4] + 9 : "", true, true)
				: argc > 4 && strncmp(argv[4], "lanes", 5) == 0 && strcmp(argv[1], "contribs") == 0
				? run_blocks(m, argv[3], argv[4][5] == ':' ? argv[4] + 6 : "", false, false)
				: run_rows(m, argv[3], strcmp(argv[1], "contribs") == 0, argc > 4 ? argv[4] : "treeshap");
		ts_model_free(m);
		free(buf);
		return rc;
	}
	fprintf(stderr, "usage: ts_cli contribs MODEL CSV [treeshap|quadrature|tree-lanes[:ISA]|tree-row[:ISA]|gpu-layout|lanes[:ISA]] | ts_cli margin MODEL CSV | ts_cli interactions MODEL CSV [shapley|taylor|lanes[:ISA] [,F,F,]] | ts_cli load MODEL...\n");
	return 2;
}
