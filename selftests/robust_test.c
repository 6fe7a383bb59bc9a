// SPDX-License-Identifier: GPL-2.0
/*
 * Robust locks: a holder that dies hands the lock to the next acquirer with
 * -EOWNERDEAD (exactly once), waiters learn of it at once, a hand-off to a
 * waiter that dies goes on, and owner ids do not depend on PID namespaces.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define MS	1000000LL

struct rshared {
	struct syncmem_lock lock;
	struct syncmem_rwlock rw;
	_Atomic uint32_t ready;
	_Atomic uint32_t got;		/* results seen by children */
	uint64_t counter;		/* protected by lock */
	_Atomic uint32_t inside;	/* holders inside at once */
	_Atomic uint32_t overlap;	/* mutual exclusion broken */
	_Atomic uint32_t deadlk;	/* false -EDEADLK seen */
};

FIXTURE(robust) {
	struct syncmem_region *r;
	struct rshared *sh;
};

FIXTURE_SETUP(robust)
{
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
}

FIXTURE_TEARDOWN(robust)
{
	syncmem_close(self->r);
}

/* A child that takes the lock, says so, and waits to be killed. */
static pid_t holder_child(struct syncmem_region *r, struct rshared *sh)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (syncmem_lock(r, &sh->lock))
			_exit(1);
		sh->counter = 7;	/* half-way through its section */
		atomic_store(&sh->ready, 1);
		for (;;)
			pause();
	}
	while (pid > 0 && !atomic_load(&sh->ready))
		usleep(1000);
	atomic_store(&sh->ready, 0);
	return pid;
}

static void kill_and_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

TEST_F(robust, dead_holder_is_reported_to_the_next_acquirer_exactly_once)
{
	struct rshared *sh = self->sh;
	pid_t pid;

	for (int fair = 0; fair < 2; fair++) {
		syncmem_lock_init(&sh->lock, fair ? SYNCMEM_LOCK_FAIR : 0);
		pid = holder_child(self->r, sh);
		ASSERT_LT(0, pid);
		EXPECT_EQ(-EBUSY, syncmem_trylock(self->r, &sh->lock));
		kill_and_reap(pid);
		/* Nobody waited: the next acquirer finds the owner dead. */
		EXPECT_EQ(-EOWNERDEAD, syncmem_lock(self->r, &sh->lock));
		EXPECT_EQ(7, sh->counter);
		EXPECT_EQ(0, syncmem_lock_consistent(self->r, &sh->lock));
		EXPECT_EQ(-EINVAL, syncmem_lock_consistent(self->r, &sh->lock));
		EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
		/* Recovered: an ordinary lock from now on. */
		EXPECT_EQ(0, syncmem_lock(self->r, &sh->lock));
		EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
		EXPECT_EQ(0, sh->lock.word);
		/* trylock takes over as well. */
		pid = holder_child(self->r, sh);
		ASSERT_LT(0, pid);
		kill_and_reap(pid);
		EXPECT_EQ(-EOWNERDEAD, syncmem_trylock(self->r, &sh->lock));
		EXPECT_EQ(0, syncmem_lock_consistent(self->r, &sh->lock));
		EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	}
}

/*
 * Blocked in syncmem_lock: records its result and when it got it; once it
 * holds the lock, @then says what it does: UNLOCK, or REPAIR (make it
 * consistent after -EOWNERDEAD) and unlock, recording that result.
 */
enum { KEEP, UNLOCK, REPAIR };

struct blocked {
	struct syncmem_region *r;
	struct syncmem_lock *l;
	int then;
	int ret;
	int64_t at;
	int after;
};

static void *block_on_lock(void *arg)
{
	struct blocked *b = arg;

	b->ret = syncmem_lock(b->r, b->l);
	b->at = now_ns();
	if (b->ret == -EOWNERDEAD && b->then == REPAIR)
		b->after = syncmem_lock_consistent(b->r, b->l);
	if ((b->ret == 0 || b->ret == -EOWNERDEAD) && b->then != KEEP && !b->after)
		b->after = syncmem_unlock(b->r, b->l);
	return NULL;
}

TEST_F(robust, waiters_are_woken_at_once_when_the_holder_dies)
{
	struct rshared *sh = self->sh;
	struct blocked b[2] = { { .r = self->r, .l = &sh->lock, .then = UNLOCK },
				{ .r = self->r, .l = &sh->lock } };
	pthread_t t[2];
	int64_t killed;
	pid_t pid;

	for (int fair = 0; fair < 2; fair++) {
		syncmem_lock_init(&sh->lock, fair ? SYNCMEM_LOCK_FAIR : 0);
		pid = holder_child(self->r, sh);
		ASSERT_LT(0, pid);
		for (int i = 0; i < 2; i++) {
			ASSERT_EQ(0, pthread_create(&t[i], NULL, block_on_lock, &b[i]));
			ASSERT_TRUE(await_waiters(self->r, i + 1));
		}
		killed = now_ns();
		kill_and_reap(pid);
		/*
		 * The oldest waiter gets it with -EOWNERDEAD, without a
		 * timeout, and unlocks it without repair: the other waiter
		 * is told that it is lost.
		 */
		pthread_join(t[0], NULL);
		EXPECT_EQ(-EOWNERDEAD, b[0].ret);
		EXPECT_GT(1000 * MS, b[0].at - killed);
		EXPECT_EQ(0, b[0].after);
		pthread_join(t[1], NULL);
		EXPECT_EQ(-ENOTRECOVERABLE, b[1].ret);
		EXPECT_EQ(-ENOTRECOVERABLE, syncmem_lock(self->r, &sh->lock));
		EXPECT_EQ(-ENOTRECOVERABLE, syncmem_trylock(self->r, &sh->lock));
		EXPECT_EQ(0, region_waiters(self->r));
	}
}

static void got_async(void *arg, int result)
{
	*(int *)arg = result;
}

/*
 * A child that queues an async acquisition and never runs its loop: handed
 * the lock, it cannot take it up.
 */
static pid_t idle_async_waiter(struct syncmem_region *r, struct rshared *sh)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_loop *loop;
		int res = 1;

		if (syncmem_loop_new(&loop) ||
		    syncmem_lock_async(loop, r, &sh->lock, got_async, &res))
			_exit(1);
		for (;;)
			pause();
	}
	if (pid > 0 && !await_waiters(r, 1))
		return -1;
	return pid;
}

TEST_F(robust, a_hand_off_to_a_waiter_that_dies_goes_to_the_next)
{
	struct rshared *sh = self->sh;
	struct blocked b = { .r = self->r, .l = &sh->lock, .then = REPAIR };
	int64_t killed;
	pthread_t t;
	pid_t pid;

	syncmem_lock_init(&sh->lock, SYNCMEM_LOCK_FAIR);
	ASSERT_EQ(0, syncmem_lock(self->r, &sh->lock));
	pid = idle_async_waiter(self->r, sh);
	ASSERT_LT(0, pid);
	ASSERT_EQ(0, pthread_create(&t, NULL, block_on_lock, &b));
	ASSERT_TRUE(await_waiters(self->r, 2));
	/* The child is the oldest: the kernel names it in the word. */
	EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	EXPECT_NE(0, sh->lock.word & SYNCMEM_OWNER_ID);
	EXPECT_TRUE(await_waiters(self->r, 1));
	killed = now_ns();
	kill_and_reap(pid);
	pthread_join(t, NULL);
	/*
	 * It never took the lock up: its unread record is passed on when its
	 * handle closes (0), unless its process's death is noticed first, and
	 * then the next is told as for any dead holder (-EOWNERDEAD).
	 */
	EXPECT_TRUE(b.ret == 0 || b.ret == -EOWNERDEAD);
	EXPECT_GT(1000 * MS, b.at - killed);
	EXPECT_EQ(0, b.after);
	EXPECT_EQ(0, sh->lock.word);
}

TEST_F(robust, a_starving_waiter_that_dies_does_not_keep_the_lock_handing_off)
{
	struct rshared *sh = self->sh;
	struct blocked b = { .r = self->r, .l = &sh->lock, .then = UNLOCK };
	pthread_t t;

	syncmem_lock_init(&sh->lock, 0);
	/* What a starving waiter leaves behind when it is killed. */
	sh->lock.starving = 1;
	ASSERT_EQ(0, syncmem_lock(self->r, &sh->lock));
	ASSERT_EQ(0, pthread_create(&t, NULL, block_on_lock, &b));
	ASSERT_TRUE(await_waiters(self->r, 1));
	EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	pthread_join(t, NULL);
	ASSERT_EQ(0, b.ret);
	/* Its unlock found nobody waiting: nobody starves any more. */
	EXPECT_EQ(0, b.after);
	EXPECT_EQ(0, sh->lock.starving);
	EXPECT_EQ(0, sh->lock.word);
}

