// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem wake-ups: NOTIFY (Atomics.notify), HANDOFF (wake the oldest
 * waiter or else store into the word, in one step under the bucket lock:
 * what fair locks, gates and semaphores are built on), and what a claimed
 * waiter that will never take up its claim passes on to the next.
 */
#include <linux/uaccess.h>

#include "syncmem_core.h"
#include "syncmem_queue.h"

/*
 * Owner waiters that are only handed their word are passed over: they get
 * it from the settling after, if it is free or its holder is dead.
 */
static long syncmem_notify(struct syncmem_region *r, u64 offset, u32 count)
{
	struct syncmem_wake_op op = {
		.offset = offset,
		.want = count,
		.state = SYNCMEM_W_WOKEN,
		.observers = true,
	};
	long woken;

	if (!count)
		return 0;
	woken = syncmem_wake_word(r, &op);
	if (op.settle)
		syncmem_owner_word_settle(r, offset);
	return woken;
}

/**
 * syncmem_store_wake_all - store a value into a word, then wake all waiters
 * @r:		The region (a reference is held by the caller).
 * @offset:	The word, validated with syncmem_word_check().
 * @size:	4 or 8.
 * @if_equal:	Only if the word holds @expected (compared atomically).
 * @expected:	See @if_equal.
 * @value:	The value to store.
 *
 * The store comes first, so a waiter entering afterwards sees the new value
 * and one already queued is woken. Returns the number woken, or -EAGAIN when
 * @if_equal and the word held something else (nothing stored or woken).
 */
long syncmem_store_wake_all(struct syncmem_region *r, u64 offset, u32 size,
			    bool if_equal, u64 expected, u64 value)
{
	if (if_equal) {
		if (!syncmem_word_cmpxchg(r, offset, size, expected, value))
			return -EAGAIN;
	} else {
		syncmem_word_write(r, offset, size, value);
	}
	return syncmem_notify(r, offset, U32_MAX);
}

/* The same for an addition (wrapping): returns the number woken. */
long syncmem_add_wake_all(struct syncmem_region *r, u64 offset, u32 size, u64 value)
{
	syncmem_word_add_return(r, offset, size, value);
	return syncmem_notify(r, offset, U32_MAX);
}

/*
 * Under the lock, before anything is claimed: hand the word to the oldest
 * writable waiter, or else store (or add) the value and wake the observers;
 * with SYNCMEM_HANDOFF_WAITERS, clear the mark when nobody is left queued.
 * -EINVAL, with nothing changed, when the oldest is an owner waiter.
 */
static long syncmem_handoff_decide(struct syncmem_region *r,
				   struct syncmem_queue *q,
				   struct syncmem_wake_op *op)
{
	const struct syncmem_handoff *arg = op->arg;
	bool mark = arg->flags & SYNCMEM_HANDOFF_WAITERS;
	struct syncmem_waiter *w = syncmem_decide_first(r, q, op);

	syncmem_assert_word_locked(r, op->offset);
	if (op->again)
		return 0;
	/* An owner waiter is only ever handed its word, by its unlock. */
	if (w && w->owner)
		return -EINVAL;
	op->target = w;
	if (op->target) {
		/* The last writable waiter goes: nobody is left to mark. */
		if (mark && !syncmem_next_live(r, q, op->target, op->wk)) {
			syncmem_word_clear_top(r, arg->offset, arg->size);
			op->observers = true;
		}
		return SYNCMEM_HANDOFF_WOKE;
	}
	if (arg->flags & SYNCMEM_HANDOFF_ADD)
		syncmem_word_add(r, arg->offset, arg->size, arg->value);
	else
		syncmem_word_write(r, arg->offset, arg->size, arg->value);
	if (mark)
		syncmem_word_clear_top(r, arg->offset, arg->size);
	op->observers = true;
	return SYNCMEM_HANDOFF_STORED;
}

