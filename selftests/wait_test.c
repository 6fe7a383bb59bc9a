// SPDX-License-Identifier: GPL-2.0
/*
 * Wait queues: the Atomics.wait/notify behaviours across processes and
 * threads, timeouts, signals, SIGKILL, 10,000 waiters, hand-off and every
 * bad argument.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "syncmem.h"

#define REGION_SIZE (64 * 1024)
#define SLACK_NS (500 * 1000000LL)	/* TCG and the debug kernel are slow */

/* Layout of the test region. */
struct shared {
	uint32_t word;			/* offset 0: what waiters wait on */
	uint32_t word4;			/* offset 4 */
	uint64_t word8;			/* offset 8 */
	uint32_t word12[13];		/* offset 16.. */
	_Atomic uint32_t seq;		/* wake order cursor */
	_Atomic uint32_t handled;	/* signal handler runs */
	uint32_t order[256];
	_Atomic int results[256];
};

FIXTURE(wait) {
	struct syncmem_region *r;
	struct shared *sh;
	int fd;
};

FIXTURE_SETUP(wait)
{
	ASSERT_EQ(0, syncmem_open(NULL, REGION_SIZE, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	self->fd = syncmem_region_fd(self->r);
}

FIXTURE_TEARDOWN(wait)
{
	syncmem_close(self->r);
}

struct waiter_arg {
	struct syncmem_region *r;
	struct shared *sh;
	uint32_t id;
	uint32_t *addr;
	int64_t timeout;
};

/* Wait on the word; on return record arrival in the wake order. */
static void *waiter_thread(void *p)
{
	struct waiter_arg *a = p;
	int ret = syncmem_wait32(a->r, a->addr, 0, a->timeout);

	a->sh->order[atomic_fetch_add(&a->sh->seq, 1)] = a->id;
	a->sh->results[a->id] = ret;
	return NULL;
}

static pid_t spawn_waiter_process(struct waiter_arg *a)
{
	pid_t pid = fork();

	if (pid == 0) {
		waiter_thread(a);
		_exit(0);
	}
	return pid;
}

TEST_F(wait, not_equal_returns_at_once_and_queues_nothing)
{
	self->sh->word = 5;
	self->sh->word8 = 0x100000000ULL;
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait32(self->r, &self->sh->word, 4, SYNCMEM_FOREVER));
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait64(self->r, &self->sh->word8, 0, SYNCMEM_FOREVER));
	/* 64-bit compare uses all 64 bits. */
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait64(self->r, &self->sh->word8, 0x200000000ULL, 0));
	EXPECT_EQ(0, fd_waiters(self->fd));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
}

/* Waiters from processes and threads, queued one by one, wake in that order. */
TEST_F(wait, fifo_order_across_processes_and_threads)
{
	enum { N = 12 };
	struct waiter_arg args[N];
	pthread_t threads[N];
	pid_t pids[N];
	int i;

	for (i = 0; i < N; i++) {
		args[i] = (struct waiter_arg){ self->r, self->sh, i, &self->sh->word,
					       SYNCMEM_FOREVER };
		if (i % 2) {
			ASSERT_EQ(0, pthread_create(&threads[i], NULL, waiter_thread, &args[i]));
		} else {
			pids[i] = spawn_waiter_process(&args[i]);
			ASSERT_LT(0, pids[i]);
		}
		ASSERT_TRUE(await_fd_waiters(self->fd, i + 1));
	}
	for (i = 0; i < N; i++) {
		ASSERT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
		/* Let the woken one record itself before waking the next. */
		for (int t = 0; t < 10000 && atomic_load(&self->sh->seq) != (uint32_t)i + 1; t++)
			usleep(1000);
		ASSERT_EQ(i + 1, atomic_load(&self->sh->seq));
	}
	for (i = 0; i < N; i++) {
		EXPECT_EQ(i, self->sh->order[i]);
		if (i % 2) {
			pthread_join(threads[i], NULL);
		} else {
			EXPECT_EQ(0, wait_exit(pids[i]));
		}
		EXPECT_EQ(SYNCMEM_OK, self->sh->results[i]);
	}
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, 1));
}