/* Async: held as the process, released from another thread. */

/*
 * A child that takes the lock asynchronously and then waits to be killed,
 * or with @then_exec runs another program (the one that held it is gone).
 * Its pid once it holds the lock, or -1.
 */
static pid_t async_holder(struct syncmem_region *r, struct rshared *sh, bool then_exec)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_loop *loop;
		int res = 1;

		if (syncmem_loop_new(&loop) || syncmem_lock_async(loop, r, &sh->lock, got_async, &res))
			_exit(1);
		while (res == 1)
			syncmem_loop_run_once(loop, 1000 * MS);
		atomic_store(&sh->ready, res == 0 ? 1 : 2);
		if (then_exec)
			execl("/bin/sh", "sh", "-c", "sleep 1000", (char *)NULL);
		for (;;)
			pause();
	}
	while (pid > 0 && !atomic_load(&sh->ready))
		usleep(1000);
	if (pid > 0 && atomic_exchange(&sh->ready, 0) != 1)
		return -1;
	return pid;
}

struct unlocker {
	struct syncmem_region *r;
	struct syncmem_lock *l;
	int ret;
};

static void *unlock_elsewhere(void *arg)
{
	struct unlocker *u = arg;

	u->ret = syncmem_unlock(u->r, u->l);
	return NULL;
}

TEST_F(robust, async_acquisitions_belong_to_the_process)
{
	struct rshared *sh = self->sh;
	struct unlocker u = { .r = self->r, .l = &sh->lock, .ret = -1 };
	struct syncmem_loop *loop;
	int result = 1;
	pthread_t t;
	pid_t pid;

	syncmem_lock_init(&sh->lock, 0);
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_lock_async(loop, self->r, &sh->lock, got_async, &result));
	while (result == 1)
		ASSERT_LE(0, syncmem_loop_run_once(loop, 1000 * MS));
	ASSERT_EQ(0, result);
	/* Another thread of the process finishes the work and unlocks. */
	ASSERT_EQ(0, pthread_create(&t, NULL, unlock_elsewhere, &u));
	pthread_join(t, NULL);
	EXPECT_EQ(0, u.ret);
	EXPECT_EQ(0, sh->lock.word);

	/* A process that dies holding an async acquisition: recovered. */
	pid = async_holder(self->r, sh, false);
	ASSERT_LT(0, pid);
	result = 1;
	ASSERT_EQ(0, syncmem_lock_async(loop, self->r, &sh->lock, got_async, &result));
	ASSERT_TRUE(await_waiters(self->r, 1));
	kill_and_reap(pid);
	while (result == 1)
		ASSERT_LE(0, syncmem_loop_run_once(loop, 1000 * MS));
	EXPECT_EQ(-EOWNERDEAD, result);
	EXPECT_EQ(0, syncmem_lock_consistent(self->r, &sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	syncmem_loop_free(loop);
}

/* Lock, check exclusion, unlock: @n times. */
static int hammer(struct syncmem_region *r, struct rshared *sh, int n)
{
	for (int i = 0; i < n; i++) {
		int ret = syncmem_lock(r, &sh->lock);

		if (ret == -EDEADLK)
			atomic_fetch_add(&sh->deadlk, 1);
		if (ret)
			return 1;
		if (atomic_fetch_add(&sh->inside, 1))
			atomic_fetch_add(&sh->overlap, 1);
		sh->counter++;
		atomic_fetch_sub(&sh->inside, 1);
		if (syncmem_unlock(r, &sh->lock))
			return 2;
	}
	return 0;
}

TEST_F(robust, processes_in_different_pid_namespaces_exclude_each_other)
{
	struct rshared *sh = self->sh;
	enum { N = 20000 };
	pid_t pid[2];

	syncmem_lock_init(&sh->lock, 0);
	sh->counter = 0;
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			pid_t init;
			int status;

			/* The child's child is pid 1 (tid 1) of a new namespace. */
			if (unshare(CLONE_NEWPID))
				_exit(20);
			init = fork();
			if (init == 0) {
				if (getpid() != 1)
					_exit(21);
				atomic_fetch_add(&sh->ready, 1);
				while (atomic_load(&sh->ready) < 2)
					;
				_exit(hammer(self->r, sh, N));
			}
			if (init < 0 || waitpid(init, &status, 0) != init)
				_exit(22);
			_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 23);
		}
	}
	EXPECT_EQ(0, wait_exit(pid[0]));
	EXPECT_EQ(0, wait_exit(pid[1]));
	EXPECT_EQ(2 * N, sh->counter);
	EXPECT_EQ(0, atomic_load(&sh->overlap));
	EXPECT_EQ(0, atomic_load(&sh->deadlk));
	EXPECT_EQ(0, sh->lock.word);
}

/*
 * A child that takes the rwlock with @fn (expecting @want), says so and is
 * killed holding it. 0, or -1 when the child could not take it.
 */
static int rw_lock_and_die(struct syncmem_region *r, struct rshared *sh,
			   int (*fn)(struct syncmem_region *, struct syncmem_rwlock *), int want)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (fn(r, &sh->rw) != want)
			_exit(1);
		atomic_store(&sh->ready, 1);
		for (;;)
			pause();
	}
	while (!atomic_load(&sh->ready)) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		usleep(1000);
	}
	atomic_store(&sh->ready, 0);
	kill_and_reap(pid);
	return 0;
}

TEST_F(robust, a_writer_that_dies_inside_is_reported_and_the_rwlock_goes_on)
{
	struct rshared *sh = self->sh;

	syncmem_rwlock_init(&sh->rw);
	ASSERT_EQ(0, rw_lock_and_die(self->r, sh, syncmem_rwlock_wrlock, 0));
	/* A reader comes in, told that the last writer died inside. */
	EXPECT_EQ(-EOWNERDEAD, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	/* Then it is an ordinary rwlock again. */
	EXPECT_EQ(0, syncmem_rwlock_wrlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
}

/* Exit status of a child that runs @fn once: 0 if it returned @want. */
static int child_expects(struct syncmem_region *r, struct rshared *sh,
			 int (*fn)(struct syncmem_region *, struct syncmem_rwlock *), int want)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(r, &sh->rw) == want ? 0 : 1);
	return wait_exit(pid);
}

TEST_F(robust, a_writers_death_is_reported_even_after_a_writer_gave_up)
{
	struct rshared *sh = self->sh;
	struct syncmem_rwlock_slot *mine = NULL;

	syncmem_rwlock_init(&sh->rw);
	/* This process reads once: it owns a slot from now on. */
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
	ASSERT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	for (int i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++)
		if (sh->rw.slot[i].owner)
			mine = &sh->rw.slot[i];
	ASSERT_NE(NULL, mine);
	ASSERT_EQ(0, rw_lock_and_die(self->r, sh, syncmem_rwlock_wrlock, 0));
	/*
	 * A share counted in the slot (a reader between its count and its look
	 * at the lock): writers that find it give up, and are not the ones told.
	 */
	__atomic_fetch_add(&mine->count, 1, __ATOMIC_SEQ_CST);
	EXPECT_EQ(-EBUSY, syncmem_rwlock_trywrlock(self->r, &sh->rw));
	EXPECT_EQ(-ETIMEDOUT, syncmem_rwlock_wrlock_timed(self->r, &sh->rw, 20 * MS));
	__atomic_fetch_sub(&mine->count, 1, __ATOMIC_SEQ_CST);
	/* Readers stay out until one is told; that one reads alone. */
	EXPECT_NE(0, sh->rw.closed);
	EXPECT_EQ(-EOWNERDEAD, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(0, child_expects(self->r, sh, syncmem_rwlock_tryrdlock, -EBUSY));
	EXPECT_EQ(0, child_expects(self->r, sh, syncmem_rwlock_trywrlock, -EBUSY));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, sh->rw.closed);
	EXPECT_EQ(0, sh->rw.turnstile.word);
	/* Told once: the lock is ordinary again, for everyone. */
	EXPECT_EQ(0, child_expects(self->r, sh, syncmem_rwlock_rdlock, 0));
	EXPECT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(0, child_expects(self->r, sh, syncmem_rwlock_tryrdlock, 0));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_trywrlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
}

