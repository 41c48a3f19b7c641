/*
 * ts_error.c - error recording for the compute core.
 */
#include "base/ts_core.h"

#include <stdarg.h>
#include <stdio.h>

/* Length of the valid UTF-8 sequence starting at s, or 0 if it is not one. */
static int
utf8_sequence(const unsigned char *s)
{
	int			n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 :
		(s[0] & 0xF8) == 0xF0 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return n;
}

/*
 * Messages quote bits of hostile input; replace control characters and
 * invalid UTF-8 with '?' so that no client encoding conversion can choke.
 */
static void
sanitise(char *msg)
{
	unsigned char *s = (unsigned char *) msg;

	while (*s != '\0')
	{
		int			n = utf8_sequence(s);

		if (n == 0 || (n == 1 && (*s < 0x20 || *s == 0x7F)))
			*s++ = '?';
		else
			s += n;
	}
}

/* Record the first error with its class and message; always returns false. */
bool
ts_fail(TsError *err, TsErrorCode code, const char *fmt,...)
{
	va_list		ap;

	if (err == NULL || err->code != TS_OK)
		return false;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	sanitise(err->message);
	return false;
}
