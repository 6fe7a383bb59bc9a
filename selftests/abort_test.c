// SPDX-License-Identifier: GPL-2.0
/*
 * Timeouts and abort of the lock family's async acquisitions
 * (syncmem_*_async_timed, syncmem_loop_abort): a pending acquisition ends
 * with -ETIMEDOUT at its deadline, or with -ECANCELED exactly once after an
 * abort, and leaves nothing queued; an acquisition the loop has taken is
 * -ENOENT to abort; what the kernel handed an aborted waiter (a fair lock,
 * a semaphore's unit) goes on to the next waiter. Each holder a process.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "syncmem.h"

#define MS		1000000LL
#define REGION_SIZE	(1024 * 1024)

struct shared {
	struct syncmem_lock lock;
	struct syncmem_lock fair;
	struct syncmem_sem sem;
	struct syncmem_gate gate;
	struct syncmem_rwlock rw;
	_Atomic int ready;
	_Atomic int go;
	_Atomic int got;
	uint8_t mgr[] __attribute__((aligned(64)));
};

FIXTURE(abort) {
	struct syncmem_region *r;
	struct shared *sh;
	struct syncmem_loop *loop;
};

FIXTURE_SETUP(abort)
{
	ASSERT_EQ(0, syncmem_open(NULL, REGION_SIZE, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	syncmem_lock_init(&self->sh->lock, 0);
	syncmem_lock_init(&self->sh->fair, SYNCMEM_LOCK_FAIR);
	ASSERT_EQ(0, syncmem_sem_init(&self->sh->sem, 0));
	syncmem_rwlock_init(&self->sh->rw);
	ASSERT_EQ(0, syncmem_loop_new(&self->loop));
}

FIXTURE_TEARDOWN(abort)
{
	syncmem_loop_free(self->loop);
	syncmem_close(self->r);
}

struct slot {
	int calls;
	int result;
	int64_t at;
};

static void slot_cb(void *arg, int result)
{
	struct slot *s = arg;

	s->calls++;
	s->result = result;
	s->at = now_ns();
}

/* Run @loop until @s's callback ran (10 s at most): 1 if it did. */
static int run_until(struct syncmem_loop *loop, struct slot *s)
{
	for (int i = 0; i < 1000 && !s->calls; i++)
		syncmem_loop_run_once(loop, 10 * MS);
	return s->calls > 0;
}

/* A child that locks @l, says so, and unlocks when told (go), or dies. */
static pid_t holder(struct syncmem_region *r, struct shared *sh, struct syncmem_lock *l)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (syncmem_lock(r, l))
			_exit(10);
		atomic_store(&sh->ready, 1);
		while (!atomic_load(&sh->go))
			usleep(1000);
		_exit(syncmem_unlock(r, l) ? 11 : 0);
	}
	while (pid > 0 && !atomic_load(&sh->ready))
		usleep(1000);
	return pid;
}

TEST_F(abort, a_timed_lock_times_out_and_leaves_nothing)
{
	struct slot s = { 0 }, t = { 0 };
	uint64_t id = 0;
	int64_t t0;
	pid_t h;

	h = holder(self->r, self->sh, &self->sh->lock);
	ASSERT_LT(0, h);
	/* 0: at once, nothing queued, no callback. */
	EXPECT_EQ(-ETIMEDOUT, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock, 0,
						       slot_cb, &s, &id));
	EXPECT_EQ(0, region_waiters(self->r));
	t0 = now_ns();
	ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock, 50 * MS,
					      slot_cb, &s, &id));
	EXPECT_NE(0, id);
	EXPECT_EQ(1, region_waiters(self->r));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ETIMEDOUT, s.result);
	EXPECT_LE(50 * MS, s.at - t0);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
	/* The gate and the semaphore alike. */
	EXPECT_EQ(0, syncmem_sem_wait_async_timed(self->loop, self->r, &self->sh->sem, 20 * MS,
						  slot_cb, &t, NULL));
	ASSERT_EQ(1, run_until(self->loop, &t));
	EXPECT_EQ(-ETIMEDOUT, t.result);
	EXPECT_EQ(-ETIMEDOUT, syncmem_sem_wait_async_timed(self->loop, self->r, &self->sh->sem,
							   0, slot_cb, &t, NULL));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	EXPECT_EQ(0, syncmem_trylock(self->r, &self->sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(1, t.calls);
}

TEST_F(abort, abort_a_pending_lock_once)
{
	struct syncmem_loop *other;
	struct slot s = { 0 }, t = { 0 };
	uint64_t id = 0, id2 = 0;
	pid_t h;

	ASSERT_EQ(0, syncmem_loop_new(&other));
	h = holder(self->r, self->sh, &self->sh->lock);
	ASSERT_LT(0, h);
	ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock,
					      SYNCMEM_FOREVER, slot_cb, &s, &id));
	EXPECT_EQ(1, region_waiters(self->r));
	/* Only its own loop aborts it; a Web Locks abort does not take it. */
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(other, id));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(self->loop, id));
	EXPECT_EQ(-EINVAL, syncmem_loop_abort(NULL, id));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	/* Never inside the call; then once. */
	EXPECT_EQ(0, s.calls);
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ECANCELED, s.result);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 20 * MS));
	EXPECT_EQ(1, s.calls);
	/* Free when asked: taken, its callback due; abort is -ENOENT. */
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock, 0, slot_cb,
					      &t, &id2));
	EXPECT_NE(id, id2);
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id2));
	ASSERT_EQ(1, run_until(self->loop, &t));
	EXPECT_EQ(0, t.result);
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	syncmem_loop_free(other);
}