TEST_F(robust, a_reader_that_dies_repairing_after_a_writers_death_is_reported_too)
{
	struct rshared *sh = self->sh;

	syncmem_rwlock_init(&sh->rw);
	/* A writer dies inside; then a reader told so dies repairing. */
	ASSERT_EQ(0, rw_lock_and_die(self->r, sh, syncmem_rwlock_wrlock, 0));
	ASSERT_EQ(0, rw_lock_and_die(self->r, sh, syncmem_rwlock_rdlock, -EOWNERDEAD));
	EXPECT_EQ(-EOWNERDEAD, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, sh->rw.writer);
	EXPECT_EQ(0, sh->rw.closed);
}

static void note_result(void *arg, int result)
{
	*(int *)arg = result;
}

static void *rw_unlock_from_thread(void *arg)
{
	struct rshared *sh = ((void **)arg)[1];

	return (void *)(intptr_t)syncmem_rwlock_unlock(((void **)arg)[0], &sh->rw);
}

TEST_F(robust, an_async_reader_told_of_a_writers_death_reads_alone_and_any_thread_unlocks)
{
	struct rshared *sh = self->sh;
	void *args[2] = { self->r, sh }, *ret;
	struct syncmem_loop *loop;
	int result = 1;
	pthread_t t;

	syncmem_rwlock_init(&sh->rw);
	ASSERT_EQ(0, rw_lock_and_die(self->r, sh, syncmem_rwlock_wrlock, 0));
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_rwlock_rdlock_async(loop, self->r, &sh->rw, note_result, &result));
	for (int i = 0; i < 1000 && result == 1; i++)
		syncmem_loop_run_once(loop, 10 * MS);
	EXPECT_EQ(-EOWNERDEAD, result);
	EXPECT_EQ(0, child_expects(self->r, sh, syncmem_rwlock_tryrdlock, -EBUSY));
	/* The process holds it: another thread lets it go. */
	ASSERT_EQ(0, pthread_create(&t, NULL, rw_unlock_from_thread, args));
	pthread_join(t, &ret);
	EXPECT_EQ(0, (int)(intptr_t)ret);
	EXPECT_EQ(0, sh->rw.turnstile.word);
	EXPECT_EQ(0, sh->rw.closed);
	EXPECT_EQ(-EPERM, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, child_expects(self->r, sh, syncmem_rwlock_tryrdlock, 0));
	syncmem_loop_free(loop);
}

/* A child that takes a read share, says so, and waits to be killed (or @stop). */
static pid_t reader_child(struct syncmem_region *r, struct rshared *sh, _Atomic uint32_t *stop)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (syncmem_rwlock_rdlock(r, &sh->rw))
			_exit(1);
		atomic_fetch_add(&sh->ready, 1);
		while (!stop || !atomic_load(stop))
			usleep(1000);
		_exit(syncmem_rwlock_unlock(r, &sh->rw) ? 2 : 0);
	}
	return pid;
}

static uint32_t read_shares(const struct syncmem_rwlock *rw)
{
	uint32_t n = 0;

	for (int i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++)
		n += __atomic_load_n(&rw->slot[i].count, __ATOMIC_RELAXED);
	return n;
}

static void wrote(void *arg, int result)
{
	*(int *)arg = result;
}

/* A writer child, blocking or async: 0 once it got the lock. */
static int writer_waits_out(struct syncmem_region *r, struct rshared *sh, bool async)
{
	struct syncmem_loop *loop;
	int result = 1;

	if (!async)
		return syncmem_rwlock_wrlock_timed(r, &sh->rw, 20000 * MS) ? 10 : 0;
	if (syncmem_loop_new(&loop) ||
	    syncmem_rwlock_wrlock_async(loop, r, &sh->rw, wrote, &result))
		return 11;
	while (result == 1)
		if (syncmem_loop_run_once(loop, 20000 * MS) < 0)
			return 12;
	return result ? 13 : 0;
}

TEST_F(robust, a_dead_readers_share_is_released_and_the_waiting_writer_woken_at_once)
{
	struct rshared *sh = self->sh;

	for (int async = 0; async < 2; async++) {
		int64_t killed;
		pid_t reader, writer;

		syncmem_rwlock_init(&sh->rw);
		atomic_store(&sh->ready, 0);
		reader = reader_child(self->r, sh, NULL);
		ASSERT_LT(0, reader);
		while (!atomic_load(&sh->ready))
			usleep(1000);
		EXPECT_EQ(1, read_shares(&sh->rw));
		writer = fork();
		ASSERT_LE(0, writer);
		if (writer == 0)
			_exit(writer_waits_out(self->r, sh, async));
		/* The writer sleeps on the reader's slot. */
		ASSERT_TRUE(await_waiters(self->r, 1));
		usleep(50000);
		killed = now_ns();
		kill_and_reap(reader);
		EXPECT_EQ(0, wait_exit(writer));
		/* Woken by the death, not by a timeout of its own. */
		EXPECT_GT(2000 * MS, now_ns() - killed);
		/* Its slot is free again, the lock too (the writer exited holding it). */
		EXPECT_EQ(0, read_shares(&sh->rw));
		for (int i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++)
			EXPECT_EQ(0, sh->rw.slot[i].owner);
		EXPECT_EQ(-EOWNERDEAD, syncmem_rwlock_wrlock(self->r, &sh->rw));
		EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	}
}

TEST_F_TIMEOUT(robust, readers_beyond_the_slots_share_and_dead_slots_are_taken_over, 120)
{
	enum { N = SYNCMEM_RWLOCK_SLOTS };
	struct rshared *sh = self->sh;
	_Atomic uint32_t *stop = &sh->got;
	uint64_t me = 0;
	pid_t pids[N], checker;
	int found = -1;

	syncmem_rwlock_init(&sh->rw);
	atomic_store(&sh->ready, 0);
	atomic_store(stop, 0);
	for (int i = 0; i < N; i++) {
		pids[i] = reader_child(self->r, sh, stop);
		ASSERT_LT(0, pids[i]);
	}
	while (atomic_load(&sh->ready) < N)
		usleep(1000);
	EXPECT_EQ(N, read_shares(&sh->rw));
	/* Every slot is a live process's: this one reads holding the turnstile. */
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
	EXPECT_EQ(N, read_shares(&sh->rw));
	EXPECT_NE(0, sh->rw.turnstile.word);
	checker = fork();
	ASSERT_LE(0, checker);
	if (checker == 0)
		_exit(syncmem_rwlock_trywrlock(self->r, &sh->rw) == -EBUSY ? 0 : 1);
	EXPECT_EQ(0, wait_exit(checker));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, sh->rw.turnstile.word);
	/* One slot's process dies holding its share: a reader takes the slot over. */
	kill_and_reap(pids[0]);
	ASSERT_EQ(0, syncmem_pool_self_id(&me));
	for (int tries = 0; tries < 100 && found < 0; tries++) {
		ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
		for (int i = 0; i < N; i++)
			if (sh->rw.slot[i].owner == me)
				found = i;
		ASSERT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	}
	ASSERT_LE(0, found);
	/* The dead process's share was forgotten with it. */
	EXPECT_EQ(N - 1, read_shares(&sh->rw));
	atomic_store(stop, 1);
	for (int i = 1; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, read_shares(&sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_trywrlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, sh->rw.closed);
}

struct rw_arg {
	struct syncmem_region *r;
	struct rshared *sh;
};

static void *unlock_rw(void *arg)
{
	struct rw_arg *a = arg;

	return (void *)(intptr_t)syncmem_rwlock_unlock(a->r, &a->sh->rw);
}

static void *rdlock_rw_and_exit(void *arg)
{
	struct rw_arg *a = arg;

	return (void *)(intptr_t)syncmem_rwlock_rdlock(a->r, &a->sh->rw);
}

/*
 * Read shares belong to the process, the share of a reader beyond the
 * slots (which holds the turnstile) too: another thread releases it, and
 * it outlives the thread that took it. So does the share of a reader told
 * that a writer died inside.
 */
