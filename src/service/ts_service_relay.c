/*
 * ts_service_relay.c - the worker's side of requests: queued slots go to
 * the executor, its answers back to their slots, and every request in
 * flight fails when the executor or the worker goes. A slot's index is its
 * backend's ProcNumber, so waking the backend is setting that PGPROC's latch.
 */
#include "postgres.h"

#include "storage/latch.h"
#include "storage/proc.h"

#include "service/ts_service_relay.h"

/* Wake the backend that owns slot i. */
static void
wake(int i)
{
	SetLatch(&ProcGlobal->allProcs[i].procLatch);
}

/*
 * Fail slot i's request (one that is queued or sent, of sequence seq, or of
 * any when seq is 0) with message msg; drop an abandoned one.
 */
static void
fail_slot(TsServiceShared *sh, int i, uint64 seq, const char *msg)
{
	TsServiceSlot *slot = &sh->slots[i];
	bool		woken = false;

	SpinLockAcquire(&slot->mutex);
	if ((slot->state == TS_SLOT_QUEUED || slot->state == TS_SLOT_SENT) && (seq == 0 || slot->seq == seq))
	{
		strlcpy(slot->error, msg, sizeof(slot->error));
		slot->state = TS_SLOT_FAILED;
		woken = true;
	}
	else if (slot->state == TS_SLOT_ABANDONED || slot->state == TS_SLOT_CANCELLING)
		slot->state = TS_SLOT_FREE;
	SpinLockRelease(&slot->mutex);
	if (woken)
		wake(i);
}

/*
 * Move slot i from state from to state to, copying its request into msg
 * (kind left as set); false, and nothing moved, when it is not in from.
 */
static bool
take_slot(TsServiceShared *sh, int i, TsSlotState from, TsSlotState to, TsExecMsg *msg)
{
	TsServiceSlot *slot = &sh->slots[i];
	bool		taken;

	SpinLockAcquire(&slot->mutex);
	taken = slot->state == from;
	if (taken)
	{
		slot->state = to;
		msg->slot = i;
		msg->seq = slot->seq;
		msg->arg = slot->arg;
		msg->segment = slot->segment;
		if (msg->kind == 0)
			msg->kind = slot->kind;
	}
	SpinLockRelease(&slot->mutex);
	return taken;
}

/* Take slot i's abandoned request that a newer one replaced: its seq, or 0. */
static uint64
take_replaced(TsServiceShared *sh, int i)
{
	TsServiceSlot *slot = &sh->slots[i];
	uint64		seq;

	SpinLockAcquire(&slot->mutex);
	seq = slot->cancel_seq;
	slot->cancel_seq = 0;
	SpinLockRelease(&slot->mutex);
	return seq;
}

void
ts_relay_dispatch(TsServiceShared *sh, TsExecutor *ex, bool ready)
{
	for (int i = 0; i < sh->num_slots; i++)
	{
		TsExecMsg	request = {0, 0, 0, 0, 0, 0, 0};
		TsExecMsg	cancel = {TS_EXEC_CANCEL, 0, 0, 0, 0, 0, 0};
		uint64		replaced = take_replaced(sh, i);

		if (replaced != 0)
		{
			TsExecMsg	stop = {TS_EXEC_CANCEL, i, replaced, 0, 0, 0, 0};

			(void) ts_executor_send(ex, &stop);	/* before the request that replaced it */
		}
		if (take_slot(sh, i, TS_SLOT_QUEUED, TS_SLOT_SENT, &request))
		{
			if (!ready)
				fail_slot(sh, i, request.seq, "the GPU service's executor is restarting");
			else if (!ts_executor_send(ex, &request))
				fail_slot(sh, i, request.seq, "the GPU service's executor did not take the request");
		}
		else if (take_slot(sh, i, TS_SLOT_ABANDONED, TS_SLOT_CANCELLING, &cancel))
			(void) ts_executor_send(ex, &cancel);	/* a dead executor's slots are freed when it is reaped */
	}
}

void
ts_relay_complete(TsServiceShared *sh, const TsExecMsg *msg)
{
	TsServiceSlot *slot;
	bool		woken = false;

	if (msg->slot < 0 || msg->slot >= sh->num_slots)
		return;
	slot = &sh->slots[msg->slot];
	SpinLockAcquire(&slot->mutex);
	if (slot->seq == msg->seq && slot->state == TS_SLOT_SENT)
	{
		slot->result = msg->result;
		slot->state = TS_SLOT_DONE;
		woken = true;
	}
	else if (slot->seq == msg->seq &&
			 (slot->state == TS_SLOT_ABANDONED || slot->state == TS_SLOT_CANCELLING))
		slot->state = TS_SLOT_FREE;
	SpinLockRelease(&slot->mutex);
	if (woken)
		wake(msg->slot);
}

void
ts_relay_fail_all(TsServiceShared *sh, const char *msg)
{
	for (int i = 0; i < sh->num_slots; i++)
		fail_slot(sh, i, 0, msg);
}
