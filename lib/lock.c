// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * syncmem_lock: a mutex in shared memory
 * usable blocking (syncmem_lock*) or from an event loop (syncmem_lock_async,
 * syncmem_execute_locked), with both kinds of lockers in the kernel's single
 * FIFO queue for the lock word.
 *
 * The word is an owner word (<linux/syncmem.h>): 0 when free, else the
 * holder's owner id, with SYNCMEM_OWNER_WAITERS once somebody may be
 * waiting and SYNCMEM_OWNER_DIED while a holder that took it over from a
 * dead one has not called syncmem_lock_consistent(). The id is issued by
 * the kernel, once per thread (cached in TLS), so taking a free lock is one
 * CAS 0 -> id and releasing an unwaited one one CAS id -> 0: no system
 * call, and the same CAS checks that the caller is the holder. A contender
 * sets the waiters bit and sleeps with LOCK_WAIT, which names the owner: if
 * the owner is dead the kernel gives the word to the oldest waiter (or the
 * caller) with the died bit, and when a process dies the kernel does so at
 * once for every word its threads held with waiters queued. An unlock that
 * finds the waiters bit goes to the kernel's UNLOCK.
 *
 * Default mode: UNLOCK frees the word (keeping the waiters bit while any
 * remain) and wakes the oldest waiter, so a newcomer may take the lock first
 * (barging, good for throughput). A waiter that has been woken
 * SYNCMEM_LOCK_BARGE_LIMIT times without getting the lock declares itself
 * starving (l->starving); while any waiter starves, UNLOCK hands the lock
 * directly to the oldest waiter: the kernel writes that waiter's id into the
 * word, so it never becomes free, nobody can barge, and a receiver that dies
 * before it runs is a dead holder like any other. A count left by a
 * starving waiter that died is forgotten when an unlock finds nobody
 * waiting; a live starving waiter declares itself again when woken.
 *
 * SYNCMEM_LOCK_FAIR: unlock always hands off to the oldest waiter.
 *
 * Async acquisitions hold the lock as the process (the kernel's process
 * owner id), so any thread of the process may unlock it and the lock is
 * recovered when the process dies.
 *
 * Hostile peers: flags only ever hold SYNCMEM_LOCK_FAIR (-EUCLEAN
 * otherwise); any word value is some owner id, live or dead, so a scribbled
 * word is at worst a dead holder. CAS and wait loops give up with -EUCLEAN
 * after SYNCMEM__RETRY_MAX failures.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/syncmem.h>

#include "internal.h"

#define LOCK_FREE	0ull
#define LOCK_WAITERS	SYNCMEM_OWNER_WAITERS
#define LOCK_DIED	SYNCMEM_OWNER_DIED
#define LOCK_ID		SYNCMEM_OWNER_ID

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
 * The whole lock inside the region's mapping, its word 8-byte aligned: one
 * compare, as rotating the offset's three low bits to the top makes a
 * misaligned offset (or one below the base) larger than any limit.
 */
static inline bool lock_valid(const struct syncmem_region *r, const struct syncmem_lock *l)
{
	uintptr_t off = (uintptr_t)l - (uintptr_t)r->base;

	off = (off >> 3) | (off << (sizeof(off) * 8 - 3));
	return off < r->lock_words;
}

static inline uint64_t holder(uint64_t word)
{
	return word & LOCK_ID;
}

