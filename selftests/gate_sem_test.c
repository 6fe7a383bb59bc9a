// SPDX-License-Identifier: GPL-2.0
/*
 * Gates (wait/signal with hand-off) and counting semaphores across
 * processes: FIFO service of blocking and async waiters, no barging, no
 * system call when uncontended, timeouts, exact unit accounting under
 * stress, the readers/writers triplets of the lock model, every errno.
 */
#define _GNU_SOURCE
#include <signal.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "triplets.h"

struct gshared {
	struct syncmem_gate gate;
	struct syncmem_sem sem;
	_Atomic uint32_t seq;
	_Atomic uint32_t bargers;
	_Atomic uint32_t passed;
	_Atomic uint64_t taken;
	uint32_t order[64];
	struct triplets trip;
};

FIXTURE(gs) {
	struct syncmem_region *r;
	struct gshared *sh;
};

FIXTURE_SETUP(gs)
{
	ASSERT_EQ(0, syncmem_open(NULL, 8192, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
}

FIXTURE_TEARDOWN(gs)
{
	syncmem_close(self->r);
}

/* ---- gate ---------------------------------------------------------------- */

TEST_F(gs, gate_passes_once_per_signal)
{
	struct syncmem_gate *g = &self->sh->gate;

	syncmem_gate_init(g, true);
	EXPECT_EQ(0, syncmem_gate_wait(self->r, g, 0));
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(self->r, g, 0));	/* closed behind */
	EXPECT_EQ(0, syncmem_gate_signal(self->r, g));			/* nobody: opens */
	EXPECT_EQ(0, syncmem_gate_signal(self->r, g));			/* binary: stays open */
	EXPECT_EQ(0, syncmem_gate_wait(self->r, g, 0));
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(self->r, g, 0));
	/* All-zero bytes are an open gate. */
	memset(g, 0, sizeof(*g));
	EXPECT_EQ(0, syncmem_gate_wait(self->r, g, 0));
	/* The one who passed last holds it, and may wait on it. */
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(self->r, g, 1000000));
}

TEST_F(gs, gate_timed_wait_times_out_then_a_signal_opens_it)
{
	struct syncmem_gate *g = &self->sh->gate;
	int64_t t0 = now_ns();

	syncmem_gate_init(g, false);
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(self->r, g, 50000000));
	EXPECT_LE(50000000, now_ns() - t0);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_gate_signal(self->r, g));	/* the waiter left: open */
	EXPECT_EQ(0, syncmem_gate_wait(self->r, g, 0));
}

struct order_arg {
	struct syncmem_region *r;
	struct gshared *sh;
	uint32_t id;
};

static void record(struct gshared *sh, uint32_t id)
{
	sh->order[atomic_fetch_add(&sh->seq, 1)] = id;
}

static void gate_passed_cb(void *p, int result)
{
	struct order_arg *a = p;

	if (!result)
		record(a->sh, a->id);
}

static void sem_taken_cb(void *p, int result)
{
	gate_passed_cb(p, result);
}

/* Waiter @id: even ids block, odd ids wait from an event loop. */
static int ordered_waiter(struct syncmem_region *r, struct gshared *sh, uint32_t id, int sem)
{
	struct order_arg a = { r, sh, id };
	struct syncmem_loop *loop;
	int ret;

	if (id % 2 == 0) {
		ret = sem ? syncmem_sem_wait(r, &sh->sem)
			  : syncmem_gate_wait(r, &sh->gate, SYNCMEM_FOREVER);
		if (ret)
			return 30;
		record(sh, id);
		return 0;
	}
	if (syncmem_loop_new(&loop))
		return 31;
	ret = sem ? syncmem_sem_wait_async(loop, r, &sh->sem, sem_taken_cb, &a)
		  : syncmem_gate_wait_async(loop, r, &sh->gate, gate_passed_cb, &a);
	if (ret || syncmem_loop_run(loop))
		return 32;
	syncmem_loop_free(loop);
	return 0;
}

/* Queue N waiters in a known order, then release them one by one. */
static void fifo_and_no_barging(struct __test_metadata *_metadata, struct syncmem_region *r,
				struct gshared *sh, int sem)
{
	enum { N = 10 };
	pid_t pids[N], barger;

	syncmem_gate_init(&sh->gate, false);
	syncmem_sem_init(&sh->sem, 0);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(ordered_waiter(r, sh, (uint32_t)i, sem));
		ASSERT_TRUE(await_waiters(r, i + 1));
	}
	/* A newcomer trying to get through while the hand-offs run. */
	barger = fork();
	ASSERT_LE(0, barger);
	if (barger == 0) {
		while (atomic_load(&sh->seq) < N) {
			int got = sem ? !syncmem_sem_trywait(r, &sh->sem)
				      : !syncmem_gate_wait(r, &sh->gate, 0);

			if (got) {
				atomic_fetch_add(&sh->bargers, 1);
				if (sem)
					syncmem_sem_post(r, &sh->sem);
				else
					syncmem_gate_signal(r, &sh->gate);
			}
		}
		_exit(0);
	}
	for (int i = 0; i < N; i++) {
		int ret = sem ? syncmem_sem_post(r, &sh->sem) : syncmem_gate_signal(r, &sh->gate);

		/* A gate reports the hand-off; the semaphore just succeeds. */
		EXPECT_EQ(sem ? 0 : 1, ret);
		/* Next signal once this one's receiver recorded itself. */
		for (int t = 0; atomic_load(&sh->seq) <= (uint32_t)i && t < 20000; t++)
			usleep(1000);
	}
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, wait_exit(barger));
	for (int i = 0; i < N; i++)
		EXPECT_EQ((uint32_t)i, sh->order[i]);
	EXPECT_EQ(0, atomic_load(&sh->bargers));
	EXPECT_EQ(0, region_waiters(r));
	if (sem)
		EXPECT_EQ(0, sh->sem.word);	/* no units; the last hand-off unmarked it */
}

