// SPDX-License-Identifier: GPL-2.0
/*
 * Async waits (Atomics.waitAsync) and the library's event loop, on both of
 * its paths: waits as commands of the loop's io_uring, and waits queued by
 * ioctl whose completions are read from the handle (SYNCMEM_LOOP=eventfd).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "syncmem.h"

#define REGION_SIZE (1024 * 1024)

struct shared {
	uint32_t word;
	uint32_t word2;
	_Atomic uint32_t seq;
	_Atomic uint32_t ready;
	uint32_t order[16];
	uint32_t words[];		/* the rest of the region */
};

FIXTURE(async) {
	struct syncmem_region *r;
	struct shared *sh;
	struct syncmem_loop *loop;
};

/* Every test runs on each path; loops made in the test's children take it too. */
FIXTURE_VARIANT(async) {
	const char *env;	/* SYNCMEM_LOOP */
	int path;
};

FIXTURE_VARIANT_ADD(async, uring) {
	.env = "",
	.path = SYNCMEM_LOOP_URING,
};

FIXTURE_VARIANT_ADD(async, eventfd) {
	.env = "eventfd",
	.path = SYNCMEM_LOOP_EVENTFD,
};

FIXTURE_SETUP(async)
{
	ASSERT_EQ(0, setenv("SYNCMEM_LOOP", variant->env, 1));
	ASSERT_EQ(0, syncmem_open(NULL, REGION_SIZE, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	ASSERT_EQ(0, syncmem_loop_new(&self->loop));
	ASSERT_EQ(variant->path, syncmem_loop_path(self->loop));
}

FIXTURE_TEARDOWN(async)
{
	syncmem_loop_free(self->loop);
	syncmem_close(self->r);
	unsetenv("SYNCMEM_LOOP");
}

/* The kernel's per-handle queue of the eventfd path, and its memory. */
FIXTURE(async_eventfd) {
	struct syncmem_region *r;
	struct shared *sh;
	struct syncmem_loop *loop;
};

FIXTURE_SETUP(async_eventfd)
{
	ASSERT_EQ(0, setenv("SYNCMEM_LOOP", "eventfd", 1));
	ASSERT_EQ(0, syncmem_open(NULL, REGION_SIZE, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	ASSERT_EQ(0, syncmem_loop_new(&self->loop));
	ASSERT_EQ(SYNCMEM_LOOP_EVENTFD, syncmem_loop_path(self->loop));
}

FIXTURE_TEARDOWN(async_eventfd)
{
	syncmem_loop_free(self->loop);
	syncmem_close(self->r);
	unsetenv("SYNCMEM_LOOP");
}

/* Counts callbacks per slot and remembers the last result. */
struct cb_slot {
	int calls;
	int result;
	int64_t at;
};

static void record_cb(void *arg, int result)
{
	struct cb_slot *s = arg;

	s->calls++;
	s->result = result;
	s->at = now_ns();
}

TEST_F(async, immediate_results_never_queue_or_call_back)
{
	struct cb_slot s = { 0 };

	self->sh->word = 7;
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
							  6, SYNCMEM_FOREVER, record_cb, &s, NULL));
	EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
							  7, 0, record_cb, &s, NULL));
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait_async64(self->loop, self->r,
							  (uint64_t *)&self->sh->word, 0, 0,
							  record_cb, &s, NULL));
	EXPECT_EQ(0, syncmem_loop_pending(self->loop));
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_FALSE(fd_readable(syncmem_loop_fd(self->loop)));
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 50000000));
	EXPECT_EQ(0, syncmem_loop_run(self->loop));
	EXPECT_EQ(0, s.calls);
}

TEST_F(async, notify_right_after_queueing_counts_it)
{
	struct cb_slot s = { 0 };
	uint64_t id = 0;

	EXPECT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
							0, SYNCMEM_FOREVER, record_cb, &s, &id));
	EXPECT_NE(0, id);
	EXPECT_EQ(1, syncmem_loop_pending(self->loop));
	EXPECT_EQ(0, s.calls);	/* never inside the call that queued it */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(0, s.calls);	/* nor inside notify */
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, SYNCMEM_FOREVER));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(SYNCMEM_OK, s.result);
	EXPECT_EQ(0, syncmem_loop_pending(self->loop));
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 20000000));
	EXPECT_EQ(1, s.calls);
}

/* Process helpers for the FIFO test: each records its id when woken. */
static void record_order(struct shared *sh, uint32_t id)
{
	sh->order[atomic_fetch_add(&sh->seq, 1)] = id;
}

struct order_arg {
	struct shared *sh;
	uint32_t id;
	int result;
};

static void order_cb(void *p, int result)
{
	struct order_arg *a = p;

	a->result = result;
	record_order(a->sh, a->id);
}

static int async_waiter_process(struct syncmem_region *r, struct shared *sh, uint32_t id)
{
	struct syncmem_loop *loop;
	struct order_arg a = { sh, id, -1 };

	if (syncmem_loop_new(&loop))
		return 10;
	if (syncmem_wait_async32(loop, r, &sh->word, 0, SYNCMEM_FOREVER, order_cb, &a,
				 NULL) != SYNCMEM_PENDING)
		return 11;
	atomic_fetch_add(&sh->ready, 1);
	if (syncmem_loop_run(loop))
		return 12;
	syncmem_loop_free(loop);
	return a.result == SYNCMEM_OK ? 0 : 13;
}

static int sync_waiter_process(struct syncmem_region *r, struct shared *sh, uint32_t id)
{
	int ret;

	atomic_fetch_add(&sh->ready, 1);
	ret = syncmem_wait32(r, &sh->word, 0, SYNCMEM_FOREVER);
	record_order(sh, id);
	return ret == SYNCMEM_OK ? 0 : 20;
}

TEST_F(async, fifo_across_async_and_sync_waiters)
{
	pid_t pids[3];
	int i;

	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(i == 1 ? sync_waiter_process(self->r, self->sh, i)
				     : async_waiter_process(self->r, self->sh, i));
		ASSERT_TRUE(await_waiters(self->r, i + 1));
	}
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
		for (int t = 0; t < 10000 && atomic_load(&self->sh->seq) != (uint32_t)i + 1; t++)
			usleep(1000);
		ASSERT_EQ(i + 1, atomic_load(&self->sh->seq));
	}
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(i, self->sh->order[i]);
		EXPECT_EQ(0, wait_exit(pids[i]));
	}
}

