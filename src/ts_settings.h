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

typedef enum TsGpuPrecisionSetting
{
	TS_GPU_PRECISION_DOUBLE,
	TS_GPU_PRECISION_SINGLE
} TsGpuPrecisionSetting;

extern int	ts_batch_rows;
extern int	ts_device;
extern int	ts_gpu_precision;

extern void ts_settings_init(void);

#endif							/* TS_SETTINGS_H */
