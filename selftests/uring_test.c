// SPDX-License-Identifier: GPL-2.0
/*
 * Waits and lock requests as io_uring commands in the caller's own ring
 * (SYNCMEM_URING_*, syncmem_prep_*): their results as CQEs (a LOCK's CQE
 * means held: the word names the process), their place in the word's one
 * FIFO queue beside blocking and eventfd-based async waiters, CANCEL ending
 * one exactly once, a whole batch queued by one submit, and the ends
 * nobody takes up (exit, SIGKILL, execve, io_uring_queue_exit() with
 * commands parked) done in bounded time with nothing left queued; the
 * kernel memory a parked command costs; and malformed commands refused.
 * NOTIFY commands wake what the ioctl wakes, count and fail as it does,
 * and go with a wait in one submit without a CQE of their own.
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define MS	1000000LL
#define SEC	1000000000LL
#define NWORDS	256

FIXTURE(uring) {
	struct syncmem_region *r;
	uint32_t *w32;
	uint64_t *w64;
	struct io_uring ring;
};

FIXTURE_SETUP(uring)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQE32 };

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->w32 = syncmem_base(self->r);
	self->w64 = (uint64_t *)((char *)syncmem_base(self->r) + 2048);
	ASSERT_EQ(0, io_uring_queue_init_params(128, &self->ring, &p));
}

FIXTURE_TEARDOWN(uring)
{
	io_uring_queue_exit(&self->ring);
	syncmem_close(self->r);
}

static struct io_uring_sqe *sqe_of(struct io_uring *ring, uint64_t user_data)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (sqe)
		io_uring_sqe_set_data64(sqe, user_data);
	return sqe;
}

/* The next CQE (at most 5 s): its res, user_data and big_cqe[0]. */
static int next_cqe(struct io_uring *ring, uint64_t *user_data, uint64_t *res2)
{
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring_cqe *cqe;
	int res;

	if (io_uring_wait_cqe_timeout(ring, &cqe, &ts))
		return INT32_MIN;
	res = cqe->res;
	if (user_data)
		*user_data = cqe->user_data;
	if (res2)
		*res2 = cqe->big_cqe[0];
	io_uring_cqe_seen(ring, cqe);
	return res;
}

/* Is a CQE ready now? */
static int cqe_ready(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;

	return io_uring_peek_cqe(ring, &cqe) == 0;
}

TEST_F(uring, results)
{
	struct syncmem_handoff h = { .size = 8, .value = 0x1234567890abcdefULL };
	int64_t t0;
	uint64_t res2;

	self->w32[0] = 5;
	/* The word differs: nothing queued, the CQE at once. */
	syncmem_prep_wait32(sqe_of(&self->ring, 1), self->r, &self->w32[0], 6, -1);
	ASSERT_EQ(1, io_uring_submit(&self->ring));
	ASSERT_EQ(SYNCMEM_NOT_EQUAL, next_cqe(&self->ring, NULL, NULL));
	/* Timeout 0: a try. */
	syncmem_prep_wait32(sqe_of(&self->ring, 2), self->r, &self->w32[0], 5, 0);
	io_uring_submit(&self->ring);
	ASSERT_EQ(SYNCMEM_TIMED_OUT, next_cqe(&self->ring, NULL, NULL));
	ASSERT_EQ(0, region_waiters(self->r));
	/* A timeout counts from the submission, and is never early. */
	t0 = now_ns();
	syncmem_prep_wait32(sqe_of(&self->ring, 3), self->r, &self->w32[0], 5, 30 * MS);
	io_uring_submit(&self->ring);
	ASSERT_EQ(SYNCMEM_TIMED_OUT, next_cqe(&self->ring, NULL, NULL));
	EXPECT_LE(30 * MS, now_ns() - t0);
	EXPECT_GT(2 * SEC, now_ns() - t0);
	ASSERT_EQ(0, region_waiters(self->r));
	/* Woken by a notify. */
	syncmem_prep_wait32(sqe_of(&self->ring, 4), self->r, &self->w32[0], 5, 10 * SEC);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(1, syncmem_notify(self->r, &self->w32[0], 1));
	ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, NULL, NULL));
	/* Handed a 64-bit value: SYNCMEM_WAIT_HANDED_OFF and the value in big_cqe[0]. */
	self->w64[0] = 9;
	syncmem_prep_wait64(sqe_of(&self->ring, 5), self->r, &self->w64[0], 9, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	h.offset = 2048;
	ASSERT_EQ(SYNCMEM_HANDOFF_WOKE,
		  raw_ioctl(syncmem_region_fd(self->r), SYNCMEM_IOC_HANDOFF, &h));
	ASSERT_EQ(SYNCMEM_WAIT_HANDED_OFF, next_cqe(&self->ring, NULL, &res2));
	EXPECT_EQ(h.value, res2);
	EXPECT_EQ(9, self->w64[0]);	/* handed to the waiter, not stored */
	ASSERT_EQ(0, region_waiters(self->r));
}

TEST_F(uring, malformed_commands_are_refused)
{
	struct syncmem_uring_wait wt = { .offset = 0, .expected = 0 };
	int rfd = syncmem_region_fd(self->r), pfd[2], nfd;
	struct io_uring_sqe *sqe;
	struct {
		uint32_t op;
		uint64_t offset, expected;
		int res;
	} bad[] = {
		{ 0, 0, 0, -EINVAL },				/* no op */
		{ 0x7f, 0, 0, -EINVAL },			/* unknown op */
		{ SYNCMEM_URING_WAIT32, 2, 0, -EINVAL },	/* misaligned */
		{ SYNCMEM_URING_WAIT64, 4, 0, -EINVAL },
		{ SYNCMEM_URING_WAIT32, 4096, 0, -EINVAL },	/* past the end */
		{ SYNCMEM_URING_WAIT64, 4088 + 8, 0, -EINVAL },
		{ SYNCMEM_URING_WAIT32, ~0ULL, 0, -EINVAL },
		{ SYNCMEM_URING_WAIT32, 0, 1ULL << 32, -EINVAL }, /* no 4-byte value */
		{ SYNCMEM_URING_CANCEL, 0, 1, -EINVAL },	/* pad */
		{ SYNCMEM_URING_CANCEL | 1 << 8, 0, 0, -EINVAL }, /* cancel with a timeout */
		{ SYNCMEM_URING_CANCEL, 12345, 0, -ENOENT },	/* nothing pending */
	};
	unsigned int i, seed = 1;

	ASSERT_EQ(0, pipe(pfd));
	nfd = pfd[0];	/* not /dev/null: its uring_cmd succeeds, for io_uring's tests */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wt.offset = bad[i].offset;
		wt.expected = bad[i].expected;
		sqe = sqe_of(&self->ring, i);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, rfd, NULL, 0, 0);
		sqe->cmd_op = bad[i].op;
		memcpy(sqe->cmd, &wt, sizeof(wt));
		io_uring_submit(&self->ring);
		EXPECT_EQ(bad[i].res, next_cqe(&self->ring, NULL, NULL)) {
			TH_LOG("command %u", i);
		}
	}
	/* A word outside the region; no region at all. */
	syncmem_prep_wait32(sqe_of(&self->ring, 100), self->r, (uint32_t *)&wt, 0, 0);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EINVAL, next_cqe(&self->ring, NULL, NULL));
	syncmem_prep_cancel(sqe_of(&self->ring, 101), NULL, 1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EBADF, next_cqe(&self->ring, NULL, NULL));
	/* Not a region file: no such command. */
	sqe = sqe_of(&self->ring, 103);
	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, nfd, NULL, 0, 0);
	sqe->cmd_op = SYNCMEM_URING_WAIT32;
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EOPNOTSUPP, next_cqe(&self->ring, NULL, NULL));
	/* Garbage: every CQE is a result or -EINVAL; whatever queued ends with the ring. */
	for (i = 0; i < 2000; i++) {
		seed = seed * 1103515245 + 12345;
		wt.offset = (seed >> 3) % 5000;
		wt.expected = seed & 0x100 ? 0 : seed;
		sqe = sqe_of(&self->ring, 1000 + i);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, rfd, NULL, 0, 0);
		sqe->cmd_op = (seed & 7) | ((seed >> 9) & 0xff) << 8;
		memcpy(sqe->cmd, &wt, sizeof(wt));
		io_uring_submit(&self->ring);
		while (cqe_ready(&self->ring)) {
			int res = next_cqe(&self->ring, NULL, NULL);

			EXPECT_TRUE(res == -EINVAL || res == -ENOENT || res == -ECANCELED ||
				    (res >= 0 && res <= 2)) {
				TH_LOG("garbage command %u: %d", i, res);
			}
		}
	}
	io_uring_queue_exit(&self->ring);
	EXPECT_TRUE(await_waiters(self->r, 0));
	ASSERT_EQ(0, io_uring_queue_init(8, &self->ring, 0));
	close(pfd[0]);
	close(pfd[1]);
}