/* Fork a child that blocks on @l, records that it got it, and unlocks. */
static pid_t blocked_locker(struct syncmem_region *r, struct shared *sh, struct syncmem_lock *l)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (syncmem_lock_timed(r, l, 10000 * MS))
			_exit(10);
		atomic_store(&sh->got, 1);
		_exit(syncmem_unlock(r, l) ? 11 : 0);
	}
	return pid;
}

TEST_F(abort, what_an_aborted_waiter_was_handed_goes_on)
{
	struct slot s = { 0 }, u = { 0 };
	uint64_t id = 0;
	pid_t h, b;

	/* A fair lock handed to our async waiter before the loop saw it. */
	h = holder(self->r, self->sh, &self->sh->fair);
	ASSERT_LT(0, h);
	ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->fair,
					      SYNCMEM_FOREVER, slot_cb, &s, &id));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	b = blocked_locker(self->r, self->sh, &self->sh->fair);
	ASSERT_LT(0, b);
	ASSERT_EQ(1, await_waiters(self->r, 2));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	/* Handed to us (the next in line), not yet delivered: still abortable. */
	ASSERT_EQ(1, await_waiters(self->r, 1));
	EXPECT_EQ(0, atomic_load(&self->sh->got));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ECANCELED, s.result);
	/* It went on to B. */
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_EQ(1, atomic_load(&self->sh->got));
	EXPECT_EQ(0, syncmem_trylock(self->r, &self->sh->fair));
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->fair));

	/* A semaphore's unit handed to an aborted waiter is posted again. */
	ASSERT_EQ(0, syncmem_sem_wait_async_timed(self->loop, self->r, &self->sh->sem,
						  SYNCMEM_FOREVER, slot_cb, &u, &id));
	ASSERT_EQ(0, syncmem_sem_post(self->r, &self->sh->sem));
	EXPECT_EQ(0, syncmem_sem_value(&self->sh->sem));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &u));
	EXPECT_EQ(-ECANCELED, u.result);
	EXPECT_EQ(1, syncmem_sem_value(&self->sh->sem));
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F(abort, a_dead_holders_lock_stays_dead_for_the_next)
{
	struct slot s = { 0 };
	uint64_t id = 0;
	pid_t h;

	h = holder(self->r, self->sh, &self->sh->lock);
	ASSERT_LT(0, h);
	ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock,
					      SYNCMEM_FOREVER, slot_cb, &s, &id));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	kill(h, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(h));
	/* The kernel gave it the dead holder's lock; the abort leaves it dead. */
	ASSERT_EQ(1, await_waiters(self->r, 0));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ECANCELED, s.result);
	EXPECT_EQ(-EOWNERDEAD, syncmem_lock_timed(self->r, &self->sh->lock, 1000 * MS));
	EXPECT_EQ(0, syncmem_lock_consistent(self->r, &self->sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
}

TEST_F(abort, gate_and_loop_free)
{
	struct syncmem_loop *loop;
	struct slot s = { 0 }, t = { 0 };
	uint64_t id = 0;
	pid_t h;

	/* A gate held by another process: bounded, then aborted. */
	h = fork();
	ASSERT_LE(0, h);
	if (h == 0) {
		if (syncmem_gate_wait(self->r, &self->sh->gate, SYNCMEM_FOREVER))
			_exit(10);
		atomic_store(&self->sh->ready, 1);
		while (!atomic_load(&self->sh->go))
			usleep(1000);
		_exit(syncmem_gate_signal(self->r, &self->sh->gate) < 0 ? 11 : 0);
	}
	while (!atomic_load(&self->sh->ready))
		usleep(1000);
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait_async_timed(self->loop, self->r, &self->sh->gate,
							    0, slot_cb, &s, &id));
	ASSERT_EQ(0, syncmem_gate_wait_async_timed(self->loop, self->r, &self->sh->gate,
						   20 * MS, slot_cb, &s, &id));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ETIMEDOUT, s.result);
	/* A loop freed with one pending: -ECANCELED, once. */
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_gate_wait_async_timed(loop, self->r, &self->sh->gate,
						   SYNCMEM_FOREVER, slot_cb, &t, &id));
	syncmem_loop_free(loop);
	EXPECT_EQ(1, t.calls);
	EXPECT_EQ(-ECANCELED, t.result);
	EXPECT_EQ(0, region_waiters(self->r));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	EXPECT_EQ(0, syncmem_gate_wait(self->r, &self->sh->gate, 0));
}

