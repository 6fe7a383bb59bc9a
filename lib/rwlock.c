// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A reader-writer lock with FIFO phases, built from a fair mutex.
 *
 * Every locker first passes the turnstile, a SYNCMEM_LOCK_FAIR mutex, so
 * all lockers are ordered by arrival (one kernel FIFO for blocking and async
 * ones). A reader holds it only to count itself in (readers + 1) and lets
 * the next one through at once, so a run of readers shares the lock. A
 * writer keeps the turnstile for its whole section: first it waits for the
 * readers already inside to leave (nobody new can enter behind it), then it
 * writes. Readers arriving after a queued writer queue behind it at the
 * turnstile, so a stream of readers cannot starve it; writers cannot starve
 * readers either, the turnstile being FIFO.
 *
 * The readers word: count of readers inside, bit 31 set by a writer that
 * waits for them to drain. The reader whose exit leaves (bit | 0) notifies
 * the (only) writer waiting on the word.
 *
 * A count that would overflow into bit 31 was written by something else
 * than this library: -EUCLEAN, as is a loop that keeps failing
 * (SYNCMEM__RETRY_MAX).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include <linux/syncmem.h>

#include "acquire.h"

#define RW_WRITER_WAITS	0x80000000u
#define RW_COUNT	0x7fffffffu

_Static_assert(sizeof(struct syncmem_rwlock) == 128, "struct syncmem_rwlock layout");

void syncmem_rwlock_init(struct syncmem_rwlock *rw)
{
	*rw = (struct syncmem_rwlock){ 0 };
	syncmem_lock_init(&rw->turnstile, SYNCMEM_LOCK_FAIR);
}

/* 0, -EINVAL (not inside the region) or -EBADF (read-only region). */
static int rw_check(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return syncmem__object_writable(r, rw, sizeof(*rw), &rw->readers, 4);
}

/*
 * Holding the turnstile: count ourselves in and let the next locker
 * through. Acquire: the last writer's section happens before our reads.
 */
static int reader_enter(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	uint32_t before = __atomic_fetch_add(&rw->readers, 1, __ATOMIC_ACQUIRE);
	int ret = syncmem_unlock(r, &rw->turnstile);

	if ((before & RW_COUNT) == RW_COUNT) {
		/* Not that many readers: undo, say so. Relaxed: nothing to publish. */
		__atomic_fetch_sub(&rw->readers, 1, __ATOMIC_RELAXED);
		return -EUCLEAN;
	}
	return ret;
}

/*
 * Holding the turnstile: have the readers inside drained? 1 yes (the lock
 * is ours), 0 no (*@expected is the readers word to sleep on), -EUCLEAN.
 */
static int writer_drained(struct syncmem_rwlock *rw, uint32_t *expected)
{
	uint32_t v = __atomic_load_n(&rw->readers, __ATOMIC_ACQUIRE), failed = 0;

	for (;;) {
		if (!(v & RW_COUNT)) {
			/* Nobody can enter while we hold the turnstile. */
			__atomic_store_n(&rw->readers, 0, __ATOMIC_RELAXED);
			/* Nonzero while a writer is inside (its thread id, for the curious). */
			__atomic_store_n(&rw->writer, syncmem__tid(), __ATOMIC_RELAXED);
			return 1;
		}
		if (v & RW_WRITER_WAITS) {
			*expected = v;
			return 0;
		}
		/* Acquire (also on failure): the leaving readers' reads come first. */
		if (__atomic_compare_exchange_n(&rw->readers, &v, v | RW_WRITER_WAITS, false,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			v |= RW_WRITER_WAITS;
		else if (syncmem__too_many(&failed))
			return -EUCLEAN;
	}
}

/*
 * The turnstile's holder died (we hold it now). A reader holds it only to
 * count itself in; a writer for its whole section, first while it waits
 * for readers to drain. Undo what a writer announced and go on. 1 if it
 * died inside its write section (the data may be half-written: the caller
 * reports -EOWNERDEAD, holding the lock it asked for), 0 if not, or -errno.
 */
static int turnstile_recover(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	bool wrote = __atomic_exchange_n(&rw->writer, 0, __ATOMIC_RELAXED) != 0;
	int ret;

	__atomic_fetch_and(&rw->readers, ~RW_WRITER_WAITS, __ATOMIC_RELAXED);
	ret = syncmem_lock_consistent(r, &rw->turnstile);
	return ret ? ret : wrote;
}

/* Pass the turnstile: 0, 1 after a writer that died inside, or -errno. */
static int turnstile_lock(struct syncmem_region *r, struct syncmem_rwlock *rw,
			  int64_t timeout_ns, bool try)
{
	int ret = try ? syncmem_trylock(r, &rw->turnstile) :
			syncmem_lock_timed(r, &rw->turnstile, timeout_ns);

	return ret == -EOWNERDEAD ? turnstile_recover(r, rw) : ret;
}

/* The result of a lock taken after turnstile_lock() said @died. */
static int taken(int died)
{
	return died ? -EOWNERDEAD : 0;
}

/* A writer giving up while holding the turnstile. */
static void writer_abandon(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	__atomic_fetch_and(&rw->readers, ~RW_WRITER_WAITS, __ATOMIC_RELAXED);
	syncmem_unlock(r, &rw->turnstile);
}

int syncmem_rwlock_rdlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns)
{
	int ret = rw_check(r, rw);
	int died;

	if (ret)
		return ret;
	died = turnstile_lock(r, rw, timeout_ns, false);
	if (died < 0)
		return died;
	ret = reader_enter(r, rw);
	return ret ? ret : taken(died);
}

int syncmem_rwlock_rdlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return syncmem_rwlock_rdlock_timed(r, rw, SYNCMEM_FOREVER);
}