TEST_F_TIMEOUT(robust, a_slotless_read_share_is_the_process_s, 120)
{
	enum { N = SYNCMEM_RWLOCK_SLOTS };
	struct rshared *sh = self->sh;
	struct rw_arg a = { self->r, sh };
	_Atomic uint32_t *stop = &sh->got;
	pid_t pids[N], checker, writer;
	pthread_t t;
	void *ret;

	syncmem_rwlock_init(&sh->rw);
	atomic_store(&sh->ready, 0);
	atomic_store(stop, 0);
	for (int i = 0; i < N; i++) {
		pids[i] = reader_child(self->r, sh, stop);
		ASSERT_LT(0, pids[i]);
	}
	while (atomic_load(&sh->ready) < N)
		usleep(1000);
	/* Every slot counts a live process: this thread reads holding the turnstile. */
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r, &sh->rw));
	ASSERT_NE(0, sh->rw.turnstile.word);
	ASSERT_EQ(0, pthread_create(&t, NULL, unlock_rw, &a));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(0, (int)(intptr_t)ret);
	EXPECT_EQ(0, sh->rw.turnstile.word);
	EXPECT_EQ(-EPERM, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(N, read_shares(&sh->rw));
	/* Taken by a thread that exits: the share stays, this thread releases it. */
	ASSERT_EQ(0, pthread_create(&t, NULL, rdlock_rw_and_exit, &a));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(0, (int)(intptr_t)ret);
	checker = fork();
	ASSERT_LE(0, checker);
	if (checker == 0)
		_exit(syncmem_rwlock_trywrlock(self->r, &sh->rw) == -EBUSY &&
		      syncmem_rwlock_rdlock_timed(self->r, &sh->rw, 50 * MS) == -ETIMEDOUT ? 0 : 1);
	EXPECT_EQ(0, wait_exit(checker));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
	EXPECT_EQ(0, sh->rw.turnstile.word);
	atomic_store(stop, 1);
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, read_shares(&sh->rw));
	/* A writer dies inside: the next reader is told, keeps the turnstile... */
	atomic_store(&sh->ready, 1);
	writer = fork();
	ASSERT_LE(0, writer);
	if (writer == 0) {
		if (syncmem_rwlock_wrlock(self->r, &sh->rw))
			_exit(1);
		atomic_store(&sh->ready, 0);
		for (;;)
			pause();
	}
	while (atomic_load(&sh->ready))
		usleep(1000);
	kill_and_reap(writer);
	EXPECT_EQ(-EOWNERDEAD, syncmem_rwlock_rdlock(self->r, &sh->rw));
	/* ...and another thread of its process lets everyone in again. */
	ASSERT_EQ(0, pthread_create(&t, NULL, unlock_rw, &a));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(0, (int)(intptr_t)ret);
	EXPECT_EQ(0, sh->rw.turnstile.word);
	EXPECT_EQ(0, sh->rw.closed);
	EXPECT_EQ(0, syncmem_rwlock_trywrlock(self->r, &sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &sh->rw));
}

TEST(a_key_whose_holder_died_goes_to_the_next_locker)
{
	size_t len = syncmem_keyed_footprint(16);
	struct syncmem_region *r;
	struct syncmem_keyed *k;
	_Atomic uint32_t *ready;
	pid_t pid;

	ASSERT_NE(0, len);
	ASSERT_EQ(0, syncmem_open(NULL, len + 4096, 0, 0, &r));
	ready = syncmem_base(r);
	ASSERT_EQ(0, syncmem_keyed_init((char *)syncmem_base(r) + 4096, len, 16, &k));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (syncmem_keyed_lock(r, k, "job", 3, SYNCMEM_FOREVER))
			_exit(1);
		atomic_store(ready, 1);
		for (;;)
			pause();
	}
	while (!atomic_load(ready))
		usleep(1000);
	kill_and_reap(pid);
	EXPECT_EQ(-EOWNERDEAD, syncmem_keyed_lock(r, k, "job", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(r, k, "job", 3));
	/* The key goes on; the dead holder's count stays (not reclaimed yet). */
	EXPECT_EQ(0, syncmem_keyed_lock(r, k, "job", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(r, k, "job", 3));
	EXPECT_EQ(0, syncmem_keyed_trylock(r, k, "other", 5));
	EXPECT_EQ(0, syncmem_keyed_unlock(r, k, "other", 5));
	syncmem_close(r);
}

/* An execute fn that counts its runs and, with @ask, asks how the lock was taken. */
struct executed {
	struct syncmem_region *r;
	struct syncmem_lock *l;		/* made consistent when told, with @repair */
	bool ask;
	bool repair;
	int runs;
	int told;			/* what syncmem_execute_result() said */
	int consistent;
};

static void executed_fn(void *arg)
{
	struct executed *x = arg;

	x->runs++;
#ifndef EXECUTE_RESULT_MISSING
	if (x->ask)
		x->told = syncmem_execute_result();
#endif
	if (x->told == -EOWNERDEAD && x->repair)
		x->consistent = syncmem_lock_consistent(x->r, x->l);
}

/* Run one execute_locked of @l with @x to the end; the loop's result. */
static __attribute__((unused)) int execute_once(struct syncmem_region *r, struct syncmem_lock *l, struct executed *x)
{
	struct syncmem_loop *loop;
	int ret;

	if (syncmem_loop_new(&loop))
		return -1;
	ret = syncmem_execute_locked(loop, r, l, executed_fn, x);
	if (!ret)
		ret = syncmem_loop_run(loop);
	syncmem_loop_free(loop);
	return ret;
}

/*
 * syncmem_execute_locked's fn has no result to be told by: one that does
 * not ask how the lock was taken must not make the lock unrecoverable and
 * hide the death; the next acquirer is told instead. Taken at once after
 * the holder died, and handed over by the kernel as it dies.
 */
TEST_F(robust, a_death_an_execute_fn_is_not_told_of_goes_to_the_next_acquirer)
{
	struct rshared *sh = self->sh;

	for (int fair = 0; fair < 2; fair++) {
		for (int queued = 0; queued < 2; queued++) {
			struct executed x = { .r = self->r, .l = &sh->lock };
			struct syncmem_loop *loop;
			pid_t pid;

			syncmem_lock_init(&sh->lock, fair ? SYNCMEM_LOCK_FAIR : 0);
			pid = holder_child(self->r, sh);
			ASSERT_LT(0, pid);
			ASSERT_EQ(0, syncmem_loop_new(&loop));
			if (queued) {
				/* Waiting in the kernel's queue when the holder dies. */
				ASSERT_EQ(0, syncmem_execute_locked(loop, self->r, &sh->lock,
								    executed_fn, &x));
				ASSERT_TRUE(await_waiters(self->r, 1));
				kill_and_reap(pid);
			} else {
				kill_and_reap(pid);
				ASSERT_EQ(0, syncmem_execute_locked(loop, self->r, &sh->lock,
								    executed_fn, &x));
			}
			EXPECT_EQ(0, syncmem_loop_run(loop));
			syncmem_loop_free(loop);
			EXPECT_EQ(1, x.runs);
			/* Not -ENOTRECOVERABLE: the death is the next acquirer's news. */
			EXPECT_EQ(-EOWNERDEAD, syncmem_lock(self->r, &sh->lock));
			EXPECT_EQ(7, sh->counter);
			EXPECT_EQ(0, syncmem_lock_consistent(self->r, &sh->lock));
			EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
			EXPECT_EQ(0, syncmem_lock(self->r, &sh->lock));
			EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
		}
	}
}

/* The same for a key: its next locker is told. */
TEST(a_death_a_keyed_execute_fn_is_not_told_of_goes_to_the_next_locker)
{
	size_t len = syncmem_keyed_footprint(16);
	struct executed x = { 0 };
	struct syncmem_region *r;
	struct syncmem_keyed *k;
	struct syncmem_loop *loop;
	_Atomic uint32_t *ready;
	pid_t pid;

	ASSERT_EQ(0, syncmem_open(NULL, len + 4096, 0, 0, &r));
	ready = syncmem_base(r);
	ASSERT_EQ(0, syncmem_keyed_init((char *)syncmem_base(r) + 4096, len, 16, &k));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (syncmem_keyed_lock(r, k, "job", 3, SYNCMEM_FOREVER))
			_exit(1);
		atomic_store(ready, 1);
		for (;;)
			pause();
	}
	while (!atomic_load(ready))
		usleep(1000);
	kill_and_reap(pid);
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_keyed_execute(loop, r, k, "job", 3, executed_fn, &x));
	EXPECT_EQ(0, syncmem_loop_run(loop));
	syncmem_loop_free(loop);
	EXPECT_EQ(1, x.runs);
	EXPECT_EQ(-EOWNERDEAD, syncmem_keyed_lock(r, k, "job", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(r, k, "job", 3));
	EXPECT_EQ(0, syncmem_keyed_lock(r, k, "job", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(r, k, "job", 3));
	syncmem_close(r);
}

#ifndef EXECUTE_RESULT_MISSING
/*
 * An execute fn that asks is told: 0, or -EOWNERDEAD after a dead holder.
 * Told, it repairs (the lock goes on) or not (the lock is not recoverable,
 * as after an unlock); the same for a key, which goes on once told.
 */
TEST_F(robust, an_execute_fn_asks_and_is_told_of_a_dead_holder)
{
	struct rshared *sh = self->sh;
	struct executed x = { .r = self->r, .l = &sh->lock, .ask = true };
	size_t len = syncmem_keyed_footprint(16);
	struct syncmem_keyed *k;
	struct syncmem_loop *loop;
	struct syncmem_region *kr;
	_Atomic uint32_t *ready;
	pid_t pid;

	EXPECT_EQ(-EINVAL, syncmem_execute_result());
	/* A live lock: 0. */
	EXPECT_EQ(0, execute_once(self->r, &sh->lock, &x));
	EXPECT_EQ(1, x.runs);
	EXPECT_EQ(0, x.told);
	EXPECT_EQ(0, sh->lock.word);

	for (int repair = 1; repair >= 0; repair--) {
		x = (struct executed){ .r = self->r, .l = &sh->lock, .ask = true, .repair = repair,
				       .told = 1 };
		syncmem_lock_init(&sh->lock, 0);
		pid = holder_child(self->r, sh);
		ASSERT_LT(0, pid);
		kill_and_reap(pid);
		EXPECT_EQ(0, execute_once(self->r, &sh->lock, &x));
		EXPECT_EQ(1, x.runs);
		EXPECT_EQ(-EOWNERDEAD, x.told);
		if (repair) {
			EXPECT_EQ(0, x.consistent);
			EXPECT_EQ(0, syncmem_lock(self->r, &sh->lock));
			EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
		} else {
			/* Told and not repaired: lost, as pthread's robust mutexes. */
			EXPECT_EQ(-ENOTRECOVERABLE, syncmem_lock(self->r, &sh->lock));
		}
	}
	EXPECT_EQ(-EINVAL, syncmem_execute_result());

	ASSERT_EQ(0, syncmem_open(NULL, len + 4096, 0, 0, &kr));
	ready = syncmem_base(kr);
	ASSERT_EQ(0, syncmem_keyed_init((char *)syncmem_base(kr) + 4096, len, 16, &k));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (syncmem_keyed_lock(kr, k, "job", 3, SYNCMEM_FOREVER))
			_exit(1);
		atomic_store(ready, 1);
		for (;;)
			pause();
	}
	while (!atomic_load(ready))
		usleep(1000);
	kill_and_reap(pid);
	x = (struct executed){ .ask = true, .told = 1 };
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_keyed_execute(loop, kr, k, "job", 3, executed_fn, &x));
	EXPECT_EQ(0, syncmem_loop_run(loop));
	EXPECT_EQ(1, x.runs);
	EXPECT_EQ(-EOWNERDEAD, x.told);
	/* Told: the key goes on as usual. */
	EXPECT_EQ(0, syncmem_keyed_lock(kr, k, "job", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(kr, k, "job", 3));
	x.told = 1;
	ASSERT_EQ(0, syncmem_keyed_execute(loop, kr, k, "job", 3, executed_fn, &x));
	EXPECT_EQ(0, syncmem_loop_run(loop));
	EXPECT_EQ(2, x.runs);
	EXPECT_EQ(0, x.told);
	syncmem_loop_free(loop);
	syncmem_close(kr);
}
#endif