TEST_F(uring, cancel_ends_a_wait_exactly_once)
{
	uint64_t ud;
	int res, i, seen;

	self->w32[1] = 3;
	syncmem_prep_wait32(sqe_of(&self->ring, 7), self->r, &self->w32[1], 3, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	syncmem_prep_cancel(sqe_of(&self->ring, 8), self->r, 7);
	io_uring_submit(&self->ring);
	for (i = 0; i < 2; i++) {
		res = next_cqe(&self->ring, &ud, NULL);
		EXPECT_EQ(ud == 7 ? -ECANCELED : 0, res);
	}
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(0, region_waiters(self->r));
	syncmem_prep_cancel(sqe_of(&self->ring, 9), self->r, 7);
	io_uring_submit(&self->ring);
	ASSERT_EQ(-ENOENT, next_cqe(&self->ring, NULL, NULL));
	/* Cancel and notify race: one CQE for the wait, whichever claimed it. */
	for (i = 0; i < 300; i++) {
		int wait_res = INT32_MIN, cancel_res = INT32_MIN;

		syncmem_prep_wait32(sqe_of(&self->ring, 10), self->r, &self->w32[1], 3, -1);
		io_uring_submit(&self->ring);
		syncmem_prep_cancel(sqe_of(&self->ring, 11), self->r, 10);
		if (i & 1)
			syncmem_notify(self->r, &self->w32[1], 1);
		io_uring_submit(&self->ring);
		syncmem_notify(self->r, &self->w32[1], 1);
		for (seen = 0; seen < 2; seen++) {
			res = next_cqe(&self->ring, &ud, NULL);
			ASSERT_NE(INT32_MIN, res);
			if (ud == 10)
				wait_res = res;
			else
				cancel_res = res;
		}
		ASSERT_FALSE(cqe_ready(&self->ring));
		ASSERT_TRUE((wait_res == -ECANCELED && cancel_res == 0) ||
			    (wait_res == SYNCMEM_OK && cancel_res == -ENOENT)) {
			TH_LOG("round %d: wait %d, cancel %d", i, wait_res, cancel_res);
		}
	}
	ASSERT_EQ(0, region_waiters(self->r));
}

static void *blocking_wait(void *arg)
{
	struct syncmem_region *r = ((void **)arg)[0];
	uint32_t *w = ((void **)arg)[1];

	return (void *)(intptr_t)syncmem_wait32(r, w, 0, 10 * SEC);
}

TEST_F(uring, one_fifo_with_blocking_and_eventfd_waiters)
{
	int dev = dev_open(), rfd = syncmem_region_fd(self->r);
	struct syncmem_completion rec;
	void *arg[2] = { self->r, &self->w32[2] };
	pthread_t t;
	void *ret;

	ASSERT_LE(0, dev);
	self->w32[2] = 0;
	/* Ring, eventfd-style async, blocking, ring: in that order. */
	syncmem_prep_wait32(sqe_of(&self->ring, 1), self->r, &self->w32[2], 0, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_wait_async(dev, rfd, 8, 0, ~0ULL, 2));
	ASSERT_EQ(0, pthread_create(&t, NULL, blocking_wait, arg));
	ASSERT_TRUE(await_waiters(self->r, 3));
	syncmem_prep_wait32(sqe_of(&self->ring, 4), self->r, &self->w32[2], 0, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(4, region_waiters(self->r));

	ASSERT_EQ(1, syncmem_notify(self->r, &self->w32[2], 1));
	ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, NULL, NULL));
	ASSERT_EQ(0, fd_readable(dev));
	ASSERT_EQ(1, syncmem_notify(self->r, &self->w32[2], 1));
	ASSERT_EQ(sizeof(rec), read(dev, &rec, sizeof(rec)));
	EXPECT_EQ(2, rec.user_data);
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, rec.result);
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(1, syncmem_notify(self->r, &self->w32[2], 1));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(SYNCMEM_OK, (intptr_t)ret);
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(1, syncmem_notify(self->r, &self->w32[2], 1));
	ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, NULL, NULL));
	ASSERT_EQ(0, region_waiters(self->r));
	close(dev);
}

TEST_F(uring, sixty_four_waits_in_one_submit)
{
	uint64_t ud, seen = 0;
	int i;

	for (i = 0; i < 64; i++)
		syncmem_prep_wait32(sqe_of(&self->ring, i), self->r, &self->w32[i], 0, -1);
	ASSERT_EQ(64, io_uring_submit(&self->ring));
	/* Queued when the submit returns. */
	ASSERT_EQ(64, region_waiters(self->r));
	for (i = 0; i < 64; i++)
		ASSERT_EQ(1, syncmem_notify(self->r, &self->w32[i], 1));
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, &ud, NULL));
		seen |= 1ULL << ud;
	}
	EXPECT_EQ(~0ULL, seen);
	ASSERT_EQ(0, region_waiters(self->r));
}

#define LOCK_OFF	1024	/* two locks, 64 bytes each, between the words */

static struct syncmem_lock *lock_at(struct syncmem_region *r, int i)
{
	return (struct syncmem_lock *)((char *)syncmem_base(r) + LOCK_OFF + 64 * i);
}

/* The calling process's owner id, as a ring LOCK holds a lock. */
static uint64_t process_owner(struct syncmem_region *r)
{
	struct syncmem_owner o = { .flags = SYNCMEM_OWNER_PROCESS };

	if (raw_ioctl(syncmem_region_fd(r), SYNCMEM_IOC_OWNER, &o))
		return 0;
	return o.id;
}

static uint64_t holder_of(const struct syncmem_lock *l)
{
	return __atomic_load_n(&l->word, __ATOMIC_ACQUIRE) & SYNCMEM_OWNER_ID;
}