TEST_F(async, notify_all_wakes_each_async_wait_once)
{
	enum { N = 10 };
	struct cb_slot s[N] = { 0 };
	int i;

	for (i = 0; i < N; i++) {
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r,
								&self->sh->word, 0, SYNCMEM_FOREVER,
								record_cb, &s[i], NULL));
	}
	EXPECT_EQ(N, syncmem_loop_pending(self->loop));
	EXPECT_EQ(N, region_waiters(self->r));
	EXPECT_EQ(N, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	EXPECT_EQ(0, syncmem_loop_run(self->loop));
	for (i = 0; i < N; i++) {
		EXPECT_EQ(1, s[i].calls);
		EXPECT_EQ(SYNCMEM_OK, s[i].result);
	}
	EXPECT_EQ(0, syncmem_loop_pending(self->loop));
}

TEST_F(async, timeouts_and_notified_before_the_deadline)
{
	struct cb_slot late = { 0 }, early = { 0 };
	int64_t t0 = now_ns();

	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							50000000, record_cb, &late, NULL));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word2, 0,
							300000000, record_cb, &early, NULL));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word2, 1));
	EXPECT_EQ(0, syncmem_loop_run(self->loop));
	EXPECT_EQ(1, late.calls);
	EXPECT_EQ(SYNCMEM_TIMED_OUT, late.result);
	EXPECT_LE(50000000, late.at - t0);
	EXPECT_EQ(1, early.calls);
	EXPECT_EQ(SYNCMEM_OK, early.result);
	/* Its deadline passes later without a second callback. */
	usleep(350000);
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 0));
	EXPECT_EQ(1, early.calls);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F(async, cancel_before_and_after_completion)
{
	struct cb_slot a = { 0 }, b = { 0 }, c = { 0 };
	uint64_t ida, idb, idc;

	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							SYNCMEM_FOREVER, record_cb, &a, &ida));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							SYNCMEM_FOREVER, record_cb, &b, &idb));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							1000000000, record_cb, &c, &idc));
	/* Cancel while queued: the callback reports -ECANCELED, once. */
	EXPECT_EQ(0, syncmem_wait_cancel(self->loop, ida));
	EXPECT_EQ(0, a.calls);
	EXPECT_EQ(2, region_waiters(self->r));
	/* Completed in the kernel but not yet delivered: too late to cancel. */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(-ENOENT, syncmem_wait_cancel(self->loop, idb));
	/* A timed wait cancels too (its timer is stopped). */
	EXPECT_EQ(0, syncmem_wait_cancel(self->loop, idc));
	EXPECT_EQ(0, syncmem_loop_run(self->loop));
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(-ECANCELED, a.result);
	EXPECT_EQ(1, b.calls);
	EXPECT_EQ(SYNCMEM_OK, b.result);
	EXPECT_EQ(1, c.calls);
	EXPECT_EQ(-ECANCELED, c.result);
	/* After completion, or never existing: -ENOENT. */
	EXPECT_EQ(-ENOENT, syncmem_wait_cancel(self->loop, ida));
	EXPECT_EQ(-ENOENT, syncmem_wait_cancel(self->loop, idb));
	EXPECT_EQ(-ENOENT, syncmem_wait_cancel(self->loop, 987654321));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
}

TEST_F(async, loop_free_runs_pending_callbacks)
{
	struct syncmem_loop *loop;
	struct cb_slot s[5] = { 0 }, done = { 0 };
	int i;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(loop, self->r, &self->sh->word, 0,
								i % 2 ? 5000000000LL : SYNCMEM_FOREVER,
								record_cb, &s[i], NULL));
	}
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(loop, self->r, &self->sh->word2, 0,
							SYNCMEM_FOREVER, record_cb, &done, NULL));
	/* This one completes before the free: its real result must survive. */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word2, 1));
	syncmem_loop_free(loop);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(1, s[i].calls);
		EXPECT_EQ(-ECANCELED, s[i].result);
	}
	EXPECT_EQ(1, done.calls);
	EXPECT_EQ(SYNCMEM_OK, done.result);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
}

/*
 * A forked child shares the loop's handle and ring: using the loop there
 * would steal the parent's completions, freeing it would cancel the
 * parent's waits. The child gets -EBADFD, and its free touches nothing of
 * the parent's.
 */
TEST_F(async, a_forked_child_cannot_use_or_cancel_its_parents_loop)
{
	struct cb_slot s = { 0 }, done = { 0 };
	uint64_t id = 0;
	pid_t child;

	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							SYNCMEM_FOREVER, record_cb, &s, &id));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word2, 0,
							SYNCMEM_FOREVER, record_cb, &done, NULL));
	/* Completed and unread when the child starts: the child must not read it. */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word2, 1));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		struct cb_slot c = { 0 };
		int bad = 0;

		bad |= syncmem_loop_run_once(self->loop, 0) != -EBADFD;
		bad |= syncmem_loop_run(self->loop) != -EBADFD;
		bad |= syncmem_wait_cancel(self->loop, id) != -EBADFD;
		bad |= syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
					    SYNCMEM_FOREVER, record_cb, &c, NULL) != -EBADFD;
		bad |= syncmem_lock_async(self->loop, self->r,
					  (struct syncmem_lock *)&self->sh->words[16], record_cb,
					  &c) != -EBADFD;
		syncmem_loop_free(self->loop);
		/* No callback ran in the child, not even the parent's copies. */
		_exit(bad || c.calls || s.calls || done.calls ? 1 : 0);
	}
	EXPECT_EQ(0, wait_exit(child));
	/* The parent's waits are all still its own. */
	EXPECT_EQ(2, syncmem_loop_pending(self->loop));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	while (syncmem_loop_pending(self->loop))
		ASSERT_LT(0, syncmem_loop_run_once(self->loop, 5000000000LL));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(SYNCMEM_OK, s.result);
	EXPECT_EQ(1, done.calls);
	EXPECT_EQ(SYNCMEM_OK, done.result);
}


/* Objects the tests below take from callbacks, past the words at 4 KiB. */
struct loop_objects {
	struct syncmem_lock locks[4];
	struct syncmem_gate gate;
	struct syncmem_sem sem;
	struct syncmem_rwlock rw;
};

static struct loop_objects *loop_objects(struct shared *sh)
{
	struct loop_objects *o = (struct loop_objects *)((char *)sh + 4096);

