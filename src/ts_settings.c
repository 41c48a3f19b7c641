/*
 * ts_settings.c - GUC definitions: treeshap.batch_rows, treeshap.device and
 * treeshap.gpu_precision.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "ts_settings.h"

int			ts_batch_rows = 10000;
int			ts_device = TS_DEVICE_AUTO;
int			ts_gpu_precision = TS_GPU_PRECISION_DOUBLE;

static const struct config_enum_entry device_options[] = {
	{"auto", TS_DEVICE_AUTO, false},
	{"cpu", TS_DEVICE_CPU, false},
	{"gpu", TS_DEVICE_GPU, false},
	{NULL, 0, false}
};

static const struct config_enum_entry precision_options[] = {
	{"double", TS_GPU_PRECISION_DOUBLE, false},
	{"single", TS_GPU_PRECISION_SINGLE, false},
	{NULL, 0, false}
};

/* Define the settings; called from _PG_init, touches no device. */
void
ts_settings_init(void)
{
	DefineCustomIntVariable("treeshap.batch_rows",
							"Rows fetched from the query and explained per batch.",
							"Bounds the memory an explain call holds at once.",
							&ts_batch_rows, 10000, 1, 10000000,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.device",
							 "Where SHAP values are computed: auto, cpu or gpu.",
							 "auto uses a GPU when one is available and the CPU otherwise.",
							 &ts_device, TS_DEVICE_AUTO, device_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("treeshap.gpu_precision",
							 "Arithmetic of the GPU kernel's dynamic programme: double or single.",
							 "Sums are exact int64 fixed point either way; single is faster and less exact.",
							 &ts_gpu_precision, TS_GPU_PRECISION_DOUBLE, precision_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	MarkGUCPrefixReserved("treeshap");
}