TEST_F(wait, notify_counts_are_exact)
{
	struct waiter_arg args[5];
	pthread_t threads[5];
	int i;

	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	for (i = 0; i < 5; i++) {
		args[i] = (struct waiter_arg){ self->r, self->sh, i, &self->sh->word,
					       SYNCMEM_FOREVER };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, waiter_thread, &args[i]));
	}
	ASSERT_TRUE(await_fd_waiters(self->fd, 5));
	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, 0));
	EXPECT_EQ(5, fd_waiters(self->fd));
	EXPECT_EQ(2, syncmem_notify(self->r, &self->sh->word, 2));
	EXPECT_EQ(3, fd_waiters(self->fd));
	EXPECT_EQ(3, syncmem_notify(self->r, &self->sh->word, 100));
	EXPECT_EQ(0, fd_waiters(self->fd));
	for (i = 0; i < 5; i++) {
		pthread_join(threads[i], NULL);
		EXPECT_EQ(SYNCMEM_OK, self->sh->results[i]);
	}
}

TEST_F(wait, notify_before_wait_is_not_remembered)
{
	int64_t t0;

	EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	t0 = now_ns();
	EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait32(self->r, &self->sh->word, 0, 50000000));
	EXPECT_LE(50000000, now_ns() - t0);
}

TEST_F(wait, other_offsets_are_untouched_and_widths_share_a_queue)
{
	struct waiter_arg a32 = { self->r, self->sh, 0, (uint32_t *)&self->sh->word8,
				  SYNCMEM_FOREVER };
	struct waiter_arg a4 = { self->r, self->sh, 1, &self->sh->word4, SYNCMEM_FOREVER };
	struct waiter_arg a12 = { self->r, self->sh, 2, (uint32_t *)&self->sh->word8 + 1,
				  SYNCMEM_FOREVER };
	pthread_t t32, t4, t12;
	pid_t p64;

	/* A 64-bit waiter at offset 8 (a process) and a 32-bit one at 8. */
	p64 = fork();
	ASSERT_LE(0, p64);
	if (p64 == 0)
		_exit(syncmem_wait64(self->r, &self->sh->word8, 0, SYNCMEM_FOREVER));
	ASSERT_TRUE(await_fd_waiters(self->fd, 1));
	ASSERT_EQ(0, pthread_create(&t32, NULL, waiter_thread, &a32));
	ASSERT_TRUE(await_fd_waiters(self->fd, 2));
	/* Offset 12 (8 + 4) and offset 4 are other queues. */
	ASSERT_EQ(0, pthread_create(&t12, NULL, waiter_thread, &a12));
	ASSERT_EQ(0, pthread_create(&t4, NULL, waiter_thread, &a4));
	ASSERT_TRUE(await_fd_waiters(self->fd, 4));

	EXPECT_EQ(2, syncmem_notify(self->r, &self->sh->word8, SYNCMEM_ALL));
	EXPECT_EQ(SYNCMEM_OK, wait_exit(p64));
	pthread_join(t32, NULL);
	EXPECT_EQ(2, fd_waiters(self->fd));
	EXPECT_EQ(1, syncmem_notify(self->r, (uint32_t *)&self->sh->word8 + 1, SYNCMEM_ALL));
	pthread_join(t12, NULL);
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word4, SYNCMEM_ALL));
	pthread_join(t4, NULL);
	EXPECT_EQ(0, fd_waiters(self->fd));
}

TEST_F(wait, timeouts)
{
	static const int64_t timeouts[] = { 1000000, 20000000, 150000000 };
	int64_t t0, took;
	struct syncmem_wait raw = { .size = 4, .deadline_ns = 1 };

	for (unsigned i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		t0 = now_ns();
		EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait32(self->r, &self->sh->word, 0, timeouts[i]));
		took = now_ns() - t0;
		EXPECT_LE(timeouts[i], took);
		EXPECT_GT(timeouts[i] + SLACK_NS, took);
		t0 = now_ns();
		EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait64(self->r, &self->sh->word8, 0, timeouts[i]));
		took = now_ns() - t0;
		EXPECT_LE(timeouts[i], took);
		EXPECT_GT(timeouts[i] + SLACK_NS, took);
	}
	/* Timeout 0: checks the word, never queues. */
	EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait32(self->r, &self->sh->word, 0, 0));
	EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait32(self->r, &self->sh->word, 1, 0));
	/* A deadline in the past, through the raw ioctl. */
	EXPECT_EQ(SYNCMEM_WAIT_TIMED_OUT, raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &raw));
	raw.expected = 3;
	EXPECT_EQ(SYNCMEM_WAIT_NOT_EQUAL, raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &raw));
	EXPECT_EQ(0, fd_waiters(self->fd));
}