	memset(o, 0, sizeof(*o));
	syncmem_gate_init(&o->gate, true);
	syncmem_sem_init(&o->sem, 1);
	syncmem_rwlock_init(&o->rw);
	return o;
}

/* A callback that runs its own loop again, or frees it. */
enum { REENTER_RUN_ONCE, REENTER_RUN, REENTER_FREE };

struct reenter {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct syncmem_lock *l;		/* held when it is called: unlocked first */
	int how;
	int calls;
	int inner;			/* what the inner call returned */
};

static void reenter_cb(void *arg, int result)
{
	struct reenter *re = arg;

	re->calls++;
	if (re->l && !result)
		syncmem_unlock(re->r, re->l);
	switch (re->how) {
	case REENTER_RUN_ONCE:
		re->inner = syncmem_loop_run_once(re->loop, 0);
		break;
	case REENTER_RUN:
		re->inner = syncmem_loop_run(re->loop);
		break;
	case REENTER_FREE:
		syncmem_loop_free(re->loop);
		break;
	}
}

/* Records its calls and unlocks the lock it was given. */
struct unlocker {
	struct syncmem_region *r;
	struct syncmem_lock *l;
	struct cb_slot s;
	int unlocked;
};

static void unlock_cb(void *arg, int result)
{
	struct unlocker *u = arg;

	record_cb(&u->s, result);
	if (!result)
		u->unlocked = syncmem_unlock(u->r, u->l);
}

static void count_fn(void *arg)
{
	(*(int *)arg)++;
}

/*
 * A callback that runs the loop (run_once, run) runs the callbacks after
 * it, once each: never itself or an earlier one again (the lock ops of
 * those were freed once they ran).
 */
TEST_F(async, a_callback_that_runs_its_loop_runs_no_callback_twice)
{
	struct loop_objects *o = loop_objects(self->sh);

	for (int how = REENTER_RUN_ONCE; how <= REENTER_RUN; how++) {
		struct reenter re = { self->loop, self->r, &o->locks[0], how, 0, 0 };
		struct unlocker u = { self->r, &o->locks[2], { 0 }, 1 };
		struct cb_slot w = { 0 };
		int runs = 0;

		/* Free locks, taken at once: three callbacks due in the loop. */
		ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, &o->locks[0], reenter_cb, &re));
		ASSERT_EQ(0, syncmem_execute_locked(self->loop, self->r, &o->locks[1], count_fn,
						    &runs));
		ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, &o->locks[2], unlock_cb, &u));
		EXPECT_LE(1, syncmem_loop_run_once(self->loop, 0));
		EXPECT_EQ(1, re.calls);
		EXPECT_EQ(how == REENTER_RUN_ONCE ? 2 : 0, re.inner);
		EXPECT_EQ(1, runs);
		EXPECT_EQ(1, u.s.calls);
		EXPECT_EQ(0, u.unlocked);
		EXPECT_EQ(0, syncmem_loop_pending(self->loop));
		for (int i = 0; i < 3; i++)
			EXPECT_EQ(0, o->locks[i].word);

		/* Completions from the kernel likewise: two waits woken at once. */
		re = (struct reenter){ self->loop, self->r, NULL, how, 0, 0 };
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
								0, SYNCMEM_FOREVER, reenter_cb, &re,
								NULL));
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
								0, SYNCMEM_FOREVER, record_cb, &w,
								NULL));
		ASSERT_EQ(2, syncmem_notify(self->r, &self->sh->word, 2));
		EXPECT_LE(1, syncmem_loop_run_once(self->loop, 5000000000LL));
		EXPECT_EQ(1, re.calls);
		EXPECT_EQ(1, w.calls);
		EXPECT_EQ(SYNCMEM_OK, w.result);
		EXPECT_EQ(0, syncmem_loop_pending(self->loop));
	}
}

/*
 * A callback may free its loop: the free runs the other callbacks
 * (-ECANCELED) as any free does, and the loop's memory goes when the run
 * that called the callback returns.
 */
TEST_F(async, a_callback_may_free_its_loop)
{
	struct loop_objects *o = loop_objects(self->sh);

	for (int from_due = 0; from_due < 2; from_due++) {
		struct syncmem_loop *loop;
		struct reenter re = { .how = REENTER_FREE };
		struct cb_slot other = { 0 };
		int runs = 0;

		ASSERT_EQ(0, syncmem_loop_new(&loop));
		re.loop = loop;
		if (from_due) {
			re.r = self->r;
			re.l = &o->locks[0];
			ASSERT_EQ(0, syncmem_lock_async(loop, self->r, &o->locks[0], reenter_cb, &re));
			/* Due after it: run by the free, with its real result. */
			ASSERT_EQ(0, syncmem_execute_locked(loop, self->r, &o->locks[1], count_fn,
							    &runs));
		} else {
			ASSERT_EQ(SYNCMEM_PENDING,
				  syncmem_wait_async32(loop, self->r, &self->sh->word, 0,
						       SYNCMEM_FOREVER, reenter_cb, &re, NULL));
			ASSERT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
		}
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(loop, self->r, &self->sh->word2, 0,
								SYNCMEM_FOREVER, record_cb, &other,
								NULL));
		EXPECT_LE(1, syncmem_loop_run_once(loop, 5000000000LL));
		EXPECT_EQ(1, re.calls);
		EXPECT_EQ(1, other.calls);
		EXPECT_EQ(-ECANCELED, other.result);
		EXPECT_EQ(from_due, runs);
		EXPECT_EQ(0, region_waiters(self->r));
		EXPECT_EQ(0, o->locks[0].word);
		EXPECT_EQ(0, o->locks[1].word);
	}
}

/* What callbacks that syncmem_loop_free() runs try to start, and get. */
struct during_free {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct shared *sh;
	struct loop_objects *o;
	struct cb_slot s;
	struct cb_slot late[8];		/* the callbacks of what they started */
	int ret[10];
	int runs;
};