int syncmem_rwlock_tryrdlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	int ret = rw_check(r, rw);
	int died;

	if (ret)
		return ret;
	died = turnstile_lock(r, rw, 0, true);
	if (died < 0)
		return died;
	ret = reader_enter(r, rw);
	return ret ? ret : taken(died);
}

int syncmem_rwlock_wrlock_timed(struct syncmem_region *r, struct syncmem_rwlock *rw,
				int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	uint32_t expected, changed = 0;
	int ret = rw_check(r, rw), died;

	if (ret)
		return ret;
	died = turnstile_lock(r, rw, timeout_ns, false);
	if (died < 0)
		return died;
	while (!(ret = writer_drained(rw, &expected))) {
		ret = timeout_ns ? syncmem__wait_until(r, &rw->readers, 4, expected, deadline)
				 : SYNCMEM_WAIT_TIMED_OUT;
		if (syncmem__keeps_changing(ret, &changed))
			ret = -EUCLEAN;		/* the word keeps changing under us */
		if (ret == SYNCMEM_WAIT_TIMED_OUT || ret < 0)
			break;
	}
	if (ret == 1)
		return taken(died);
	writer_abandon(r, rw);
	return ret < 0 ? ret : -ETIMEDOUT;
}

int syncmem_rwlock_wrlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return syncmem_rwlock_wrlock_timed(r, rw, SYNCMEM_FOREVER);
}

int syncmem_rwlock_trywrlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	int ret = syncmem_rwlock_wrlock_timed(r, rw, 0);

	return ret == -ETIMEDOUT ? -EBUSY : ret;
}

int syncmem_rwlock_unlock(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	uint32_t v, failed = 0;
	int ret = rw_check(r, rw);

	if (ret)
		return ret;
	/* Holding the turnstile is being the writer. */
	if (syncmem__lock_held(&rw->turnstile)) {
		__atomic_store_n(&rw->writer, 0, __ATOMIC_RELAXED);
		return syncmem_unlock(r, &rw->turnstile);
	}
	v = __atomic_load_n(&rw->readers, __ATOMIC_RELAXED);
	do {
		if (!(v & RW_COUNT))
			return -EPERM;
		if (syncmem__too_many(&failed))
			return -EUCLEAN;
		/* Release: our reads happen before the next writer's section. */
	} while (!__atomic_compare_exchange_n(&rw->readers, &v, v - 1, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	if (v == (RW_WRITER_WAITS | 1)) {
		ret = syncmem_notify(r, &rw->readers, 1);
		return ret < 0 ? ret : 0;
	}
	return 0;
}

/* An asynchronous rdlock or wrlock in progress. */
struct rw_op {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct syncmem_rwlock *rw;
	syncmem_wait_cb cb;
	void *arg;
	int died;		/* the turnstile's last holder died writing */
};

static void rw_op_finish(struct rw_op *op, int result)
{
	syncmem_wait_cb cb = op->cb;
	void *arg = op->arg;

	free(op);
	cb(arg, result);
}

static void rd_turnstile_passed(void *arg, int result)
{
	struct rw_op *op = arg;
	int died = result == -EOWNERDEAD ? turnstile_recover(op->r, op->rw) : result;

	if (died >= 0) {
		result = reader_enter(op->r, op->rw);
		if (!result)
			result = taken(died);
	} else {
		result = died;
	}
	rw_op_finish(op, result);
}

static void wr_drain_step(void *arg, int result);

/* Holding the turnstile: wait (async) until the readers inside drained. */
static void wr_drain(struct rw_op *op)
{
	uint32_t expected, changed = 0;
	int ret;

	while (!(ret = writer_drained(op->rw, &expected))) {
		ret = syncmem__wait_async(op->loop, op->r, &op->rw->readers, 4, expected,
					  SYNCMEM_FOREVER, wr_drain_step, op, true, NULL);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return;
		if (syncmem__keeps_changing(ret, &changed))
			ret = -EUCLEAN;		/* the word keeps changing under us */
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			break;
	}
	if (ret != 1)
		writer_abandon(op->r, op->rw);
	rw_op_finish(op, ret == 1 ? taken(op->died) : ret < 0 ? ret : -EIO);
}

static void wr_drain_step(void *arg, int result)
{
	struct rw_op *op = arg;

	if (result < 0) {
		writer_abandon(op->r, op->rw);
		rw_op_finish(op, result);
		return;
	}
	wr_drain(op);
}

static void wr_turnstile_passed(void *arg, int result)
{
	struct rw_op *op = arg;

	if (result == -EOWNERDEAD)
		result = op->died = turnstile_recover(op->r, op->rw);
	if (result < 0)
		rw_op_finish(op, result);
	else
		wr_drain(op);
}

static int rw_lock_async(struct syncmem_loop *loop, struct syncmem_region *r,
			 struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg,
			 syncmem_wait_cb passed)
{
	struct rw_op *op;
	int ret;

	if (!loop || !cb)
		return -EINVAL;
	ret = rw_check(r, rw);
	if (ret)
		return ret;
	op = malloc(sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct rw_op){ .loop = loop, .r = r, .rw = rw, .cb = cb, .arg = arg };
	ret = syncmem_lock_async(loop, r, &rw->turnstile, passed, op);
	if (ret)
		free(op);
	return ret;
}

int syncmem_rwlock_rdlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg)
{
	return rw_lock_async(loop, r, rw, cb, arg, rd_turnstile_passed);
}

int syncmem_rwlock_wrlock_async(struct syncmem_loop *loop, struct syncmem_region *r,
				struct syncmem_rwlock *rw, syncmem_wait_cb cb, void *arg)
{
	return rw_lock_async(loop, r, rw, cb, arg, wr_turnstile_passed);
}
