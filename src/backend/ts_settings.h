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

typedef enum TsAlgorithmSetting
{
	TS_ALGORITHM_AUTO,
	TS_ALGORITHM_QUADRATURE,
	TS_ALGORITHM_TREESHAP
} TsAlgorithmSetting;

typedef enum TsGroupingSetting
{
	TS_GROUPING_AUTO,
	TS_GROUPING_ALWAYS,
	TS_GROUPING_NEVER
} TsGroupingSetting;

typedef enum TsMatchColumns
{
	TS_MATCH_NAME,
	TS_MATCH_POSITION
} TsMatchColumns;

extern int	ts_batch_rows;
extern int	ts_match_columns;
extern int	ts_algorithm;
extern int	ts_device;
extern int	ts_gpu_precision;
extern int	ts_model_cache_kb;
extern int	ts_cpu_threads;
extern int	ts_background_plan_kb;
extern int	ts_background_grouping;
extern int	ts_job_workers;

extern void ts_settings_init(void);

/* The CPU algorithm treeshap.algorithm selects (a TsShapAlgorithm). */
extern int	ts_cpu_algorithm(void);

/* Whether GPU SHAP and importance runs of a model of num_paths paths take the quadrature kernels. */
extern bool ts_gpu_quadrature(int64 num_paths);

#endif							/* TS_SETTINGS_H */
