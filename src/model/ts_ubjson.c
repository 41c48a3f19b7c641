/*
 * ts_ubjson.c - reader for the UBJSON subset XGBoost writes (.ubj, its
 * default model format since 2.1), into the same DOM as ts_json.c so one
 * model builder serves both. Big-endian numbers; strings and keys carry an
 * integer length; containers may be typed ('$') and counted ('#'). Every
 * count is checked against the bytes left before anything is allocated.
 */
#include "model/ts_json.h"

#include <math.h>
#include <string.h>

#define UBJ_MAX_DEPTH 64

typedef struct UbjParser
{
	const unsigned char *start;
	const unsigned char *p;
	const unsigned char *end;
	TsJsonDoc  *doc;
	TsError    *err;
	int			depth;
	uint32_t	values;			/* read so far: a cancellation point every 65,536 */
} UbjParser;

static bool parse_payload(UbjParser *ps, unsigned char marker, TsJson *out);

/* Report a syntax error at the current offset. */
static bool
ubj_error(UbjParser *ps, const char *what)
{
	return ts_fail(ps->err, TS_ERR_SYNTAX, "invalid UBJSON at byte %zu: %s",
				   (size_t) (ps->p - ps->start), what);
}

/* Whether n more bytes are there. */
static bool
need(UbjParser *ps, uint64_t n)
{
	if ((uint64_t) (ps->end - ps->p) < n)
		return ubj_error(ps, "unexpected end of input");
	return true;
}

/* Bytes of a fixed-size numeric type, or 0 for any other marker. */
static int
number_size(unsigned char m)
{
	switch (m)
	{
		case 'i':
		case 'U':
			return 1;
		case 'I':
			return 2;
		case 'l':
		case 'd':
			return 4;
		case 'L':
		case 'D':
			return 8;
	}
	return 0;
}

/* Read the next marker, skipping no-op markers. */
static bool
read_marker(UbjParser *ps, unsigned char *m)
{
	do
	{
		if (!need(ps, 1))
			return false;
		*m = *ps->p++;
	} while (*m == 'N');
	return true;
}

/* Read a number of a fixed-size type (big-endian) as a double. */
static bool
read_number(UbjParser *ps, unsigned char m, double *out)
{
	int			size = number_size(m);
	uint64_t	bits = 0;

	if (size == 0)
		return ubj_error(ps, "expected a number type");
	if (!need(ps, (uint64_t) size))
		return false;
	for (int i = 0; i < size; i++)
		bits = (bits << 8) | ps->p[i];
	ps->p += size;
	switch (m)
	{
		case 'i':
			*out = (double) (int8_t) bits;
			break;
		case 'U':
			*out = (double) bits;
			break;
		case 'I':
			*out = (double) (int16_t) bits;
			break;
		case 'l':
			*out = (double) (int32_t) bits;
			break;
		case 'L':
			*out = (double) (int64_t) bits;
			break;
		case 'd':
			{
				uint32_t	b32 = (uint32_t) bits;
				float		f;

				memcpy(&f, &b32, sizeof(f));
				*out = f;
				break;
			}
		default:
			memcpy(out, &bits, sizeof(*out));
			break;
	}
	return true;
}

/* Read a length or count: an integer-typed number, at least 0. */
static bool
read_length(UbjParser *ps, uint64_t *out)
{
	unsigned char m;
	double		d;

	if (!read_marker(ps, &m))
		return false;
	if (m == 'd' || m == 'D' || number_size(m) == 0)
		return ubj_error(ps, "expected an integer length");
	if (!read_number(ps, m, &d))
		return false;
	if (d < 0)
		return ubj_error(ps, "negative length");
	*out = (uint64_t) d;
	return true;
}

/* Read a length-prefixed string into the arena, NUL-terminated; NUL bytes are refused. */
static bool
read_string(UbjParser *ps, const char **out, size_t *outlen)
{
	uint64_t	n;
	char	   *s;

	if (!read_length(ps, &n) || !need(ps, n))
		return false;
	if (memchr(ps->p, '\0', (size_t) n) != NULL)
		return ubj_error(ps, "string contains a NUL byte");
	s = ts_json_alloc(ps->doc, (size_t) n + 1);
	memcpy(s, ps->p, (size_t) n);
	s[n] = '\0';
	ps->p += n;
	*out = s;
	*outlen = (size_t) n;
	return true;
}

/*
 * After '[' or '{': an optional element type ('$', which needs a count) and
 * an optional count ('#'); -1 when the container is closed by its end marker.
 */
static bool
read_container_header(UbjParser *ps, unsigned char *type, int64_t *count)
{
	uint64_t	n;

	*type = 0;
	*count = -1;
	if (!need(ps, 1))
		return false;
	if (*ps->p == '$')
	{
		ps->p++;
		if (!need(ps, 2))
			return false;
		*type = *ps->p++;
		if (*ps->p != '#')
			return ubj_error(ps, "a typed container needs a count");
		if (strchr("ZTFN", *type) != NULL)
			return ubj_error(ps, "containers of zero-size values are not supported");
	}
	if (*ps->p == '#')
	{
		ps->p++;
		if (!read_length(ps, &n))
			return false;
		/* every element takes at least one byte: bounds the allocation by the input */
		if (n > (uint64_t) (ps->end - ps->p))
			return ubj_error(ps, "count exceeds the remaining input");
		*count = (int64_t) n;
	}
	return true;
}

