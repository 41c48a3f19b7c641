/*
 * ts_json.c - recursive-descent JSON reader for model files. Hostile input
 * is expected: every read is bounds-checked, nesting is limited, and any
 * failure frees all memory taken so far before reporting.
 */
#include "model/ts_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TSJ_MAX_DEPTH 64
#define TSJ_BLOCK_SIZE (64 * 1024)

/* Arena: small objects carved from blocks; large ones kept in a list. */
typedef struct TsArenaBlock
{
	struct TsArenaBlock *next;
	size_t		used;
	size_t		size;
	/* data follows, aligned to max_align_t */
} TsArenaBlock;

struct TsJsonDoc
{
	TsArenaBlock *blocks;
	TsJson	   *root;
};

typedef struct TsJsonParser
{
	const char *p;
	const char *end;
	TsJsonDoc  *doc;
	TsError    *err;
	int			depth;
	uint32_t	values;			/* read so far: a cancellation point every 65,536 */
} TsJsonParser;

/* Round up to the platform's strictest alignment. */
static size_t
arena_align(size_t n)
{
	const size_t a = _Alignof(max_align_t);

	return (n + a - 1) & ~(a - 1);
}

/* Allocate n bytes that live as long as the document. */
void *
ts_json_alloc(TsJsonDoc *doc, size_t n)
{
	TsArenaBlock *b = doc->blocks;
	size_t		hdr = arena_align(sizeof(TsArenaBlock));

	n = arena_align(n == 0 ? 1 : n);
	if (b == NULL || b->size - b->used < n)
	{
		size_t		size = n > TSJ_BLOCK_SIZE / 4 ? n : TSJ_BLOCK_SIZE;
		TsArenaBlock *nb = ts_alloc(hdr + size);

		nb->used = 0;
		nb->size = size;
		if (b != NULL && size == n)
		{
			/* a dedicated block: keep the current block open for small items */
			nb->next = b->next;
			b->next = nb;
			nb->used = n;
			return (char *) nb + hdr;
		}
		nb->next = b;
		doc->blocks = nb;
		b = nb;
	}
	b->used += n;
	return (char *) b + hdr + b->used - n;
}

/* Free every block of the document. */
void
ts_json_free(TsJsonDoc *doc)
{
	TsArenaBlock *b;

	if (doc == NULL)
		return;
	b = doc->blocks;
	while (b != NULL)
	{
		TsArenaBlock *next = b->next;

		ts_free(b);
		b = next;
	}
	ts_free(doc);
}

/* Report a syntax error; the message names what was expected. */
static bool
json_error(TsJsonParser *ps, const char *what)
{
	return ts_fail(ps->err, TS_ERR_SYNTAX, "invalid JSON: %s", what);
}

