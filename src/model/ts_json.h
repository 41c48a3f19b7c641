/*
 * ts_json.h - a small, defensive JSON reader producing a DOM for model
 * readers (ts_ubjson.c builds the same DOM from UBJSON). Arrays made only of numbers are stored as double arrays, so a
 * model with millions of nodes costs 8 bytes per number, not a value node.
 * Everything lives in one arena released by ts_json_free().
 */
#ifndef TS_JSON_H
#define TS_JSON_H

#include "base/ts_core.h"

typedef enum TsJsonType
{
	TSJ_NULL,
	TSJ_BOOL,
	TSJ_NUMBER,
	TSJ_STRING,
	TSJ_ARRAY,					/* mixed or non-numeric elements */
	TSJ_NUMARRAY,				/* every element a number (or empty) */
	TSJ_OBJECT
} TsJsonType;

typedef struct TsJson TsJson;

struct TsJson
{
	TsJsonType	type;
	union
	{
		bool		boolean;
		double		number;
		struct
		{
			const char *ptr;	/* NUL-terminated; \u0000 is refused */
			size_t		len;
		}			str;
		struct
		{
			TsJson	  **items;
			size_t		n;
		}			arr;
		struct
		{
			double	   *vals;
			size_t		n;
		}			nums;
		struct
		{
			const char **keys;
			TsJson	  **vals;
			size_t		n;
		}			obj;
	}			u;
};

typedef struct TsJsonDoc TsJsonDoc;

/* Parse len bytes; NULL with err set on failure (nothing leaks). */
extern TsJsonDoc *ts_json_parse(const char *buf, size_t len, TsError *err);
extern TsJson *ts_json_root(TsJsonDoc *doc);

/* Parse XGBoost's UBJSON into the same DOM (ts_ubjson.c). */
extern TsJsonDoc *ts_ubjson_parse(const char *buf, size_t len, TsError *err);
extern void ts_json_free(TsJsonDoc *doc);

/* For other front ends (UBJSON): an empty document, its arena and vectors. */
extern TsJsonDoc *ts_json_doc_new(void);
extern void *ts_json_alloc(TsJsonDoc *doc, size_t n);

typedef struct TsJsonVec
{
	void	   *data;
	size_t		n;
	size_t		cap;
	size_t		elem;
} TsJsonVec;

extern void ts_json_vec_push(TsJsonVec *v, const void *item);
extern void *ts_json_vec_finish(TsJsonDoc *doc, TsJsonVec *v);

/* An array under construction: numeric until a non-number arrives. */
typedef struct TsJsonArrayBuilder
{
	TsJsonVec	nums;
	TsJsonVec	items;
	bool		generic;
} TsJsonArrayBuilder;

extern void ts_json_array_init(TsJsonArrayBuilder *b);
extern void ts_json_array_push(TsJsonDoc *doc, TsJsonArrayBuilder *b, const TsJson *v);
extern void ts_json_array_finish(TsJsonDoc *doc, TsJsonArrayBuilder *b, TsJson *out);
extern void ts_json_array_discard(TsJsonArrayBuilder *b);

/* Member of an object by key, or NULL (also when obj is not an object). */
extern TsJson *ts_json_get(const TsJson *obj, const char *key);

/* Number of elements of an array of either kind; 0 for non-arrays. */
extern size_t ts_json_array_len(const TsJson *arr);

/* Element i of an array as a number (booleans as 0/1); false if absent or not a number. */
extern bool ts_json_number_at(const TsJson *arr, size_t i, double *out);

/* Name of a value's type, for error messages. */
extern const char *ts_json_type_name(const TsJson *v);

#endif							/* TS_JSON_H */
