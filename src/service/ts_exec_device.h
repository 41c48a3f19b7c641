/*
 * ts_exec_device.h - the executor's devices behind one set of calls: the
 * CUDA GPUs (cuda/ts_cuda.h through the gpu layer), or emulated devices
 * that run the same jobs with the CPU's arithmetic. Emulation
 * (treeshap.service_emulated_devices) exists for tests: it lets a machine
 * without a GPU exercise everything the service does around a launch
 * (merging requests, splitting them over devices, cancelling, memory
 * limits), with results to compare against the CPU path. Plain C.
 */
#ifndef TS_EXEC_DEVICE_H
#define TS_EXEC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/ts_paths.h"
#include "cuda/ts_cuda.h"
#include "service/ts_executor.h"

typedef struct TsDevLayout TsDevLayout; /* a path table laid out for the devices, in host memory */
typedef struct TsDevTable TsDevTable;	/* a layout uploaded to one device */
typedef struct TsDevRunner TsDevRunner; /* two slots of buffers for launches of one job */

/* Find the devices (emulated ones when emulate > 0) and describe them in r; returns how many. */
extern int	ts_dev_probe(int emulate, TsExecutorReport *r);

/* Whether the devices are emulated. */
extern bool ts_dev_emulated(void);

/* Path elements times rows that one launch may take: about 50 ms of a device's work. */
extern double ts_dev_launch_work(void);

/*
 * Lay a model out for the devices: its path table, and its trees for
 * predictions (both must outlive the layout).
 */
extern TsDevLayout *ts_dev_layout(const TsModel *model, const TsPathTable *pt);

/* Device bytes an upload of the layout takes, about. */
extern size_t ts_dev_layout_bytes(const TsDevLayout *layout);

extern void ts_dev_layout_free(TsDevLayout *layout);

/* Upload a layout to a device. */
extern TsGpuStatus ts_dev_upload(int device, const TsDevLayout *layout, TsDevTable **out,
								 char *msg, size_t msglen);

extern void ts_dev_table_free(TsDevTable *table);

/* Device bytes a runner of max_rows rows of job takes, about. */
extern size_t ts_dev_runner_bytes(const TsPathTable *pt, const TsGpuJob *job, int32_t max_rows);

/* A runner for launches of up to max_rows rows of job on the table's device. */
extern TsGpuStatus ts_dev_runner_create(TsDevTable *table, int32_t max_rows, int32_t precision,
										const TsGpuJob *job, TsDevRunner **out, char *msg, size_t msglen);

/* Device bytes a runner spent grouping its background (beyond ts_dev_runner_bytes). */
extern size_t ts_dev_runner_group_bytes(const TsDevRunner *runner);

/* A slot's input rows (max_rows x features float32). */
extern float *ts_dev_runner_input(TsDevRunner *runner, int slot);

/* Start a launch of a slot's first nrows rows. */
extern TsGpuStatus ts_dev_runner_submit(TsDevRunner *runner, int slot, int32_t nrows,
										char *msg, size_t msglen);

/*
 * Start a launch on a slot of nrows rows read from x, its results (as
 * ts_dev_runner_wait gives them) written to phi once it finishes: memory
 * that ts_dev_host_register pinned, so that the device reads and writes
 * it without the executor copying anything.
 */
extern TsGpuStatus ts_dev_runner_submit_at(TsDevRunner *runner, int slot, int32_t nrows,
										   const float *x, double *phi, char *msg, size_t msglen);

/*
 * Pin a mapping of a request segment for the devices' copies: false when
 * they cannot, or there is no device (launches then copy through the
 * runner's slots). Emulated devices read and write any memory.
 */
extern bool ts_dev_host_register(void *p, size_t len);

/* Undo ts_dev_host_register, once no launch reads or writes the memory. */
extern void ts_dev_host_unregister(void *p);

/* TS_GPU_OK once a slot's launch has finished, TS_GPU_NOT_READY while it runs. */
extern TsGpuStatus ts_dev_runner_poll(TsDevRunner *runner, int slot, char *msg, size_t msglen);

/* A finished slot's result (ts_gpu_job_result_len doubles), valid until its next submit. */
extern TsGpuStatus ts_dev_runner_wait(TsDevRunner *runner, int slot, double **phi,
									  char *msg, size_t msglen);

extern void ts_dev_runner_free(TsDevRunner *runner);

#endif							/* TS_EXEC_DEVICE_H */
