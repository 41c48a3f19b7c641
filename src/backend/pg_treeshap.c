/*
 * pg_treeshap.c - module entry point. _PG_init defines settings and, while
 * shared_preload_libraries is processed, registers the GPU service. CUDA is
 * never touched here (the postmaster loads this library): only in the
 * service's executor (src/service/ts_executor.h).
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "backend/ts_alloc_pg.h"
#include "backend/ts_settings.h"
#include "service/ts_service.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Route the core's memory into memory contexts and its cancellation points
 * to CHECK_FOR_INTERRUPTS; register settings, and the GPU service when preloaded.
 */
void
_PG_init(void)
{
	ts_use_allocator(&ts_pg_allocator);
	ts_use_interrupt_check(ts_pg_check_interrupts);
	ts_settings_init();
	ts_service_define_settings();
	if (process_shared_preload_libraries_in_progress)
		ts_service_register();
	MarkGUCPrefixReserved("treeshap");	/* after the service's settings */
}