/* An async wait of the calling process on an owner word, on handle @dev. */
static int raw_lock_wait_async(int dev, int rfd, uint64_t expected, uint64_t user_data)
{
	struct syncmem_wait_async w = {
		.region_fd = rfd,
		.size = 8,
		.offset = 0,
		.expected = expected,
		.deadline_ns = SYNCMEM_NO_DEADLINE,
		.user_data = user_data,
		.flags = SYNCMEM_WAIT_ASYNC_OWNER,
	};

	return raw_ioctl(dev, SYNCMEM_IOC_WAIT_ASYNC, &w);
}

TEST_F(robust, a_hand_off_whose_record_is_never_read_goes_on)
{
	struct rshared *sh = self->sh;
	struct blocked b = { .r = self->r, .l = &sh->lock, .then = UNLOCK };
	struct syncmem_owner p = { .flags = SYNCMEM_OWNER_PROCESS };
	int rfd = syncmem_region_fd(self->r);
	pthread_t t;
	int dev = dev_open();

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &p));
	syncmem_lock_init(&sh->lock, SYNCMEM_LOCK_FAIR);
	ASSERT_EQ(0, syncmem_lock(self->r, &sh->lock));
	sh->lock.word |= SYNCMEM_OWNER_WAITERS;
	/* First in line: an async wait of a handle that will close unread. */
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_lock_wait_async(dev, rfd, sh->lock.word, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, block_on_lock, &b));
	ASSERT_TRUE(await_waiters(self->r, 2));
	EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	EXPECT_EQ(p.id, sh->lock.word & SYNCMEM_OWNER_ID);
	/* The process lives on, but nobody will read the hand-off: it goes on. */
	close(dev);
	pthread_join(t, NULL);
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(0, b.after);
	EXPECT_EQ(0, sh->lock.word);
}

TEST(a_semaphore_unit_whose_record_is_never_read_goes_on)
{
	struct syncmem_region *r;
	struct syncmem_sem *sem;
	struct syncmem_wait_async w = { .size = 8, .deadline_ns = SYNCMEM_NO_DEADLINE,
					.user_data = 1 };
	int dev = dev_open();

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	sem = syncmem_base(r);
	ASSERT_EQ(0, syncmem_sem_init(sem, 0));
	/* A waiter, as the library makes one (the word marked), waiting async. */
	sem->word = 1ull << 63;
	w.region_fd = syncmem_region_fd(r);
	w.expected = sem->word;
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(dev, SYNCMEM_IOC_WAIT_ASYNC, &w));
	/* The post hands it the unit (the word is left as it was). */
	EXPECT_EQ(0, syncmem_sem_post(r, sem));
	EXPECT_EQ(0, syncmem_sem_value(sem));
	/* Closed unread: the unit is counted after all. */
	close(dev);
	for (int i = 0; i < 1000 && !syncmem_sem_value(sem); i++)
		usleep(1000);
	EXPECT_EQ(1, syncmem_sem_value(sem));
	syncmem_close(r);
}