static void during_free_cb(void *arg, int result)
{
	struct during_free *df = arg;
	struct syncmem_loop *loop = df->loop;
	struct syncmem_region *r = df->r;
	struct loop_objects *o = df->o;
	int i = 0;

	record_cb(&df->s, result);
	/* Each would take a free object at once, or queue a wait. */
	df->ret[i++] = syncmem_lock_async(loop, r, &o->locks[0], record_cb, &df->late[0]);
	df->ret[i++] = syncmem_execute_locked(loop, r, &o->locks[1], count_fn, &df->runs);
	df->ret[i++] = syncmem_gate_wait_async(loop, r, &o->gate, record_cb, &df->late[1]);
	df->ret[i++] = syncmem_sem_wait_async(loop, r, &o->sem, record_cb, &df->late[2]);
	df->ret[i++] = syncmem_rwlock_rdlock_async(loop, r, &o->rw, record_cb, &df->late[3]);
	df->ret[i++] = syncmem_rwlock_wrlock_async(loop, r, &o->rw, record_cb, &df->late[4]);
	df->ret[i++] = syncmem_wait_async32(loop, r, &df->sh->word2, 0, SYNCMEM_FOREVER,
					    record_cb, &df->late[5], NULL);
	df->ret[i++] = syncmem_loop_run_once(loop, 0);
	df->ret[i++] = syncmem_loop_run(loop);
	syncmem_loop_free(loop);	/* freed already: nothing happens */
	df->ret[i++] = 0;
}

/*
 * The callbacks that syncmem_loop_free() runs cannot start anything whose
 * callback would never run: each call is -ECANCELED and takes nothing.
 */
TEST_F(async, callbacks_run_by_loop_free_start_nothing)
{
	struct during_free df = { .r = self->r, .sh = self->sh, .o = loop_objects(self->sh) };

	for (int completed = 0; completed < 2; completed++) {
		memset(df.late, 0, sizeof(df.late));
		memset(&df.s, 0, sizeof(df.s));
		df.runs = 0;
		ASSERT_EQ(0, syncmem_loop_new(&df.loop));
		/* Cancelled by the free, or completed before it (its real result). */
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(df.loop, self->r, &self->sh->word, 0,
								SYNCMEM_FOREVER, during_free_cb, &df,
								NULL));
		if (completed)
			ASSERT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
		syncmem_loop_free(df.loop);
		EXPECT_EQ(1, df.s.calls);
		EXPECT_EQ(completed ? SYNCMEM_OK : -ECANCELED, df.s.result);
		for (int call = 0; call < 9; call++) {
			EXPECT_EQ(-ECANCELED, df.ret[call]) {
				TH_LOG("call %d", call);
			}
		}
		for (int call = 0; call < 8; call++)
			EXPECT_EQ(0, df.late[call].calls);
		EXPECT_EQ(0, df.runs);
		/* Nothing taken, nothing queued. */
		EXPECT_EQ(0, df.o->locks[0].word);
		EXPECT_EQ(0, df.o->locks[1].word);
		EXPECT_EQ(0, syncmem_trylock(self->r, &df.o->locks[0]));
		EXPECT_EQ(0, syncmem_unlock(self->r, &df.o->locks[0]));
		EXPECT_EQ(0, syncmem_gate_wait(self->r, &df.o->gate, 0));
		EXPECT_EQ(0, syncmem_gate_signal(self->r, &df.o->gate));
		EXPECT_EQ(1, syncmem_sem_value(&df.o->sem));
		EXPECT_EQ(0, syncmem_rwlock_trywrlock(self->r, &df.o->rw));
		EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &df.o->rw));
		EXPECT_EQ(0, region_waiters(self->r));
	}
}

static void noop_cb(void *arg, int result)
{
	(void)arg;
	(void)result;
}

TEST_F(async, sigkill_with_a_thousand_pending_waits)
{
	int dev = dev_open();
	uint64_t base = get_stats(dev).async_waits;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct syncmem_loop *loop;

		if (syncmem_loop_new(&loop))
			_exit(1);
		for (int i = 0; i < 1000; i++)
			if (syncmem_wait_async32(loop, self->r, &self->sh->word, 0,
						 i % 2 ? 60000000000LL : SYNCMEM_FOREVER,
						 noop_cb, NULL, NULL) != SYNCMEM_PENDING)
				_exit(2);
		pause();
		_exit(3);
	}
	ASSERT_TRUE(await_waiters(self->r, 1000));
	EXPECT_EQ(base + 1000, get_stats(dev).async_waits);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, wait_exit(pid));
	/*
	 * Every one left the queue with the process: later notifies count
	 * nobody. Ring commands leave within moments (6.1 looks for commands
	 * of dead rings every 50 ms).
	 */
	if (variant->path == SYNCMEM_LOOP_URING) {
		int64_t start = now_ns();

		EXPECT_TRUE(await_waiters(self->r, 0));
		/* Each is uncharged as its CQE is posted, just after it left. */
		while (get_stats(dev).async_waits != base && now_ns() - start < 3000000000LL)
			usleep(1000);
		EXPECT_GT(3000000000LL, now_ns() - start);
	}
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	EXPECT_EQ(base, get_stats(dev).async_waits);
	close(dev);
}

/*
 * 100,000 async waits on distinct addresses of one handle (20,000 on the
 * debug kernel, where 100,000 take it most of a minute).
 */
TEST_F_TIMEOUT(async_eventfd, hundred_thousand_pending_waits, 600)
{
	const int N = on_debug_kernel() ? 20000 : 100000;
	long long before, after, per_waiter;
	uint32_t *words = self->sh->words;
	int i;

	ASSERT_LE(sizeof(struct shared) + N * sizeof(uint32_t), REGION_SIZE);
	/* Kernel memory: slab objects plus vmalloc'ed hash tables. */
	before = meminfo_kb("Slab") + meminfo_kb("VmallocUsed");
	for (i = 0; i < N; i++) {
		ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &words[i], 0,
								SYNCMEM_FOREVER, noop_cb, NULL,
								NULL));
	}
	/* Let RCU free the hash tables that growing replaced. */
	usleep(500000);
	after = meminfo_kb("Slab") + meminfo_kb("VmallocUsed");
	EXPECT_EQ(N, syncmem_loop_pending(self->loop));
	EXPECT_EQ(N, region_waiters(self->r));
	per_waiter = (after - before) * 1024 / N;
	TH_LOG("kernel memory per pending async waiter: about %lld bytes", per_waiter);
	/* The target holds for production kernels; KASAN's redzones inflate it. */
	if (on_debug_kernel()) {
		EXPECT_GE(2048, per_waiter);
	} else {
		EXPECT_GE(256, per_waiter);
	}
	/* Wake every tenth, then the loop frees the rest with -ECANCELED. */
	for (i = 0; i < N; i += 10) {
		ASSERT_EQ(1, syncmem_notify(self->r, &words[i], 1));
	}
	while (syncmem_loop_pending(self->loop) > (size_t)(N - N / 10)) {
		ASSERT_LE(0, syncmem_loop_run_once(self->loop, 1000000000));
	}
	EXPECT_EQ(N - N / 10, region_waiters(self->r));
}