/* A child that read-locks (or write-locks) the rwlock, says so, and unlocks when told. */
static pid_t rw_holder(struct syncmem_region *r, struct shared *sh, bool write)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (write ? syncmem_rwlock_wrlock(r, &sh->rw) : syncmem_rwlock_rdlock(r, &sh->rw))
			_exit(10);
		atomic_store(&sh->ready, 1);
		while (!atomic_load(&sh->go))
			usleep(1000);
		_exit(syncmem_rwlock_unlock(r, &sh->rw) ? 11 : 0);
	}
	while (pid > 0 && !atomic_load(&sh->ready))
		usleep(1000);
	return pid;
}

TEST_F(abort, rwlock_writer_bounded_and_aborted_while_readers_read)
{
	struct slot s = { 0 }, t = { 0 }, u = { 0 };
	uint64_t id = 0;
	int64_t t0;
	pid_t h;

	/* A reader in another process: our writer passes the turnstile and waits for it. */
	h = rw_holder(self->r, self->sh, false);
	ASSERT_LT(0, h);
	t0 = now_ns();
	ASSERT_EQ(0, syncmem_rwlock_wrlock_async_timed(self->loop, self->r, &self->sh->rw,
						       50 * MS, slot_cb, &s, &id));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ETIMEDOUT, s.result);
	EXPECT_LE(50 * MS, s.at - t0);
	/* It let the turnstile go: another reader gets in. */
	EXPECT_EQ(0, syncmem_rwlock_tryrdlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	/* Aborted while it waits for the reader. */
	ASSERT_EQ(0, syncmem_rwlock_wrlock_async_timed(self->loop, self->r, &self->sh->rw,
						       SYNCMEM_FOREVER, slot_cb, &t, &id));
	EXPECT_GT(3, syncmem_loop_run_once(self->loop, 30 * MS));
	EXPECT_EQ(0, t.calls);
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &t));
	EXPECT_EQ(-ECANCELED, t.result);
	EXPECT_EQ(0, syncmem_rwlock_tryrdlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	/* A reader behind a writer in another process: aborted in the turnstile's queue. */
	atomic_store(&self->sh->go, 0);
	atomic_store(&self->sh->ready, 0);
	h = rw_holder(self->r, self->sh, true);
	ASSERT_LT(0, h);
	EXPECT_EQ(-ETIMEDOUT, syncmem_rwlock_rdlock_async_timed(self->loop, self->r,
								&self->sh->rw, 0, slot_cb, &u,
								&id));
	ASSERT_EQ(0, syncmem_rwlock_rdlock_async_timed(self->loop, self->r, &self->sh->rw,
						       SYNCMEM_FOREVER, slot_cb, &u, &id));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &u));
	EXPECT_EQ(-ECANCELED, u.result);
	EXPECT_EQ(0, region_waiters(self->r));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	EXPECT_EQ(0, syncmem_rwlock_trywrlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(1, t.calls);
	EXPECT_EQ(1, u.calls);
}

TEST_F(abort, keyed_lock_bounded_and_aborted)
{
	size_t len = syncmem_keyed_footprint(8);
	struct slot s = { 0 }, t = { 0 };
	struct syncmem_keyed *k;
	uint64_t id = 0;
	pid_t h;

	ASSERT_EQ(0, syncmem_keyed_init(self->sh->mgr, len, 8, &k));
	h = fork();
	ASSERT_LE(0, h);
	if (h == 0) {
		if (syncmem_keyed_lock(self->r, k, "key", 3, SYNCMEM_FOREVER))
			_exit(10);
		atomic_store(&self->sh->ready, 1);
		while (!atomic_load(&self->sh->go))
			usleep(1000);
		_exit(syncmem_keyed_unlock(self->r, k, "key", 3) ? 11 : 0);
	}
	while (!atomic_load(&self->sh->ready))
		usleep(1000);
	EXPECT_EQ(-ETIMEDOUT, syncmem_keyed_lock_async_timed(self->loop, self->r, k, "key", 3, 0,
							     slot_cb, &s, &id));
	ASSERT_EQ(0, syncmem_keyed_lock_async_timed(self->loop, self->r, k, "key", 3, 30 * MS,
						    slot_cb, &s, &id));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ETIMEDOUT, s.result);
	ASSERT_EQ(0, syncmem_keyed_lock_async_timed(self->loop, self->r, k, "key", 3,
						    SYNCMEM_FOREVER, slot_cb, &t, &id));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
	ASSERT_EQ(1, run_until(self->loop, &t));
	EXPECT_EQ(-ECANCELED, t.result);
	EXPECT_EQ(0, region_waiters(self->r));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, k, "key", 3));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, k, "key", 3));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, k));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(1, t.calls);
}

