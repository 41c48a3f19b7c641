/*
 * ts_cuda.h - plain-C interface to the CUDA side. Functions return a status
 * code and fill a message buffer; no C++ exception and no PostgreSQL longjmp
 * crosses this boundary. No CUDA header is needed to include this file.
 */
#ifndef TS_CUDA_H
#define TS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

typedef enum TsGpuStatus
{
	TS_GPU_OK = 0,
	TS_GPU_NO_DEVICE = 1,		/* no usable GPU or driver: not an error for callers */
	TS_GPU_ERROR = 2,
	TS_GPU_OUT_OF_MEMORY = 3,	/* device or pinned host memory exhausted */
	TS_GPU_NOT_READY = 4,		/* a batch is still running */
	TS_GPU_UNUSABLE = 5			/* a GPU this build cannot run on: its architecture, or the driver */
} TsGpuStatus;

typedef struct TsGpuDeviceInfo
{
	int			index;
	char		name[256];
	long long	total_memory;	/* bytes */
	int			compute_major;
	int			compute_minor;
	int			multiprocessors;
} TsGpuDeviceInfo;

/*
 * Number of visible GPUs; initialises the CUDA runtime in the calling process.
 * TS_GPU_UNUSABLE when the driver is older than the build's CUDA runtime needs.
 */
TsGpuStatus ts_gpu_device_count(int *count, char *msg, size_t msglen);

/* Properties of one GPU. */
TsGpuStatus ts_gpu_device_info(int index, TsGpuDeviceInfo *info, char *msg, size_t msglen);

/*
 * Whether this build holds code a GPU can run (a cubin of its architecture,
 * or PTX of an older one): TS_GPU_UNUSABLE, with the build's targets in msg,
 * when it holds none.
 */
TsGpuStatus ts_gpu_device_runnable(int index, char *msg, size_t msglen);

/*
 * Make a GPU current for the calling thread: tables are uploaded to the
 * current GPU, and every later call on a table or its runners makes that
 * GPU current again itself.
 */
TsGpuStatus ts_gpu_use_device(int index, char *msg, size_t msglen);

/* Free memory of a GPU now, in bytes (which makes it current). */
TsGpuStatus ts_gpu_memory_free(int index, long long *free_bytes, char *msg, size_t msglen);

/*
 * One lane of a packed bin: a path element, or an empty lane (feature
 * TS_GPU_LANE_EMPTY). The lanes of one path are consecutive in one bin of 32;
 * each knows where its path starts and how long it is, so lane groups need
 * no search and no global synchronisation.
 */
#define TS_GPU_LANES 32
#define TS_GPU_LANE_EMPTY (-2)

typedef struct TsGpuLane
{
	double		zero_fraction;
	union
	{
		double		value;		/* leaf value of the lane's path ... */
		int64_t		value_at;	/* ... or, for vector leaves, where its values start */
	};
	float		lower;			/* a present x satisfies lower <= x < upper ... */
	float		upper;
	int32_t		feature;		/* -1 for the root element */
	int32_t		group;			/* (first) output the path's leaf adds to */
	uint8_t		missing;		/* satisfied when x is NaN */
	uint8_t		first;			/* first lane of the path in its bin */
	uint8_t		len;			/* lanes (elements) of the path */
	uint8_t		unused;
	int32_t		cat;			/* ... and, if >= 0, x's category is in the set at cat_pool + cat */
} TsGpuLane;

typedef enum TsGpuPrecision
{
	TS_GPU_FLOAT64 = 0,
	TS_GPU_FLOAT32 = 1
} TsGpuPrecision;

/* What a run computes per batch. */
typedef enum TsGpuJobKind
{
	TS_GPU_JOB_SHAP = 0,		/* per row: outputs x (features + 1), bias last */
	TS_GPU_JOB_SHAPLEY_INTERACTIONS = 1,	/* per row: outputs x selected x features, raw terms */
	TS_GPU_JOB_TAYLOR_INTERACTIONS = 2, /* (src/core/ts_interactions.h says what "raw" means) */
	TS_GPU_JOB_IMPORTANCE = 3,	/* per batch: outputs x features sums of |phi|, then of phi */
	TS_GPU_JOB_TOP_FEATURES = 4,	/* per row: outputs x (2 + 2 top_k), src/core/ts_topk.h's records */
	TS_GPU_JOB_PREDICT = 5,		/* per row: outputs margins (the trees walked, TsGpuForestDesc) */
	TS_GPU_JOB_INTERVENTIONAL = 6	/* per row: as SHAP, against the job's background (bias: the table's) */
} TsGpuJobKind;

