/*
 * ts_interrupt.c - the core's cancellation point (ts_core.h): nothing by
 * default (standalone tools, the GPU service's executor); a backend
 * installs PostgreSQL's interrupt check.
 */
#include "base/ts_core.h"

__thread TsInterruptCheck ts_interrupt_check = NULL;
__thread int64_t ts_interrupt_work_left = TS_INTERRUPT_WORK;

/* Call check at every later cancellation point of this thread. */
void
ts_use_interrupt_check(TsInterruptCheck check)
{
	ts_interrupt_check = check;
}