static long syncmem_handoff(struct syncmem_region *r,
			    const struct syncmem_handoff *arg)
{
	struct syncmem_wake_op op = {
		.offset = arg->offset,
		.state = SYNCMEM_W_HANDED_OFF,
		.decide = syncmem_handoff_decide,
		.arg = arg,
		.handoff = arg,
	};

	return syncmem_wake_word(r, &op);
}

/**
 * syncmem_notify_checked - NOTIFY, its argument checked
 * @r:		The region (a reference is held by the caller).
 * @arg:	The caller's copy of the argument.
 *
 * The checks and the wake-up of SYNCMEM_IOC_NOTIFY and of its io_uring
 * command; whether the caller's region fd may notify is the caller's
 * check. Returns the number woken, or -EINVAL.
 */
long syncmem_notify_checked(struct syncmem_region *r, const struct syncmem_notify *arg)
{
	int err;

	if (arg->flags)
		return -EINVAL;
	err = syncmem_word_check(r, arg->offset, 4, 0);
	if (err)
		return err;
	return syncmem_notify(r, arg->offset, arg->count);
}

long syncmem_ioctl_notify(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_notify arg;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	return syncmem_notify_checked(r, &arg);
}

long syncmem_ioctl_handoff(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_handoff arg;
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~SYNCMEM_HANDOFF_FLAGS)
		return -EINVAL;
	err = syncmem_word_check(r, arg.offset, arg.size, arg.value);
	if (err)
		return err;
	return syncmem_handoff(r, &arg);
}

/**
 * syncmem_waiter_abandon - a queued waiter nobody will come back for
 * @r:		The region of its word (a reference is held by the caller).
 * @offset:	The word.
 * @w:		The waiter.
 *
 * Takes it out of its queue or, if it was claimed first, passes on what it
 * was given: nothing if a waker took it out as gone (claimed CANCELLED).
 * Process context.
 */
void syncmem_waiter_abandon(struct syncmem_region *r, u64 offset,
			    struct syncmem_waiter *w)
{
	int state;

	if (syncmem_waiter_claim(r, w, SYNCMEM_W_CANCELLED, &state) ||
	    state == SYNCMEM_W_CANCELLED)
		return;
	syncmem_wait_pass_on(r, offset, w, syncmem_wait_result(state));
}

/**
 * syncmem_wait_pass_on - a completed wait whose record nobody will read
 * @r:		The region of its word (a reference is held by the caller).
 * @offset:	The word.
 * @w:		The waiter, claimed with @result.
 * @result:	SYNCMEM_WAIT_WOKEN, _HANDED_OFF or _OWNER_DIED.
 *
 * Its handle was closed first, or its thread will never come back. What it
 * was given goes on, as if it had never been queued: a wake-up to the next
 * waiter; a HANDOFF's hand-off done again whole (its value, flags and
 * size, whatever the waiter's size), to the next waiter or else into the
 * word; an owner word to the next waiter or else freed. Process context.
 */
void syncmem_wait_pass_on(struct syncmem_region *r, u64 offset,
			  const struct syncmem_waiter *w, int result)
{
	struct syncmem_handoff h;

	if (w->observer)
		return;		/* observers are owed nothing */
	/* A HANDOFF's, to any waiter: it goes on as that HANDOFF. */
	if (result == SYNCMEM_WAIT_HANDED_OFF && w->handoff) {
		h = (struct syncmem_handoff){
			.offset = offset,
			.value = w->handoff_value,
			.size = w->handoff & SYNCMEM_W_HANDOFF_8 ? 8 : 4,
			.flags = w->handoff & SYNCMEM_HANDOFF_FLAGS,
		};
		syncmem_handoff(r, &h);
		return;
	}
	if (w->owner) {
		syncmem_owner_word_pass_on(r, offset, &w->owner, result);
		return;
	}
	syncmem_notify(r, offset, 1);
}
