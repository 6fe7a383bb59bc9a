// SPDX-License-Identifier: GPL-2.0
/*
 * Reader-writer lock across processes: readers overlap, writers exclude
 * (blocking and async lockers mixed), FIFO phases, no writer starvation
 * under a steady stream of readers, timeouts and every errno.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

struct rwshared {
	struct syncmem_rwlock rw;
	_Atomic int32_t readers_inside;
	_Atomic int32_t writers_inside;
	_Atomic uint32_t violations;
	_Atomic uint32_t max_readers;
	_Atomic uint32_t stop;
	_Atomic uint32_t seq;
	uint64_t counter;		/* written by writers only */
	uint32_t events[64];		/* id * 2 + (0 enter, 1 leave) */
};

FIXTURE(rw) {
	struct syncmem_region *r;
	struct rwshared *sh;
};

FIXTURE_SETUP(rw)
{
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	syncmem_rwlock_init(&self->sh->rw);
}

FIXTURE_TEARDOWN(rw)
{
	syncmem_close(self->r);
}

/* Read shares the lock counts, over all slots. */
static uint32_t shares(const struct syncmem_rwlock *rw)
{
	uint32_t n = 0;

	for (int i = 0; i < SYNCMEM_RWLOCK_SLOTS; i++)
		n += __atomic_load_n(&rw->slot[i].count, __ATOMIC_RELAXED);
	return n;
}

static void reader_section(struct rwshared *sh)
{
	int32_t n = atomic_fetch_add(&sh->readers_inside, 1) + 1;
	uint32_t max = atomic_load(&sh->max_readers);

	while ((uint32_t)n > max && !atomic_compare_exchange_weak(&sh->max_readers, &max, n))
		;
	if (atomic_load(&sh->writers_inside))
		atomic_fetch_add(&sh->violations, 1);
	sched_yield();
	atomic_fetch_sub(&sh->readers_inside, 1);
}

static void writer_section(struct rwshared *sh)
{
	if (atomic_fetch_add(&sh->writers_inside, 1) || atomic_load(&sh->readers_inside))
		atomic_fetch_add(&sh->violations, 1);
	sh->counter++;
	sched_yield();
	atomic_fetch_sub(&sh->writers_inside, 1);
}

TEST_F(rw, readers_overlap)
{
	enum { N = 4 };
	pid_t pids[N];

	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			int64_t t0 = now_ns();

			if (syncmem_rwlock_rdlock(self->r, &self->sh->rw))
				_exit(1);
			/* Hold the lock until all N readers are inside at once. */
			atomic_fetch_add(&self->sh->readers_inside, 1);
			while (atomic_load(&self->sh->readers_inside) < N)
				if (now_ns() - t0 > 10000000000LL)
					_exit(2);
			_exit(syncmem_rwlock_unlock(self->r, &self->sh->rw) ? 3 : 0);
		}
	}
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, shares(&self->sh->rw));
}

struct rw_async {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct rwshared *sh;
	int left;
	int errors;
	unsigned int seed;
};

static void rw_async_step(void *arg, int result);

static int rw_async_next(struct rw_async *a)
{
	if (rand_r(&a->seed) % 4 == 0)
		return syncmem_rwlock_wrlock_async(a->loop, a->r, &a->sh->rw, rw_async_step, a);
	return syncmem_rwlock_rdlock_async(a->loop, a->r, &a->sh->rw, rw_async_step, a);
}

static void rw_async_step(void *arg, int result)
{
	struct rw_async *a = arg;

	if (result) {
		a->errors++;
		return;
	}
	if (a->sh->rw.writer)
		writer_section(a->sh);
	else
		reader_section(a->sh);
	if (syncmem_rwlock_unlock(a->r, &a->sh->rw))
		a->errors++;
	if (--a->left > 0 && rw_async_next(a))
		a->errors++;
}