TEST(a_semaphore_waiter_that_dies_leaves_nothing_behind)
{
	struct syncmem_region *r;
	struct syncmem_sem *sem;
	pid_t pid;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	sem = syncmem_base(r);
	ASSERT_EQ(0, syncmem_sem_init(sem, 0));
	pid = fork();
	if (pid == 0)
		_exit(syncmem_sem_wait(r, sem));
	ASSERT_TRUE(await_waiters(r, 1));
	kill_and_reap(pid);
	EXPECT_TRUE(await_waiters(r, 0));
	/* The mark it left goes with the next post, which finds nobody. */
	EXPECT_EQ(1ull << 63, sem->word);
	EXPECT_EQ(0, syncmem_sem_post(r, sem));
	EXPECT_EQ(1, sem->word);
	/* From then on posts and waits make no system call. */
	pid = fork();
	if (pid == 0) {
		if (forbid_ioctl())
			_exit(2);
		for (int i = 0; i < 1000; i++)
			if (syncmem_sem_post(r, sem) || syncmem_sem_wait(r, sem))
				_exit(3);
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(1, syncmem_sem_value(sem));
	syncmem_close(r);
}

TEST(the_kernel_clears_a_handoff_waiters_mark_when_nobody_is_left_queued)
{
	struct syncmem_handoff h = { .value = 1, .size = 8,
				     .flags = SYNCMEM_HANDOFF_ADD | SYNCMEM_HANDOFF_WAITERS };
	struct syncmem_region *r;
	uint64_t *word;
	pid_t a, b;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	word = syncmem_base(r);
	/* Nobody queued: the value is added and the mark cleared. */
	*word = 1ull << 63 | 5;
	EXPECT_EQ(SYNCMEM_HANDOFF_STORED, raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(6, *word);
	/* Two queued: the first hand-off keeps the mark, the last clears it. */
	*word = 1ull << 63;
	a = fork();
	if (a == 0)
		_exit(syncmem_wait64(r, word, 1ull << 63, SYNCMEM_FOREVER));
	ASSERT_TRUE(await_waiters(r, 1));
	b = fork();
	if (b == 0)
		_exit(syncmem_wait64(r, word, 1ull << 63, SYNCMEM_FOREVER));
	ASSERT_TRUE(await_waiters(r, 2));
	EXPECT_EQ(SYNCMEM_HANDOFF_WOKE, raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(1ull << 63, *word);
	EXPECT_EQ(SYNCMEM_OK, wait_exit(a));
	EXPECT_EQ(SYNCMEM_HANDOFF_WOKE, raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(0, *word);
	EXPECT_EQ(SYNCMEM_OK, wait_exit(b));
	/* 4-byte words: bit 31. */
	h.size = 4;
	word[1] = 0x80000000u;
	h.offset = 8;
	EXPECT_EQ(SYNCMEM_HANDOFF_STORED, raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(1, word[1] & 0xffffffffu);
	/* Flags it does not know: -EINVAL. */
	h.flags = 1u << 2;
	EXPECT_EQ(-EINVAL, raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_HANDOFF, &h));
	syncmem_close(r);
}

static void got_gate(void *arg, int result)
{
	*(int *)arg = result;
}

TEST(a_held_gate_whose_holder_died_goes_to_its_oldest_waiter)
{
	struct syncmem_region *r;
	struct syncmem_gate *g;
	struct syncmem_loop *loop;
	int async_result = 1;
	int64_t t0;
	pid_t pid, waiter;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	g = syncmem_base(r);
	EXPECT_EQ(-EINVAL, syncmem_gate_init_flags(g, true, 2));
	ASSERT_EQ(0, syncmem_gate_init_flags(g, true, SYNCMEM_GATE_HELD));
	/* A child passes and dies without signalling; a blocking waiter waits. */
	pid = fork();
	if (pid == 0) {
		if (syncmem_gate_wait(r, g, 0))
			_exit(1);
		pause();
	}
	while (!__atomic_load_n(&g->word, __ATOMIC_ACQUIRE))
		usleep(1000);
	waiter = fork();
	if (waiter == 0)
		_exit(-syncmem_gate_wait(r, g, SYNCMEM_FOREVER));
	ASSERT_TRUE(await_waiters(r, 1));
	t0 = now_ns();
	kill_and_reap(pid);
	/* Given the gate at once, and told. */
	EXPECT_EQ(EOWNERDEAD, wait_exit(waiter));
	EXPECT_GT(1000 * MS, now_ns() - t0);
	/* The dead waiter held it last: an async waiter is given it likewise. */
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_gate_wait_async(loop, r, g, got_gate, &async_result));
	EXPECT_EQ(0, syncmem_loop_run(loop));
	EXPECT_EQ(-EOWNERDEAD, async_result);
	/* Held by this process now: a signal opens it, the next pass is plain. */
	EXPECT_EQ(0, syncmem_gate_signal(r, g));
	EXPECT_EQ(0, syncmem_gate_wait(r, g, 0));
	EXPECT_EQ(0, syncmem_gate_signal(r, g));
	syncmem_loop_free(loop);

	/* Made closed, it is held by nobody: never taken over. */
	ASSERT_EQ(0, syncmem_gate_init_flags(g, false, SYNCMEM_GATE_HELD));
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(r, g, 0));
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(r, g, 20 * MS));
	EXPECT_EQ(0, syncmem_gate_signal(r, g));
	EXPECT_EQ(0, syncmem_gate_wait(r, g, 0));

	/* A plain gate passed by one who dies stays closed: no holder. */
	syncmem_gate_init(g, true);
	pid = fork();
	if (pid == 0)
		_exit(syncmem_gate_wait(r, g, 0) ? 1 : 0);
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(-ETIMEDOUT, syncmem_gate_wait(r, g, 20 * MS));
	EXPECT_EQ(0, syncmem_gate_signal(r, g));
	EXPECT_EQ(0, syncmem_gate_wait(r, g, 0));
	/* Flags nobody writes. */
	g->flags = 6;
	EXPECT_EQ(-EUCLEAN, syncmem_gate_wait(r, g, 0));
	EXPECT_EQ(-EUCLEAN, syncmem_gate_signal(r, g));
	syncmem_close(r);
}

static void never_called(void *arg, int result)
{
	(void)arg;
	(void)result;
	_exit(42);
}

/*
 * A process that queues an async semaphore wait and forks a child that
 * keeps its handle (and does nothing), then waits to be killed. With
 * @read_never, it stays out of its loop, so a record for it is never read.
 */
static pid_t async_waiter_with_child(struct syncmem_region *r, struct syncmem_sem *sem,
				     _Atomic uint32_t *ready, pid_t *child)
{
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct syncmem_loop *loop;
		pid_t c;

		if (syncmem_loop_new(&loop) ||
		    syncmem_sem_wait_async(loop, r, sem, never_called, NULL))
			_exit(1);
		c = fork();
		if (c == 0) {
			for (;;)
				pause();	/* holds the handle: a copy of the fd */
		}
		if (write(fds[1], &c, sizeof(c)) != sizeof(c))
			_exit(2);
		atomic_store(ready, 1);
		for (;;)
			pause();	/* never runs its loop */
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], child, sizeof(*child)) != sizeof(*child))
		pid = -1;
	close(fds[0]);
	return pid;
}

TEST(async_waits_end_with_the_process_that_queued_them_not_with_its_handle)
{
	_Atomic uint32_t *ready;
	struct syncmem_region *r;
	struct syncmem_sem *sem;
	pid_t pid, child;
	int64_t t0;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	sem = syncmem_base(r);
	ready = (_Atomic uint32_t *)((char *)syncmem_base(r) + 1024);
	for (int handed_first = 0; handed_first < 2; handed_first++) {
		ASSERT_EQ(0, syncmem_sem_init(sem, 0));
		atomic_store(ready, 0);
		pid = async_waiter_with_child(r, sem, ready, &child);
		ASSERT_LT(0, pid);
		ASSERT_TRUE(await_waiters(r, 1));
		if (handed_first) {
			/* Handed to it; the record is never read. */
			EXPECT_EQ(0, syncmem_sem_post(r, sem));
			EXPECT_EQ(0, syncmem_sem_value(sem));
		}
		t0 = now_ns();
		kill_and_reap(pid);
		/* Its child keeps the handle open; its wait goes all the same. */
		EXPECT_TRUE(await_waiters(r, 0));
		if (!handed_first)
			EXPECT_EQ(0, syncmem_sem_post(r, sem));	/* not to a ghost */
		for (int i = 0; i < 1000 && syncmem_sem_value(sem) != 1; i++)
			usleep(1000);
		EXPECT_EQ(1, syncmem_sem_value(sem));
		EXPECT_GT(1000 * MS, now_ns() - t0);
		kill_and_reap(child);
	}
	syncmem_close(r);
}

/* The process owner id of a child that has exited. */
static uint64_t dead_process_id(void)
{
	_Atomic uint64_t *id = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t ret = 0;
	pid_t pid;

	if (id == MAP_FAILED)
		return 0;
	pid = fork();
	if (pid == 0) {
		struct syncmem_owner o = { .flags = SYNCMEM_OWNER_PROCESS };
		int dev = dev_open();

		_exit(dev < 0 || raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o) ||
		      (atomic_store(id, o.id), 0));
	}
	if (pid > 0 && wait_exit(pid) == 0)
		ret = atomic_load(id);
	munmap((void *)id, 4096);
	return ret;
}