static _Atomic uint32_t *handled_counter;

static void count_signal(int sig)
{
	(void)sig;
	atomic_fetch_add(handled_counter, 1);
}

/* Install a handler without SA_RESTART: the wait must continue anyway. */
static void install_handler(struct shared *sh)
{
	struct sigaction sa = { .sa_handler = count_signal };

	handled_counter = &sh->handled;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

TEST_F(wait, signal_handler_does_not_end_the_wait)
{
	pid_t pid;
	int i;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		install_handler(self->sh);
		_exit(syncmem_wait32(self->r, &self->sh->word, 0, SYNCMEM_FOREVER));
	}
	for (i = 1; i <= 5; i++) {
		ASSERT_TRUE(await_fd_waiters(self->fd, 1));
		ASSERT_EQ(0, kill(pid, SIGUSR1));
		for (int t = 0; t < 10000 && atomic_load(&self->sh->handled) != (uint32_t)i; t++)
			usleep(1000);
		ASSERT_EQ(i, atomic_load(&self->sh->handled));
	}
	/* Still waiting after five handler runs; a notify ends it with OK. */
	ASSERT_TRUE(await_fd_waiters(self->fd, 1));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(SYNCMEM_OK, wait_exit(pid));
}

TEST_F(wait, signals_keep_the_deadline)
{
	const int64_t timeout = 400000000;
	_Atomic int64_t *took = (void *)&self->sh->results[0];
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int64_t t0 = now_ns();
		int ret;

		install_handler(self->sh);
		ret = syncmem_wait32(self->r, &self->sh->word, 0, timeout);
		*took = now_ns() - t0;
		_exit(ret);
	}
	ASSERT_TRUE(await_fd_waiters(self->fd, 1));
	for (int i = 0; i < 6; i++) {
		kill(pid, SIGUSR1);
		usleep(40000);
	}
	EXPECT_EQ(SYNCMEM_TIMED_OUT, wait_exit(pid));
	EXPECT_LE(timeout, *took);
	EXPECT_GT(timeout + SLACK_NS, *took);
	EXPECT_LE(1, atomic_load(&self->sh->handled));
}

TEST_F(wait, sigkill_of_a_queued_waiter)
{
	struct waiter_arg a[3];
	pid_t pids[3];
	int i;

	for (i = 0; i < 3; i++) {
		a[i] = (struct waiter_arg){ self->r, self->sh, i, &self->sh->word,
					    SYNCMEM_FOREVER };
		pids[i] = spawn_waiter_process(&a[i]);
		ASSERT_LT(0, pids[i]);
		ASSERT_TRUE(await_fd_waiters(self->fd, i + 1));
	}
	ASSERT_EQ(0, kill(pids[1], SIGKILL));
	EXPECT_EQ(128 + SIGKILL, wait_exit(pids[1]));
	EXPECT_EQ(2, fd_waiters(self->fd));
	/* Only the live waiters are counted, in their order. */
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, 1));
	EXPECT_EQ(0, wait_exit(pids[0]));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	EXPECT_EQ(0, wait_exit(pids[2]));
	EXPECT_EQ(0, self->sh->order[0]);
	EXPECT_EQ(2, self->sh->order[1]);
}

static void *plain_waiter(void *p)
{
	struct waiter_arg *a = p;

	return (void *)(intptr_t)syncmem_wait32(a->r, a->addr, 0, SYNCMEM_FOREVER);
}