static int rw_worker(struct syncmem_region *r, struct rwshared *sh, int id, int n,
		     uint64_t *writes)
{
	unsigned int seed = (unsigned int)id * 7919u + 1;

	if (id % 2) {
		struct rw_async a = { .r = r, .sh = sh, .left = n, .seed = seed };

		if (syncmem_loop_new(&a.loop) || rw_async_next(&a) || syncmem_loop_run(a.loop))
			return 20;
		syncmem_loop_free(a.loop);
		return a.errors || a.left ? 21 : 0;
	}
	for (int i = 0; i < n; i++) {
		int write = rand_r(&seed) % 4 == 0;

		if (write ? syncmem_rwlock_wrlock(r, &sh->rw) : syncmem_rwlock_rdlock(r, &sh->rw))
			return 22;
		if (write) {
			writer_section(sh);
			(*writes)++;
		} else {
			reader_section(sh);
		}
		if (syncmem_rwlock_unlock(r, &sh->rw))
			return 23;
	}
	return 0;
}

TEST_F_TIMEOUT(rw, writers_exclude_everyone_blocking_and_async, 600)
{
	enum { N = 6, EACH = 2000 };
	pid_t pids[N];

	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			uint64_t writes = 0;

			_exit(rw_worker(self->r, self->sh, i, EACH, &writes));
		}
	}
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, atomic_load(&self->sh->violations));
	EXPECT_LT(0, self->sh->counter);
	EXPECT_LT(1, atomic_load(&self->sh->max_readers));	/* readers did overlap */
	EXPECT_EQ(0, shares(&self->sh->rw));
	EXPECT_EQ(0, self->sh->rw.writer);
	EXPECT_EQ(0, self->sh->rw.turnstile.word);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F_TIMEOUT(rw, a_writer_is_not_starved_by_a_stream_of_readers, 120)
{
	enum { READERS = 4 };
	pid_t pids[READERS];
	int64_t t0, took;

	/* Overlapping readers: the lock is never free of readers on its own. */
	for (int i = 0; i < READERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			while (!atomic_load(&self->sh->stop)) {
				if (syncmem_rwlock_rdlock(self->r, &self->sh->rw))
					_exit(1);
				usleep(2000);
				if (syncmem_rwlock_unlock(self->r, &self->sh->rw))
					_exit(2);
			}
			_exit(0);
		}
	}
	usleep(100000);
	EXPECT_LT(0, shares(&self->sh->rw));
	t0 = now_ns();
	EXPECT_EQ(0, syncmem_rwlock_wrlock_timed(self->r, &self->sh->rw, 5000000000LL));
	took = now_ns() - t0;
	EXPECT_EQ(0, shares(&self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	atomic_store(&self->sh->stop, 1);
	for (int i = 0; i < READERS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	/* It waited for the readers ahead of it only: a few of their 2 ms naps. */
	EXPECT_GT(2000000000LL, took);
}

TEST_F_TIMEOUT(rw, tryrdlock_never_fails_while_no_writer_holds_or_waits, 120)
{
	enum { PROCS = 4, ROUNDS = 20000 };
	pid_t pids[PROCS];

	/* Readers of several processes churning, with tries among them. */
	for (int i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			for (int n = 0; n < ROUNDS; n++) {
				int ret = n & 1 ? syncmem_rwlock_tryrdlock(self->r, &self->sh->rw) :
						  syncmem_rwlock_rdlock(self->r, &self->sh->rw);

				if (ret == -EBUSY)
					atomic_fetch_add(&self->sh->violations, 1);
				else if (ret)
					_exit(1);
				if (syncmem_rwlock_unlock(self->r, &self->sh->rw))
					_exit(2);
			}
			_exit(0);
		}
	}
	for (int i = 0; i < PROCS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, atomic_load(&self->sh->violations));
	EXPECT_EQ(0, shares(&self->sh->rw));
}

static void event(struct rwshared *sh, uint32_t id, int leave)
{
	sh->events[atomic_fetch_add(&sh->seq, 1)] = id * 2 + leave;
}

TEST_F(rw, fifo_phases)
{
	/* Arrival order while a writer holds it: R1 R2 W3 R4. */
	const int kinds[] = { 'R', 'R', 'W', 'R' };
	pid_t pids[4];
	uint32_t pos[8];

	ASSERT_EQ(0, syncmem_rwlock_wrlock(self->r, &self->sh->rw));
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			int ret = kinds[i] == 'W' ? syncmem_rwlock_wrlock(self->r, &self->sh->rw)
						  : syncmem_rwlock_rdlock(self->r, &self->sh->rw);
			if (ret)
				_exit(1);
			event(self->sh, (uint32_t)i, 0);
			usleep(200000);	/* long enough for the next reader to come in */
			event(self->sh, (uint32_t)i, 1);
			_exit(syncmem_rwlock_unlock(self->r, &self->sh->rw) ? 2 : 0);
		}
		ASSERT_TRUE(await_waiters(self->r, i + 1));
	}
	ASSERT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	ASSERT_EQ(8, atomic_load(&self->sh->seq));
	for (int i = 0; i < 8; i++)
		pos[self->sh->events[i]] = (uint32_t)i;
	/* R1 and R2 overlap: both enter before either leaves. */
	EXPECT_LT(pos[0 * 2 + 0], pos[1 * 2 + 1]);
	EXPECT_LT(pos[1 * 2 + 0], pos[0 * 2 + 1]);
	/* W3 enters after both left, R4 after W3 left. */
	EXPECT_LT(pos[0 * 2 + 1], pos[2 * 2 + 0]);
	EXPECT_LT(pos[1 * 2 + 1], pos[2 * 2 + 0]);
	EXPECT_LT(pos[2 * 2 + 1], pos[3 * 2 + 0]);
}