TEST_F(async, loop_fd_in_an_epoll_loop)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct cb_slot s = { 0 };
	int ep = epoll_create1(EPOLL_CLOEXEC);

	ASSERT_LE(0, ep);
	ASSERT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, syncmem_loop_fd(self->loop), &ev));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							SYNCMEM_FOREVER, record_cb, &s, NULL));
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(1, epoll_wait(ep, &out, 1, 5000));
	EXPECT_EQ(0, s.calls);
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, 0));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(0, epoll_wait(ep, &out, 1, 0));
	EXPECT_FALSE(fd_readable(syncmem_loop_fd(self->loop)));
	close(ep);
}

static int readable_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* The fd is readable exactly when run_once(0) has work, whichever way it came. */
TEST_F(async, loop_fd_readable_exactly_when_work_waits)
{
	struct syncmem_lock *l = (struct syncmem_lock *)self->sh->words;
	struct cb_slot s[3] = { 0 };
	int fd = syncmem_loop_fd(self->loop);

	EXPECT_FALSE(fd_readable(fd));
	/* A free lock: taken at once, its callback posted through the kernel. */
	ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, l, record_cb, &s[0]));
	EXPECT_TRUE(readable_within(fd, 5000));
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, 0));
	EXPECT_EQ(0, s[0].result);
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, syncmem_unlock(self->r, l));
	/* A lock wait (through the handle) and a word wait (a ring command). */
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, l, record_cb, &s[1]));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							SYNCMEM_FOREVER, record_cb, &s[2], NULL));
	/* Waits that end at once leave nothing readable behind. */
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
							  1, SYNCMEM_FOREVER, record_cb, &s[2],
							  NULL));
	EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait_async32(self->loop, self->r, &self->sh->word,
							  0, 0, record_cb, &s[2], NULL));
	EXPECT_FALSE(readable_within(fd, 20));
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 0));
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, syncmem_unlock(self->r, l));	/* hands it to the lock wait */
	EXPECT_TRUE(readable_within(fd, 5000));
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, 0));
	EXPECT_EQ(1, s[1].calls);
	EXPECT_EQ(0, s[1].result);
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_TRUE(readable_within(fd, 5000));
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, 0));
	EXPECT_EQ(1, s[2].calls);
	EXPECT_EQ(SYNCMEM_OK, s[2].result);
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, syncmem_loop_pending(self->loop));
}

/* A wait queued through the handle before the fd was asked for still shows. */
TEST_F(async, loop_fd_asked_after_a_lock_wait_was_queued)
{
	struct syncmem_lock *l = (struct syncmem_lock *)self->sh->words;
	struct cb_slot s = { 0 };
	int fd;

	ASSERT_EQ(0, syncmem_lock(self->r, l));
	ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, l, record_cb, &s));
	fd = syncmem_loop_fd(self->loop);
	EXPECT_FALSE(fd_readable(fd));
	EXPECT_EQ(0, syncmem_unlock(self->r, l));	/* hands it to the lock wait */
	EXPECT_TRUE(readable_within(fd, 5000));
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, 0));
	EXPECT_EQ(0, s.result);
	EXPECT_EQ(0, syncmem_unlock(self->r, l));
}

TEST_F(async, loop_path_arguments)
{
	pid_t pid;

	EXPECT_EQ(-EINVAL, syncmem_loop_path(NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(syncmem_loop_path(self->loop) == -EBADFD ? 0 : 1);
	EXPECT_EQ(0, wait_exit(pid));
}

TEST_F(async_eventfd, per_handle_cap)
{
	unsigned long long cap = get_param("max_async_waits");
	struct cb_slot s[4] = { 0 };
	int i;

	ASSERT_EQ(0, set_param("max_async_waits", 3));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r,
								&self->sh->word, 0, SYNCMEM_FOREVER,
								record_cb, &s[i], NULL));
	}
	EXPECT_EQ(-EAGAIN, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
						SYNCMEM_FOREVER, record_cb, &s[3], NULL));
	/* A completed but unread record still holds its slot. */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(-EAGAIN, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
						SYNCMEM_FOREVER, record_cb, &s[3], NULL));
	EXPECT_EQ(1, syncmem_loop_run_once(self->loop, SYNCMEM_FOREVER));
	EXPECT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0,
							SYNCMEM_FOREVER, record_cb, &s[3], NULL));
	ASSERT_EQ(0, set_param("max_async_waits", cap));
	EXPECT_EQ(3, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	EXPECT_EQ(0, syncmem_loop_run(self->loop));
}

TEST_F(async, region_closed_while_waits_pend)
{
	struct syncmem_region *r2, *other;
	struct cb_slot s = { 0 }, t = { 0 };
	char name[64];
	uint32_t *w;

	snprintf(name, sizeof(name), "async-closed-%d", getpid());
	ASSERT_EQ(0, syncmem_open(name, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r2));
	ASSERT_EQ(0, syncmem_open(name, 0, 0, 0, &other));
	syncmem_unlink(name);
	w = syncmem_base(r2);
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, r2, w, 0, SYNCMEM_FOREVER,
							record_cb, &s, NULL));
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(self->loop, r2, w + 1, 0, 30000000,
							record_cb, &t, NULL));
	syncmem_close(r2);	/* the waits keep the region alive */
	EXPECT_EQ(1, syncmem_notify(other, syncmem_base(other), 1));
	EXPECT_EQ(0, syncmem_loop_run(self->loop));
	EXPECT_EQ(SYNCMEM_OK, s.result);
	EXPECT_EQ(SYNCMEM_TIMED_OUT, t.result);
	syncmem_close(other);
}

