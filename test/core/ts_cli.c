/*
 * ts_cli.c - standalone driver of the compute core, without PostgreSQL:
 *   ts_cli contribs MODEL CSV [treeshap|quadrature]
 *                               print pred_contribs rows (outputs x (features+1))
 *   ts_cli margin MODEL CSV     print margins
 *   ts_cli interactions MODEL CSV [shapley|taylor [F,F...]]
 *                               print interaction rows (outputs x selected x features)
 *                               of the listed feature indices, or of all
 *   ts_cli load MODEL...        read each model, print "ok" or the error
 *   ts_cli pack MODEL           pack with NF, FFD and BFD; check every packing is
 *                               valid (each short path once, no bin over 32 lanes)
 * CSV rows hold feature values only; an empty field or "nan" is missing.
 */
#include "../../src/ts_interactions.h"
#include "../../src/ts_model.h"
#include "../../src/ts_pack.h"
#include "../../src/ts_paths.h"
#include "../../src/ts_shap_cpu.h"
#include "../../src/ts_tool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	double	   *inter = malloc(sizeof(double) * (inter_len > 0 ? inter_len : 1));

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
		if (inter_len <= 1 << 20)	/* interactions of models up to ~1000 features */
		{
			ts_interactions_row(pt, row, TS_INTERACTION_SHAPLEY, sel, inter, scratch);
			ts_interactions_row(pt, row, TS_INTERACTION_TAYLOR, sel, inter, scratch);
		}
	}
	free(inter);
	ts_selection_free(sel);
	free(row);
	free(phi);
	free(margin);
	free(scratch);
}

/* Run contribs (quad: by quadrature) or margin over every CSV line. */
static int
run_rows(const TsModel *m, const char *csv, bool contribs, bool quad)
{
	TsPathTable *pt = ts_paths_build(m);
	FILE	   *f = fopen(csv, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	size_t		width = (size_t) m->num_outputs * (size_t) (m->num_features + 1);
	float	   *row = malloc(sizeof(float) * (size_t) m->num_features);
	double	   *phi = malloc(sizeof(double) * width);
	double	   *scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));

	if (f == NULL)
		return 2;
	while (getline(&line, &cap, f) > 0)
	{
		parse_row(line, row, m);
		if (contribs)
		{
			ts_cpu_shap_row(pt, quad ? TS_SHAP_QUADRATURE : TS_SHAP_TREESHAP, row, phi, scratch);
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
	ts_paths_free(pt);
	return 0;
}

/* Interaction rows of every CSV line for a method and a feature list ("all" or "3,0,5"). */
static int
run_interactions(const TsModel *m, const char *csv, const char *method, const char *list)
{
	TsPathTable *pt = ts_paths_build(m);
	FILE	   *f = fopen(csv, "r");
	char	   *line = NULL;
	size_t		cap = 0;
	int32_t    *wanted = calloc((size_t) m->num_features + 1, sizeof(int32_t));
	int32_t		count = 0;
	TsFeatureSelection *sel;
	float	   *row = malloc(sizeof(float) * (size_t) m->num_features);
	double	   *out;
	double	   *scratch = malloc(sizeof(double) * ts_interactions_scratch_len(pt));
	TsInteractionMethod how = strcmp(method, "taylor") == 0 ? TS_INTERACTION_TAYLOR
		: TS_INTERACTION_SHAPLEY;
	size_t		width;

	if (f == NULL)
		return 2;
	for (int32_t j = 0; list != NULL && j < m->num_features; j++)
	{
		char		key[16];

		snprintf(key, sizeof(key), ",%d,", j);
		if (strstr(list, key) != NULL)
			wanted[count++] = j;
	}
	sel = ts_selection_make(m->num_features, list != NULL ? wanted : NULL, count);
	width = (size_t) m->num_outputs * sel->count * m->num_features;
	out = malloc(sizeof(double) * (width > 0 ? width : 1));
	while (getline(&line, &cap, f) > 0)
	{
		parse_row(line, row, m);
		ts_interactions_row(pt, row, how, sel, out, scratch);
		for (size_t i = 0; i < width; i++)
			printf(i ? ",%.17g" : "%.17g", out[i]);
		printf("\n");
	}
	fclose(f);
	free(line);
	free(row);
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
			check_packing(pt, TS_PACK_BEST_FIT_DECREASING);
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
				printf("ok %s trees=%d leaves=%lld paths=%lld\n", argv[i], m->num_trees,
					   (long long) m->num_leaves, (long long) pt->num_paths);
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
			rc = run_rows(m, argv[3], strcmp(argv[1], "contribs") == 0,
						  argc > 4 && strcmp(argv[4], "quadrature") == 0);
		ts_model_free(m);
		free(buf);
		return rc;
	}
	fprintf(stderr, "usage: ts_cli contribs MODEL CSV [treeshap|quadrature] | ts_cli margin MODEL CSV | ts_cli interactions MODEL CSV [METHOD [,F,F,]] | ts_cli load MODEL...\n");
	return 2;
}