static void *unlock_from_thread(void *arg)
{
	struct rwshared *sh = ((void **)arg)[1];

	return (void *)(intptr_t)syncmem_rwlock_unlock(((void **)arg)[0], &sh->rw);
}

static void *tryrdlock_from_thread(void *arg)
{
	struct rwshared *sh = ((void **)arg)[1];

	return (void *)(intptr_t)syncmem_rwlock_tryrdlock(((void **)arg)[0], &sh->rw);
}

static void *rdlock_timed_from_thread(void *arg)
{
	struct rwshared *sh = ((void **)arg)[1];

	return (void *)(intptr_t)syncmem_rwlock_rdlock_timed(((void **)arg)[0], &sh->rw,
							      30000000);
}

static void note_result(void *arg, int result)
{
	*(int *)arg = result;
}

TEST_F(rw, timeouts_and_errors)
{
	struct syncmem_rwlock outside;
	struct syncmem_loop *loop;
	void *args[2] = { self->r, self->sh }, *ret;
	pthread_t t;
	int result = 1;

	syncmem_rwlock_init(&outside);
	EXPECT_EQ(-EPERM, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	/* Held for reading: more readers fine, a writer times out. */
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_tryrdlock(self->r, &self->sh->rw));
	EXPECT_EQ(-EBUSY, syncmem_rwlock_trywrlock(self->r, &self->sh->rw));
	EXPECT_EQ(-ETIMEDOUT, syncmem_rwlock_wrlock_timed(self->r, &self->sh->rw, 30000000));
	EXPECT_EQ(2, shares(&self->sh->rw));
	EXPECT_EQ(0, self->sh->rw.closed);	/* the timed-out writer left no mark */
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	EXPECT_EQ(-EPERM, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	/* Held for writing: recursion is -EDEADLK, another thread -EPERM. */
	ASSERT_EQ(0, syncmem_rwlock_wrlock(self->r, &self->sh->rw));
	EXPECT_EQ(-EDEADLK, syncmem_rwlock_wrlock(self->r, &self->sh->rw));
	EXPECT_EQ(-EDEADLK, syncmem_rwlock_rdlock(self->r, &self->sh->rw));
	ASSERT_EQ(0, pthread_create(&t, NULL, unlock_from_thread, args));
	pthread_join(t, &ret);
	EXPECT_EQ(-EPERM, (int)(intptr_t)ret);
	ASSERT_EQ(0, pthread_create(&t, NULL, tryrdlock_from_thread, args));
	pthread_join(t, &ret);
	EXPECT_EQ(-EBUSY, (int)(intptr_t)ret);
	ASSERT_EQ(0, pthread_create(&t, NULL, rdlock_timed_from_thread, args));
	pthread_join(t, &ret);
	EXPECT_EQ(-ETIMEDOUT, (int)(intptr_t)ret);
	/* An async reader queues behind the writer; freeing the loop cancels it. */
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_rwlock_rdlock_async(loop, self->r, &self->sh->rw, note_result,
						 &result));
	EXPECT_EQ(1, region_waiters(self->r));
	syncmem_loop_free(loop);
	EXPECT_EQ(-ECANCELED, result);
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, self->sh->rw.turnstile.word);

	EXPECT_EQ(-ERANGE, syncmem_rwlock_rdlock(self->r, &outside));
	EXPECT_EQ(-ERANGE, syncmem_rwlock_wrlock(self->r, &outside));
	EXPECT_EQ(-ERANGE, syncmem_rwlock_unlock(self->r, &outside));
	EXPECT_EQ(-EINVAL, syncmem_rwlock_rdlock(NULL, &self->sh->rw));
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	EXPECT_EQ(-EINVAL, syncmem_rwlock_wrlock_async(loop, self->r, &self->sh->rw, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_rwlock_rdlock_async(NULL, self->r, &self->sh->rw, note_result,
						       NULL));
	syncmem_loop_free(loop);
}