TEST_F(async, handoff_reaches_an_async_waiter)
{
	struct syncmem_wait_async w = {
		.region_fd = syncmem_region_fd(self->r), .size = 4,
		.deadline_ns = SYNCMEM_NO_DEADLINE, .user_data = 42,
	};
	struct syncmem_completion rec;
	int h = dev_open();

	ASSERT_LE(0, h);
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, &w));
	EXPECT_EQ(1, syncmem_handoff32(self->r, &self->sh->word, 5));
	EXPECT_EQ(0, self->sh->word);
	ASSERT_EQ((ssize_t)sizeof(rec), read(h, &rec, sizeof(rec)));
	EXPECT_EQ(42, rec.user_data);
	EXPECT_EQ(SYNCMEM_WAIT_HANDED_OFF, rec.result);
	close(h);
}

/* Until the 8-byte word at @p holds @v (a pass-on runs in a work item), 5 s at most. */
static bool await_u64(volatile uint64_t *p, uint64_t v)
{
	int64_t end = now_ns() + 5000000000LL;

	while (*p != v && now_ns() < end)
		usleep(1000);
	return *p == v;
}

/*
 * A waiter of either width is handed a word of either width. When its
 * record is dropped unread, the HANDOFF is done again as it was made: its
 * size, flags and value, not the waiter's size. A lock waiter is never
 * handed a value.
 */
TEST_F(async, a_dropped_handoff_goes_on_as_the_handoff_was_made)
{
	int rfd = syncmem_region_fd(self->r);
	volatile uint64_t *a = (volatile uint64_t *)&self->sh->words[0];	/* offset 80 */
	volatile uint64_t *b = (volatile uint64_t *)&self->sh->words[2];	/* offset 88 */
	struct syncmem_wait_async w = {
		.region_fd = rfd, .deadline_ns = SYNCMEM_NO_DEADLINE, .user_data = 1,
	};
	struct syncmem_owner me = { .flags = SYNCMEM_OWNER_PROCESS };
	struct syncmem_handoff ho;
	int h;

	ASSERT_EQ(80, (char *)a - (char *)self->sh);

	/* An 8-byte waiter handed a 4-byte store: the word after it is not its. */
	*a = 0;
	h = dev_open();
	ASSERT_LE(0, h);
	w.offset = 80;
	w.size = 8;
	w.expected = 0;
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, &w));
	self->sh->words[1] = 0xabcd1234;
	ho = (struct syncmem_handoff){ .offset = 80, .value = 7, .size = 4 };
	ASSERT_EQ(SYNCMEM_HANDOFF_WOKE, raw_ioctl(rfd, SYNCMEM_IOC_HANDOFF, &ho));
	close(h);
	EXPECT_TRUE(await_u64(a, 0xabcd123400000007ULL)) {
		TH_LOG("8-byte word at 80: %#llx", (unsigned long long)*a);
	}

	/* A 4-byte waiter handed an 8-byte addition: all of it is added. */
	*b = 5;
	h = dev_open();
	ASSERT_LE(0, h);
	w.offset = 88;
	w.size = 4;
	w.expected = 5;
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, &w));
	ho = (struct syncmem_handoff){
		.offset = 88, .value = 1ULL << 32, .size = 8, .flags = SYNCMEM_HANDOFF_ADD,
	};
	ASSERT_EQ(SYNCMEM_HANDOFF_WOKE, raw_ioctl(rfd, SYNCMEM_IOC_HANDOFF, &ho));
	close(h);
	EXPECT_TRUE(await_u64(b, (1ULL << 32) + 5)) {
		TH_LOG("8-byte word at 88: %#llx", (unsigned long long)*b);
	}

	/*
	 * A HANDOFF whose oldest waiter is a lock request fails, changing
	 * nothing: an owner word passes only by its holder's unlock.
	 */
	h = dev_open();
	ASSERT_LE(0, h);
	ASSERT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_OWNER, &me));
	*a = me.id;
	w.offset = 80;
	w.size = 8;
	w.expected = me.id;
	w.flags = SYNCMEM_WAIT_ASYNC_OWNER;
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, &w));
	ho = (struct syncmem_handoff){ .offset = 80, .value = 9, .size = 8 };
	EXPECT_EQ(-EINVAL, raw_ioctl(rfd, SYNCMEM_IOC_HANDOFF, &ho));
	EXPECT_EQ(me.id, *a);
	EXPECT_EQ(1, region_waiters(self->r));
	close(h);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F(async, raw_interface_and_bad_arguments)
{
	struct syncmem_wait_async w;
	struct syncmem_eventfd e;
	struct syncmem_cancel c;
	struct syncmem_completion recs[4];
	void *volatile bad_buffer = (void *)8;
	uint32_t outside = 0;
	uint64_t count;
	int h = dev_open(), efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), p[2];
	int rfd = syncmem_region_fd(self->r);

	ASSERT_LE(0, h);
	ASSERT_LE(0, efd);
	ASSERT_EQ(0, pipe(p));
	fcntl(h, F_SETFL, O_NONBLOCK);