/* Skip JSON whitespace. */
static void
skip_ws(TsJsonParser *ps)
{
	while (ps->p < ps->end &&
		   (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
		ps->p++;
}

/* Consume a literal word such as "true" if it is next. */
static bool
match_word(TsJsonParser *ps, const char *word)
{
	size_t		n = strlen(word);

	if ((size_t) (ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return false;
	ps->p += n;
	return true;
}

/*
 * Read a number token. Accepts JSON numbers plus NaN/Infinity spellings some
 * writers emit; the model validator decides where non-finite values may go.
 */
static bool
parse_number(TsJsonParser *ps, double *out)
{
	char		buf[512];		/* room for any double written out in full */
	const char *s = ps->p;
	size_t		n;
	char	   *endp;

	if (match_word(ps, "NaN"))
	{
		*out = NAN;
		return true;
	}
	if (match_word(ps, "Infinity"))
	{
		*out = INFINITY;
		return true;
	}
	if (match_word(ps, "-Infinity"))
	{
		*out = -INFINITY;
		return true;
	}
	while (ps->p < ps->end &&
		   (strchr("0123456789+-.eE", *ps->p) != NULL) && *ps->p != '\0')
		ps->p++;
	n = (size_t) (ps->p - s);
	if (n == 0)
		return json_error(ps, "unexpected character");
	if (n >= sizeof(buf))
		return json_error(ps, "number token too long");
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')))
		return json_error(ps, "malformed number");
	*out = strtod(buf, &endp);
	if (*endp != '\0')
		return json_error(ps, "malformed number");
	return true;
}

/* Read four hex digits of a \u escape. */
static bool
parse_hex4(TsJsonParser *ps, unsigned *out)
{
	unsigned	v = 0;

	if (ps->end - ps->p < 4)
		return json_error(ps, "truncated \\u escape");
	for (int i = 0; i < 4; i++)
	{
		char		c = *ps->p++;

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned) (c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned) (c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned) (c - 'A' + 10);
		else
			return json_error(ps, "bad \\u escape");
	}
	*out = v;
	return true;
}

/* Append a code point as UTF-8 (at most 4 bytes). */
static size_t
put_utf8(char *dst, unsigned cp)
{
	if (cp < 0x80)
	{
		dst[0] = (char) cp;
		return 1;
	}
	if (cp < 0x800)
	{
		dst[0] = (char) (0xC0 | (cp >> 6));
		dst[1] = (char) (0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000)
	{
		dst[0] = (char) (0xE0 | (cp >> 12));
		dst[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
		dst[2] = (char) (0x80 | (cp & 0x3F));
		return 3;
	}
	dst[0] = (char) (0xF0 | (cp >> 18));
	dst[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
	dst[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
	dst[3] = (char) (0x80 | (cp & 0x3F));
	return 4;
}

/* Report a bad escape; returns 0 bytes written. */
static size_t
escape_fail(TsJsonParser *ps, const char *what)
{
	json_error(ps, what);
	return 0;
}

/* Decode one escape sequence after the backslash into dst; returns bytes written or 0. */
static size_t
parse_escape(TsJsonParser *ps, char *dst)
{
	unsigned	cp;

	if (ps->p >= ps->end)
		return escape_fail(ps, "truncated escape");
	switch (*ps->p++)
	{
		case '"':
			*dst = '"';
			return 1;
		case '\\':
			*dst = '\\';
			return 1;
		case '/':
			*dst = '/';
			return 1;
		case 'b':
			*dst = '\b';
			return 1;
		case 'f':
			*dst = '\f';
			return 1;
		case 'n':
			*dst = '\n';
			return 1;
		case 'r':
			*dst = '\r';
			return 1;
		case 't':
			*dst = '\t';
			return 1;
		case 'u':
			if (!parse_hex4(ps, &cp))
				return 0;
			if (cp >= 0xD800 && cp <= 0xDBFF)
			{
				unsigned	lo;

				if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
					return escape_fail(ps, "unpaired surrogate");
				ps->p += 2;
				if (!parse_hex4(ps, &lo))
					return 0;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return escape_fail(ps, "unpaired surrogate");
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			}
			else if (cp >= 0xDC00 && cp <= 0xDFFF)
				return escape_fail(ps, "unpaired surrogate");
			if (cp == 0)
				return escape_fail(ps, "\\u0000 is not allowed");
			return put_utf8(dst, cp);
		default:
			return escape_fail(ps, "bad escape");
	}
}

/* Read a string after its opening quote into the arena. */
static bool
parse_string(TsJsonParser *ps, const char **out, size_t *outlen)
{
	const char *s = ps->p;
	char	   *dst;
	size_t		n = 0;

	/* The decoded string is never longer than the raw bytes up to the quote. */
	while (ps->p < ps->end && *ps->p != '"')
	{
		if (*ps->p == '\\')
			ps->p++;
		ps->p++;
	}
	if (ps->p >= ps->end)
		return json_error(ps, "unterminated string");
	dst = ts_json_alloc(ps->doc, (size_t) (ps->p - s) + 1);
	ps->p = s;
	while (*ps->p != '"')
	{
		unsigned char c = (unsigned char) *ps->p;

		if (c < 0x20)
			return json_error(ps, "control character in string");
		if (c == '\\')
		{
			size_t		k;

			ps->p++;
			k = parse_escape(ps, dst + n);
			if (k == 0)
				return false;
			n += k;
		}
		else
		{
			dst[n++] = (char) c;
			ps->p++;
		}
	}
	ps->p++;					/* closing quote */
	dst[n] = '\0';
	*out = dst;
	*outlen = n;
	return true;
}

static bool parse_value(TsJsonParser *ps, TsJson *out);

/* Append one element of vec->elem bytes, doubling capacity as needed. */
void
ts_json_vec_push(TsJsonVec *v, const void *item)
{
	if (v->n == v->cap)
	{
		size_t		cap = v->cap == 0 ? 16 : v->cap * 2;

		v->data = ts_realloc(v->data, cap * v->elem);
		v->cap = cap;
	}
	memcpy((char *) v->data + v->n * v->elem, item, v->elem);
	v->n++;
}

/* Copy a vector's contents into the document's arena and release the vector. */
void *
ts_json_vec_finish(TsJsonDoc *doc, TsJsonVec *v)
{
	void	   *dst = ts_json_alloc(doc, v->n * v->elem);

	if (v->n > 0)
		memcpy(dst, v->data, v->n * v->elem);
	ts_free(v->data);
	v->data = NULL;
	return dst;
}

/* Start an array under construction. */
void
ts_json_array_init(TsJsonArrayBuilder *b)
{
	memset(b, 0, sizeof(*b));
	b->nums.elem = sizeof(double);
	b->items.elem = sizeof(TsJson *);
}

/*
 * Append a value. Numbers go to a double vector until the first non-number;
 * then the array turns generic and earlier numbers become nodes.
 */
void
ts_json_array_push(TsJsonDoc *doc, TsJsonArrayBuilder *b, const TsJson *v)
{
	TsJson	   *node;

	if (!b->generic && v->type == TSJ_NUMBER)
	{
		ts_json_vec_push(&b->nums, &v->u.number);
		return;
	}
	if (!b->generic)
	{
		for (size_t i = 0; i < b->nums.n; i++)
		{
			node = ts_json_alloc(doc, sizeof(TsJson));
			node->type = TSJ_NUMBER;
			node->u.number = ((double *) b->nums.data)[i];
			ts_json_vec_push(&b->items, &node);
		}
		b->generic = true;
	}
	node = ts_json_alloc(doc, sizeof(TsJson));
	*node = *v;
	ts_json_vec_push(&b->items, &node);
}

/* Store the finished array in out (TSJ_NUMARRAY when every element was a number). */
void
ts_json_array_finish(TsJsonDoc *doc, TsJsonArrayBuilder *b, TsJson *out)
{
	if (b->generic)
	{
		out->type = TSJ_ARRAY;
		out->u.arr.n = b->items.n;
		out->u.arr.items = ts_json_vec_finish(doc, &b->items);
	}
	else
	{
		out->type = TSJ_NUMARRAY;
		out->u.nums.n = b->nums.n;
		out->u.nums.vals = ts_json_vec_finish(doc, &b->nums);
	}
	ts_json_array_discard(b);
}

/* Release a builder's vectors (after finish, or on failure). */
void
ts_json_array_discard(TsJsonArrayBuilder *b)
{
	ts_free(b->nums.data);
	ts_free(b->items.data);
	b->nums.data = b->items.data = NULL;
}

/* Read an array after '['. */
static bool
parse_array(TsJsonParser *ps, TsJson *out)
{
	TsJsonArrayBuilder b;

	ts_json_array_init(&b);
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ']')
	{
		ps->p++;
		ts_json_array_finish(ps->doc, &b, out);
		return true;
	}
	for (;;)
	{
		TsJson		v;

		skip_ws(ps);
		if (!parse_value(ps, &v))
			break;
		ts_json_array_push(ps->doc, &b, &v);
		skip_ws(ps);
		if (ps->p >= ps->end)
		{
			json_error(ps, "unterminated array");
			break;
		}
		if (*ps->p == ',')
		{
			ps->p++;
			continue;
		}
		if (*ps->p == ']')
		{
			ps->p++;
			ts_json_array_finish(ps->doc, &b, out);
			return true;
		}
		json_error(ps, "expected ',' or ']' in array");
		break;
	}
	ts_json_array_discard(&b);
	return false;
}

/* Read an object after '{'. */
static bool
parse_object(TsJsonParser *ps, TsJson *out)
{
	TsJsonVec	keys = {NULL, 0, 0, sizeof(const char *)};
	TsJsonVec	vals = {NULL, 0, 0, sizeof(TsJson *)};

	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == '}')
		ps->p++;
	else
	{
		for (;;)
		{
			const char *key;
			size_t		keylen;
			TsJson	   *node;

			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != '"')
			{
				json_error(ps, "expected a string key in object");
				goto fail;
			}
			ps->p++;
			if (!parse_string(ps, &key, &keylen))
				goto fail;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':')
			{
				json_error(ps, "expected ':' in object");
				goto fail;
			}
			ps->p++;
			skip_ws(ps);
			node = ts_json_alloc(ps->doc, sizeof(TsJson));
			if (!parse_value(ps, node))
				goto fail;
			ts_json_vec_push(&keys, &key);
			ts_json_vec_push(&vals, &node);
			skip_ws(ps);
			if (ps->p >= ps->end)
			{
				json_error(ps, "unterminated object");
				goto fail;
			}
			if (*ps->p == ',')
			{
				ps->p++;
				continue;
			}
			if (*ps->p == '}')
			{
				ps->p++;
				break;
			}
			json_error(ps, "expected ',' or '}' in object");
			goto fail;
		}
	}
	out->type = TSJ_OBJECT;
	out->u.obj.n = keys.n;
	out->u.obj.keys = ts_json_vec_finish(ps->doc, &keys);
	out->u.obj.vals = ts_json_vec_finish(ps->doc, &vals);
	return true;

fail:
	ts_free(keys.data);
	ts_free(vals.data);
	return false;
}

/* Read any value at the current position. */
static bool
parse_value(TsJsonParser *ps, TsJson *out)
{
	bool		ok;

	if ((++ps->values & 0xFFFF) == 0)
		ts_check_interrupts();	/* a model of hundreds of megabytes parses for seconds */
	skip_ws(ps);
	if (ps->p >= ps->end)
		return json_error(ps, "unexpected end of input");
	switch (*ps->p)
	{
		case '{':
		case '[':
			if (++ps->depth > TSJ_MAX_DEPTH)
				return json_error(ps, "nesting too deep");
			ps->p++;
			ok = (ps->p[-1] == '{') ? parse_object(ps, out) : parse_array(ps, out);
			ps->depth--;
			return ok;
		case '"':
			ps->p++;
			out->type = TSJ_STRING;
			return parse_string(ps, &out->u.str.ptr, &out->u.str.len);
		case 't':
			if (!match_word(ps, "true"))
				return json_error(ps, "unexpected token");
			out->type = TSJ_BOOL;
			out->u.boolean = true;
			return true;
		case 'f':
			if (!match_word(ps, "false"))
				return json_error(ps, "unexpected token");
			out->type = TSJ_BOOL;
			out->u.boolean = false;
			return true;
		case 'n':
			if (!match_word(ps, "null"))
				return json_error(ps, "unexpected token");
			out->type = TSJ_NULL;
			return true;
		default:
			out->type = TSJ_NUMBER;
			return parse_number(ps, &out->u.number);
	}
}

/* An empty document whose root the caller fills. */
TsJsonDoc *
ts_json_doc_new(void)
{
	TsJsonDoc  *doc = ts_alloc0(sizeof(TsJsonDoc));

	doc->root = ts_json_alloc(doc, sizeof(TsJson));
	doc->root->type = TSJ_NULL;
	return doc;
}

/* Parse a whole document; trailing non-whitespace is an error. */
TsJsonDoc *
ts_json_parse(const char *buf, size_t len, TsError *err)
{
	TsJsonParser ps;
	TsJsonDoc  *doc = ts_json_doc_new();

	ps.p = buf;
	ps.end = buf + len;
	ps.doc = doc;
	ps.err = err;
	ps.depth = 0;
	ps.values = 0;
	if (!parse_value(&ps, doc->root))
	{
		ts_json_free(doc);
		return NULL;
	}
	skip_ws(&ps);
	if (ps.p != ps.end)
	{
		ts_fail(err, TS_ERR_SYNTAX, "invalid JSON: trailing data after the document");
		ts_json_free(doc);
		return NULL;
	}
	return doc;
}

/* Root value of a parsed document. */
TsJson *
ts_json_root(TsJsonDoc *doc)
{
	return doc->root;
}

/* Look up a key in an object (first match). */
TsJson *
ts_json_get(const TsJson *obj, const char *key)
{
	if (obj == NULL || obj->type != TSJ_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->u.obj.n; i++)
		if (strcmp(obj->u.obj.keys[i], key) == 0)
			return obj->u.obj.vals[i];
	return NULL;
}

/* Element count of an array value. */
size_t
ts_json_array_len(const TsJson *arr)
{
	if (arr == NULL)
		return 0;
	if (arr->type == TSJ_NUMARRAY)
		return arr->u.nums.n;
	if (arr->type == TSJ_ARRAY)
		return arr->u.arr.n;
	return 0;
}

/* Element i of a numeric array as a double (booleans count as 0/1). */
bool
ts_json_number_at(const TsJson *arr, size_t i, double *out)
{
	const TsJson *v;

	if (i >= ts_json_array_len(arr))
		return false;
	if (arr->type == TSJ_NUMARRAY)
	{
		*out = arr->u.nums.vals[i];
		return true;
	}
	v = arr->u.arr.items[i];
	if (v->type == TSJ_NUMBER)
		*out = v->u.number;
	else if (v->type == TSJ_BOOL)
		*out = v->u.boolean ? 1.0 : 0.0;
	else
		return false;
	return true;
}

/* Human-readable type name. */
const char *
ts_json_type_name(const TsJson *v)
{
	if (v == NULL)
		return "missing";
	switch (v->type)
	{
		case TSJ_NULL:
			return "null";
		case TSJ_BOOL:
			return "boolean";
		case TSJ_NUMBER:
			return "number";
		case TSJ_STRING:
			return "string";
		case TSJ_ARRAY:
		case TSJ_NUMARRAY:
			return "array";
		case TSJ_OBJECT:
			return "object";
	}
	return "unknown";
}
