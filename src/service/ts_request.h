/*
 * ts_request.h - the payload of a request to the GPU service: a dynamic
 * shared memory segment that the backend creates and the executor maps by
 * name (the executor is no PostgreSQL process). It starts with a header,
 * then the areas the header points at. Plain C: both sides include it.
 *
 * A load request carries a model's bytes (or asks whether the service holds
 * it) and may ask for the model's interface, which spares a backend parsing
 * the model; a run request one batch of rows for a resident model, and room
 * for its results. The backend stamps its
 * slot and sequence number into the header before each request, and the
 * executor serves a segment only when they match the message it got, so a
 * segment name reused after its backend left is never written.
 */
#ifndef TS_REQUEST_H
#define TS_REQUEST_H

#include <stdint.h>

#define TS_REQUEST_MAGIC 0x54535251u	/* "TSRQ" */
#define TS_REQUEST_AREAS 2		/* a run's batches alternate between two areas */

/* Which model: its database, catalog version, and a digest of its bytes. */
typedef struct TsModelKey
{
	uint32_t	database;
	uint32_t	unused;
	int64_t		version;
	uint64_t	length;
	uint64_t	digest;			/* CityHash64 of the bytes */
} TsModelKey;

/* How the executor answered (TsExecMsg.result of a load or run). */
typedef enum TsRequestStatus
{
	TS_REQUEST_OK = 0,
	TS_REQUEST_CANCELLED = -1,	/* its backend stopped waiting */
	TS_REQUEST_NEED_MODEL = 1,	/* run: the model is not resident; load it and ask again */
	TS_REQUEST_BAD_MODEL = 2,	/* load: the bytes do not read (message says why) */
	TS_REQUEST_OUT_OF_MEMORY = 3,	/* GPU memory, after evicting every other model */
	TS_REQUEST_FAILED = 4,		/* anything else (message says what) */
	TS_REQUEST_INVALID = 5		/* the segment does not hold a request of this sender */
} TsRequestStatus;

typedef struct TsRequestHeader
{
	uint32_t	magic;
	int32_t		slot;			/* stamped by the backend, per request */
	uint64_t	seq;
	uint64_t	size;			/* of the whole segment */
	TsModelKey	model;

	/* load: the model's bytes; 0 asks only whether it is resident (NEED_MODEL if not) */
	uint64_t	bytes_offset;
	/* load: room for the model's interface (core/ts_wire.h), 0 bytes when not wanted */
	uint64_t	interface_offset;
	uint64_t	interface_room;

	/* run: the job (cuda/ts_cuda.h's TsGpuJob and precision) */
	int32_t		job_kind;
	int32_t		algorithm;
	int32_t		precision;
	int32_t		selected;		/* interactions: selected features */
	uint64_t	feature_slot_offset;	/* interactions: num_features int32 */
	int32_t		num_features;
	int32_t		num_outputs;
	int32_t		max_rows;		/* an area's room */
	int32_t		nrows;			/* this request's rows */
	int32_t		area;			/* which area holds them */
	int32_t		top_k;			/* top features: features per record */
	uint64_t	input_offset[TS_REQUEST_AREAS]; /* max_rows x num_features float32 */
	uint64_t	output_offset[TS_REQUEST_AREAS];	/* output_len doubles */
	uint64_t	output_len;

	/*
	 * run, interventional: the background, background_rows x num_features
	 * float32 (input rules applied), then in probability space as many rows
	 * of num_outputs margins and of num_outputs linked outputs (doubles)
	 */
	uint64_t	background_offset;
	int32_t		background_rows;
	int32_t		probability;
	int32_t		grouping;		/* TsGpuGrouping: treeshap.background_grouping */

	/* the answer */
	int64_t		paths;			/* load: the resident model's paths */
	uint64_t	interface_len;	/* load: its interface's length, written when within the room */
	int32_t		loaded;			/* load: 1 when this request made it resident, 0 when it was */
	int32_t		status;			/* TsRequestStatus */
	int32_t		error_class;	/* TS_REQUEST_BAD_MODEL: the core's TsErrorCode */
	char		message[256];
} TsRequestHeader;

/* Offsets in a segment are aligned to this. */
#define TS_REQUEST_ALIGN 64

static inline uint64_t
ts_request_align(uint64_t n)
{
	return (n + TS_REQUEST_ALIGN - 1) & ~(uint64_t) (TS_REQUEST_ALIGN - 1);
}

/* Where a background's margins start in its area: after its rows, aligned. */
static inline uint64_t
ts_request_background_margin_at(int32_t rows, int32_t num_features)
{
	return ts_request_align((uint64_t) rows * (uint64_t) num_features * sizeof(float));
}

/* Bytes of a background area: rows, then in probability space margins and outputs. */
static inline uint64_t
ts_request_background_bytes(int32_t rows, int32_t num_features, int32_t num_outputs, int32_t probability)
{
	return ts_request_background_margin_at(rows, num_features) +
		(probability ? 2 * (uint64_t) rows * (uint64_t) num_outputs * sizeof(double) : 0);
}

#endif							/* TS_REQUEST_H */