/* WAITA() overrides the defaults it starts from: that is the point. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define WAITA(...) (w = (struct syncmem_wait_async){ .region_fd = rfd, .size = 4, \
		   .deadline_ns = SYNCMEM_NO_DEADLINE, __VA_ARGS__ }, \
		   raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, &w))
	EXPECT_EQ(-EBADF, WAITA(.region_fd = -1));
	EXPECT_EQ(-EBADF, WAITA(.region_fd = 9999));
	EXPECT_EQ(-EINVAL, WAITA(.region_fd = p[0]));
	EXPECT_EQ(-EINVAL, WAITA(.region_fd = h));
	EXPECT_EQ(-EINVAL, WAITA(.flags = 1));
	EXPECT_EQ(-EINVAL, WAITA(.pad = 1));
	EXPECT_EQ(-EINVAL, WAITA(.size = 2));
	EXPECT_EQ(-EINVAL, WAITA(.offset = 2));
	EXPECT_EQ(-EINVAL, WAITA(.offset = REGION_SIZE));
	EXPECT_EQ(-EINVAL, WAITA(.expected = 1ULL << 32));
	EXPECT_EQ(-EFAULT, raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, NULL));
	EXPECT_EQ(SYNCMEM_WAIT_NOT_EQUAL, WAITA(.expected = 1));
	EXPECT_EQ(SYNCMEM_WAIT_TIMED_OUT, WAITA(.deadline_ns = 0));
	EXPECT_EQ(SYNCMEM_WAIT_QUEUED, WAITA(.user_data = 7));
	EXPECT_EQ(-EEXIST, WAITA(.user_data = 7));
	EXPECT_EQ(1, region_waiters(self->r));
#undef WAITA

	/* Eventfd registration. */
	e = (struct syncmem_eventfd){ .fd = 9999 };
	EXPECT_EQ(-EBADF, raw_ioctl(h, SYNCMEM_IOC_SET_EVENTFD, &e));
	e = (struct syncmem_eventfd){ .fd = p[0] };
	EXPECT_EQ(-EINVAL, raw_ioctl(h, SYNCMEM_IOC_SET_EVENTFD, &e));
	e = (struct syncmem_eventfd){ .fd = efd, .flags = 1 };
	EXPECT_EQ(-EINVAL, raw_ioctl(h, SYNCMEM_IOC_SET_EVENTFD, &e));
	e = (struct syncmem_eventfd){ .fd = -2 };
	EXPECT_EQ(-EINVAL, raw_ioctl(h, SYNCMEM_IOC_SET_EVENTFD, &e));
	e = (struct syncmem_eventfd){ .fd = efd };
	EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_SET_EVENTFD, &e));

	/* Reading: nothing yet; too small a buffer. */
	EXPECT_EQ(-1, read(h, recs, sizeof(recs)));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, read(h, recs, sizeof(recs[0]) - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_FALSE(fd_readable(h));

	/* A completion: the eventfd counts it, the handle holds its record. */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_TRUE(fd_readable(h));
	ASSERT_EQ((ssize_t)sizeof(count), read(efd, &count, sizeof(count)));
	EXPECT_EQ(1, count);
	/* A bad buffer: -EFAULT, and the record stays for the next read. */
	EXPECT_EQ(-1, read(h, bad_buffer, sizeof(recs)));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ((ssize_t)sizeof(recs[0]), read(h, recs, sizeof(recs)));
	EXPECT_EQ(7, recs[0].user_data);
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, recs[0].result);
	EXPECT_EQ(0, recs[0].pad);

	/* Cancel. */
	c = (struct syncmem_cancel){ .user_data = 7, .flags = 2 };
	EXPECT_EQ(-EINVAL, raw_ioctl(h, SYNCMEM_IOC_CANCEL, &c));
	c = (struct syncmem_cancel){ .user_data = 7, .pad = 1 };
	EXPECT_EQ(-EINVAL, raw_ioctl(h, SYNCMEM_IOC_CANCEL, &c));
	c = (struct syncmem_cancel){ .user_data = 7 };
	EXPECT_EQ(-ENOENT, raw_ioctl(h, SYNCMEM_IOC_CANCEL, &c));
	c = (struct syncmem_cancel){ .flags = SYNCMEM_CANCEL_ALL };
	EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_CANCEL, &c));

	/* Posting a record directly. */
	{
		struct syncmem_post post = { .user_data = 99, .result = -ECANCELED, .flags = 1 };
		unsigned long long cap = get_param("max_async_waits");

		EXPECT_EQ(-EINVAL, raw_ioctl(h, SYNCMEM_IOC_POST, &post));
		EXPECT_EQ(-EFAULT, raw_ioctl(h, SYNCMEM_IOC_POST, NULL));
		post.flags = 0;
		ASSERT_EQ(0, set_param("max_async_waits", 1));
		EXPECT_EQ(0, raw_ioctl(h, SYNCMEM_IOC_POST, &post));
		EXPECT_EQ(-EAGAIN, raw_ioctl(h, SYNCMEM_IOC_POST, &post));	/* unread: slot held */
		ASSERT_EQ(0, set_param("max_async_waits", cap));
		EXPECT_TRUE(fd_readable(h));
		ASSERT_EQ((ssize_t)sizeof(recs[0]), read(h, recs, sizeof(recs)));
		EXPECT_EQ(99, recs[0].user_data);
		EXPECT_EQ(-ECANCELED, recs[0].result);
	}

	/* Async waits belong to handles, not to region fds. */
	EXPECT_EQ(-ENOTTY, raw_ioctl(rfd, SYNCMEM_IOC_WAIT_ASYNC, &w));

	/* Library argument checks. */
	EXPECT_EQ(-EINVAL, syncmem_wait_async32(self->loop, self->r, &self->sh->word, 0, 0,
						NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_wait_async32(NULL, self->r, &self->sh->word, 0, 0,
						noop_cb, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_wait_async32(self->loop, self->r, &outside, 0, 0,
						noop_cb, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_wait_async64(self->loop, self->r, (uint64_t *)&self->sh->word2,
						0, 0, noop_cb, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_loop_run_once(NULL, 0));
	EXPECT_EQ(-EINVAL, syncmem_loop_new(NULL));
	EXPECT_EQ(-EINVAL, syncmem_wait_cancel(NULL, 1));
	syncmem_loop_free(NULL);

	close(p[0]);
	close(p[1]);
	close(efd);
	close(h);
}

/* Closing a raw handle removes its queued waits before any notify counts them. */
TEST_F(async, closing_the_handle_dequeues_its_waits)
{
	struct syncmem_wait_async w = {
		.region_fd = syncmem_region_fd(self->r), .size = 4,
		.deadline_ns = SYNCMEM_NO_DEADLINE,
	};
	int h = dev_open();

	for (int i = 1; i <= 20; i++) {
		w.user_data = i;
		w.deadline_ns = i % 2 ? SYNCMEM_NO_DEADLINE : (uint64_t)now_ns() + 60000000000ULL;
		ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(h, SYNCMEM_IOC_WAIT_ASYNC, &w));
	}
	/* Some completed and unread, the rest queued. */
	EXPECT_EQ(5, syncmem_notify(self->r, &self->sh->word, 5));
	close(h);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
}

/*
 * Stress: threads in several processes mix async waits (own loop each, with
 * and without deadlines), blocking waits, notify, hand-off and cancel on a
 * few words. Every queued async wait gets exactly one callback, and every
 * wake-up a notify or hand-off reported reached exactly one waiter.
 */
struct astress {
	_Atomic uint32_t stop;
	uint32_t words[4];
	_Atomic uint64_t notified, handed, sync_woken, async_ok;
	_Atomic uint64_t queued, callbacks, cancels, cancelled, timed_out, errors;
};

struct astress_thread {
	struct syncmem_region *r;
	struct astress *st;
	struct syncmem_loop *loop;
	unsigned int seed;
	uint64_t ids[64];
	unsigned int nids;
};

static void astress_cb(void *arg, int result)
{
	struct astress_thread *t = arg;

	atomic_fetch_add(&t->st->callbacks, 1);
	if (result == SYNCMEM_OK)
		atomic_fetch_add(&t->st->async_ok, 1);
	else if (result == -ECANCELED)
		atomic_fetch_add(&t->st->cancelled, 1);
	else if (result == SYNCMEM_TIMED_OUT)
		atomic_fetch_add(&t->st->timed_out, 1);
	else
		atomic_fetch_add(&t->st->errors, 1);
}

static void astress_step(struct astress_thread *t)
{
	struct astress *st = t->st;
	unsigned int pick = rand_r(&t->seed);
	uint32_t *w = &st->words[pick % 4];
	int ret;

	switch ((pick >> 4) % 6) {
	case 0:
	case 1: {
		int64_t timeout = (pick >> 8) % 2 ? SYNCMEM_FOREVER : (pick >> 9) % 3000000;
		uint64_t id;

		ret = syncmem_wait_async32(t->loop, t->r, w, 0, timeout, astress_cb, t, &id);
		if (ret == SYNCMEM_PENDING) {
			atomic_fetch_add(&st->queued, 1);
			t->ids[t->nids++ % 64] = id;
		} else if (ret < 0 && ret != -EAGAIN) {
			atomic_fetch_add(&st->errors, 1);
		}
		break;
	}
	case 2: {
		struct syncmem_wait sw = {
			.offset = (uint64_t)((char *)w - (char *)st), .size = 4,
			.deadline_ns = (uint64_t)now_ns() + (pick >> 8) % 1000000,
		};

		ret = raw_ioctl(syncmem_region_fd(t->r), SYNCMEM_IOC_WAIT, &sw);
		if (ret == SYNCMEM_WAIT_WOKEN || ret == SYNCMEM_WAIT_HANDED_OFF)
			atomic_fetch_add(&st->sync_woken, 1);
		else if (ret < 0)
			atomic_fetch_add(&st->errors, 1);
		break;
	}
	case 3:
		ret = syncmem_notify(t->r, w, 1 + (pick >> 8) % 3);
		if (ret < 0)
			atomic_fetch_add(&st->errors, 1);
		else
			atomic_fetch_add(&st->notified, ret);
		break;
	case 4:
		ret = syncmem_handoff32(t->r, w, 0);
		if (ret < 0)
			atomic_fetch_add(&st->errors, 1);
		else
			atomic_fetch_add(&st->handed, ret);
		break;
	default:
		if (t->nids && !syncmem_wait_cancel(t->loop, t->ids[(pick >> 8) % 64 % t->nids]))
			atomic_fetch_add(&st->cancels, 1);
		break;
	}
	if (syncmem_loop_run_once(t->loop, 0) < 0)
		atomic_fetch_add(&st->errors, 1);
}

static void *astress_thread_fn(void *p)
{
	struct astress_thread *t = p;

	while (!atomic_load(&t->st->stop))
		astress_step(t);
	/* Drain: whatever is still queued is cancelled by the free. */
	syncmem_loop_free(t->loop);
	return NULL;
}

static int astress_process(struct syncmem_region *r, struct astress *st, int id)
{
	struct astress_thread t[2];
	pthread_t th[2];

	for (int i = 0; i < 2; i++) {
		t[i] = (struct astress_thread){ .r = r, .st = st,
						.seed = (unsigned int)(id * 131 + i) };
		if (syncmem_loop_new(&t[i].loop))
			return 1;
		pthread_create(&th[i], NULL, astress_thread_fn, &t[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}

TEST(stress_async_sync_notify_cancel)
{
	enum { PROCS = 4 };
	int dev = dev_open();
	uint64_t base_async = get_stats(dev).async_waits;
	struct syncmem_region *r;
	struct astress *st;
	pid_t pids[PROCS];
	int i;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	st = syncmem_base(r);
	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(astress_process(r, st, i));
	}
	usleep(3000000);
	atomic_store(&st->stop, 1);
	EXPECT_EQ(0, reap_notifying(pids, PROCS, r, st->words, 4, &st->notified));
	EXPECT_EQ(0, atomic_load(&st->errors));
	EXPECT_EQ(atomic_load(&st->queued), atomic_load(&st->callbacks));
	EXPECT_EQ(atomic_load(&st->notified) + atomic_load(&st->handed),
		  atomic_load(&st->sync_woken) + atomic_load(&st->async_ok));
	EXPECT_LE(atomic_load(&st->cancels), atomic_load(&st->cancelled));
	EXPECT_LT(0, atomic_load(&st->async_ok));
	EXPECT_LT(0, atomic_load(&st->timed_out));
	EXPECT_LT(0, atomic_load(&st->cancels));
	EXPECT_EQ(0, region_waiters(r));
	EXPECT_EQ(base_async, get_stats(dev).async_waits);
	TH_LOG("queued %llu: ok %llu, timed out %llu, cancelled %llu (%llu by cancel); sync woken %llu",
	       (unsigned long long)st->queued, (unsigned long long)st->async_ok,
	       (unsigned long long)st->timed_out, (unsigned long long)st->cancelled,
	       (unsigned long long)st->cancels, (unsigned long long)st->sync_woken);
	syncmem_close(r);
	close(dev);
}

/*
 * A completion racing with its reader: the waiter process reads its record
 * and exits (closing the handle) while the notifier may still be signalling
 * that handle. Regression test for a use-after-free of the handle.
 */
TEST(completion_races_with_the_waiters_exit)
{
	/* A fork and a loop per round: the debug kernel under a busy host is slow. */
	struct round_budget b = round_budget(200, 32, 12);
	struct syncmem_region *r;
	uint32_t *word;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	word = syncmem_base(r);
	for (int i = 0; round_budget_more(&b, i); i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			struct syncmem_loop *loop;

			if (syncmem_loop_new(&loop) ||
			    syncmem_wait_async32(loop, r, word, 0, SYNCMEM_FOREVER, noop_cb, NULL,
						 NULL) != SYNCMEM_PENDING ||
			    syncmem_loop_run(loop))
				_exit(1);
			_exit(0);	/* no loop_free: exit closes the handle */
		}
		ASSERT_TRUE(await_waiters(r, 1));
		ASSERT_EQ(1, syncmem_notify(r, word, 1));
		ASSERT_EQ(0, wait_exit(pid));
	}
	syncmem_close(r);
}

TEST_HARNESS_MAIN