/* The link an interventional job rescales each pair by (probability space), or none. */
typedef enum TsGpuLink
{
	TS_GPU_LINK_NONE = 0,		/* margin space */
	TS_GPU_LINK_IDENTITY = 1,
	TS_GPU_LINK_LOGISTIC = 2,	/* 1 / (1 + exp(-link_scale * m)) */
	TS_GPU_LINK_EXP = 3
} TsGpuLink;

typedef enum TsGpuGrouping
{
	TS_GPU_GROUP_NEVER = 0,		/* every background row visited */
	TS_GPU_GROUP_AUTO = 1,		/* grouped where the groups at least halve the visits */
	TS_GPU_GROUP_ALWAYS = 2		/* grouped whenever the groups fit */
} TsGpuGrouping;

/*
 * The background of an interventional job (src/core/ts_interventional.h
 * says what it computes): its rows, and in probability space their margins
 * and linked outputs. Each pair's values are scaled by shap's factor
 * (g(f(x)) - g(f(r))) / (f(x) - f(r)), with f(x) from the table's trees;
 * rescale_bound bounds that factor (1 in margin space), so that the
 * fixed-point sums keep their headroom. Paths of 32 and more features are
 * left to the CPU, as for SHAP values.
 */
typedef struct TsGpuBackground
{
	const float *x;				/* nrows x num_features, NaN = missing */
	const double *margin;		/* nrows x num_outputs; NULL with TS_GPU_LINK_NONE */
	const double *output;		/* nrows x num_outputs, linked; NULL with TS_GPU_LINK_NONE */
	int32_t		nrows;
	int32_t		link;			/* TsGpuLink */
	double		link_scale;
	double		rescale_bound;
	/*
	 * margin space: whether the runner groups each path's background rows
	 * (those that leave the same elements unsatisfied, with their count),
	 * which the kernel then visits instead of the rows, in at most
	 * group_budget device bytes (out of memory: the rows serve)
	 */
	int32_t		grouping;		/* TsGpuGrouping */
	size_t		group_budget;
} TsGpuBackground;

/*
 * The kernel family of SHAP and importance jobs: the seed's warp DP over the
 * packed bins, or Gauss-Legendre quadrature over the chunked layout
 * (TsGpuQuadDesc). Interaction jobs always take the DP.
 */
typedef enum TsGpuAlgorithm
{
	TS_GPU_ALG_TREESHAP = 0,
	TS_GPU_ALG_QUADRATURE = 1
} TsGpuAlgorithm;

typedef struct TsGpuJob
{
	TsGpuJobKind kind;
	const int32_t *feature_slot;	/* interactions: per feature, its selected row or -1 */
	int32_t		selected;		/* interactions: number of selected features */
	TsGpuAlgorithm algorithm;	/* SHAP, importance and top features */
	int32_t		top_k;			/* top features: 1 to num_features */
	const TsGpuBackground *background;	/* interventional: uploaded with the runner */
} TsGpuJob;

/* Doubles a job's result holds for a batch of nrows rows. */
size_t		ts_gpu_job_result_len(const TsGpuJob *job, int32_t num_outputs, int32_t num_features,
								  int32_t nrows);

/*
 * The quadrature layout of the same path table (src/gpu/ts_gpu_quad.c builds it).
 * Paths run in chunks; a block explains a tile of rows with one chunk,
 * summing each row's contributions per chunk slot (a distinct output x
 * feature column of the chunk) in shared memory, then adds the slot sums
 * to the global accumulators: at most TS_GPU_QUAD_MAX_SLOTS slots per chunk.
 *
 * A path of d unique features takes n = ceil(d / 2) Gauss-Legendre nodes t_i
 * (weights w_i) and np = n rounded up to even coefficients per block: first
 * P_i = v prod_j a_j(t_i), then per element r_i = b(t_i) / a(t_i) and
 * A_i = w_i (1 - z) / a(t_i), where a(t) = z + t (1 - z) is the element's
 * factor when the row satisfies it and b(t) = z (1 - t) when not. A row's
 * g_i = P_i * prod over unsatisfied elements of r_i gives phi = sum_i g_i A_i
 * for a satisfied element and -sum_i g_i w_i / (1 - t_i) for the others.
 */