TEST_F(uring, lock_results)
{
	struct syncmem_lock *l = lock_at(self->r, 0);
	uint64_t me = process_owner(self->r), word;
	int64_t t0;

	ASSERT_NE(0, me);
	syncmem_lock_init(l, 0);
	/* Free: taken at once, for the process; any thread unlocks it. */
	syncmem_prep_lock(sqe_of(&self->ring, 1), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(0, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(me, holder_of(l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	/*
	 * Held by this thread: a try, which leaves the word as it was (no
	 * waiters mark for the holder's unlock to take to the kernel), then
	 * a timeout from the submission.
	 */
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	word = l->word;
	syncmem_prep_lock(sqe_of(&self->ring, 2), self->r, l, 0);
	io_uring_submit(&self->ring);
	ASSERT_EQ(-ETIMEDOUT, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(word, l->word);
	t0 = now_ns();
	syncmem_prep_lock(sqe_of(&self->ring, 3), self->r, l, 30 * MS);
	io_uring_submit(&self->ring);
	ASSERT_EQ(-ETIMEDOUT, next_cqe(&self->ring, NULL, NULL));
	EXPECT_LE(30 * MS, now_ns() - t0);
	ASSERT_EQ(0, region_waiters(self->r));
	/*
	 * Parked, then handed the lock by the holder's unlock, in the
	 * default mode too: a wake-up (a notify) leaves it parked.
	 */
	syncmem_prep_lock(sqe_of(&self->ring, 4), self->r, l, 10 * SEC);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_notify(self->r, &l->word, UINT32_MAX));
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(1, region_waiters(self->r));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	ASSERT_EQ(0, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(me, holder_of(l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	/* A dead holder's word that a notify announces (an abandoned lock). */
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	syncmem_prep_lock(sqe_of(&self->ring, 5), self->r, l, 10 * SEC);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	__atomic_store_n(&l->word, SYNCMEM_OWNER_GONE | SYNCMEM_OWNER_DIED | SYNCMEM_OWNER_WAITERS,
			 __ATOMIC_RELEASE);
	syncmem_notify(self->r, &l->word, UINT32_MAX);
	ASSERT_EQ(-EOWNERDEAD, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(me, holder_of(l));
	EXPECT_TRUE(l->word & SYNCMEM_OWNER_DIED);
	ASSERT_EQ(0, syncmem_lock_consistent(self->r, l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	/* A try of a dead holder's word takes it over. */
	__atomic_store_n(&l->word, SYNCMEM_OWNER_GONE, __ATOMIC_RELEASE);
	syncmem_prep_lock(sqe_of(&self->ring, 8), self->r, l, 0);
	io_uring_submit(&self->ring);
	ASSERT_EQ(-EOWNERDEAD, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(me, holder_of(l));
	ASSERT_EQ(0, syncmem_lock_consistent(self->r, l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	/* Unrecoverable: at once, and for a parked request when it becomes so. */
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	syncmem_prep_lock(sqe_of(&self->ring, 6), self->r, l, 10 * SEC);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	__atomic_store_n(&l->word, SYNCMEM_OWNER_NOTRECOVERABLE, __ATOMIC_RELEASE);
	syncmem_notify(self->r, &l->word, UINT32_MAX);
	ASSERT_EQ(-ENOTRECOVERABLE, next_cqe(&self->ring, NULL, NULL));
	syncmem_prep_lock(sqe_of(&self->ring, 7), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(-ENOTRECOVERABLE, next_cqe(&self->ring, NULL, NULL));
	ASSERT_EQ(0, region_waiters(self->r));
	syncmem_lock_init(l, 0);
}

TEST_F(uring, lock_of_a_killed_holder_is_taken_over)
{
	struct syncmem_lock *l = lock_at(self->r, 1);
	uint64_t me = process_owner(self->r);
	int ready[2];
	int64_t t0;
	pid_t pid;
	char c;

	syncmem_lock_init(l, 0);
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (syncmem_lock(self->r, l) || write(ready[1], "x", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	syncmem_prep_lock(sqe_of(&self->ring, 1), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	t0 = now_ns();
	kill(pid, SIGKILL);
	ASSERT_EQ(-EOWNERDEAD, next_cqe(&self->ring, NULL, NULL));
	EXPECT_GT(3 * SEC, now_ns() - t0);
	EXPECT_EQ(me, holder_of(l));
	EXPECT_EQ(128 + SIGKILL, wait_exit(pid));
	ASSERT_EQ(0, syncmem_lock_consistent(self->r, l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	ASSERT_EQ(0, region_waiters(self->r));
	close(ready[0]);
	close(ready[1]);
}

static atomic_int lock_turns;

static void *blocking_locker(void *arg)
{
	struct syncmem_region *r = ((void **)arg)[0];
	struct syncmem_lock *l = ((void **)arg)[1];
	int ret = syncmem_lock(r, l);

	if (ret)
		return (void *)(intptr_t)ret;
	atomic_fetch_add(&lock_turns, 1);
	return (void *)(intptr_t)syncmem_unlock(r, l);
}

static void loop_locked(void *arg, int result)
{
	*(int *)arg = result;
}

/*
 * Ring, loop (eventfd), blocking, ring: each unlock gives the lock to the
 * next in arrival order, in the default mode (a woken blocking or loop
 * waiter takes the freed word; a ring request is handed it).
 */
TEST_F(uring, lock_one_fifo_with_blocking_and_loop_lockers)
{
	struct syncmem_lock *l = lock_at(self->r, 0);
	uint64_t me = process_owner(self->r);
	void *arg[2] = { self->r, l };
	struct syncmem_loop *loop;
	int loop_res = INT32_MIN;
	uint64_t ud;
	pthread_t t;
	void *ret;

	syncmem_lock_init(l, 0);
	atomic_store(&lock_turns, 0);
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	syncmem_prep_lock(sqe_of(&self->ring, 1), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(0, syncmem_lock_async(loop, self->r, l, loop_locked, &loop_res));
	ASSERT_TRUE(await_waiters(self->r, 2));
	ASSERT_EQ(0, pthread_create(&t, NULL, blocking_locker, arg));
	ASSERT_TRUE(await_waiters(self->r, 3));
	syncmem_prep_lock(sqe_of(&self->ring, 4), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(4, region_waiters(self->r));

	/* 1: the first ring request. */
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	ASSERT_EQ(0, next_cqe(&self->ring, &ud, NULL));
	EXPECT_EQ(1, ud);
	EXPECT_EQ(me, holder_of(l));
	/* 2: the loop's. */
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	while (loop_res == INT32_MIN)
		ASSERT_LE(0, syncmem_loop_run_once(loop, 5 * SEC));
	EXPECT_EQ(0, loop_res);
	EXPECT_EQ(0, atomic_load(&lock_turns));
	EXPECT_FALSE(cqe_ready(&self->ring));
	/* 3: the blocking thread, which unlocks; then 4: the last ring request. */
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(0, (intptr_t)ret);
	EXPECT_EQ(1, atomic_load(&lock_turns));
	ASSERT_EQ(0, next_cqe(&self->ring, &ud, NULL));
	EXPECT_EQ(4, ud);
	EXPECT_EQ(me, holder_of(l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	ASSERT_EQ(0, region_waiters(self->r));
	syncmem_loop_free(loop);
}

#define RACE_ROUNDS	256

/* Busy-wait for @us microseconds. */
static void spin_us(int us)
{
	int64_t end = now_ns() + us * 1000LL;

	while (now_ns() < end)
		;
}

/* The unlocking side of lock_cancel_ends_it_exactly_once's race. */
struct race_unlock {
	struct syncmem_region *r;
	struct syncmem_lock *l;
	int round;	/* set to start a round; -1 ends the thread */
	int done;	/* the last round it unlocked in */
	int err;	/* unlocks that failed */
};

/* Unlock as soon as a round starts, after a delay that varies by round. */
static void *race_unlocker(void *arg)
{
	struct race_unlock *race = arg;
	int round = 0, go;

	for (;;) {
		while ((go = __atomic_load_n(&race->round, __ATOMIC_ACQUIRE)) == round)
			;
		if (go < 0)
			return NULL;
		round = go;
		spin_us(round / 32 % 8);
		if (syncmem_unlock(race->r, race->l))
			race->err++;
		__atomic_store_n(&race->done, round, __ATOMIC_RELEASE);
	}
}

TEST_F(uring, lock_cancel_ends_it_exactly_once)
{
	struct syncmem_lock *l = lock_at(self->r, 0);
	struct race_unlock race = { 0 };
	int res, i, seen, won[2] = { 0 };
	pthread_t t;
	uint64_t ud;

	syncmem_lock_init(l, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	syncmem_prep_lock(sqe_of(&self->ring, 7), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	syncmem_prep_cancel(sqe_of(&self->ring, 8), self->r, 7);
	io_uring_submit(&self->ring);
	for (i = 0; i < 2; i++) {
		res = next_cqe(&self->ring, &ud, NULL);
		EXPECT_EQ(ud == 7 ? -ECANCELED : 0, res);
	}
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(0, region_waiters(self->r));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	/*
	 * Cancel and unlock race: another thread unlocks as this one submits
	 * the cancel, each after a delay that varies by round, so that either
	 * may claim the request first. One CQE for it; held only if 0.
	 */
	race.r = self->r;
	race.l = l;
	ASSERT_EQ(0, pthread_create(&t, NULL, race_unlocker, &race));
	for (i = 1; i <= RACE_ROUNDS; i++) {
		int lock_res = INT32_MIN, cancel_res = INT32_MIN;

		/* Held by the process (a ring LOCK), so that any thread unlocks it. */
		syncmem_prep_lock(sqe_of(&self->ring, 9), self->r, l, -1);
		io_uring_submit(&self->ring);
		ASSERT_EQ(0, next_cqe(&self->ring, NULL, NULL));
		syncmem_prep_lock(sqe_of(&self->ring, 10), self->r, l, -1);
		io_uring_submit(&self->ring);
		syncmem_prep_cancel(sqe_of(&self->ring, 11), self->r, 10);
		__atomic_store_n(&race.round, i, __ATOMIC_RELEASE);
		spin_us(i % 32);
		io_uring_submit(&self->ring);
		for (seen = 0; seen < 2; seen++) {
			res = next_cqe(&self->ring, &ud, NULL);
			ASSERT_NE(INT32_MIN, res);
			if (ud == 10)
				lock_res = res;
			else
				cancel_res = res;
		}
		while (__atomic_load_n(&race.done, __ATOMIC_ACQUIRE) != i)
			;
		ASSERT_EQ(0, race.err);
		ASSERT_FALSE(cqe_ready(&self->ring));
		ASSERT_TRUE((lock_res == -ECANCELED && cancel_res == 0) ||
			    (lock_res == 0 && cancel_res == -ENOENT)) {
			TH_LOG("round %d: lock %d, cancel %d", i, lock_res, cancel_res);
		}
		won[lock_res == 0]++;
		if (lock_res == 0)
			ASSERT_EQ(0, syncmem_unlock(self->r, l));
		ASSERT_EQ(0, holder_of(l));
	}
	__atomic_store_n(&race.round, -1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	TH_LOG("cancel first %d times, unlock first %d times", won[0], won[1]);
	ASSERT_EQ(0, region_waiters(self->r));
}

/*
 * IOSQE_ASYNC waits and LOCKs (issued from an io-wq worker while this task
 * waits for CQEs) against another process that notifies, locks and
 * unlocks in a loop, for a second: each command gets one CQE, woken or
 * held, and the ring then exits (a command completed before io_uring knew
 * it parked would be left on the ring's cancelable list).
 */
TEST_F(uring, async_issued_commands_race_their_wakers)
{
	struct syncmem_lock *l = lock_at(self->r, 0);
	uint32_t *stop = &self->w32[10];
	int64_t end = now_ns() + SEC;
	struct io_uring_sqe *sqe;
	int rounds = 0, seen, res;
	uint64_t ud;
	pid_t pid;

	syncmem_lock_init(l, 0);
	self->w32[0] = 0;
	*stop = 0;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE) && now_ns() < end + 20 * SEC) {
			syncmem_notify(self->r, &self->w32[0], 1);
			if (syncmem_lock(self->r, l) || syncmem_unlock(self->r, l))
				_exit(2);
		}
		_exit(0);
	}
	while (now_ns() < end) {
		sqe = sqe_of(&self->ring, 1);
		syncmem_prep_wait32(sqe, self->r, &self->w32[0], 0, 5 * SEC);
		sqe->flags |= IOSQE_ASYNC;
		sqe = sqe_of(&self->ring, 2);
		syncmem_prep_lock(sqe, self->r, l, 5 * SEC);
		sqe->flags |= IOSQE_ASYNC;
		ASSERT_LE(0, io_uring_submit_and_wait(&self->ring, 1));
		/* The lock goes back at once: the other process notifies between its locks. */
		for (seen = 0; seen < 2; seen++) {
			res = next_cqe(&self->ring, &ud, NULL);
			ASSERT_EQ(ud == 1 ? SYNCMEM_OK : 0, res) {
				TH_LOG("round %d, command %llu", rounds, (unsigned long long)ud);
			}
			if (ud == 2)
				ASSERT_EQ(0, syncmem_unlock(self->r, l));
		}
		rounds++;
	}
	__atomic_store_n(stop, 1, __ATOMIC_RELEASE);
	EXPECT_EQ(0, wait_exit(pid));
	TH_LOG("%d rounds", rounds);
	ASSERT_EQ(0, region_waiters(self->r));
	ASSERT_EQ(0, holder_of(l));
}

/*
 * A HANDOFF of a lock word whose oldest waiter is a ring LOCK is refused:
 * the LOCK stays parked (its CQE would say held while the word names the
 * holder), and gets the lock at its unlock.
 */
TEST_F(uring, handoff_never_hands_a_lock_request_a_value)
{
	struct syncmem_lock *l = lock_at(self->r, 0);
	uint64_t me = process_owner(self->r), word;

	syncmem_lock_init(l, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	syncmem_prep_lock(sqe_of(&self->ring, 1), self->r, l, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(1, region_waiters(self->r));
	word = l->word;
	EXPECT_EQ(-EINVAL, syncmem_handoff64(self->r, &l->word, 12345));
	EXPECT_EQ(word, l->word);
	EXPECT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(1, region_waiters(self->r));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	ASSERT_EQ(0, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(me, holder_of(l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	ASSERT_EQ(0, region_waiters(self->r));
}

/*
 * An unlock whose oldest waiter is a plain wait on the lock word wakes it
 * and frees the word, and a LOCK queued behind gets it then, instead of
 * staying parked on a free word until the next event.
 */
TEST_F(uring, unlock_past_a_plain_wait_hands_the_lock_on)
{
	struct syncmem_lock *l = lock_at(self->r, 0);
	uint64_t me = process_owner(self->r), ud = 0;
	int i, res;

	syncmem_lock_init(l, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	syncmem_prep_wait64(sqe_of(&self->ring, 1), self->r, &l->word, l->word, -1);
	syncmem_prep_lock(sqe_of(&self->ring, 2), self->r, l, -1);
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	ASSERT_EQ(2, region_waiters(self->r));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	for (i = 0; i < 2; i++) {
		res = next_cqe(&self->ring, &ud, NULL);
		ASSERT_EQ(ud == 1 ? SYNCMEM_OK : 0, res)
			TH_LOG("user_data %llu", (unsigned long long)ud);
	}
	EXPECT_EQ(me, holder_of(l));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(0, l->word);
	ASSERT_EQ(0, region_waiters(self->r));
}

/* The shortest of 10 notifies of every waiter of @word, which wake none. */
static int64_t quickest_notify(struct __test_metadata *_metadata,
			       struct syncmem_region *r, uint64_t *word)
{
	int64_t t0, best = INT64_MAX;

	for (int i = 0; i < 10; i++) {
		t0 = now_ns();
		EXPECT_EQ(0, syncmem_notify(r, word, SYNCMEM_ALL));
		t0 = now_ns() - t0;
		best = t0 < best ? t0 : best;
	}
	return best;
}

/*
 * A notify of a lock word wakes its waiters but the ring LOCKs (only an
 * unlock hands them the word), and stops at the last waiter it may wake:
 * with N LOCKs parked and nothing else, it takes about as long as with
 * one, where walking them took milliseconds (16384 on 6.1 under TCG:
 * 4.9 ms, against 4 us). A waiter behind them is still woken, and all of
 * them once the word is unrecoverable. N is 16384 (4096 on debug).
 */
TEST_F(uring, notify_walks_no_parked_lock_needlessly)
{
	const int n = on_debug_kernel() ? 4096 : 16384;
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = 2 * n };
	struct syncmem_lock *l = lock_at(self->r, 0);
	struct io_uring_sqe *sqe;
	int64_t one = 0, many;
	struct io_uring ring;
	int i;

	syncmem_lock_init(l, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	ASSERT_EQ(0, io_uring_queue_init_params(256, &ring, &p));
	/* A plain wait on the word ahead of the LOCKs. */
	syncmem_prep_wait64(sqe_of(&ring, 0), self->r, &l->word, l->word, -1);
	for (i = 1; i <= n; i++) {
		sqe = sqe_of(&ring, i);
		if (!sqe) {
			ASSERT_LT(0, io_uring_submit(&ring));
			sqe = sqe_of(&ring, i);
		}
		syncmem_prep_lock(sqe, self->r, l, -1);
		if (i == 1) {
			ASSERT_EQ(2, io_uring_submit(&ring));
			ASSERT_EQ(1, syncmem_notify(self->r, &l->word, SYNCMEM_ALL));
			ASSERT_EQ(SYNCMEM_OK, next_cqe(&ring, NULL, NULL));
			one = quickest_notify(_metadata, self->r, &l->word);
		}
	}
	ASSERT_LT(0, io_uring_submit(&ring));
	ASSERT_EQ(n, region_waiters(self->r));
	many = quickest_notify(_metadata, self->r, &l->word);
	TH_LOG("a notify with 1 LOCK parked: %lld us, with %d: %lld us",
	       (long long)one / 1000, n, (long long)many / 1000);
	EXPECT_GT(2 * one + 200000, many);
	EXPECT_FALSE(cqe_ready(&ring));
	/* A plain wait behind them. */
	syncmem_prep_wait64(sqe_of(&ring, 0), self->r, &l->word, l->word, -1);
	ASSERT_EQ(1, io_uring_submit(&ring));
	ASSERT_EQ(1, syncmem_notify(self->r, &l->word, SYNCMEM_ALL));
	ASSERT_EQ(SYNCMEM_OK, next_cqe(&ring, NULL, NULL));
	EXPECT_FALSE(cqe_ready(&ring));
	ASSERT_EQ(n, region_waiters(self->r));
	/* Unrecoverable: every one ends. */
	__atomic_store_n(&l->word, SYNCMEM_OWNER_NOTRECOVERABLE, __ATOMIC_RELEASE);
	ASSERT_EQ(n, syncmem_notify(self->r, &l->word, SYNCMEM_ALL));
	for (i = 0; i < n; i++)
		ASSERT_EQ(-ENOTRECOVERABLE, next_cqe(&ring, NULL, NULL));
	ASSERT_EQ(0, region_waiters(self->r));
	io_uring_queue_exit(&ring);
	syncmem_lock_init(l, 0);
}

/*
 * A LOCK handed the lock in a ring torn down before its CQE is posted:
 * with IORING_SETUP_DEFER_TASKRUN (6.7+) the CQE waits for the next
 * io_uring_enter(), and io_uring_queue_exit() then gives the lock up.
 * Where the CQE is posted at the hand-off (before 6.7), it is read.
 */
TEST_F(uring, ring_exit_before_a_handed_lock_is_seen_gives_it_up)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	};
	struct syncmem_lock *l = lock_at(self->r, 0);
	uint64_t me = process_owner(self->r);
	struct io_uring ring;
	int i;

	syncmem_lock_init(l, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, l));
	ASSERT_EQ(0, io_uring_queue_init_params(8, &ring, &p));
	syncmem_prep_lock(sqe_of(&ring, 1), self->r, l, -1);
	io_uring_submit(&ring);
	ASSERT_EQ(1, region_waiters(self->r));
	ASSERT_EQ(0, syncmem_unlock(self->r, l));
	EXPECT_EQ(me, holder_of(l));
	if (cqe_ready(&ring)) {
		ASSERT_EQ(0, next_cqe(&ring, NULL, NULL));
		ASSERT_EQ(0, syncmem_unlock(self->r, l));
	}
	io_uring_queue_exit(&ring);
	/* The ring's end runs in the background. */
	for (i = 0; i < 3000 && holder_of(l); i++)
		usleep(1000);
	EXPECT_EQ(0, holder_of(l));
	ASSERT_EQ(0, region_waiters(self->r));
	syncmem_lock_init(l, 0);
}

TEST_F(uring, malformed_lock_commands_are_refused)
{
	struct syncmem_uring_lock lk = { .offset = LOCK_OFF, .owner = process_owner(self->r) };
	int rfd = syncmem_region_fd(self->r);
	struct syncmem_region *rw, *ro;
	struct io_uring_sqe *sqe;
	struct {
		uint64_t offset, owner;
		int res;
	} bad[] = {
		{ LOCK_OFF + 4, lk.owner, -EINVAL },		/* misaligned */
		{ 4096, lk.owner, -EINVAL },			/* past the end */
		{ ~0ULL, lk.owner, -EINVAL },
		{ LOCK_OFF, 0, -EINVAL },			/* no owner */
		{ LOCK_OFF, lk.owner + 1000, -EINVAL },		/* not the process's */
		{ LOCK_OFF, SYNCMEM_OWNER_NOTRECOVERABLE, -EINVAL },
	};
	unsigned int i;

	ASSERT_NE(0, lk.owner);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		lk.offset = bad[i].offset;
		lk.owner = bad[i].owner;
		sqe = sqe_of(&self->ring, i);
		io_uring_prep_rw(IORING_OP_URING_CMD, sqe, rfd, NULL, 0, 0);
		sqe->cmd_op = SYNCMEM_URING_LOCK;
		memcpy(sqe->cmd, &lk, sizeof(lk));
		io_uring_submit(&self->ring);
		EXPECT_EQ(bad[i].res, next_cqe(&self->ring, NULL, NULL)) {
			TH_LOG("command %u", i);
		}
	}
	/* A lock outside the region; no region; a read-only region. */
	syncmem_prep_lock(sqe_of(&self->ring, 100), self->r, (struct syncmem_lock *)&lk, -1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EINVAL, next_cqe(&self->ring, NULL, NULL));
	syncmem_prep_lock(sqe_of(&self->ring, 101), NULL, lock_at(self->r, 0), -1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EBADF, next_cqe(&self->ring, NULL, NULL));
	ASSERT_EQ(0, syncmem_open("uring-lock-ro", 4096, SYNCMEM_CREATE, 0600, &rw));
	ASSERT_EQ(0, syncmem_open("uring-lock-ro", 4096, SYNCMEM_RDONLY, 0, &ro));
	syncmem_prep_lock(sqe_of(&self->ring, 102), ro, lock_at(ro, 0), -1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EBADF, next_cqe(&self->ring, NULL, NULL));
	EXPECT_EQ(0, lock_at(rw, 0)->word);
	syncmem_close(ro);
	syncmem_close(rw);
	syncmem_unlink("uring-lock-ro");
	ASSERT_EQ(0, region_waiters(self->r));
}

/* Kernel memory now, in bytes: slab objects plus vmalloc'ed tables. */
static long long kernel_bytes(void)
{
	/* Let RCU free what was replaced or dropped before. */
	usleep(500000);
	return 1024LL * (meminfo_kb("Slab") + meminfo_kb("VmallocUsed"));
}

/* Park @n requests that @prep makes in @ring; the kernel memory they took. */
static long long park(struct __test_metadata *_metadata, struct io_uring *ring, int n,
		      void (*prep)(struct io_uring_sqe *sqe, void *arg, int i), void *arg)
{
	long long before = kernel_bytes();

	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = sqe_of(ring, i);

		if (!sqe) {
			EXPECT_LT(0, io_uring_submit(ring));
			sqe = sqe_of(ring, i);
		}
		prep(sqe, arg, i);
	}
	EXPECT_LT(0, io_uring_submit(ring));
	EXPECT_EQ(0, cqe_ready(ring));
	return kernel_bytes() - before;
}

static void prep_poll(struct io_uring_sqe *sqe, void *arg, int i)
{
	(void)i;
	io_uring_prep_poll_add(sqe, *(int *)arg, POLLIN);
}

static void prep_ring_wait(struct io_uring_sqe *sqe, void *arg, int i)
{
	struct syncmem_region *r = arg;

	syncmem_prep_wait32(sqe, r, (uint32_t *)syncmem_base(r) + i, 0, -1);
}

/*
 * Bytes io_uring itself keeps for every parked URING_CMD besides its
 * request: from 6.10 a copy of its SQE, as two SQEs (6.12 here); before,
 * only for a command it issues again from a worker.
 */
static long long uring_cmd_copy(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return 0;
	return major > 6 || (major == 6 && minor >= 10) ? 2 * sizeof(struct io_uring_sqe) : 0;
}

/*
 * What a parked command costs the module: the kernel memory taken by N
 * parked ring waits on distinct words, less that of N polls parked on an
 * eventfd (io_uring's own request, the same for both; a pipe would add a
 * second poll entry) and io_uring's copy of each command's SQE, within an
 * async wait's budget (async_test): 256 bytes, 2048 on the debug kernel,
 * whose KASAN redzones inflate every object. N is 16384 (4096 on the
 * debug kernel). Untimed waits: a timed one carries its hrtimer besides.
 */
TEST_F(uring, a_parked_command_costs_the_module_little_memory)
{
	const int n = on_debug_kernel() ? 4096 : 16384;
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE | IORING_SETUP_CQE32,
				     .cq_entries = 2 * n };
	long long polls, waits, per_command;
	struct syncmem_region *r;
	struct io_uring ring;
	int efd = eventfd(0, EFD_CLOEXEC);

	ASSERT_LE(0, efd);
	ASSERT_EQ(0, syncmem_open(NULL, (size_t)n * 4, 0, 0, &r));
	ASSERT_EQ(0, io_uring_queue_init_params(4096, &ring, &p));
	polls = park(_metadata, &ring, n, prep_poll, &efd);
	waits = park(_metadata, &ring, n, prep_ring_wait, r);
	EXPECT_EQ((uint64_t)n, region_waiters(r));
	per_command = (waits - polls) / n - uring_cmd_copy();
	TH_LOG("kernel memory per parked request: %lld bytes a poll, %lld a ring wait: %lld the module's",
	       polls / n, waits / n, per_command);
	EXPECT_GE(on_debug_kernel() ? 2048 : 256, per_command);
	/* Every request ends with a CQE: the waits woken, the polls by a write. */
	for (int i = 0; i < n; i++)
		ASSERT_EQ(1, syncmem_notify(r, (uint32_t *)syncmem_base(r) + i, 1));
	ASSERT_EQ(0, eventfd_write(efd, 1));
	for (int i = 0; i < 2 * n; i++)
		ASSERT_LE(0, next_cqe(&ring, NULL, NULL));
	EXPECT_EQ(0, region_waiters(r));
	io_uring_queue_exit(&ring);
	syncmem_close(r);
	close(efd);
}

enum ending { END_EXIT, END_KILL, END_EXEC, END_RING_EXIT };

/*
 * A child parks 64 commands (half with a long timeout): waits, or with
 * @locks LOCKs on two locks this process holds. Then it ends as @how
 * says: done, and its waiters gone, within 3 s; the locks, unlocked, are
 * free (nothing was handed to the child).
 */
static void ends_with_parked(struct __test_metadata *_metadata, struct syncmem_region *r,
			     enum ending how, bool locks)
{
	uint32_t *w = syncmem_base(r);
	int ready[2], go[2], i;

	for (i = 0; locks && i < 2; i++) {
		syncmem_lock_init(lock_at(r, i), 0);
		ASSERT_EQ(0, syncmem_lock(r, lock_at(r, i)));
	}
	int64_t t0;
	char c = 0;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct io_uring ring;

		if (io_uring_queue_init(64, &ring, 0))
			_exit(2);
		for (i = 0; i < 64; i++) {
			if (locks)
				syncmem_prep_lock(io_uring_get_sqe(&ring), r, lock_at(r, i % 2),
						  i & 1 ? 100 * SEC : -1);
			else
				syncmem_prep_wait32(io_uring_get_sqe(&ring), r, &w[100 + i % 8],
						    0, i & 1 ? 100 * SEC : -1);
		}
		if (io_uring_submit(&ring) != 64 || write(ready[1], &c, 1) != 1 ||
		    read(go[0], &c, 1) != 1)
			_exit(3);
		if (how == END_EXEC)
			execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
		if (how == END_RING_EXIT) {
			io_uring_queue_exit(&ring);
			if (write(ready[1], &c, 1) != 1)
				_exit(4);
			pause();
		}
		if (how == END_KILL)
			pause();
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(64, region_waiters(r));
	t0 = now_ns();
	ASSERT_EQ(1, write(go[1], &c, 1));
	if (how == END_KILL)
		kill(pid, SIGKILL);
	if (how == END_RING_EXIT) {
		ASSERT_EQ(1, read(ready[0], &c, 1));
		ASSERT_TRUE(await_waiters(r, 0));
		EXPECT_GT(3 * SEC, now_ns() - t0);
		kill(pid, SIGKILL);
	}
	EXPECT_EQ(how == END_KILL || how == END_RING_EXIT ? 128 + SIGKILL : 0, wait_exit(pid));
	EXPECT_GT(3 * SEC, now_ns() - t0);
	ASSERT_TRUE(await_waiters(r, 0));
	EXPECT_GT(3 * SEC, now_ns() - t0);
	for (i = 0; locks && i < 2; i++) {
		ASSERT_EQ(0, syncmem_unlock(r, lock_at(r, i)));
		EXPECT_EQ(0, lock_at(r, i)->word);
	}
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

TEST_F(uring, exit_with_parked_commands)
{
	ends_with_parked(_metadata, self->r, END_EXIT, false);
}

TEST_F(uring, sigkill_with_parked_commands)
{
	ends_with_parked(_metadata, self->r, END_KILL, false);
}

TEST_F(uring, exec_with_parked_commands)
{
	ends_with_parked(_metadata, self->r, END_EXEC, false);
}

TEST_F(uring, ring_exit_with_parked_commands)
{
	ends_with_parked(_metadata, self->r, END_RING_EXIT, false);
}

TEST_F(uring, sigkill_with_parked_locks)
{
	ends_with_parked(_metadata, self->r, END_KILL, true);
}

TEST_F(uring, exec_with_parked_locks)
{
	ends_with_parked(_metadata, self->r, END_EXEC, true);
}

TEST_F(uring, ring_exit_with_parked_locks)
{
	ends_with_parked(_metadata, self->r, END_RING_EXIT, true);
}

/* A NOTIFY command of any shape on @fd. */
static void prep_raw_notify(struct io_uring_sqe *sqe, int fd, uint32_t op, uint64_t offset,
			    uint32_t count, uint32_t flags)
{
	struct syncmem_uring_notify n = { .offset = offset, .count = count, .flags = flags };

	io_uring_prep_rw(IORING_OP_URING_CMD, sqe, fd, NULL, 0, 0);
	sqe->cmd_op = op;
	memcpy(sqe->cmd, &n, sizeof(n));
}

/* Submit a ring NOTIFY (user_data 100) and return its res; other CQEs go to @others. */
static int ring_notify(struct io_uring *ring, struct syncmem_region *r, uint32_t *w,
		       uint32_t count, uint64_t *others, int *nothers)
{
	uint64_t ud;
	int res, notify_res = INT32_MIN;

	syncmem_prep_notify(sqe_of(ring, 100), r, w, count);
	if (io_uring_submit(ring) != 1)
		return INT32_MIN;
	/* Its CQE is posted as it is issued; a woken ring waiter's may come first. */
	while (cqe_ready(ring) || notify_res == INT32_MIN) {
		res = next_cqe(ring, &ud, NULL);
		if (res == INT32_MIN)
			return INT32_MIN;
		if (ud == 100)
			notify_res = res;
		else if (res == SYNCMEM_OK && others)
			others[(*nothers)++] = ud;
		else
			return INT32_MIN + 1;
	}
	return notify_res;
}

/*
 * A ring NOTIFY wakes what the ioctl wakes: the oldest @count waiters of
 * the word in arrival order, whether ring, eventfd-based or blocking, and
 * reports how many; 0 wakes none, SYNCMEM_ALL every one.
 */
TEST_F(uring, notify_command_wakes_in_fifo_order)
{
	int dev = dev_open(), rfd = syncmem_region_fd(self->r), n = 0;
	uint32_t *w = &self->w32[3];
	void *arg[2] = { self->r, w };
	struct syncmem_completion rec;
	uint64_t woke[8];
	pthread_t t;
	void *ret;

	ASSERT_LE(0, dev);
	*w = 0;
	/* Nobody waits: 0. */
	ASSERT_EQ(0, ring_notify(&self->ring, self->r, w, SYNCMEM_ALL, woke, &n));
	/* Ring 1, eventfd-style async 2, blocking, ring 4: in that order. */
	syncmem_prep_wait32(sqe_of(&self->ring, 1), self->r, w, 0, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_wait_async(dev, rfd, 12, 0, ~0ULL, 2));
	ASSERT_EQ(0, pthread_create(&t, NULL, blocking_wait, arg));
	ASSERT_TRUE(await_waiters(self->r, 3));
	syncmem_prep_wait32(sqe_of(&self->ring, 4), self->r, w, 0, -1);
	io_uring_submit(&self->ring);
	ASSERT_EQ(4, region_waiters(self->r));

	/* Count 0: nobody. */
	ASSERT_EQ(0, ring_notify(&self->ring, self->r, w, 0, woke, &n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(4, region_waiters(self->r));
	/* Count 1: the oldest, the ring waiter 1. */
	ASSERT_EQ(1, ring_notify(&self->ring, self->r, w, 1, woke, &n));
	if (!n)
		woke[n++] = next_cqe(&self->ring, NULL, NULL) == SYNCMEM_OK ? 1 : 0;
	ASSERT_EQ(1, n);
	EXPECT_EQ(1, woke[0]);
	ASSERT_EQ(0, fd_readable(dev));
	ASSERT_EQ(3, region_waiters(self->r));
	/* Count 2: the async waiter, then the blocked thread; ring waiter 4 stays. */
	n = 0;
	ASSERT_EQ(2, ring_notify(&self->ring, self->r, w, 2, woke, &n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(sizeof(rec), read(dev, &rec, sizeof(rec)));
	EXPECT_EQ(2, rec.user_data);
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, rec.result);
	ASSERT_EQ(0, pthread_join(t, &ret));
	EXPECT_EQ(SYNCMEM_OK, (intptr_t)ret);
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(1, region_waiters(self->r));
	/* SYNCMEM_ALL: the rest, one. */
	ASSERT_EQ(1, ring_notify(&self->ring, self->r, w, SYNCMEM_ALL, woke, &n));
	if (!n)
		woke[n++] = next_cqe(&self->ring, NULL, NULL) == SYNCMEM_OK ? 4 : 0;
	ASSERT_EQ(1, n);
	EXPECT_EQ(4, woke[0]);
	ASSERT_EQ(0, region_waiters(self->r));
	ASSERT_FALSE(cqe_ready(&self->ring));
	close(dev);
}

/* Queue @n ring waits on @w, user_data @ud0 on. */
static void count_case(struct __test_metadata *_metadata, struct io_uring *ring,
		       struct syncmem_region *r, uint32_t *w, int n, uint64_t ud0)
{
	for (int i = 0; i < n; i++)
		syncmem_prep_wait32(sqe_of(ring, ud0 + i), r, w, 0, -1);
	ASSERT_EQ(n, io_uring_submit(ring));
}

/*
 * Counts: the ring NOTIFY's res equals what SYNCMEM_IOC_NOTIFY returns on
 * the same queue, for counts below, at and above the number waiting.
 */
TEST_F(uring, notify_command_counts_as_the_ioctl)
{
	static const uint32_t counts[] = { 0, 1, 2, 3, 5, 6, 7, 100, UINT32_MAX };
	struct syncmem_notify arg = { .offset = 5 * 4 };
	int rfd = syncmem_region_fd(self->r), n, want;
	uint32_t *w = &self->w32[5], mask;
	uint64_t woke[16];

	*w = 0;
	for (unsigned int i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		/* The ioctl on 6 ring waiters, then what is left is woken. */
		count_case(_metadata, &self->ring, self->r, w, 6, 10);
		arg.count = counts[i];
		want = raw_ioctl(rfd, SYNCMEM_IOC_NOTIFY, &arg);
		ASSERT_EQ(counts[i] < 6 ? (int)counts[i] : 6, want);
		for (int k = 0; k < want; k++)
			ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, NULL, NULL));
		syncmem_notify(self->r, w, SYNCMEM_ALL);
		for (int k = want; k < 6; k++)
			ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, NULL, NULL));
		ASSERT_EQ(0, region_waiters(self->r));
		/* The command on 6 others: the same count, the oldest first. */
		count_case(_metadata, &self->ring, self->r, w, 6, 10);
		n = 0;
		ASSERT_EQ(want, ring_notify(&self->ring, self->r, w, counts[i], woke, &n)) {
			TH_LOG("count %u", counts[i]);
		}
		while (n < want)
			ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, &woke[n++], NULL));
		/* The oldest, in whatever order their CQEs come. */
		mask = 0;
		for (int k = 0; k < want; k++)
			mask |= 1U << (woke[k] - 10);
		EXPECT_EQ((1U << want) - 1, mask);
		ASSERT_EQ(6 - want, region_waiters(self->r));
		ASSERT_FALSE(cqe_ready(&self->ring));
		syncmem_notify(self->r, w, SYNCMEM_ALL);
		for (int k = want; k < 6; k++)
			ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, NULL, NULL));
		ASSERT_EQ(0, region_waiters(self->r));
	}
}

/*
 * Malformed NOTIFY commands get the ioctl's errno for the same argument,
 * and a timeout in the cmd_op (NOTIFY never waits) is refused.
 */
TEST_F(uring, malformed_notify_commands_are_refused)
{
	struct {
		uint32_t op;
		uint64_t offset;
		uint32_t flags;
		int res;
	} bad[] = {
		{ SYNCMEM_URING_NOTIFY, 2, 0, -EINVAL },		/* misaligned */
		{ SYNCMEM_URING_NOTIFY, 4094, 0, -EINVAL },
		{ SYNCMEM_URING_NOTIFY, 4096, 0, -EINVAL },		/* past the end */
		{ SYNCMEM_URING_NOTIFY, 1ULL << 32, 0, -EINVAL },
		{ SYNCMEM_URING_NOTIFY, ~0ULL - 3, 0, -EINVAL },
		{ SYNCMEM_URING_NOTIFY, 0, 1, -EINVAL },		/* flags */
		{ SYNCMEM_URING_NOTIFY, 0, 1U << 31, -EINVAL },
		{ SYNCMEM_URING_NOTIFY, 4092, 0, 0 },			/* the last word */
		{ SYNCMEM_URING_CMD_OP(SYNCMEM_URING_NOTIFY, 1), 0, 0, -EINVAL },
		{ SYNCMEM_URING_CMD_OP(SYNCMEM_URING_NOTIFY, SYNCMEM_URING_NO_TIMEOUT), 0, 0,
		  -EINVAL },
		{ SYNCMEM_URING_NOTIFY | SYNCMEM_URING_WAIT32, 0, 0, -EINVAL },
	};
	int rfd = syncmem_region_fd(self->r);
	struct syncmem_notify arg;

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		prep_raw_notify(sqe_of(&self->ring, i), rfd, bad[i].op, bad[i].offset, 1,
				bad[i].flags);
		io_uring_submit(&self->ring);
		EXPECT_EQ(bad[i].res, next_cqe(&self->ring, NULL, NULL)) {
			TH_LOG("command %u", i);
		}
		if (bad[i].op != SYNCMEM_URING_NOTIFY)
			continue;
		arg = (struct syncmem_notify){ .offset = bad[i].offset, .count = 1,
					       .flags = bad[i].flags };
		EXPECT_EQ(bad[i].res, raw_ioctl(rfd, SYNCMEM_IOC_NOTIFY, &arg)) {
			TH_LOG("ioctl %u", i);
		}
	}
	/* Through the library: outside the region, misaligned, no region. */
	syncmem_prep_notify(sqe_of(&self->ring, 50), self->r, &arg, 1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EINVAL, next_cqe(&self->ring, NULL, NULL));
	syncmem_prep_notify(sqe_of(&self->ring, 51), self->r, (char *)self->w32 + 1, 1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EINVAL, next_cqe(&self->ring, NULL, NULL));
	syncmem_prep_notify(sqe_of(&self->ring, 52), self->r, NULL, 1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EINVAL, next_cqe(&self->ring, NULL, NULL));
	syncmem_prep_notify(sqe_of(&self->ring, 53), NULL, self->w32, 1);
	io_uring_submit(&self->ring);
	EXPECT_EQ(-EBADF, next_cqe(&self->ring, NULL, NULL));
	ASSERT_FALSE(cqe_ready(&self->ring));
	ASSERT_EQ(0, region_waiters(self->r));
}

/*
 * A read-only region fd: its NOTIFY is refused with -EBADF as the ioctl's
 * is, waking nobody; its waits are observers, which a NOTIFY wakes all of
 * besides its count (none with count 0), as the ioctl does.
 */
TEST_F(uring, notify_command_on_a_read_only_fd)
{
	struct syncmem_region *rw, *ro;
	uint32_t *w, *wro;
	uint64_t woke[8];
	char name[64];
	int n = 0;

	snprintf(name, sizeof(name), "uring-notify-ro-%d", getpid());
	ASSERT_EQ(0, syncmem_open(name, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &rw));
	ASSERT_EQ(0, syncmem_open(name, 0, SYNCMEM_RDONLY, 0, &ro));
	syncmem_unlink(name);
	w = syncmem_base(rw);
	wro = syncmem_base(ro);
	/* Writable ring waiter 1, observer 2, writable 3. */
	syncmem_prep_wait32(sqe_of(&self->ring, 1), rw, w, 0, -1);
	syncmem_prep_wait32(sqe_of(&self->ring, 2), ro, wro, 0, -1);
	syncmem_prep_wait32(sqe_of(&self->ring, 3), rw, w, 0, -1);
	ASSERT_EQ(3, io_uring_submit(&self->ring));
	ASSERT_EQ(3, region_waiters(rw));
	/* Through the read-only fd: -EBADF, as the ioctl, and nobody woken. */
	EXPECT_EQ(-EBADF, syncmem_notify(ro, wro, SYNCMEM_ALL));
	ASSERT_EQ(-EBADF, ring_notify(&self->ring, ro, wro, SYNCMEM_ALL, woke, &n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(-EBADF, ring_notify(&self->ring, ro, wro, 0, woke, &n));
	ASSERT_EQ(3, region_waiters(rw));
	/* Count 0 wakes nobody, observers neither. */
	ASSERT_EQ(0, ring_notify(&self->ring, rw, w, 0, woke, &n));
	ASSERT_EQ(0, n);
	ASSERT_EQ(3, region_waiters(rw));
	/* Count 1: waiter 1 and the observer; waiter 3 stays. */
	ASSERT_EQ(2, ring_notify(&self->ring, rw, w, 1, woke, &n));
	while (n < 2)
		ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, &woke[n++], NULL));
	EXPECT_EQ(3, woke[0] + woke[1]);
	ASSERT_EQ(1, region_waiters(rw));
	ASSERT_FALSE(cqe_ready(&self->ring));
	n = 0;
	ASSERT_EQ(1, ring_notify(&self->ring, rw, w, 1, woke, &n));
	while (n < 1)
		ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, &woke[n++], NULL));
	EXPECT_EQ(3, woke[0]);
	ASSERT_EQ(0, region_waiters(rw));
	syncmem_close(ro);
	syncmem_close(rw);
}

/*
 * [NOTIFY the peer, WAIT for it] in one submit: the NOTIFY wakes the peer
 * as the submit issues it, the wait is queued when the submit returns,
 * and IOSQE_CQE_SKIP_SUCCESS drops the NOTIFY's CQE (a failed one still
 * posts its own), linked or not, and issued from io-wq (IOSQE_ASYNC).
 */
TEST_F(uring, notify_and_wait_in_one_submit)
{
	static const uint8_t notify_flags[] = {
		IOSQE_CQE_SKIP_SUCCESS,
		IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK,
		IOSQE_CQE_SKIP_SUCCESS | IOSQE_ASYNC,
	};
	uint32_t *peer = &self->w32[6], *mine = &self->w32[7];
	void *arg[2] = { self->r, peer };
	struct io_uring_sqe *sqe;
	uint64_t ud;
	pthread_t t;
	void *ret;

	for (unsigned int i = 0; i < sizeof(notify_flags); i++) {
		*peer = 0;
		*mine = 0;
		ASSERT_EQ(0, pthread_create(&t, NULL, blocking_wait, arg));
		ASSERT_TRUE(await_waiters(self->r, 1));
		sqe = sqe_of(&self->ring, 1);
		syncmem_prep_notify(sqe, self->r, peer, 1);
		sqe->flags |= notify_flags[i];
		syncmem_prep_wait32(sqe_of(&self->ring, 2), self->r, mine, 0, 10 * SEC);
		ASSERT_EQ(2, io_uring_submit(&self->ring));
		ASSERT_EQ(0, pthread_join(t, &ret));
		EXPECT_EQ(SYNCMEM_OK, (intptr_t)ret) {
			TH_LOG("flags %#x", notify_flags[i]);
		}
		ASSERT_TRUE(await_waiters(self->r, 1));
		ASSERT_FALSE(cqe_ready(&self->ring)) {
			TH_LOG("flags %#x: a CQE for a NOTIFY that woke its peer", notify_flags[i]);
		}
		ASSERT_EQ(1, syncmem_notify(self->r, mine, 1));
		ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, &ud, NULL));
		EXPECT_EQ(2, ud);
		ASSERT_FALSE(cqe_ready(&self->ring));
	}
	/* A failing NOTIFY posts its CQE despite the flag; the wait is queued all the same. */
	sqe = sqe_of(&self->ring, 3);
	syncmem_prep_notify(sqe, self->r, (char *)peer + 2, 1);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	syncmem_prep_wait32(sqe_of(&self->ring, 4), self->r, mine, 0, 10 * SEC);
	ASSERT_EQ(2, io_uring_submit(&self->ring));
	ASSERT_EQ(-EINVAL, next_cqe(&self->ring, &ud, NULL));
	EXPECT_EQ(3, ud);
	ASSERT_EQ(1, region_waiters(self->r));
	ASSERT_EQ(1, syncmem_notify(self->r, mine, 1));
	ASSERT_EQ(SYNCMEM_OK, next_cqe(&self->ring, &ud, NULL));
	EXPECT_EQ(4, ud);
	ASSERT_EQ(0, region_waiters(self->r));
}

/*
 * Two processes bounce a counter, each side's every round one
 * io_uring_submit_and_wait() of [NOTIFY peer, WAIT own]: no round loses a
 * wake-up (each ends within the timeout) and no NOTIFY posts a CQE.
 */
TEST_F(uring, notify_and_wait_ping_pong_between_processes)
{
	uint32_t *ping = &self->w32[8], *pong = &self->w32[9];
	const uint32_t rounds = 2000;
	pid_t pid;

	*ping = 0;
	*pong = 0;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct io_uring ring;
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;
		uint32_t v = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (io_uring_queue_init(8, &ring, 0))
			_exit(2);
		while (v < rounds) {
			uint32_t seen = __atomic_load_n(ping, __ATOMIC_ACQUIRE);

			if (seen != v) {
				/* The parent's turn was posted: answer it, then wait for the next. */
				v = seen;
				__atomic_store_n(pong, v, __ATOMIC_RELEASE);
				sqe = io_uring_get_sqe(&ring);
				syncmem_prep_notify(sqe, self->r, pong, 1);
				io_uring_sqe_set_data64(sqe, 1);
				sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
			}
			if (v == rounds) {
				io_uring_submit(&ring);		/* the last answer */
				break;
			}
			sqe = io_uring_get_sqe(&ring);
			syncmem_prep_wait32(sqe, self->r, ping, v, 10 * SEC);
			io_uring_sqe_set_data64(sqe, 2);
			if (io_uring_submit_and_wait(&ring, 1) < 1 || io_uring_wait_cqe(&ring, &cqe))
				_exit(3);
			if (cqe->user_data != 2 || cqe->res < 0 || cqe->res == SYNCMEM_TIMED_OUT)
				_exit(4);
			io_uring_cqe_seen(&ring, cqe);
		}
		io_uring_queue_exit(&ring);
		_exit(0);
	}
	for (uint32_t i = 1; i <= rounds; i++) {
		struct io_uring_cqe *cqe;
		struct io_uring_sqe *sqe;

		__atomic_store_n(ping, i, __ATOMIC_RELEASE);
		sqe = sqe_of(&self->ring, 1);
		syncmem_prep_notify(sqe, self->r, ping, 1);
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		while (__atomic_load_n(pong, __ATOMIC_ACQUIRE) != i) {
			syncmem_prep_wait32(sqe_of(&self->ring, 2), self->r, pong, i - 1, 10 * SEC);
			ASSERT_LE(1, io_uring_submit_and_wait(&self->ring, 1));
			ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
			ASSERT_EQ(2, cqe->user_data) {
				TH_LOG("round %u: res %d", i, cqe->res);
			}
			ASSERT_TRUE(cqe->res == SYNCMEM_OK || cqe->res == SYNCMEM_NOT_EQUAL) {
				TH_LOG("round %u: res %d", i, cqe->res);
			}
			io_uring_cqe_seen(&self->ring, cqe);
		}
		/* It answered before the wait was queued: the NOTIFY still goes. */
		if (io_uring_sq_ready(&self->ring))
			ASSERT_EQ(1, io_uring_submit(&self->ring));
	}
	EXPECT_EQ(0, wait_exit(pid));
	ASSERT_EQ(0, region_waiters(self->r));
}

TEST_HARNESS_MAIN
