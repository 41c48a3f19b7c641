/*
 * fuzz_reader.c - libFuzzer target for one model reader, chosen at build
 * time (TS_FUZZ_READER: ts_json_model_read, ts_xgboost_ubj_read,
 * ts_lightgbm_read or ts_treelite_read). A model the reader accepts goes on
 * through what a backend does with it: the path table, one row's SHAP values
 * by both CPU algorithms and by quadrature in lanes, and the model's
 * interface for the GPU service written and read back. Built with
 * AddressSanitizer and UndefinedBehaviorSanitizer by test/fuzz/run.sh; any
 * report or crash stops the run.
 */
#include "core/ts_quad_lanes.h"
#include "core/ts_shap_cpu.h"
#include "core/ts_wire.h"
#include "model/ts_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Larger models are valid but make each execution too slow to fuzz. */
#define MAX_FUZZ_PATHS 20000

/* One row's SHAP values by both algorithms, and the interface round trip. */
static void
exercise(const TsModel *m, const TsPathTable *pt)
{
	size_t		width = (size_t) m->num_outputs * (m->num_features + 1);
	float	   *x = malloc(sizeof(float) * (size_t) m->num_features);
	double	   *phi = malloc(sizeof(double) * width);
	double	   *scratch = malloc(sizeof(double) * ts_cpu_scratch_len(pt));
	double	   *lanes;
	size_t		len;
	char	   *wire = ts_wire_interface(m, pt, &len);
	TsInterface in;
	TsError		err = {0};

	for (int32_t j = 0; j < m->num_features; j++)
		x[j] = j % 3 == 0 ? NAN : (float) (j % 7) - 2.5f;
	ts_model_prepare_row(m, x);
	ts_cpu_shap_row(pt, TS_SHAP_QUADRATURE, x, phi, scratch);
	ts_cpu_shap_row(pt, TS_SHAP_TREESHAP, x, phi, scratch);
	lanes = malloc(sizeof(double) * ts_quad_rows_scratch_len(pt));
	ts_quad_rows(pt, x, 1, phi, lanes);
	free(lanes);
	if (!ts_wire_read(wire, len, &in, &err))
		abort();				/* an interface we wrote must read back */
	ts_wire_free(&in);
	ts_free(wire);
	free(scratch);
	free(phi);
	free(x);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	TsError		err = {0};
	TsModel    *m = TS_FUZZ_READER((const char *) data, size, &err);
	TsPathTable *pt;

	if (m == NULL)
		return 0;
	if (m->num_leaves <= MAX_FUZZ_PATHS)
	{
		pt = ts_paths_build(m);
		exercise(m, pt);
		ts_paths_free(pt);
	}
	ts_model_free(m);
	return 0;
}