#define TS_GPU_QUAD_MAX_POINTS 16
#define TS_GPU_QUAD_MAX_SLOTS 64
#define TS_GPU_QUAD_MISSING 0x10000 /* element flags: a missing x satisfies it */
#define TS_GPU_QUAD_CATEGORICAL 0x20000 /* its category set is at cat_pool + elem_cat[e] */

typedef struct TsGpuQuadElem
{
	float		lower;			/* a present x satisfies lower <= x < upper ... */
	float		upper;
	int32_t		feature;
	int32_t		slot_flags;		/* chunk slot (low 16 bits) | TS_GPU_QUAD_* */
} TsGpuQuadElem;

typedef struct TsGpuQuadPath
{
	int64_t		elem;			/* first element */
	int64_t		coef;			/* first coefficient */
	int32_t		d;				/* elements (unique features; no root) */
	int32_t		n;				/* nodes */
} TsGpuQuadPath;

typedef struct TsGpuQuadChunk
{
	int64_t		path_lo;		/* paths [path_lo, path_hi) */
	int64_t		path_hi;
	int64_t		slot_start;		/* its slots' columns: slot_column + slot_start */
	int32_t		slots;
	int32_t		target;			/* vector leaves: the value k its paths add (values) */
} TsGpuQuadChunk;

typedef struct TsGpuQuadDesc
{
	const TsGpuQuadChunk *chunks;
	int64_t		num_chunks;
	const TsGpuQuadPath *paths;
	int64_t		num_paths;
	const TsGpuQuadElem *elems;
	const int32_t *elem_cat;	/* per element: category set offset, or -1 */
	int64_t		num_elems;
	const double *coef;
	int64_t		num_coef;
	const int32_t *slot_column; /* output * num_features + feature */
	int64_t		num_slots;
	int32_t		max_points;		/* largest n */

	/*
	 * Vector leaves (value_width K > 1): elements and coefficients are laid
	 * out once, with v = 1 in P_i, and each chunk runs once per value k,
	 * scaling path i by values[i * K + k] and adding to its own columns.
	 * NULL when K is 1: P_i then holds v.
	 */
	const double *values;
	int32_t		value_width;
	const double *leaf_value;	/* K = 1: each layout path's leaf value (the interventional kernel's) */
	/* w_i / (1 - t_i) of the n-point rule at [n][i] */
	double		unsat_weight[TS_GPU_QUAD_MAX_POINTS + 1][TS_GPU_QUAD_MAX_POINTS];
} TsGpuQuadDesc;

/*
 * The trees themselves, for predictions: every tree's nodes back to back,
 * children indexing the whole array. A present x goes left when x <
 * threshold, or, at a categorical node, when its category is in the set at
 * cat_pool + cat (the forest's own pool: the model's sets, whose offsets
 * differ from the path table's); a missing x (NaN) goes left when the node says so. A leaf
 * (left -1) names its values: leaf_width doubles from values + right *
 * leaf_width, added to outputs group .. group + leaf_width - 1 of its tree.
 * A row's margin per output is its base margin plus its trees' leaf values
 * in tree order: the host's summation, step for step.
 */
#define TS_GPU_NODE_FEATURE 0x00ffffff	/* feature bits of flags_feature */
#define TS_GPU_NODE_DEFAULT_LEFT 0x01000000
#define TS_GPU_NODE_CATEGORICAL 0x02000000

typedef struct TsGpuNode
{
	union
	{
		float		threshold;
		int32_t		cat;		/* categorical nodes: offset of the left set in cat_pool */
	};
	int32_t		flags_feature;	/* feature | TS_GPU_NODE_* */
	int32_t		left;			/* -1 for a leaf */
	int32_t		right;			/* a leaf: its ordinal among the leaves */
} TsGpuNode;

typedef struct TsGpuForestDesc
{
	const TsGpuNode *nodes;
	int64_t		num_nodes;
	const int32_t *roots;		/* per tree: its root node */
	const int32_t *groups;		/* per tree: the first output it adds to */
	int32_t		num_trees;
	const double *values;		/* leaf_width per leaf, by leaf ordinal */
	int64_t		num_leaves;
	int32_t		leaf_width;
	const double *base_margin;	/* per output */
	const uint32_t *cat_pool;	/* the model's category sets (not the path table's); NULL when none */
	int64_t		cat_pool_len;	/* words */
} TsGpuForestDesc;

