// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * syncmem_lock: the seed's AsyncLock done properly. A mutex in shared memory
 * usable blocking (syncmem_lock*) or from an event loop (syncmem_lock_async,
 * syncmem_execute_locked), with both kinds of lockers in the kernel's single
 * FIFO queue for the lock word.
 *
 * The word is 0 when free, else the holder's thread id, with bit 31 set
 * once somebody may be waiting (the three states: free, locked, locked and
 * maybe waited on). Taking a free lock is one CAS 0 -> tid and releasing an
 * unwaited one one CAS tid -> 0: no system call, and the same CAS checks
 * that the caller is the holder (-EPERM otherwise). A contender sets bit 31
 * and sleeps on the word; an unlock that finds it set goes to the kernel.
 *
 * Default mode: unlock stores 0 and wakes the oldest waiter, so a newcomer
 * may take the lock first (barging, good for throughput). A waiter that has
 * been woken SYNCMEM_LOCK_BARGE_LIMIT times without getting the lock
 * declares itself starving (l->starving); while any waiter starves, unlock
 * hands the lock directly to the oldest waiter (the kernel's hand-off), so
 * it never becomes free and nobody can barge. The starving waiter then gets
 * the lock after at most the waiters queued ahead of it: the bound.
 *
 * SYNCMEM_LOCK_FAIR: unlock always hands off to the oldest waiter. During a
 * hand-off the word holds bit 31 alone (held, holder being switched) until
 * the receiver writes its id.
 *
 * Hostile peers: bit 30 is never set by this library (thread ids fit in 30
 * bits) and flags only ever hold SYNCMEM_LOCK_FAIR; the slow paths answer
 * -EUCLEAN when they meet anything else, and their CAS and wait loops give
 * up with -EUCLEAN after SYNCMEM__RETRY_MAX failures. The fast paths are
 * untouched: an impossible word fails their CAS like any held lock does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/syncmem.h>

#include "internal.h"

#define LOCK_FREE	0u
#define LOCK_WAITERS	0x80000000u	/* somebody may sleep on the word */
#define LOCK_HOLDER	0x3fffffffu	/* the holder's thread id */
#define LOCK_CORRUPT	0x40000000u	/* never set by this library */

/* Polls of the word before a contended locker goes to sleep. */
#define LOCK_SPIN	100

_Static_assert(sizeof(struct syncmem_lock) == 64, "struct syncmem_lock layout");

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * The whole lock inside the region's mapping, its word 4-byte aligned: one
 * compare, as rotating the offset's two low bits to the top makes a
 * misaligned offset (or one below the base) larger than any limit.
 */
static inline bool lock_valid(const struct syncmem_region *r, const struct syncmem_lock *l)
{
	uintptr_t off = (uintptr_t)l - (uintptr_t)r->base;

	off = (off >> 2) | (off << (sizeof(off) * 8 - 2));
	return off < r->lock_words;
}

static inline uint32_t holder(uint32_t word)
{
	return word & LOCK_HOLDER;
}

void syncmem_lock_init(struct syncmem_lock *l, unsigned flags)
{
	memset(l, 0, sizeof(*l));
	l->flags = flags & SYNCMEM_LOCK_FAIR;
}

/* Does unlock hand the lock over? -EUCLEAN for flags this library never writes. */
static int hands_off(const struct syncmem_lock *l)
{
	uint32_t flags = __atomic_load_n(&l->flags, __ATOMIC_RELAXED);

	if (flags & ~SYNCMEM_LOCK_FAIR)
		return -EUCLEAN;
	return (flags & SYNCMEM_LOCK_FAIR) || __atomic_load_n(&l->starving, __ATOMIC_RELAXED);
}

/*
 * The lock is ours (a hand-off, or taken for an async locker by another
 * thread): write our id, keeping bit 31. Only bit 31 can change meanwhile.
 * Acquire: pairs with the release the previous holder made on the word
 * before handing off, so its critical section happens before ours.
 * 0, or -EUCLEAN when the word is impossible or keeps changing.
 */
static int set_holder(struct syncmem_lock *l, uint32_t tid)
{
	uint32_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED), failed = 0;

	do {
		if ((v & LOCK_CORRUPT) || syncmem__too_many(&failed))
			return -EUCLEAN;
	} while (!__atomic_compare_exchange_n(&l->word, &v, (v & LOCK_WAITERS) | tid, false,
					      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
	return 0;
}

static void stop_starving(struct syncmem_lock *l, bool *starving)
{
	if (*starving) {
		__atomic_fetch_sub(&l->starving, 1, __ATOMIC_RELAXED);
		*starving = false;
	}
}

/* A waiter woken without getting the lock: maybe it is starving now. */
static void count_wakeup(struct syncmem_lock *l, int *wakeups, bool *starving)
{
	if (*starving || ++*wakeups < SYNCMEM_LOCK_BARGE_LIMIT)
		return;
	*starving = true;
	__atomic_fetch_add(&l->starving, 1, __ATOMIC_RELAXED);
}

/*
 * Before sleeping, watch the word for a short while: a critical section is
 * often over sooner than a system call, let alone a sleep and a wake-up.
 * Only while nobody sleeps on it: with waiters queued, spinning would just
 * barge ahead of them.
 */
static bool lock_spin(struct syncmem_lock *l, uint32_t tid)
{
	for (int i = 0; i < LOCK_SPIN; i++) {
		uint32_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

		if (v == LOCK_FREE &&
		    __atomic_compare_exchange_n(&l->word, &v, tid, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		if (v & LOCK_WAITERS)
			return false;
		cpu_relax();
	}
	return false;
}

/*
 * One step of a contended acquisition: take the lock if it is free (keeping
 * bit 31: we have been, or are about to be, among its waiters), else make
 * sure bit 31 is set. Returns 1 when taken, else 0 with *@sleep_on the word
 * value to sleep on, or -EUCLEAN.
 */
static int lock_step(struct syncmem_lock *l, uint32_t tid, uint32_t *sleep_on)
{
	uint32_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED), failed = 0;

	for (;;) {
		if (v & LOCK_CORRUPT)
			return -EUCLEAN;
		if (v == LOCK_FREE) {
			if (__atomic_compare_exchange_n(&l->word, &v, tid | LOCK_WAITERS, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 1;
		} else if (v & LOCK_WAITERS) {
			*sleep_on = v;
			return 0;
		} else if (__atomic_compare_exchange_n(&l->word, &v, v | LOCK_WAITERS, false,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			*sleep_on = v | LOCK_WAITERS;
			return 0;
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

static int lock_slow(struct syncmem_region *r, struct syncmem_lock *l, uint32_t tid,
		     int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	bool starving = false;
	uint32_t sleep_on, changed = 0;
	int wakeups = 0, ret = hands_off(l);

	if (ret < 0)
		return ret;
	if (!ret && lock_spin(l, tid))
		return 0;
	for (;;) {
		ret = lock_step(l, tid, &sleep_on);
		if (ret)
			break;		/* 1: taken; or -EUCLEAN */
		ret = syncmem__wait_until(r, &l->word, 4, sleep_on, deadline);
		if (ret == SYNCMEM_WAIT_HANDED_OFF) {
			ret = set_holder(l, tid);
			if (!ret)
				ret = 1;
			break;
		}
		if (ret == SYNCMEM_WAIT_TIMED_OUT || ret < 0)
			break;
		if (ret == SYNCMEM_WAIT_WOKEN)
			count_wakeup(l, &wakeups, &starving);
		if (syncmem__keeps_changing(ret, &changed)) {
			ret = -EUCLEAN;		/* the word keeps changing under us */
			break;
		}
	}
	stop_starving(l, &starving);
	if (ret == 1)
		return 0;
	return ret == SYNCMEM_WAIT_TIMED_OUT ? -ETIMEDOUT : ret;
}

/* The CAS failed on @seen: ours already, give up, or wait. */
static __attribute__((noinline)) int lock_contended(struct syncmem_region *r,
						    struct syncmem_lock *l, uint32_t tid,
						    uint32_t seen, int64_t timeout_ns)
{
	if (seen & LOCK_CORRUPT)
		return -EUCLEAN;
	if (holder(seen) == tid)
		return -EDEADLK;
	if (!timeout_ns)
		return -ETIMEDOUT;
	return lock_slow(r, l, tid, timeout_ns);
}

/* One CAS 0 -> tid (acquire); a failure leaves by a tail call. */
static inline int lock_cas(struct syncmem_region *r, struct syncmem_lock *l, uint32_t tid,
			   int64_t timeout_ns)
{
	uint32_t seen = LOCK_FREE;

	if (__builtin_expect(__atomic_compare_exchange_n(&l->word, &seen, tid, false,
							 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 1))
		return 0;
	return lock_contended(r, l, tid, seen, timeout_ns);
}

/*
 * Not a lock of a writable region (lock_words is 0 for a read-only one):
 * -EBADF for a lock inside a read-only region, else -EINVAL. Out of line
 * and taking the fast path's own arguments, so that reaching it costs the
 * fast path nothing.
 */
static __attribute__((noinline, cold)) int lock_invalid(const struct syncmem_region *r,
							const struct syncmem_lock *l)
{
	__u64 off;

	if (syncmem__object_offset(r, l, sizeof(*l), 4, &off))
		return -EINVAL;
	return r->rdonly ? -EBADF : -EINVAL;
}

/* A thread's first lock: look its id up first. */
static __attribute__((noinline)) int lock_first(struct syncmem_region *r,
						struct syncmem_lock *l, int64_t timeout_ns)
{
	return lock_cas(r, l, syncmem__tid_slow(), timeout_ns);
}

/*
 * The fast path: one CAS 0 -> tid. Every other case leaves by a tail call,
 * so the fast path needs no stack frame.
 */
static inline int lock_fast(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns)
{
	uint32_t tid;

	if (!r || !lock_valid(r, l))
		return lock_invalid(r, l);
	tid = syncmem__cached_tid;
	if (__builtin_expect(!tid, 0))
		return lock_first(r, l, timeout_ns);
	return lock_cas(r, l, tid, timeout_ns);
}

int syncmem_lock_timed(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns)
{
	return lock_fast(r, l, timeout_ns);
}

int syncmem_lock(struct syncmem_region *r, struct syncmem_lock *l)
{
	return lock_fast(r, l, SYNCMEM_FOREVER);
}

int syncmem_trylock(struct syncmem_region *r, struct syncmem_lock *l)
{
	int ret = lock_fast(r, l, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

/* The CAS tid -> 0 failed on @seen: not ours, or somebody may wait. */
static __attribute__((noinline)) int unlock_slow(struct syncmem_region *r,
						 struct syncmem_lock *l, uint32_t tid,
						 uint32_t seen)
{
	int ret;

	if (seen & LOCK_CORRUPT)
		return -EUCLEAN;
	if (holder(seen) != tid)
		return -EPERM;
	ret = hands_off(l);
	if (ret < 0)
		return ret;
	if (ret) {
		/*
		 * Keep it held, by nobody in particular until the receiver
		 * writes its id (so neither we nor anyone else can take it or
		 * unlock it meanwhile). Release: the receiver acquires it in
		 * set_holder(). The kernel wakes the oldest waiter, or frees
		 * the lock if nobody waits after all.
		 */
		__atomic_store_n(&l->word, LOCK_WAITERS, __ATOMIC_RELEASE);
		ret = syncmem_handoff32(r, &l->word, LOCK_FREE);
		return ret < 0 ? ret : 0;
	}
	/* Release: our section happens before the next holder's. */
	__atomic_store_n(&l->word, LOCK_FREE, __ATOMIC_RELEASE);
	ret = syncmem_notify(r, &l->word, 1);
	return ret < 0 ? ret : 0;
}

/*
 * One CAS tid -> 0 (release: our section happens before the next holder's);
 * a failure (not the holder, or somebody may wait) leaves by a tail call.
 */
static inline int unlock_cas(struct syncmem_region *r, struct syncmem_lock *l, uint32_t tid)
{
	uint32_t seen = tid;

	if (__builtin_expect(__atomic_compare_exchange_n(&l->word, &seen, LOCK_FREE, false,
							 __ATOMIC_RELEASE, __ATOMIC_RELAXED), 1))
		return 0;
	return unlock_slow(r, l, tid, seen);
}

/* A thread's first call: look its id up first. */
static __attribute__((noinline)) int unlock_first(struct syncmem_region *r,
						  struct syncmem_lock *l)
{
	return unlock_cas(r, l, syncmem__tid_slow());
}

int syncmem_unlock(struct syncmem_region *r, struct syncmem_lock *l)
{
	uint32_t tid;

	if (!r || !lock_valid(r, l))
		return lock_invalid(r, l);
	tid = syncmem__cached_tid;
	if (__builtin_expect(!tid, 0))
		return unlock_first(r, l);
	return unlock_cas(r, l, tid);
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
	/* Held from now on by the thread running the loop. */
	if (result == 0)
		result = set_holder(op->l, syncmem__tid());
	if (result == 0) {
		stop_starving(op->l, &op->starving);
		if (op->fn) {
			op->fn(op->arg);
			syncmem_unlock(op->r, op->l);
		} else {
			op->cb(op->arg, 0);
		}
	} else {
		stop_starving(op->l, &op->starving);
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
	uint32_t sleep_on, changed = 0;
	int ret;

	for (;;) {
		ret = lock_step(op->l, syncmem__tid(), &sleep_on);
		if (ret)
			return ret;
		ret = syncmem__wait_async(op->loop, op->r, &op->l->word, 4, sleep_on,
					  SYNCMEM_FOREVER, lock_op_step, op, true, NULL);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return 0;
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			return ret < 0 ? ret : -EIO;
		if (syncmem__keeps_changing(ret, &changed))
			return -EUCLEAN;	/* the word keeps changing under us */
	}
}

/* From the loop: the result of our wait on the lock word. */
static void lock_op_step(void *arg, int result)
{
	struct lock_op *op = arg;
	int ret;

	if (result == SYNCMEM_WAIT_HANDED_OFF) {
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

	if (!loop || !r || (!cb && !fn))
		return -EINVAL;
	if (!lock_valid(r, l))
		return lock_invalid(r, l);
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