TEST_F(rw, a_share_released_while_an_async_writer_of_the_process_drains_is_the_share)
{
	struct syncmem_loop *loop;
	int result = 1;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->r, &self->sh->rw));
	/* The writer takes the turnstile (named by this process) and waits for the share. */
	ASSERT_EQ(0, syncmem_rwlock_wrlock_async(loop, self->r, &self->sh->rw, note_result,
						 &result));
	for (int i = 0; i < 5; i++)
		syncmem_loop_run_once(loop, 2000000);
	EXPECT_EQ(1, result);
	EXPECT_NE(0, self->sh->rw.turnstile.word);
	/* This unlock is the read share's: the writer gets in, it is not thrown out. */
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, shares(&self->sh->rw));
	for (int i = 0; i < 1000 && result == 1; i++)
		syncmem_loop_run_once(loop, 10000000);
	EXPECT_EQ(0, result);
	EXPECT_NE(0, self->sh->rw.writer);
	EXPECT_EQ(-EBUSY, syncmem_rwlock_tryrdlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	EXPECT_EQ(0, self->sh->rw.turnstile.word);
	EXPECT_EQ(0, self->sh->rw.closed);
	EXPECT_EQ(-EPERM, syncmem_rwlock_unlock(self->r, &self->sh->rw));
	syncmem_loop_free(loop);
}

TEST_F(rw, uncontended_read_and_write_locks_make_no_ioctl)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* The first calls fetch this process's and this thread's ids. */
		if (syncmem_rwlock_rdlock(self->r, &self->sh->rw) ||
		    syncmem_rwlock_unlock(self->r, &self->sh->rw) ||
		    syncmem_rwlock_wrlock(self->r, &self->sh->rw) ||
		    syncmem_rwlock_unlock(self->r, &self->sh->rw) || forbid_ioctl())
			_exit(10);
		for (int i = 0; i < 10000; i++) {
			if (syncmem_rwlock_rdlock(self->r, &self->sh->rw) ||
			    syncmem_rwlock_unlock(self->r, &self->sh->rw) ||
			    syncmem_rwlock_wrlock(self->r, &self->sh->rw) ||
			    syncmem_rwlock_unlock(self->r, &self->sh->rw))
				_exit(11);
		}
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
}

TEST_HARNESS_MAIN