void syncmem_lock_init(struct syncmem_lock *l, unsigned flags)
{
	/* Nothing to report it through: NULL or read-only memory is left alone. */
	if (!l || !syncmem__memory_writable(l, sizeof(*l)))
		return;
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

static void stop_starving(struct syncmem_lock *l, bool *starving)
{
	uint32_t v;

	if (!*starving)
		return;
	*starving = false;
	/* Saturating: an unlock may have forgotten the count meanwhile. */
	v = __atomic_load_n(&l->starving, __ATOMIC_RELAXED);
	while (v && !__atomic_compare_exchange_n(&l->starving, &v, v - 1, true,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A waiter woken without getting the lock: maybe it is starving now. */
static void count_wakeup(struct syncmem_lock *l, int *wakeups, bool *starving)
{
	if (*starving) {
		uint32_t zero = 0;

		/* Forgotten by an unlock that found nobody waiting: say it again. */
		__atomic_compare_exchange_n(&l->starving, &zero, 1, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
		return;
	}
	if (++*wakeups < SYNCMEM_LOCK_BARGE_LIMIT)
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
static bool lock_spin(struct syncmem_lock *l, uint64_t id)
{
	for (int i = 0; i < LOCK_SPIN; i++) {
		uint64_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);

		if (v == LOCK_FREE &&
		    __atomic_compare_exchange_n(&l->word, &v, id, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
		if (v & LOCK_WAITERS)
			return false;
		cpu_relax();
	}
	return false;
}

/*
 * One step of a contended acquisition: take the lock if it is free (setting
 * the waiters bit: we have been, or are about to be, among its waiters; with
 * @quiet, for trylock, keep the bit as it is), else make sure the waiters
 * bit is set (unless @quiet). Returns 1 when taken, else 0 with *@sleep_on
 * the word value to sleep on, or -ENOTRECOVERABLE, -EUCLEAN.
 */
static int lock_step(struct syncmem_lock *l, uint64_t id, bool quiet, uint64_t *sleep_on)
{
	uint64_t v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
	uint32_t failed = 0;

	for (;;) {
		if (holder(v) == SYNCMEM_OWNER_NOTRECOVERABLE)
			return -ENOTRECOVERABLE;
		if (!holder(v)) {
			/* Acquire: the last holder's section happens before ours. */
			if (__atomic_compare_exchange_n(&l->word, &v,
							id | (quiet ? v & LOCK_WAITERS : LOCK_WAITERS),
							false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 1;
		} else if ((v & LOCK_WAITERS) || quiet) {
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

/*
 * What a wait's result means for a locker: 1 the lock is ours, 2 ours after
 * a dead holder, 0 look again, or the final negative result.
 */
static int lock_wait_result(struct syncmem_lock *l, int ret)
{
	switch (ret) {
	case SYNCMEM_WAIT_HANDED_OFF:
	case SYNCMEM_WAIT_OWNER_DIED:
		/*
		 * The kernel wrote our id. Acquire: pairs with the release
		 * RMW the unlocker made before UNLOCK (the kernel's update
		 * continues its release sequence), so its section happens
		 * before ours.
		 */
		(void)__atomic_load_n(&l->word, __ATOMIC_ACQUIRE);
		break;
	}
	switch (ret) {
	case SYNCMEM_WAIT_HANDED_OFF:
		return 1;	/* the kernel wrote our id into the word */
	case SYNCMEM_WAIT_OWNER_DIED:
		return 2;
	case SYNCMEM_WAIT_TIMED_OUT:
		return -ETIMEDOUT;
	case SYNCMEM_WAIT_WOKEN:
	case SYNCMEM_WAIT_NOT_EQUAL:
		return 0;
	default:
		return ret < 0 ? ret : -EIO;
	}
}

static int lock_slow(struct syncmem_region *r, struct syncmem_lock *l, uint64_t id,
		     int64_t timeout_ns, uint32_t wait_flags)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	bool starving = false;
	uint64_t sleep_on;
	uint32_t changed = 0;
	int wakeups = 0, ret = hands_off(l);

	if (ret < 0)
		return ret;
	if (!ret && lock_spin(l, id))
		return 0;
	for (;;) {
		ret = lock_step(l, id, false, &sleep_on);
		if (ret)
			break;		/* 1: taken; or an error */
		ret = syncmem__lock_wait(r, &l->word, sleep_on, id, deadline, wait_flags);
		if (ret == SYNCMEM_WAIT_WOKEN)
			count_wakeup(l, &wakeups, &starving);
		if (syncmem__keeps_changing(ret, &changed)) {
			ret = -EUCLEAN;		/* the word keeps changing under us */
			break;
		}
		ret = lock_wait_result(l, ret);
		if (ret)
			break;
	}
	stop_starving(l, &starving);
	if (ret == 2)
		return -EOWNERDEAD;
	return ret == 1 ? 0 : ret;
}

/*
 * trylock: take it if free (the waiters bit kept), else ask the kernel, with
 * a deadline already passed, whether its holder is alive: a dead holder's
 * lock is taken over (-EOWNERDEAD), a live one's is busy (-ETIMEDOUT).
 */
static int lock_try(struct syncmem_region *r, struct syncmem_lock *l, uint64_t id)
{
	uint32_t changed = 0;
	uint64_t sleep_on;
	int ret;

	for (;;) {
		ret = lock_step(l, id, true, &sleep_on);
		if (ret)
			return ret == 1 ? 0 : ret;
		if (holder(sleep_on) == id)
			return -EDEADLK;
		ret = syncmem__lock_wait(r, &l->word, sleep_on, id, 0, 0);
		if (ret == SYNCMEM_WAIT_OWNER_DIED)
			return lock_wait_result(l, ret) == 2 ? -EOWNERDEAD : -EIO;
		if (ret == SYNCMEM_WAIT_TIMED_OUT)
			return -ETIMEDOUT;
		if (ret < 0)
			return ret;
		if (syncmem__keeps_changing(ret, &changed))
			return -EUCLEAN;	/* the word keeps changing under us */
	}
}

/*
 * The CAS failed on @seen: ours already, give up, or wait (with the
 * SYNCMEM_WAIT_* @wait_flags).
 */
static __attribute__((noinline)) int lock_contended(struct syncmem_region *r,
						    struct syncmem_lock *l, uint64_t id,
						    uint64_t seen, int64_t timeout_ns,
						    uint32_t wait_flags)
{
	if (holder(seen) == id)
		return -EDEADLK;
	if (!timeout_ns)
		return lock_try(r, l, id);
	return lock_slow(r, l, id, timeout_ns, wait_flags);
}

/* One CAS 0 -> id (acquire); a failure leaves by a tail call. */
static inline int lock_cas(struct syncmem_region *r, struct syncmem_lock *l, uint64_t id,
			   int64_t timeout_ns, uint32_t wait_flags)
{
	uint64_t seen = LOCK_FREE;

	if (__builtin_expect(__atomic_compare_exchange_n(&l->word, &seen, id, false,
							 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED), 1))
		return 0;
	return lock_contended(r, l, id, seen, timeout_ns, wait_flags);
}

/*
 * Not a lock of a writable region (lock_words is 0 for a read-only one):
 * -EINVAL for NULL or misaligned, -ERANGE for a lock not wholly inside the
 * region, -EBADF for a lock inside a read-only region. Out of line and
 * taking the fast path's own arguments, so that reaching it costs the fast
 * path nothing.
 */
static __attribute__((noinline, cold)) int lock_invalid(const struct syncmem_region *r,
							const struct syncmem_lock *l)
{
	__u64 off;
	int err = syncmem__object_offset(r, l, sizeof(*l), 8, &off);

	if (err)
		return err;
	return r->rdonly ? -EBADF : -EINVAL;
}

/* A thread's first lock: fetch its owner id first. */
static __attribute__((noinline)) int lock_first(struct syncmem_region *r,
						struct syncmem_lock *l, int64_t timeout_ns,
						uint32_t wait_flags)
{
	int64_t id = syncmem__owner_slow(r->fd);

	if (id < 0)
		return (int)id;
	return lock_cas(r, l, (uint64_t)id, timeout_ns, wait_flags);
}

/*
 * The fast path: one CAS 0 -> id. Every other case leaves by a tail call,
 * so the fast path needs no stack frame.
 */
static inline int lock_fast(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns,
			    uint32_t wait_flags)
{
	uint64_t id;

	if (!r || !lock_valid(r, l))
		return lock_invalid(r, l);
	id = syncmem__cached_owner;
	if (__builtin_expect(!id, 0))
		return lock_first(r, l, timeout_ns, wait_flags);
	return lock_cas(r, l, id, timeout_ns, wait_flags);
}

int syncmem_lock_timed(struct syncmem_region *r, struct syncmem_lock *l, int64_t timeout_ns)
{
	return lock_fast(r, l, timeout_ns, 0);
}

int syncmem_lock(struct syncmem_region *r, struct syncmem_lock *l)
{
	return lock_fast(r, l, SYNCMEM_FOREVER, 0);
}

int syncmem_lock_interruptible(struct syncmem_region *r, struct syncmem_lock *l,
			       int64_t timeout_ns)
{
	/* A signal ends the wait (-EINTR) instead of queueing it again. */
	return lock_fast(r, l, timeout_ns, SYNCMEM_WAIT_INTERRUPTIBLE);
}

int syncmem_trylock(struct syncmem_region *r, struct syncmem_lock *l)
{
	int ret = lock_fast(r, l, 0, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

/* Is @h, the holder named by the word, the caller (its thread or its process)? */
static bool held_by_caller(uint64_t h, uint64_t id)
{
	return h && (h == id || h == syncmem__process_owner_cached());
}

bool syncmem__lock_held(const struct syncmem_lock *l)
{
	return held_by_caller(holder(__atomic_load_n(&l->word, __ATOMIC_RELAXED)),
			      syncmem__cached_owner);
}

/*
 * The CAS id -> 0 failed on @seen: not ours, held as the process, taken over
 * from a dead holder, or somebody may wait.
 */
static __attribute__((noinline)) int unlock_slow(struct syncmem_region *r,
						 struct syncmem_lock *l, uint64_t id,
						 uint64_t seen)
{
	uint32_t failed = 0;
	int ret;

	for (;;) {
		if (!held_by_caller(holder(seen), id))
			return -EPERM;
		if (seen & LOCK_DIED) {
			/*
			 * Taken over from a dead holder and not made consistent:
			 * nobody may have it again. Every waiter wakes and finds
			 * out. Release: our writes happen before theirs.
			 */
			__atomic_store_n(&l->word, SYNCMEM_OWNER_NOTRECOVERABLE, __ATOMIC_RELEASE);
			ret = syncmem_notify(r, &l->word, UINT32_MAX);
			return ret < 0 ? ret : 0;
		}
		if (!(seen & LOCK_WAITERS)) {
			/* Held as the process, nobody waiting. Release, as below. */
			if (__atomic_compare_exchange_n(&l->word, &seen, LOCK_FREE, false,
							__ATOMIC_RELEASE, __ATOMIC_RELAXED))
				return 0;
		} else {
			ret = hands_off(l);
			if (ret < 0)
				return ret;
			/*
			 * The kernel frees the word or hands it to the oldest
			 * waiter. Release RMW first: the kernel's update of the
			 * word continues its release sequence, so whoever takes
			 * the lock next acquires our section.
			 */
			__atomic_fetch_or(&l->word, 0, __ATOMIC_RELEASE);
			ret = syncmem__unlock_word(r, &l->word, seen,
						   ret ? SYNCMEM_UNLOCK_HANDOFF : 0);
			/*
			 * Nobody waits (any more), so nobody starves: forget
			 * counts left by starving waiters that died. A live
			 * one says so again when it is next woken.
			 */
			if (ret == SYNCMEM_UNLOCK_FREED ||
			    (ret == SYNCMEM_UNLOCK_HANDED &&
			     !(__atomic_load_n(&l->word, __ATOMIC_RELAXED) & LOCK_WAITERS)))
				__atomic_store_n(&l->starving, 0, __ATOMIC_RELAXED);
			if (ret != -EAGAIN)
				return ret < 0 ? ret : 0;
			seen = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
		}
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/*
 * One CAS id -> 0 (release: our section happens before the next holder's);
 * a failure (not the holder, or somebody may wait) leaves by a tail call.
 */
static inline int unlock_cas(struct syncmem_region *r, struct syncmem_lock *l, uint64_t id)
{
	uint64_t seen = id;

	if (__builtin_expect(__atomic_compare_exchange_n(&l->word, &seen, LOCK_FREE, false,
							 __ATOMIC_RELEASE, __ATOMIC_RELAXED), 1))
		return 0;
	return unlock_slow(r, l, id, seen);
}

/* A thread's first call: fetch its owner id first. */
static __attribute__((noinline)) int unlock_first(struct syncmem_region *r,
						  struct syncmem_lock *l)
{
	int64_t id = syncmem__owner_slow(r->fd);

	if (id < 0)
		return (int)id;
	return unlock_cas(r, l, (uint64_t)id);
}

int syncmem_unlock(struct syncmem_region *r, struct syncmem_lock *l)
{
	uint64_t id;

	if (!r || !lock_valid(r, l))
		return lock_invalid(r, l);
	id = syncmem__cached_owner;
	if (__builtin_expect(!id, 0))
		return unlock_first(r, l);
	return unlock_cas(r, l, id);
}

int syncmem_lock_consistent(struct syncmem_region *r, struct syncmem_lock *l)
{
	uint64_t v, id = syncmem__cached_owner;
	uint32_t failed = 0;

	if (!r || !lock_valid(r, l))
		return lock_invalid(r, l);
	v = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
	for (;;) {
		if (!(v & LOCK_DIED) || !held_by_caller(holder(v), id))
			return -EINVAL;
		/* Only the waiters bit can change meanwhile. */
		if (__atomic_compare_exchange_n(&l->word, &v, v & ~LOCK_DIED, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return 0;
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/* An asynchronous acquisition in progress. */
struct lock_op {
	struct syncmem__job job;	/* abortable while its wait is queued (id 0: never) */
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct syncmem_lock *l;
	syncmem_wait_cb cb;
	void (*fn)(void *arg);	/* execute_locked */
	void *arg;
	uint64_t id;		/* the process's owner id */
	uint64_t deadline;	/* absolute, or SYNCMEM_NO_DEADLINE */
	uint64_t kid;		/* the id of its queued kernel wait */
	int wakeups;
	bool starving;
	bool aborted;		/* its callback reports -ECANCELED */
};

/* The execute-style calls running their function on this thread, innermost first. */
struct execute_frame {
	struct execute_frame *outer;
	int result;		/* what syncmem_execute_result() says */
	bool asked;		/* fn asked: it has been told */
};

static __thread struct execute_frame *executing;

int syncmem_execute_result(void)
{
	struct execute_frame *f = executing;

	if (!f)
		return -EINVAL;
	f->asked = true;
	return f->result;
}

bool syncmem__execute(void (*fn)(void *arg), void *arg, int result)
{
	struct execute_frame f = { .outer = executing, .result = result };

	executing = &f;
	fn(arg);
	executing = f.outer;
	return f.asked;
}

/*
 * Release @l, held by the caller after an execute-style call's fn ran, which
 * took it with @result and told fn or not (@told). A death fn was told of
 * is released as an unlock releases it (not recoverable unless fn made it
 * consistent); one fn was not told of goes on to the next acquirer.
 */
void syncmem__execute_release(struct syncmem_region *r, struct syncmem_lock *l, int result,
			      bool told)
{
	if (result == -EOWNERDEAD && !told && syncmem__lock_held(l) &&
	    (__atomic_load_n(&l->word, __ATOMIC_RELAXED) & LOCK_DIED))
		syncmem__lock_abandon(r, l);
	else
		syncmem_unlock(r, l);
}

/* @result: 0 or -EOWNERDEAD with the lock held, else the error. */
static void lock_op_finish(struct lock_op *op, int result)
{
	if (op->job.id)
		syncmem__job_del(op->loop, &op->job);
	stop_starving(op->l, &op->starving);
	if (op->fn) {
		/* Held: fn runs. Else there is nobody to tell: fn does not run. */
		if (result == 0 || result == -EOWNERDEAD)
			syncmem__execute_release(op->r, op->l, result,
						 syncmem__execute(op->fn, op->arg, result));
	} else {
		op->cb(op->arg, result);
	}
	free(op);
}

static void lock_op_step(void *arg, int result);

/*
 * Try to take the lock, else queue an async owner wait on its word. Returns
 * 1 when taken, 2 taken after a dead holder, 0 when queued, or a negative
 * errno.
 */
static int lock_op_try(struct lock_op *op)
{
	uint64_t sleep_on;
	uint32_t changed = 0;
	int ret;

	for (;;) {
		ret = lock_step(op->l, op->id, false, &sleep_on);
		if (ret)
			return ret;
		ret = syncmem__lock_wait_async_until(op->loop, op->r, &op->l->word, sleep_on,
						     op->deadline, lock_op_step, op, &op->kid);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return 0;
		if (ret == SYNCMEM_WAIT_OWNER_DIED || ret == SYNCMEM_WAIT_TIMED_OUT)
			return lock_wait_result(op->l, ret);
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			return ret < 0 ? ret : -EIO;
		if (syncmem__keeps_changing(ret, &changed))
			return -EUCLEAN;	/* the word keeps changing under us */
	}
}

/* 1 or 2 (taken) as a callback result. */
static int taken_result(int ret)
{
	return ret == 2 ? -EOWNERDEAD : 0;
}

/* From the loop: the result of our wait on the lock word. */
static void lock_op_step(void *arg, int result)
{
	struct lock_op *op = arg;
	int ret;

	if (op->aborted) {
		/* A lock the kernel gave it meanwhile goes on to the next locker. */
		ret = lock_wait_result(op->l, result);
		if (ret == 1)
			syncmem_unlock(op->r, op->l);
		else if (ret == 2)
			syncmem__lock_abandon(op->r, op->l);
		else if (result == SYNCMEM_WAIT_WOKEN)
			/* The unlock that woke it counted on it to look again: pass that on. */
			syncmem_notify(op->r, &op->l->word, 1);
		lock_op_finish(op, -ECANCELED);
		return;
	}
	if (result == SYNCMEM_WAIT_HANDED_OFF || result == SYNCMEM_WAIT_OWNER_DIED) {
		lock_op_finish(op, taken_result(lock_wait_result(op->l, result)));
		return;
	}
	if (result == SYNCMEM_WAIT_TIMED_OUT)
		result = -ETIMEDOUT;
	if (result < 0) {
		lock_op_finish(op, result);
		return;
	}
	count_wakeup(op->l, &op->wakeups, &op->starving);
	ret = lock_op_try(op);
	if (ret)
		lock_op_finish(op, ret > 0 ? taken_result(ret) : ret);
}

/*
 * A lock taken over from a dead holder that we cannot deliver: leave it as
 * a dead holder's (an id never issued, the died bit kept), so that the next
 * acquirer is told, rather than make it unrecoverable.
 */
void syncmem__lock_abandon(struct syncmem_region *r, struct syncmem_lock *l)
{
	__atomic_store_n(&l->word, SYNCMEM_OWNER_GONE | LOCK_DIED | LOCK_WAITERS,
			 __ATOMIC_RELEASE);
	syncmem_notify(r, &l->word, UINT32_MAX);
}

/* Posted: taken before lock_async returned (the result says how). */
static void lock_op_taken(void *arg, int result)
{
	lock_op_finish(arg, result);
}

/* While its wait is queued: cancel it; what the wait got goes on (lock_op_step()). */
static int lock_op_abort(struct syncmem__job *j)
{
	struct lock_op *op = (struct lock_op *)j;

	if (op->aborted)
		return -ENOENT;
	op->aborted = true;
	/* -ENOENT: its completion is on its way, and sees the mark. */
	syncmem__loop_cancel(op->loop, op->kid);
	return 0;
}

static int lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
		      struct syncmem_lock *l, syncmem_wait_cb cb, void (*fn)(void *),
		      void *arg, int64_t timeout_ns, uint64_t *id_out)
{
	struct lock_op *op;
	int64_t id;
	int ret;

	if (!loop || !r || (!cb && !fn))
		return -EINVAL;
	if (!lock_valid(r, l))
		return lock_invalid(r, l);
	/* Before the lock is taken: a loop being freed could not deliver it. */
	ret = syncmem__loop_check(loop);
	if (ret)
		return ret;
	id = syncmem__process_owner(r->fd);
	if (id < 0)
		return (int)id;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct lock_op){ .loop = loop, .r = r, .l = l, .cb = cb, .fn = fn, .arg = arg,
				.id = (uint64_t)id, .deadline = syncmem__deadline(timeout_ns) };
	if (id_out) {
		/* An id first: nothing is taken that could not be aborted. */
		ret = syncmem__job_add(loop, &op->job, SYNCMEM__JOB_ACQUIRE, lock_op_abort);
		if (ret) {
			free(op);
			return ret;
		}
	}
	/*
	 * A free word (0: nobody waits) is taken as the blocking fast path
	 * takes it, without the waiters bit, so that its unlock needs no
	 * system call. Acquire: the last holder's section happens before ours.
	 */
	if (__atomic_compare_exchange_n(&l->word, &(uint64_t){ LOCK_FREE }, (uint64_t)id, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		ret = 1;
	else
		ret = lock_op_try(op);
	if (ret > 0) {
		/* Taken at once; the callback still runs from the loop. */
		int taken = ret;

		if (op->job.id) {
			*id_out = op->job.id;
			syncmem__job_del(loop, &op->job);
			op->job.id = 0;
		}
		ret = syncmem__loop_post(loop, lock_op_taken, op, taken_result(taken));
		if (ret) {
			if (taken == 2)
				syncmem__lock_abandon(r, l);
			else
				syncmem_unlock(r, l);
			free(op);
		}
		return ret;
	}
	if (ret < 0) {
		if (op->job.id)
			syncmem__job_del(loop, &op->job);
		free(op);
		return ret;
	}
	if (op->job.id)
		*id_out = op->job.id;
	return 0;
}

int syncmem_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
		       struct syncmem_lock *l, syncmem_wait_cb cb, void *arg)
{
	return lock_async(loop, r, l, cb, NULL, arg, SYNCMEM_FOREVER, NULL);
}

int syncmem_lock_async_timed(struct syncmem_loop *loop, struct syncmem_region *r,
			     struct syncmem_lock *l, int64_t timeout_ns, syncmem_wait_cb cb,
			     void *arg, uint64_t *id_out)
{
	uint64_t id;

	if (!cb)
		return -EINVAL;
	return lock_async(loop, r, l, cb, NULL, arg, timeout_ns, id_out ? id_out : &id);
}

int syncmem_execute_locked(struct syncmem_loop *loop, struct syncmem_region *r,
			   struct syncmem_lock *l, void (*fn)(void *arg), void *arg)
{
	if (!fn)
		return -EINVAL;
	return lock_async(loop, r, l, NULL, fn, arg, SYNCMEM_FOREVER, NULL);
}