/* Thread creation is slow under TCG and the debug kernel: allow minutes. */
TEST_F_TIMEOUT(wait, ten_thousand_waiters_one_notify_all, 600)
{
	/* The debug kernel: a fifth of the threads (10000 take it minutes). */
	const int N = on_debug_kernel() ? 2000 : 10000;
	struct waiter_arg arg = { self->r, self->sh, 0, &self->sh->word, SYNCMEM_FOREVER };
	pthread_t *threads = calloc(N, sizeof(*threads));
	pthread_attr_t attr;
	struct syncmem_stats st;
	int dev, i, ok = 0;
	void *ret;
	FILE *f;

	/* Small guests allow fewer threads and pids than this by default. */
	f = fopen("/proc/sys/kernel/threads-max", "w");
	if (f) {
		fprintf(f, "%d\n", 4 * N);
		fclose(f);
	}
	f = fopen("/proc/sys/kernel/pid_max", "w");
	if (f) {
		fprintf(f, "%d\n", 4 * N);
		fclose(f);
	}
	ASSERT_NE(NULL, threads);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < N; i++) {
		ASSERT_EQ(0, pthread_create(&threads[i], &attr, plain_waiter, &arg));
	}
	ASSERT_TRUE(await_fd_waiters(self->fd, N));
	dev = dev_open();
	st = get_stats(dev);
	EXPECT_EQ(N, st.waiters);
	EXPECT_EQ(N, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	for (i = 0; i < N; i++) {
		pthread_join(threads[i], &ret);
		ok += (intptr_t)ret == SYNCMEM_OK;
	}
	EXPECT_EQ(N, ok);
	EXPECT_EQ(0, get_stats(dev).waiters);
	close(dev);
	free(threads);
}

TEST_F(wait, handoff_with_and_without_a_waiter)
{
	struct syncmem_wait raw = { .offset = 0, .size = 4, .expected = 0,
				    .deadline_ns = SYNCMEM_NO_DEADLINE };
	pid_t first, second;

	/* Nobody waits: the value is stored. */
	EXPECT_EQ(0, syncmem_handoff32(self->r, &self->sh->word4, 7));
	EXPECT_EQ(7, self->sh->word4);
	EXPECT_EQ(0, syncmem_handoff64(self->r, &self->sh->word8, 0x123456789ULL));
	EXPECT_EQ(0x123456789ULL, self->sh->word8);
	EXPECT_EQ(0, fd_waiters(self->fd));

	/* Two waiters: the hand-off wakes the oldest and leaves the word alone. */
	first = fork();
	ASSERT_LE(0, first);
	if (first == 0)
		_exit(raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &raw));
	ASSERT_TRUE(await_fd_waiters(self->fd, 1));
	second = fork();
	ASSERT_LE(0, second);
	if (second == 0)
		_exit(raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &raw));
	ASSERT_TRUE(await_fd_waiters(self->fd, 2));
	EXPECT_EQ(1, syncmem_handoff32(self->r, &self->sh->word, 9));
	EXPECT_EQ(0, self->sh->word);
	EXPECT_EQ(SYNCMEM_WAIT_HANDED_OFF, wait_exit(first));
	EXPECT_EQ(1, fd_waiters(self->fd));
	EXPECT_EQ(1, syncmem_notify(self->r, &self->sh->word, SYNCMEM_ALL));
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, wait_exit(second));
}