TEST(owner_ids_can_be_asked_whether_they_live)
{
	struct syncmem_owner o = { .flags = SYNCMEM_OWNER_PROCESS };
	uint64_t dead = dead_process_id();
	int dev = dev_open();

	ASSERT_LE(0, dev);
	ASSERT_NE(0, dead);
	ASSERT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o = (struct syncmem_owner){ .id = o.id, .flags = SYNCMEM_OWNER_QUERY };
	EXPECT_EQ(1, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o.id = dead;
	EXPECT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o.id = 0;
	EXPECT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o.id = SYNCMEM_OWNER_NOBODY;
	EXPECT_EQ(1, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o.pad = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o = (struct syncmem_owner){ .flags = SYNCMEM_OWNER_QUERY | SYNCMEM_OWNER_PROCESS };
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	close(dev);
}

TEST(a_pool_or_table_whose_creator_died_part_way_is_built_again)
{
	struct syncmem_region *r;
	struct syncmem_pool *pool;
	struct syncmem_keyed *k;
	struct syncmem_pool_header *h;
	struct syncmem_keytab *t;
	uint64_t dead = dead_process_id();
	size_t plen = syncmem_pool_footprint(64, 16);
	size_t klen = syncmem_keyed_footprint(16);
	int64_t t0;

	ASSERT_NE(0, dead);
	ASSERT_EQ(0, syncmem_open(NULL, 1 << 16, 0, 0, &r));
	h = syncmem_base(r);
	t = (struct syncmem_keytab *)((char *)syncmem_base(r) + (1 << 15));
	/* Left as a creator that died in the middle of building them leaves them. */
	h->state = 0x494e4954;		/* "INIT" */
	h->builder = dead;
	h->nblocks = 12345;
	t->state = 0x494e4954;
	t->builder = dead;
	t0 = now_ns();
	EXPECT_EQ(-ESRCH, syncmem_pool_attach(h, plen, &pool));
	EXPECT_EQ(-ESRCH, syncmem_keyed_attach(t, klen, &k));
	EXPECT_GT(1000 * MS, now_ns() - t0);
	/* The next init builds them again. */
	ASSERT_EQ(0, syncmem_pool_init(h, plen, 64, 16, &pool));
	EXPECT_EQ(16, syncmem_pool_free_count(pool));
	EXPECT_NE(0, syncmem_pool_alloc(pool));
	syncmem_pool_detach(pool);
	ASSERT_EQ(0, syncmem_pool_attach(h, plen, &pool));
	EXPECT_EQ(15, syncmem_pool_free_count(pool));
	syncmem_pool_detach(pool);
	ASSERT_EQ(0, syncmem_keyed_init(t, klen, 16, &k));
	EXPECT_EQ(0, syncmem_keyed_lock(r, k, "k", 1, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(r, k, "k", 1));
	ASSERT_EQ(0, syncmem_keyed_attach(t, klen, &k));
	/* Built, or being built by a live creator: not again. */
	EXPECT_EQ(-EEXIST, syncmem_pool_init(h, plen, 64, 16, &pool));
	memset(t, 0, klen);
	t->state = 0x494e4954;
	{
		struct syncmem_owner me = { .flags = SYNCMEM_OWNER_PROCESS };

		ASSERT_EQ(0, raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_OWNER, &me));
		t->builder = me.id;
	}
	EXPECT_EQ(-EEXIST, syncmem_keyed_init(t, klen, 16, &k));
	/*
	 * A creator that died right after claiming the builder word, before
	 * the state said "being built": not a pool yet, and the next init
	 * takes it over.
	 */
	memset(h, 0, plen);
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(h, plen, &pool));	/* zeroed: at once */
	h->builder = dead;
	t0 = now_ns();
	EXPECT_EQ(-ESRCH, syncmem_pool_attach(h, plen, &pool));
	EXPECT_GT(1000 * MS, now_ns() - t0);
	ASSERT_EQ(0, syncmem_pool_init(h, plen, 64, 16, &pool));
	EXPECT_EQ(16, syncmem_pool_free_count(pool));
	syncmem_pool_detach(pool);
	syncmem_close(r);
}

/* An observer (read-only waiter) of a lock word. */
struct observer {
	struct syncmem_region *ro;
	const uint64_t *word;
	uint64_t expected;
	int ret;
	int64_t at;
};

static void *observe(void *arg)
{
	struct observer *o = arg;

	o->ret = syncmem_wait64(o->ro, o->word, o->expected, 5000 * MS);
	o->at = now_ns();
	return NULL;
}

TEST(observers_of_a_lock_word_see_every_hand_off)
{
	struct syncmem_region *rw, *ro;
	struct syncmem_lock *l;
	struct observer o;
	struct blocked b;
	pthread_t to, tb;
	int64_t t0;

	syncmem_unlink("robust-observed");
	ASSERT_EQ(0, syncmem_open("robust-observed", 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600,
				  &rw));
	ASSERT_EQ(0, syncmem_open("robust-observed", 4096, SYNCMEM_RDONLY, 0, &ro));
	syncmem_unlink("robust-observed");
	l = syncmem_base(rw);
	syncmem_lock_init(l, SYNCMEM_LOCK_FAIR);
	ASSERT_EQ(0, syncmem_lock(rw, l));
	b = (struct blocked){ .r = rw, .l = l, .then = UNLOCK };
	ASSERT_EQ(0, pthread_create(&tb, NULL, block_on_lock, &b));
	ASSERT_TRUE(await_waiters(rw, 1));
	o = (struct observer){ .ro = ro, .word = (const uint64_t *)syncmem_base(ro),
			       .expected = l->word };
	ASSERT_EQ(0, pthread_create(&to, NULL, observe, &o));
	ASSERT_TRUE(await_waiters(rw, 2));
	/* The hand-off changes the word: the observer is woken at once. */
	t0 = now_ns();
	EXPECT_EQ(0, syncmem_unlock(rw, l));
	pthread_join(to, NULL);
	EXPECT_EQ(SYNCMEM_OK, o.ret);
	EXPECT_GT(1000 * MS, o.at - t0);
	pthread_join(tb, NULL);
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(0, b.after);
	EXPECT_EQ(0, l->word);
	/* A read-only open confers no ownership: it cannot release. */
	{
		struct syncmem_unlock u = { .offset = 0 };

		EXPECT_EQ(-EBADF, raw_ioctl(syncmem_region_fd(ro), SYNCMEM_IOC_UNLOCK, &u));
	}
	syncmem_close(ro);
	syncmem_close(rw);
}

TEST_F(robust, a_process_that_execs_holding_an_async_lock_is_a_dead_holder)
{
	struct rshared *sh = self->sh;
	int ret = 0;
	pid_t pid;

	syncmem_lock_init(&sh->lock, 0);
	pid = async_holder(self->r, sh, true);
	ASSERT_LT(0, pid);
	/* Busy until the exec, then taken over (a try asks the kernel). */
	for (int i = 0; i < 500; i++) {
		ret = syncmem_trylock(self->r, &sh->lock);
		if (ret != -EBUSY)
			break;
		usleep(10 * 1000);
	}
	EXPECT_EQ(-EOWNERDEAD, ret);
	EXPECT_EQ(0, syncmem_lock_consistent(self->r, &sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	kill_and_reap(pid);
}

static void on_usr1(int sig)
{
	(void)sig;
}

struct interruptible {
	struct syncmem_region *r;
	struct syncmem_lock *l;
	bool intr;
	int ret;
};

static void *lock_maybe_interruptible(void *arg)
{
	struct interruptible *i = arg;

	i->ret = i->intr ? syncmem_lock_interruptible(i->r, i->l, SYNCMEM_FOREVER) :
			   syncmem_lock(i->r, i->l);
	if (!i->ret)
		syncmem_unlock(i->r, i->l);
	return NULL;
}

static void *wait_interruptible(void *arg)
{
	struct interruptible *i = arg;

	i->ret = syncmem_wait64_interruptible(i->r, &i->l->word, 0, SYNCMEM_FOREVER);
	return NULL;
}

TEST_F(robust, interruptible_waits_end_with_eintr_the_others_go_on)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct interruptible a = { .r = self->r, .l = &self->sh->lock, .intr = true, .ret = 1 };
	struct interruptible b = { .r = self->r, .l = &self->sh->lock, .intr = false, .ret = 1 };
	struct interruptible w = { .r = self->r, .l = &self->sh->lock, .ret = 1 };
	pthread_t ta, tb, tw;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	syncmem_lock_init(&self->sh->lock, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, &self->sh->lock));
	ASSERT_EQ(0, pthread_create(&ta, NULL, lock_maybe_interruptible, &a));
	ASSERT_EQ(0, pthread_create(&tb, NULL, lock_maybe_interruptible, &b));
	ASSERT_TRUE(await_waiters(self->r, 2));
	pthread_kill(ta, SIGUSR1);
	pthread_kill(tb, SIGUSR1);
	pthread_join(ta, NULL);
	EXPECT_EQ(-EINTR, a.ret);
	/* The plain locker ran its handler and waits on. */
	EXPECT_TRUE(await_waiters(self->r, 1));
	EXPECT_EQ(1, b.ret);
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	pthread_join(tb, NULL);
	EXPECT_EQ(0, b.ret);
	/* An Atomics-style wait, likewise. */
	ASSERT_EQ(0, pthread_create(&tw, NULL, wait_interruptible, &w));
	ASSERT_TRUE(await_waiters(self->r, 1));
	pthread_kill(tw, SIGUSR1);
	pthread_join(tw, NULL);
	EXPECT_EQ(-EINTR, w.ret);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST(owner_ids_are_checked)
{
	struct syncmem_owner o = { 0 };
	struct syncmem_owner p = { .flags = SYNCMEM_OWNER_PROCESS };
	int dev = dev_open();

	ASSERT_LE(0, dev);
	ASSERT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	EXPECT_NE(0, o.id);
	EXPECT_GT(SYNCMEM_OWNER_NOTRECOVERABLE, o.id);
	ASSERT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &p));
	EXPECT_NE(o.id, p.id);
	/* Asking again: the same ids. */
	{
		struct syncmem_owner again = { 0 };

		ASSERT_EQ(0, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &again));
		EXPECT_EQ(o.id, again.id);
	}
	/* Bad arguments. */
	o.pad = 1;
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o = (struct syncmem_owner){ .flags = 4 };
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	o = (struct syncmem_owner){ .id = 5 };
	EXPECT_EQ(-EINVAL, raw_ioctl(dev, SYNCMEM_IOC_OWNER, &o));
	close(dev);
}

