/*
 * ts_settings.c - GUC definitions: treeshap.batch_rows and treeshap.device.
 */
#include "postgres.h"

#include "utils/guc.h"

#include "ts_settings.h"

int			ts_batch_rows = 10000;
int			ts_device = TS_DEVICE_AUTO;

static const struct config_enum_entry device_options[] = {
	{"auto", TS_DEVICE_AUTO, false},
	{"cpu", TS_DEVICE_CPU, false},
	{"gpu", TS_DEVICE_GPU, false},
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
	MarkGUCPrefixReserved("treeshap");
}

/* Refuse an explicit GPU request: no GPU kernels are built into this version. */
void
ts_settings_check_device(void)
{
	if (ts_device == TS_DEVICE_GPU)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("treeshap.device = gpu is not available: this version computes SHAP values on the cpu only"),
				 errhint("Set treeshap.device to auto or cpu.")));
}