TEST_F(wait, handoff_add_counts_the_value_or_wakes_the_oldest)
{
	struct syncmem_handoff h = { .offset = 8, .size = 8, .value = 1,
				     .flags = SYNCMEM_HANDOFF_ADD };
	struct syncmem_wait raw = { .offset = 8, .size = 8, .expected = 1ULL << 32,
				    .deadline_ns = SYNCMEM_NO_DEADLINE };
	pid_t waiter;

	/* Nobody waits: added, wrapping modulo the word's width. */
	self->sh->word8 = 5;
	EXPECT_EQ(SYNCMEM_HANDOFF_STORED, raw_ioctl(self->fd, SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(6, self->sh->word8);
	h.value = ~0ULL;	/* adding 2^64 - 1 is subtracting one */
	EXPECT_EQ(SYNCMEM_HANDOFF_STORED, raw_ioctl(self->fd, SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(5, self->sh->word8);
	self->sh->word4 = 0xffffffff;
	h = (struct syncmem_handoff){ .offset = 4, .size = 4, .value = 2,
				      .flags = SYNCMEM_HANDOFF_ADD };
	EXPECT_EQ(SYNCMEM_HANDOFF_STORED, raw_ioctl(self->fd, SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(1, self->sh->word4);

	/* A waiter: handed off, the word untouched. */
	self->sh->word8 = 1ULL << 32;
	waiter = fork();
	ASSERT_LE(0, waiter);
	if (waiter == 0)
		_exit(raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &raw));
	ASSERT_TRUE(await_fd_waiters(self->fd, 1));
	h = (struct syncmem_handoff){ .offset = 8, .size = 8, .value = 1,
				      .flags = SYNCMEM_HANDOFF_ADD };
	EXPECT_EQ(SYNCMEM_HANDOFF_WOKE, raw_ioctl(self->fd, SYNCMEM_IOC_HANDOFF, &h));
	EXPECT_EQ(SYNCMEM_WAIT_HANDED_OFF, wait_exit(waiter));
	EXPECT_EQ(1ULL << 32, self->sh->word8);
}

TEST_F(wait, bad_arguments)
{
	struct syncmem_wait w;
	struct syncmem_notify n;
	struct syncmem_handoff h;
	struct syncmem_region *ro, *small;
	uint32_t local = 0;
	int dev;

#define WAIT(...) (w = (struct syncmem_wait){ .deadline_ns = 0, __VA_ARGS__ }, \
		   raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, &w))
	EXPECT_EQ(SYNCMEM_WAIT_TIMED_OUT, WAIT(.size = 4));
	EXPECT_EQ(-EINVAL, WAIT(.size = 0));
	EXPECT_EQ(-EINVAL, WAIT(.size = 2));
	EXPECT_EQ(-EINVAL, WAIT(.size = 16));
	EXPECT_EQ(-EINVAL, WAIT(.size = 4, .offset = 2));
	EXPECT_EQ(-EINVAL, WAIT(.size = 8, .offset = 4));
	EXPECT_EQ(-EINVAL, WAIT(.size = 4, .offset = REGION_SIZE));
	EXPECT_EQ(-EINVAL, WAIT(.size = 4, .offset = ~0ULL - 3));
	EXPECT_EQ(-EINVAL, WAIT(.size = 4, .flags = 2));
	EXPECT_EQ(-EINVAL, WAIT(.size = 4, .expected = 1ULL << 32));
	EXPECT_EQ(SYNCMEM_WAIT_TIMED_OUT, WAIT(.size = 4, .offset = REGION_SIZE - 4));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SYNCMEM_IOC_WAIT, NULL));
#undef WAIT
#define NOTIFY(...) (n = (struct syncmem_notify){ __VA_ARGS__ }, \
		     raw_ioctl(self->fd, SYNCMEM_IOC_NOTIFY, &n))
	EXPECT_EQ(0, NOTIFY(.count = 1));
	EXPECT_EQ(-EINVAL, NOTIFY(.offset = 2, .count = 1));
	EXPECT_EQ(-EINVAL, NOTIFY(.offset = REGION_SIZE, .count = 1));
	EXPECT_EQ(-EINVAL, NOTIFY(.count = 1, .flags = 2));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SYNCMEM_IOC_NOTIFY, (void *)1));
#undef NOTIFY
#define HANDOFF(...) (h = (struct syncmem_handoff){ __VA_ARGS__ }, \
		      raw_ioctl(self->fd, SYNCMEM_IOC_HANDOFF, &h))
	EXPECT_EQ(-EINVAL, HANDOFF(.size = 3));
	EXPECT_EQ(-EINVAL, HANDOFF(.size = 4, .offset = 1));
	EXPECT_EQ(-EINVAL, HANDOFF(.size = 8, .offset = REGION_SIZE - 4));
	EXPECT_EQ(-EINVAL, HANDOFF(.size = 4, .value = 1ULL << 32));
	EXPECT_EQ(-EINVAL, HANDOFF(.size = 4, .flags = 4));
	EXPECT_EQ(-EINVAL, HANDOFF(.size = 4, .flags = SYNCMEM_HANDOFF_ADD, .value = 1ULL << 32));
	EXPECT_EQ(-EFAULT, raw_ioctl(self->fd, SYNCMEM_IOC_HANDOFF, NULL));