/* Whether an uncounted container ends here (consuming the end marker). */
static bool
at_end(UbjParser *ps, char close, bool *done)
{
	while (ps->p < ps->end && *ps->p == 'N')
		ps->p++;
	if (!need(ps, 1))
		return false;
	*done = *ps->p == (unsigned char) close;
	if (*done)
		ps->p++;
	return true;
}

/* A typed, counted array of fixed-size numbers, read straight into doubles. */
static bool
parse_number_array(UbjParser *ps, unsigned char type, int64_t count, TsJson *out)
{
	double	   *vals;

	if (!need(ps, (uint64_t) count * (uint64_t) number_size(type)))
		return false;
	vals = ts_json_alloc(ps->doc, (size_t) count * sizeof(double));
	for (int64_t i = 0; i < count; i++)
		read_number(ps, type, &vals[i]);
	out->type = TSJ_NUMARRAY;
	out->u.nums.vals = vals;
	out->u.nums.n = (size_t) count;
	return true;
}

/* Read an array after '['. */
static bool
parse_array(UbjParser *ps, TsJson *out)
{
	TsJsonArrayBuilder b;
	unsigned char type;
	int64_t		count;

	if (!read_container_header(ps, &type, &count))
		return false;
	if (type != 0 && number_size(type) > 0)
		return parse_number_array(ps, type, count, out);
	ts_json_array_init(&b);
	for (int64_t i = 0; count < 0 || i < count; i++)
	{
		unsigned char m = type;
		TsJson		v;
		bool		done = false;

		if (count < 0 && !at_end(ps, ']', &done))
			goto fail;
		if (done)
			break;
		if ((type == 0 && !read_marker(ps, &m)) || !parse_payload(ps, m, &v))
			goto fail;
		ts_json_array_push(ps->doc, &b, &v);
	}
	ts_json_array_finish(ps->doc, &b, out);
	return true;

fail:
	ts_json_array_discard(&b);
	return false;
}

/* Read an object after '{': keys are length-prefixed strings without a marker. */
static bool
parse_object(UbjParser *ps, TsJson *out)
{
	TsJsonVec	keys = {NULL, 0, 0, sizeof(const char *)};
	TsJsonVec	vals = {NULL, 0, 0, sizeof(TsJson *)};
	unsigned char type;
	int64_t		count;
	bool		ok = read_container_header(ps, &type, &count);

	for (int64_t i = 0; ok && (count < 0 || i < count); i++)
	{
		const char *key;
		size_t		keylen;
		unsigned char m = type;
		TsJson	   *node;
		bool		done = false;

		if (count < 0 && (!(ok = at_end(ps, '}', &done)) || done))
			break;
		node = ts_json_alloc(ps->doc, sizeof(TsJson));
		ok = read_string(ps, &key, &keylen) &&
			(type != 0 || read_marker(ps, &m)) && parse_payload(ps, m, node);
		if (ok)
		{
			ts_json_vec_push(&keys, &key);
			ts_json_vec_push(&vals, &node);
		}
	}
	if (!ok)
	{
		ts_free(keys.data);
		ts_free(vals.data);
		return false;
	}
	out->type = TSJ_OBJECT;
	out->u.obj.n = keys.n;
	out->u.obj.keys = ts_json_vec_finish(ps->doc, &keys);
	out->u.obj.vals = ts_json_vec_finish(ps->doc, &vals);
	return true;
}

/* Read the value that follows a marker. */
static bool
parse_payload(UbjParser *ps, unsigned char marker, TsJson *out)
{
	bool		ok;

	if ((++ps->values & 0xFFFF) == 0)
		ts_check_interrupts();
	switch (marker)
	{
		case 'Z':
			out->type = TSJ_NULL;
			return true;
		case 'T':
		case 'F':
			out->type = TSJ_BOOL;
			out->u.boolean = marker == 'T';
			return true;
		case 'S':
			out->type = TSJ_STRING;
			return read_string(ps, &out->u.str.ptr, &out->u.str.len);
		case '[':
		case '{':
			if (++ps->depth > UBJ_MAX_DEPTH)
				return ubj_error(ps, "nesting too deep");
			ok = marker == '[' ? parse_array(ps, out) : parse_object(ps, out);
			ps->depth--;
			return ok;
		default:
			if (number_size(marker) == 0)
				return ubj_error(ps, "unsupported or unknown type marker");
			out->type = TSJ_NUMBER;
			return read_number(ps, marker, &out->u.number);
	}
}

/* Parse a whole UBJSON document; trailing bytes are an error. */
TsJsonDoc *
ts_ubjson_parse(const char *buf, size_t len, TsError *err)
{
	UbjParser	ps;
	TsJsonDoc  *doc = ts_json_doc_new();
	unsigned char m;

	ps.start = ps.p = (const unsigned char *) buf;
	ps.end = ps.p + len;
	ps.doc = doc;
	ps.err = err;
	ps.depth = 0;
	ps.values = 0;
	if (!read_marker(&ps, &m) || !parse_payload(&ps, m, ts_json_root(doc)))
	{
		ts_json_free(doc);
		return NULL;
	}
	if (ps.p != ps.end)
	{
		ubj_error(&ps, "trailing data after the document");
		ts_json_free(doc);
		return NULL;
	}
	return doc;
}
