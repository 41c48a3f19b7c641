/*
 * ts_error.c - error recording for the compute core.
 */
#include "ts_core.h"

#include <stdarg.h>
#include <stdio.h>

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
	return false;
}