/* A packed path table as the host hands it over. */
typedef struct TsGpuTableDesc
{
	const TsGpuLane *lanes;		/* num_bins * 32 */
	int64_t		num_bins;
	int32_t		num_features;
	int32_t		num_outputs;
	const double *bias;			/* per output */
	const uint32_t *cat_pool;	/* category sets (src/base/ts_catset.h layout); NULL when none */
	int64_t		cat_pool_len;	/* words */
	double		fixed_scale;	/* contributions are summed as round(phi * scale) in int64 */
	const TsGpuQuadDesc *quad;	/* the quadrature layout; NULL: DP only */

	/*
	 * Vector leaves (value_width K > 1): a lane's path adds its values
	 * values[value_at + k] to outputs group + k; NULL when K is 1
	 */
	const double *values;
	int64_t		num_values;
	int32_t		value_width;
	const TsGpuForestDesc *forest;	/* the trees, for predictions; NULL: no predict jobs */
} TsGpuTableDesc;

typedef struct TsGpuTable TsGpuTable;	/* device copy of a packed table */
typedef struct TsGpuRunner TsGpuRunner; /* buffers and streams of a pipelined run */

/* Copy a packed table to the current GPU (ts_gpu_use_device). */
TsGpuStatus ts_gpu_table_upload(const TsGpuTableDesc *desc, TsGpuTable **out,
								char *msg, size_t msglen);
void		ts_gpu_table_free(TsGpuTable *table);

/*
 * Two slots of pinned host and device buffers for batches of up to max_rows
 * rows, each with its own stream, so one batch computes while the caller
 * fills the other. The job is copied; NULL means SHAP values.
 */
TsGpuStatus ts_gpu_runner_create(const TsGpuTable *table, int32_t max_rows,
								 TsGpuPrecision precision, const TsGpuJob *job,
								 TsGpuRunner **out, char *msg, size_t msglen);

/* Pinned row-major float32 input of a slot (max_rows x num_features, NaN = missing). */
float	   *ts_gpu_runner_input(TsGpuRunner *runner, int slot);

/* Start copy-in, kernels and copy-out of nrows rows of a slot's input; returns at once. */
TsGpuStatus ts_gpu_runner_submit(TsGpuRunner *runner, int slot, int32_t nrows,
								 char *msg, size_t msglen);

/*
 * The same on a slot's stream, with the rows read from x and the result
 * written to phi instead of the slot's pinned buffers: host memory that
 * ts_gpu_host_register pinned, so both copies are DMA with no staging. phi
 * is written once the batch finishes (poll, wait).
 */
TsGpuStatus ts_gpu_runner_submit_at(TsGpuRunner *runner, int slot, int32_t nrows, const float *x,
									double *phi, char *msg, size_t msglen);

/*
 * Pin len bytes of host memory at p (a mapping of another process's
 * shared memory, say) for every device, so that copies to and from it run
 * as DMA; undone by ts_gpu_host_unregister once no copy uses it.
 */
TsGpuStatus ts_gpu_host_register(void *p, size_t len, char *msg, size_t msglen);
void		ts_gpu_host_unregister(void *p);

/*
 * Wait for a slot's batch; *phi then points at its result (for SHAP, nrows x
 * outputs x (features + 1) doubles in pred_contribs layout, bias last),
 * valid until the slot's next submit.
 */
TsGpuStatus ts_gpu_runner_wait(TsGpuRunner *runner, int slot, double **phi,
							   char *msg, size_t msglen);

/* TS_GPU_OK once a slot's batch has finished, TS_GPU_NOT_READY while it runs. */
TsGpuStatus ts_gpu_runner_poll(TsGpuRunner *runner, int slot, char *msg, size_t msglen);

/* Device bytes a runner holds for its background's groups (0 without them). */
size_t		ts_gpu_runner_group_bytes(const TsGpuRunner *runner);

/* Wait for outstanding work and free everything; safe on a half-built runner. */
void		ts_gpu_runner_free(TsGpuRunner *runner);

/*
 * Benchmark: time the device work of a job (NULL: SHAP) over nrows rows
 * already on the GPU (zeroing, kernels, finalising), best of reps runs, in
 * seconds; also returns the last run's result into phi when phi is not NULL.
 */
TsGpuStatus ts_gpu_time_kernel(const TsGpuTable *table, const float *x, int32_t nrows,
							   TsGpuPrecision precision, const TsGpuJob *job, int reps,
							   double *seconds, double *phi, char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif

#endif							/* TS_CUDA_H */