TEST_F(robust, lock_wait_and_unlock_check_their_arguments)
{
	int fd = syncmem_region_fd(self->r);
	struct syncmem_owner mine = { 0 };
	struct syncmem_lock_wait w = { .offset = 0, .expected = 12345,
				       .deadline_ns = SYNCMEM_NO_DEADLINE };
	struct syncmem_unlock u = { .offset = 0 };

	ASSERT_EQ(0, raw_ioctl(fd, SYNCMEM_IOC_OWNER, &mine));
	self->sh->lock.word = 12345;
	/* Somebody else's id, or none: refused. */
	w.owner = mine.id + 1000000;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	w.owner = 0;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	w.owner = mine.id;
	w.offset = 4;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	w.offset = 0;
	w.flags = 2;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	w.flags = 0;
	/* A free word: take it yourself. */
	w.expected = 0;
	self->sh->lock.word = 0;
	EXPECT_EQ(SYNCMEM_WAIT_NOT_EQUAL, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	/* An unrecoverable one: never. */
	self->sh->lock.word = w.expected = SYNCMEM_OWNER_NOTRECOVERABLE;
	EXPECT_EQ(-ENOTRECOVERABLE, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	/* 12345 was never issued: a dead owner, taken over at once. */
	self->sh->lock.word = w.expected = 12345;
	EXPECT_EQ(SYNCMEM_WAIT_OWNER_DIED, raw_ioctl(fd, SYNCMEM_IOC_LOCK_WAIT, &w));
	EXPECT_EQ(mine.id | SYNCMEM_OWNER_DIED, self->sh->lock.word);
	/* UNLOCK: only from the state the holder saw. */
	u.expected = 99;
	EXPECT_EQ(-EAGAIN, raw_ioctl(fd, SYNCMEM_IOC_UNLOCK, &u));
	u.expected = self->sh->lock.word;
	u.flags = 2;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, SYNCMEM_IOC_UNLOCK, &u));
	u.flags = 0;
	u.offset = 4;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, SYNCMEM_IOC_UNLOCK, &u));
	u.offset = 0;
	EXPECT_EQ(SYNCMEM_UNLOCK_FREED, raw_ioctl(fd, SYNCMEM_IOC_UNLOCK, &u));
	EXPECT_EQ(0, self->sh->lock.word);
}

TEST_F(robust, async_owner_waits_check_their_arguments)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct syncmem_owner p = { .flags = SYNCMEM_OWNER_PROCESS };
		int dev = dev_open();

		self->sh->lock.word = 12345 | SYNCMEM_OWNER_WAITERS;
		/* A new process has no process id yet: nobody to wait as. */
		if (raw_lock_wait_async(dev, syncmem_region_fd(self->r), self->sh->lock.word,
					1) != -EINVAL)
			_exit(1);
		if (raw_ioctl(dev, SYNCMEM_IOC_OWNER, &p))
			_exit(2);
		/* An owner word is 8 bytes wide. */
		{
			struct syncmem_wait_async w = {
				.region_fd = syncmem_region_fd(self->r), .size = 4,
				.expected = 12345, .deadline_ns = SYNCMEM_NO_DEADLINE,
				.user_data = 2, .flags = SYNCMEM_WAIT_ASYNC_OWNER,
			};

			if (raw_ioctl(dev, SYNCMEM_IOC_WAIT_ASYNC, &w) != -EINVAL)
				_exit(3);
		}
		/* 12345 is nobody: the word is taken over at once, as the process. */
		if (raw_lock_wait_async(dev, syncmem_region_fd(self->r), self->sh->lock.word,
					3) != SYNCMEM_WAIT_OWNER_DIED ||
		    self->sh->lock.word != (p.id | SYNCMEM_OWNER_DIED))
			_exit(4);
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
}

/*
 * One process holds many owner words, each with a waiter: its death hands
 * every one over, however many (the look at a region's owner words takes
 * them a chunk at a time).
 */
#define MANY_WORDS	300

TEST_F(robust, a_death_hands_over_every_owner_word_it_held)
{
	uint64_t *words = (uint64_t *)((char *)syncmem_base(self->r) + 1024);
	struct syncmem_owner me = { .flags = SYNCMEM_OWNER_PROCESS };
	struct syncmem_completion recs[64];
	int rfd = syncmem_region_fd(self->r);
	int dev = dev_open(), got = 0, died = 0;
	int64_t t0, deadline;
	pid_t pid;

	ASSERT_LE(0, dev);
	ASSERT_GE(4096, 1024 + MANY_WORDS * 8);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct syncmem_owner o = { .flags = SYNCMEM_OWNER_PROCESS };

		if (ioctl(dev, SYNCMEM_IOC_OWNER, &o))
			_exit(1);
		for (int i = 0; i < MANY_WORDS; i++)
			__atomic_store_n(&words[i], o.id | SYNCMEM_OWNER_WAITERS,
					 __ATOMIC_RELEASE);
		atomic_store(&self->sh->ready, 1);
		for (;;)
			pause();
	}
	while (!atomic_load(&self->sh->ready))
		usleep(1000);
	ASSERT_EQ(0, ioctl(dev, SYNCMEM_IOC_OWNER, &me));
	for (int i = 0; i < MANY_WORDS; i++) {
		struct syncmem_wait_async w = {
			.region_fd = rfd,
			.size = 8,
			.offset = 1024 + 8 * i,
			.expected = words[i],
			.deadline_ns = SYNCMEM_NO_DEADLINE,
			.user_data = i + 1,
			.flags = SYNCMEM_WAIT_ASYNC_OWNER,
		};

		ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_ioctl(dev, SYNCMEM_IOC_WAIT_ASYNC, &w));
	}
	t0 = now_ns();
	kill_and_reap(pid);
	deadline = t0 + 10000 * MS;
	while (got < MANY_WORDS && now_ns() < deadline) {
		ssize_t n = fd_readable(dev) ? read(dev, recs, sizeof(recs)) : 0;

		for (ssize_t i = 0; i < n / (ssize_t)sizeof(recs[0]); i++) {
			got++;
			died += recs[i].result == SYNCMEM_WAIT_OWNER_DIED;
		}
		if (n <= 0)
			usleep(1000);
	}
	EXPECT_EQ(MANY_WORDS, got);
	EXPECT_EQ(MANY_WORDS, died);
	TH_LOG("%d words handed over in %lld ms", got, (long long)(now_ns() - t0) / MS);
	for (int i = 0; i < MANY_WORDS; i++)
		EXPECT_EQ(me.id | SYNCMEM_OWNER_DIED, words[i] & ~SYNCMEM_OWNER_WAITERS);
	close(dev);
}

TEST_HARNESS_MAIN
