// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * syncmem_lock: the seed's AsyncLock done properly. A mutex in shared memory
 * usable blocking (syncmem_lock*) or from an event loop (syncmem_lock_async,
 * syncmem_execute_locked), with both kinds of lockers in the kernel's single
 * FIFO queue for the lock word.
 *
 * The word has three states (0 free, 1 locked, 2 locked and maybe waited
 * on), so an uncontended lock is one CAS and an uncontended unlock one
 * atomic: no system call.
 *
 * Default mode: unlock stores 0 and wakes the oldest waiter, so a newcomer
 * may take the lock first (barging, good for throughput). A waiter that has
 * been woken SYNCMEM_LOCK_BARGE_LIMIT times without getting the lock
 * declares itself starving (l->starving); while any waiter starves, unlock
 * hands the lock directly to the oldest waiter (the kernel's hand-off), so
 * it never becomes free and nobody can barge. The starving waiter then gets
 * the lock after at most the waiters queued ahead of it: the bound.
 *
 * SYNCMEM_LOCK_FAIR: unlock always hands off to the oldest waiter.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/syncmem.h>

#include "internal.h"

#define LOCK_FREE	0u
#define LOCK_LOCKED	1u
#define LOCK_CONTENDED	2u

_Static_assert(sizeof(struct syncmem_lock) == 64, "struct syncmem_lock layout");

/* The whole lock inside the region's mapping, its word 4-byte aligned. */
static bool lock_valid(struct syncmem_region *r, struct syncmem_lock *l)
{
	__u64 off;

	return !syncmem__word_offset(r, &l->word, 4, &off) &&
	       r->size - off >= sizeof(*l);
}

void syncmem_lock_init(struct syncmem_lock *l, unsigned flags)
{
	memset(l, 0, sizeof(*l));
	l->flags = flags & SYNCMEM_LOCK_FAIR;
}

static bool hands_off(const struct syncmem_lock *l)
{
	return (__atomic_load_n(&l->flags, __ATOMIC_RELAXED) & SYNCMEM_LOCK_FAIR) ||
	       __atomic_load_n(&l->starving, __ATOMIC_RELAXED);
}

/* Mark the lock held by this thread. */
static void take(struct syncmem_lock *l, bool *starving)
{
	if (*starving) {
		__atomic_fetch_sub(&l->starving, 1, __ATOMIC_RELAXED);
		*starving = false;
	}
	__atomic_store_n(&l->owner, syncmem__tid(), __ATOMIC_RELAXED);
}

/*
 * A hand-off gave us the lock: acquire the release exchange the previous
 * holder made on the word before handing off, so its critical section
 * happens before ours.
 */
static void handed_over(struct syncmem_lock *l)
{
	(void)__atomic_load_n(&l->word, __ATOMIC_ACQUIRE);
}

/* A waiter woken without getting the lock: maybe it is starving now. */
static void count_wakeup(struct syncmem_lock *l, int *wakeups, bool *starving)
{
	if (*starving || ++*wakeups < SYNCMEM_LOCK_BARGE_LIMIT)
		return;
	*starving = true;
	__atomic_fetch_add(&l->starving, 1, __ATOMIC_RELAXED);
}

static int lock_slow(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	bool starving = false;
	int wakeups = 0, ret;

	/* Acquire: the previous holder's writes happen before our section. */
	while (__atomic_exchange_n(&l->word, LOCK_CONTENDED, __ATOMIC_ACQUIRE) != LOCK_FREE) {
		ret = syncmem__wait_until(r, &l->word, 4, LOCK_CONTENDED, deadline);
		if (ret == SYNCMEM_WAIT_HANDED_OFF) {
			/* The lock is ours; the word stays CONTENDED. */
			handed_over(l);
			break;
		}
		if (ret == SYNCMEM_WAIT_TIMED_OUT || ret < 0) {
			if (starving)
				__atomic_fetch_sub(&l->starving, 1, __ATOMIC_RELAXED);
			return ret < 0 ? ret : SYNCMEM_TIMED_OUT;
		}
		if (ret == SYNCMEM_WAIT_WOKEN)
			count_wakeup(l, &wakeups, &starving);
	}
	take(l, &starving);
	return 0;
}

int syncmem_lock_timed(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns)
{
	uint32_t expected = LOCK_FREE;
	bool no = false;

	if (!r || !l || !lock_valid(r, l))
		return -EINVAL;
	if (__atomic_load_n(&l->owner, __ATOMIC_RELAXED) == syncmem__tid() &&
	    __atomic_load_n(&l->word, __ATOMIC_RELAXED) != LOCK_FREE)
		return -EDEADLK;
	if (__atomic_compare_exchange_n(&l->word, &expected, LOCK_LOCKED, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		take(l, &no);
		return 0;
	}
	if (!timeout_ns)
		return SYNCMEM_TIMED_OUT;
	return lock_slow(r, l, timeout_ns);
}

int syncmem_lock(struct syncmem_region *r, struct syncmem_lock *l)
{
	return syncmem_lock_timed(r, l, SYNCMEM_FOREVER);
}

int syncmem_trylock(struct syncmem_region *r, struct syncmem_lock *l)
{
	int ret = syncmem_lock_timed(r, l, 0);

	return ret == SYNCMEM_TIMED_OUT ? -EBUSY : ret;
}

int syncmem_unlock(struct syncmem_region *r, struct syncmem_lock *l)
{
	uint32_t owner, one = LOCK_LOCKED;
	int ret;

	if (!r || !l || !lock_valid(r, l))
		return -EINVAL;
	owner = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
	if (__atomic_load_n(&l->word, __ATOMIC_RELAXED) == LOCK_FREE ||
	    (owner && owner != syncmem__tid()))
		return -EPERM;
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);

	if (hands_off(l)) {
		/* Nobody waits: just free it. Else the oldest waiter gets it. */
		if (__atomic_compare_exchange_n(&l->word, &one, LOCK_FREE, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return 0;
		/* Release for the waiter we hand to (see handed_over()). */
		__atomic_exchange_n(&l->word, LOCK_CONTENDED, __ATOMIC_RELEASE);
		ret = syncmem_handoff32(r, &l->word, LOCK_FREE);
		return ret < 0 ? ret : 0;
	}
	/* Release: our section happens before the next holder's. */
	if (__atomic_fetch_sub(&l->word, 1, __ATOMIC_RELEASE) != LOCK_LOCKED) {
		__atomic_store_n(&l->word, LOCK_FREE, __ATOMIC_RELEASE);
		ret = syncmem_notify(r, &l->word, 1);
		return ret < 0 ? ret : 0;
	}
	return 0;
}

/* An asynchronous acquisition in progress. */
struct lock_op {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct syncmem_lock *l;
	syncmem_wait_cb cb;
	void (*fn)(void *arg);	/* execute_locked */
	void *arg;
	int wakeups;
	bool starving;
};

static void lock_op_finish(struct lock_op *op, int result)
{
	if (result == 0) {
		take(op->l, &op->starving);
		if (op->fn) {
			op->fn(op->arg);
			syncmem_unlock(op->r, op->l);
		} else {
			op->cb(op->arg, 0);
		}
	} else {
		if (op->starving)
			__atomic_fetch_sub(&op->l->starving, 1, __ATOMIC_RELAXED);
		if (!op->fn)
			op->cb(op->arg, result);
	}
	free(op);
}

static void lock_op_step(void *arg, int result);

/*
 * Try to take the lock, else queue an async wait on its word. Returns 1 when
 * taken, 0 when queued, or a negative errno.
 */
static int lock_op_try(struct lock_op *op)
{
	int ret;

	for (;;) {
		if (__atomic_exchange_n(&op->l->word, LOCK_CONTENDED, __ATOMIC_ACQUIRE) ==
		    LOCK_FREE)
			return 1;
		ret = syncmem__wait_async(op->loop, op->r, &op->l->word, 4, LOCK_CONTENDED,
					  SYNCMEM_FOREVER, lock_op_step, op, true, NULL);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return 0;
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			return ret < 0 ? ret : -EIO;
	}
}

/* From the loop: the result of our wait on the lock word. */
static void lock_op_step(void *arg, int result)
{
	struct lock_op *op = arg;
	int ret;

	if (result == SYNCMEM_WAIT_HANDED_OFF) {
		handed_over(op->l);
		lock_op_finish(op, 0);
		return;
	}
	if (result < 0) {
		lock_op_finish(op, result);
		return;
	}
	count_wakeup(op->l, &op->wakeups, &op->starving);
	ret = lock_op_try(op);
	if (ret)
		lock_op_finish(op, ret > 0 ? 0 : ret);
}

static int lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
		      struct syncmem_lock *l, syncmem_wait_cb cb, void (*fn)(void *),
		      void *arg)
{
	struct lock_op *op;
	int ret;

	if (!loop || !r || !l || (!cb && !fn) || !lock_valid(r, l))
		return -EINVAL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct lock_op){ .loop = loop, .r = r, .l = l, .cb = cb, .fn = fn, .arg = arg };
	ret = lock_op_try(op);
	if (ret == 1) {
		/* Taken at once; the callback still runs from the loop. */
		ret = syncmem__loop_post(loop, lock_op_step, op, SYNCMEM_WAIT_HANDED_OFF);
		if (ret) {
			syncmem_unlock(r, l);
			free(op);
		}
		return ret;
	}
	if (ret < 0)
		free(op);
	return ret;
}

int syncmem_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
		       struct syncmem_lock *l, syncmem_wait_cb cb, void *arg)
{
	return lock_async(loop, r, l, cb, NULL, arg);
}

int syncmem_execute_locked(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_lock *l, void (*fn)(void *arg), void *arg)
{
	if (!fn)
		return -EINVAL;
	return lock_async(loop, r, l, NULL, fn, arg);
}
