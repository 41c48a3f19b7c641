/*
 * ts_settings.h - the extension's GUC settings.
 */
#ifndef TS_SETTINGS_H
#define TS_SETTINGS_H

typedef enum TsDevice
{
	TS_DEVICE_AUTO,
	TS_DEVICE_CPU,
	TS_DEVICE_GPU
} TsDevice;

extern int	ts_batch_rows;
extern int	ts_device;

extern void ts_settings_init(void);

/* ERROR unless the configured device can run SHAP in this build. */
extern void ts_settings_check_device(void);

#endif							/* TS_SETTINGS_H */