#undef HANDOFF

	/* Wait ioctls belong to region fds, not to the handle. */
	dev = dev_open();
	EXPECT_EQ(-ENOTTY, raw_ioctl(dev, SYNCMEM_IOC_WAIT, &w));
	close(dev);

	/* The library: addresses outside the mapping, misaligned, NULL. */
	EXPECT_EQ(-EINVAL, syncmem_wait32(self->r, &local, 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_wait32(self->r, (uint32_t *)((char *)self->sh + 2), 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_wait64(self->r, (uint64_t *)&self->sh->word4, 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_wait32(self->r, (uint32_t *)((char *)self->sh + REGION_SIZE), 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_wait32(NULL, &self->sh->word, 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_notify(self->r, &local, 1));
	EXPECT_EQ(-EINVAL, syncmem_notify(self->r, (char *)self->sh + 1, 1));
	EXPECT_EQ(-EINVAL, syncmem_handoff32(self->r, &local, 1));
	EXPECT_EQ(-EINVAL, syncmem_handoff64(self->r, (uint64_t *)&self->sh->word4, 1));

	/* A region whose size is not a multiple of 8: the last word must fit. */
	ASSERT_EQ(0, syncmem_open(NULL, 12, 0, 0, &small));
	EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait32(small, (uint32_t *)syncmem_base(small) + 2, 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_wait64(small, (uint64_t *)syncmem_base(small) + 1, 0, 0));
	syncmem_close(small);

	/* Read-only region fd: waiting is allowed, notify and hand-off are -EBADF. */
	{
		char name[64];

		snprintf(name, sizeof(name), "wait-ro-%d", getpid());
		ASSERT_EQ(0, syncmem_open(name, 4096, SYNCMEM_CREATE, 0600, &small));
		ASSERT_EQ(0, syncmem_open(name, 0, SYNCMEM_RDONLY, 0, &ro));
		syncmem_unlink(name);
		EXPECT_EQ(SYNCMEM_NOT_EQUAL, syncmem_wait32(ro, syncmem_base(ro), 1, 0));
		EXPECT_EQ(SYNCMEM_TIMED_OUT, syncmem_wait32(ro, syncmem_base(ro), 0, 1000));
		EXPECT_EQ(-EBADF, syncmem_notify(ro, syncmem_base(ro), 1));
		EXPECT_EQ(-EBADF, syncmem_handoff32(ro, syncmem_base(ro), 1));
		syncmem_close(ro);
		syncmem_close(small);
	}
}

/* Others unlink and close the region while a waiter sleeps on it. */
TEST(waiter_outlives_the_name_and_other_users)
{
	struct syncmem_region *r;
	char name[64];
	int go[2], dev;
	pid_t pid;
	struct syncmem_stats before;

	snprintf(name, sizeof(name), "wait-unlinked-%d", getpid());
	ASSERT_EQ(0, pipe(go));
	dev = dev_open();
	before = get_stats(dev);
	ASSERT_EQ(0, syncmem_open(name, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct syncmem_region *cr;
		struct waiter_arg a;
		pthread_t t;
		char c;

		if (syncmem_open(name, 0, 0, 0, &cr))
			_exit(10);
		a = (struct waiter_arg){ cr, syncmem_base(cr), 0, syncmem_base(cr), SYNCMEM_FOREVER };
		pthread_create(&t, NULL, plain_waiter, &a);
		if (read(go[0], &c, 1) != 1)
			_exit(11);
		/* Everybody else is gone; our own notify still reaches the waiter. */
		if (syncmem_notify(cr, syncmem_base(cr), 1) != 1)
			_exit(12);
		pthread_join(t, NULL);
		_exit(0);
	}
	ASSERT_TRUE(await_fd_waiters(syncmem_region_fd(r), 1));
	ASSERT_EQ(0, syncmem_unlink(name));
	syncmem_close(r);
	EXPECT_EQ(before.regions + 1, get_stats(dev).regions);
	ASSERT_EQ(1, write(go[1], "g", 1));
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(before.regions, get_stats(dev).regions);
	close(dev);
}

/*
 * Stress: threads in several processes wait (with short random timeouts),
 * notify and hand off on a few words while signals fly. Every wake-up is
 * claimed exactly once, so the totals must match exactly: waits that
 * returned WOKEN == sum of notify results, waits that returned HANDED_OFF
 * == hand-offs that returned WOKE.
 */
struct stress {
	_Atomic uint32_t stop;
	uint32_t words[4];
	_Atomic uint64_t notified, handed, woken, handed_off, timed_out;
	_Atomic uint64_t handler_runs, errors;
};

struct stress_thread {
	struct syncmem_region *r;
	struct stress *st;
	unsigned int seed;
};

static _Atomic uint64_t *stress_handler_runs;

static void stress_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(stress_handler_runs, 1);
}

static void *stress_thread(void *p)
{
	struct stress_thread *t = p;
	struct stress *st = t->st;
	int fd = syncmem_region_fd(t->r);

	while (!atomic_load(&st->stop)) {
		unsigned int pick = rand_r(&t->seed);
		uint32_t i = pick % 4;
		long ret;

		if (pick % 3 == 0) {
			struct syncmem_wait w = {
				.offset = (uint64_t)((char *)&st->words[i] - (char *)st),
				.size = 4,
				.deadline_ns = (uint64_t)now_ns() + (pick >> 8) % 2000000,
			};

			ret = raw_ioctl(fd, SYNCMEM_IOC_WAIT, &w);
			if (ret == SYNCMEM_WAIT_WOKEN)
				atomic_fetch_add(&st->woken, 1);
			else if (ret == SYNCMEM_WAIT_HANDED_OFF)
				atomic_fetch_add(&st->handed_off, 1);
			else if (ret == SYNCMEM_WAIT_TIMED_OUT)
				atomic_fetch_add(&st->timed_out, 1);
			else
				atomic_fetch_add(&st->errors, 1);
		} else if (pick % 3 == 1) {
			ret = syncmem_notify(t->r, &st->words[i], 1 + (pick >> 8) % 3);
			if (ret < 0)
				atomic_fetch_add(&st->errors, 1);
			else
				atomic_fetch_add(&st->notified, ret);
		} else {
			ret = syncmem_handoff32(t->r, &st->words[i], 0);
			if (ret < 0)
				atomic_fetch_add(&st->errors, 1);
			else
				atomic_fetch_add(&st->handed, ret);
		}
	}
	return NULL;
}

static int stress_process(struct syncmem_region *r, struct stress *st, int id)
{
	struct stress_thread t[3];
	pthread_t th[3];

	for (int i = 0; i < 3; i++) {
		t[i] = (struct stress_thread){ r, st, (unsigned int)(id * 7919 + i) };
		pthread_create(&th[i], NULL, stress_thread, &t[i]);
	}
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	return 0;
}

TEST(stress_every_wake_is_claimed_once)
{
	enum { PROCS = 4 };
	struct syncmem_region *r;
	struct stress *st;
	pid_t pids[PROCS];
	struct sigaction sa = { .sa_handler = stress_handler };
	int64_t end;
	int i;

	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	st = syncmem_base(r);
	/* Installed before fork, so no child can die of an early SIGUSR1. */
	stress_handler_runs = &st->handler_runs;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	for (i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(stress_process(r, st, i));
	}
	end = now_ns() + 3000000000LL;
	while (now_ns() < end) {
		kill(pids[rand() % PROCS], SIGUSR1);
		usleep(2000);
	}
	atomic_store(&st->stop, 1);
	/* Release whoever still waits, counting those wake-ups too. */
	EXPECT_EQ(0, reap_notifying(pids, PROCS, r, st->words, 4, &st->notified));
	EXPECT_EQ(0, atomic_load(&st->errors));
	EXPECT_EQ(atomic_load(&st->notified), atomic_load(&st->woken));
	EXPECT_EQ(atomic_load(&st->handed), atomic_load(&st->handed_off));
	EXPECT_LT(0, atomic_load(&st->woken));
	EXPECT_LT(0, atomic_load(&st->handed_off));
	EXPECT_LT(0, atomic_load(&st->timed_out));
	EXPECT_LT(0, atomic_load(&st->handler_runs));
	EXPECT_EQ(0, fd_waiters(syncmem_region_fd(r)));
	TH_LOG("woken %llu, handed off %llu, timed out %llu, handler runs %llu",
	       (unsigned long long)st->woken, (unsigned long long)st->handed_off,
	       (unsigned long long)st->timed_out, (unsigned long long)st->handler_runs);
	syncmem_close(r);
}

TEST_HARNESS_MAIN
