/*
 * pg_treeshap.c - module entry point. _PG_init only defines settings: CUDA
 * is never touched here (the postmaster may load this library), only lazily
 * in a backend on its first GPU call.
 */
#include "postgres.h"

#include "fmgr.h"

#include "backend/ts_settings.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Register settings. */
void
_PG_init(void)
{
	ts_settings_init();
}