/* A leader's function: waits until the test says go, then answers "42". */
static _Atomic int *flight_go;

static int slow_fn(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	while (!atomic_load(flight_go))
		usleep(1000);
	if (cap < 2)
		return -EMSGSIZE;
	memcpy(out, "42", 2);
	*len = 2;
	return 0;
}

static void flight_cb(void *arg, int result, const void *data, size_t len)
{
	struct slot *s = arg;

	(void)data;
	(void)len;
	s->calls++;
	s->result = result;
}

TEST_F(abort, single_flight_follower_bounded_and_aborted)
{
	size_t pool_len = syncmem_pool_footprint(64, 8), table_len = syncmem_flight_footprint(8);
	uint8_t *at = self->sh->mgr;
	struct slot s = { 0 }, t = { 0 }, u = { 0 };
	struct syncmem_flight *f;
	struct syncmem_pool *pool;
	uint64_t id = 0;
	char out[8];
	pid_t leader;

	ASSERT_EQ(0, syncmem_pool_init(at, pool_len, 64, 8, &pool));
	ASSERT_EQ(0, syncmem_flight_init(self->r, at + ((pool_len + 63) & ~(size_t)63), table_len,
					 8, pool, &f));
	flight_go = &self->sh->go;
	leader = fork();
	ASSERT_LE(0, leader);
	if (leader == 0) {
		atomic_store(&self->sh->ready, 1);
		_exit(syncmem_flight_do(self->r, f, "k", 1, slow_fn, NULL, out, sizeof(out)) == 2 ?
		      0 : 10);
	}
	while (!atomic_load(&self->sh->ready))
		usleep(1000);
	usleep(50000);	/* the leader is inside slow_fn */
	EXPECT_EQ(-ETIMEDOUT, syncmem_flight_do_async_timed(self->loop, self->r, f, "k", 1,
							    slow_fn, NULL, 0, flight_cb, &s,
							    &id));
	ASSERT_EQ(0, syncmem_flight_do_async_timed(self->loop, self->r, f, "k", 1, slow_fn, NULL,
						   30 * MS, flight_cb, &s, &id));
	for (int i = 0; i < 1000 && !s.calls; i++)
		syncmem_loop_run_once(self->loop, 10 * MS);
	EXPECT_EQ(-ETIMEDOUT, s.result);
	ASSERT_EQ(0, syncmem_flight_do_async_timed(self->loop, self->r, f, "k", 1, slow_fn, NULL,
						   SYNCMEM_FOREVER, flight_cb, &t, &id));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
	for (int i = 0; i < 1000 && !t.calls; i++)
		syncmem_loop_run_once(self->loop, 10 * MS);
	EXPECT_EQ(-ECANCELED, t.result);
	/* A follower that waits it out gets the answer. */
	ASSERT_EQ(0, syncmem_flight_do_async_timed(self->loop, self->r, f, "k", 1, slow_fn, NULL,
						   10000 * MS, flight_cb, &u, &id));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(leader));
	for (int i = 0; i < 1000 && !u.calls; i++)
		syncmem_loop_run_once(self->loop, 10 * MS);
	EXPECT_EQ(2, u.result);
	EXPECT_EQ(0, syncmem_flight_in_flight(f));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(1, t.calls);
	EXPECT_EQ(1, u.calls);
}

static void locks_cb(void *arg, int result, struct syncmem_held *h)
{
	struct slot *s = arg;

	s->calls++;
	s->result = result;
	if (h)
		syncmem_locks_release(h);
}

TEST_F(abort, loop_abort_takes_web_locks_requests_too)
{
	size_t len = syncmem_locks_footprint(4, 16);
	struct syncmem_locks *m;
	struct syncmem_held *h;
	struct slot a = { 0 };
	uint64_t id = 0;

	ASSERT_EQ(0, syncmem_locks_init(self->r, self->sh->mgr, len, &m));
	ASSERT_EQ(0, syncmem_locks_request(m, "n", 1, 0, SYNCMEM_FOREVER, &h));
	ASSERT_EQ(0, syncmem_locks_request_async(self->loop, m, "n", 1, 0, locks_cb, &a, &id));
	ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(self->loop, id));
	for (int i = 0; i < 100 && !a.calls; i++)
		syncmem_loop_run_once(self->loop, 10 * MS);
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(-ECANCELED, a.result);
	EXPECT_EQ(0, syncmem_locks_release(h));
	syncmem_locks_detach(m);
}

TEST_HARNESS_MAIN