TEST_F(gs, gate_signals_hand_over_in_arrival_order_to_sync_and_async_waiters)
{
	fifo_and_no_barging(_metadata, self->r, self->sh, 0);
}

TEST_F(gs, sem_posts_serve_waiters_in_arrival_order)
{
	fifo_and_no_barging(_metadata, self->r, self->sh, 1);
}

TEST_F(gs, uncontended_gate_and_sem_make_no_ioctl)
{
	pid_t pid;

	syncmem_gate_init(&self->sh->gate, true);
	syncmem_sem_init(&self->sh->sem, 1);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (forbid_ioctl())
			_exit(10);
		for (int i = 0; i < 10000; i++) {
			if (syncmem_gate_wait(self->r, &self->sh->gate, SYNCMEM_FOREVER) ||
			    syncmem_gate_signal(self->r, &self->sh->gate) ||
			    syncmem_sem_wait(self->r, &self->sh->sem) ||
			    syncmem_sem_post(self->r, &self->sh->sem) ||
			    syncmem_sem_trywait(self->r, &self->sh->sem) ||
			    syncmem_sem_post(self->r, &self->sh->sem))
				_exit(11);
		}
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
}

/* ---- semaphore ------------------------------------------------------------ */

TEST_F(gs, sem_counts)
{
	struct syncmem_sem *s = &self->sh->sem;
	int64_t t0;

	ASSERT_EQ(0, syncmem_sem_init(s, 3));
	EXPECT_EQ(3, syncmem_sem_value(s));
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, syncmem_sem_trywait(self->r, s));
	EXPECT_EQ(-EAGAIN, syncmem_sem_trywait(self->r, s));
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, syncmem_sem_timedwait(self->r, s, 50000000));
	EXPECT_LE(50000000, now_ns() - t0);
	/* The timed-out waiter's mark stays until a post finds nobody. */
	EXPECT_EQ(1ULL << 63, s->word);
	EXPECT_EQ(-ETIMEDOUT, syncmem_sem_timedwait(self->r, s, 0));
	EXPECT_EQ(0, syncmem_sem_post(self->r, s));
	EXPECT_EQ(1, s->word);
	EXPECT_EQ(0, syncmem_sem_wait(self->r, s));
	/* The count's ceiling. */
	ASSERT_EQ(0, syncmem_sem_init(s, SYNCMEM_SEM_VALUE_MAX));
	EXPECT_EQ(-EOVERFLOW, syncmem_sem_post(self->r, s));
	EXPECT_EQ(SYNCMEM_SEM_VALUE_MAX, syncmem_sem_value(s));
	EXPECT_EQ(-EINVAL, syncmem_sem_init(s, SYNCMEM_SEM_VALUE_MAX + 1));
}

struct sem_worker {
	struct syncmem_region *r;
	struct gshared *sh;
	struct syncmem_loop *loop;
	int left;
	int errors;
};

static void sem_async_taken(void *p, int result)
{
	struct sem_worker *w = p;

	if (result) {
		w->errors++;
		return;
	}
	atomic_fetch_add(&w->sh->taken, 1);
	if (--w->left > 0 &&
	    syncmem_sem_wait_async(w->loop, w->r, &w->sh->sem, sem_async_taken, w))
		w->errors++;
}

static int sem_consumer(struct syncmem_region *r, struct gshared *sh, int async, int n)
{
	struct sem_worker w = { .r = r, .sh = sh, .left = n };

	if (async) {
		if (syncmem_loop_new(&w.loop) ||
		    syncmem_sem_wait_async(w.loop, r, &sh->sem, sem_async_taken, &w) ||
		    syncmem_loop_run(w.loop))
			return 40;
		syncmem_loop_free(w.loop);
		return w.errors || w.left ? 41 : 0;
	}
	for (int i = 0; i < n; i++) {
		int ret = i % 3 ? syncmem_sem_wait(r, &sh->sem)
				: syncmem_sem_timedwait(r, &sh->sem, 1000000);

		if (ret == -ETIMEDOUT) {
			i--;
			continue;
		}
		if (ret)
			return 42;
		atomic_fetch_add(&sh->taken, 1);
	}
	return 0;
}

TEST_F_TIMEOUT(gs, sem_stress_every_unit_taken_exactly_once, 600)
{
	enum { CONSUMERS = 4, PRODUCERS = 2, EACH = 3000 };
	pid_t pids[CONSUMERS + PRODUCERS];

	syncmem_sem_init(&self->sh->sem, 0);
	for (int i = 0; i < CONSUMERS + PRODUCERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			if (i < CONSUMERS)
				_exit(sem_consumer(self->r, self->sh, i % 2,
						   EACH * PRODUCERS / CONSUMERS));
			for (int k = 0; k < EACH; k++) {
				if (syncmem_sem_post(self->r, &self->sh->sem))
					_exit(50);
				if (k % 64 == 0)
					usleep(100);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < CONSUMERS + PRODUCERS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ((uint64_t)EACH * PRODUCERS, atomic_load(&self->sh->taken));
	EXPECT_EQ(0, self->sh->sem.word);
	EXPECT_EQ(0, region_waiters(self->r));
}

/* ---- the lock model's readers and writers -------------------------------- */

TEST_F_TIMEOUT(gs, readers_writers_triplets_are_consecutive, 600)
{
	enum { READERS = 5, WRITERS = 5, EACH = 200 };
	pid_t pids[READERS + WRITERS];

	triplets_init(&self->sh->trip);
	for (int i = 0; i < READERS + WRITERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			for (int k = 0; k < EACH; k++) {
				int ret = i < READERS
					? triplets_read(self->r, &self->sh->trip)
					: triplets_write(self->r, &self->sh->trip,
							 (uint32_t)(i * 100000 + k));
				if (ret)
					_exit(60);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < READERS + WRITERS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ((uint32_t)READERS * EACH, self->sh->trip.triplets_read);
	EXPECT_EQ(0, self->sh->trip.bad_triplets);
	EXPECT_EQ(0, self->sh->trip.count);
	EXPECT_EQ(0, region_waiters(self->r));
}

/* ---- errors --------------------------------------------------------------- */

static void never(void *arg, int result)
{
	(void)arg;
	(void)result;
}

static void note_result(void *arg, int result)
{
	*(int *)arg = result;
}

TEST_F(gs, errors)
{
	struct syncmem_gate outside_gate;
	struct syncmem_sem outside_sem;
	struct syncmem_loop *loop;
	struct syncmem_sem *edge = (struct syncmem_sem *)((char *)self->sh + 8192 - 32);
	int result = 1;

	syncmem_gate_init(&outside_gate, true);
	syncmem_sem_init(&outside_sem, 1);
	/* Not in the region: -ERANGE; NULL: -EINVAL. */
	EXPECT_EQ(-ERANGE, syncmem_gate_wait(self->r, &outside_gate, 0));
	EXPECT_EQ(-ERANGE, syncmem_gate_signal(self->r, &outside_gate));
	EXPECT_EQ(-EINVAL, syncmem_gate_wait(NULL, &self->sh->gate, 0));
	EXPECT_EQ(-EINVAL, syncmem_gate_signal(self->r, NULL));
	EXPECT_EQ(-ERANGE, syncmem_sem_wait(self->r, &outside_sem));
	EXPECT_EQ(-ERANGE, syncmem_sem_trywait(self->r, &outside_sem));
	EXPECT_EQ(-ERANGE, syncmem_sem_post(self->r, &outside_sem));
	EXPECT_EQ(-ERANGE, syncmem_sem_post(self->r, edge));	/* runs past the end */
	EXPECT_EQ(-EINVAL, syncmem_sem_init(NULL, 0));
	/* A word no gate ever holds: the gate was written by something else. */
	self->sh->gate.word = SYNCMEM_OWNER_NOTRECOVERABLE;
	EXPECT_EQ(-EUCLEAN, syncmem_gate_wait(self->r, &self->sh->gate, 0));
	EXPECT_EQ(-EUCLEAN, syncmem_gate_signal(self->r, &self->sh->gate));
	EXPECT_EQ(SYNCMEM_OWNER_NOTRECOVERABLE, self->sh->gate.word);
	self->sh->gate.word = 0;
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	EXPECT_EQ(-EINVAL, syncmem_gate_wait_async(loop, self->r, &self->sh->gate, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_gate_wait_async(NULL, self->r, &self->sh->gate, never, NULL));
	EXPECT_EQ(-ERANGE, syncmem_sem_wait_async(loop, self->r, &outside_sem, never, NULL));
	EXPECT_EQ(-EINVAL, syncmem_sem_wait_async(loop, self->r, &self->sh->sem, NULL, NULL));
	/* Freeing the loop cancels a queued async wait; the next post counts. */
	syncmem_sem_init(&self->sh->sem, 0);
	ASSERT_EQ(0, syncmem_sem_wait_async(loop, self->r, &self->sh->sem, note_result, &result));
	EXPECT_EQ(1ULL << 63, self->sh->sem.word);
	EXPECT_EQ(1, result);
	syncmem_loop_free(loop);
	EXPECT_EQ(-ECANCELED, result);
	EXPECT_EQ(0, syncmem_sem_post(self->r, &self->sh->sem));
	EXPECT_EQ(1, self->sh->sem.word);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_HARNESS_MAIN
