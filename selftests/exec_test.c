// SPDX-License-Identifier: GPL-2.0
/*
 * What an execve ends, and how fast: a process that execs (keeping its
 * handle open across the exec) has its async waits cancelled and what they
 * were given passed on; a lock holder that execs wakes the waiters already
 * asleep with -EOWNERDEAD; and one user's orphaned async waits, piled up by
 * thousands on a word, slow down neither another user's passed-on wake-up
 * nor the recovery of another user's robust lock.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define MS	1000000LL
#define SEC	1000000000LL

struct xshared {
	struct syncmem_lock lock;
	struct syncmem_rwlock rw;
	/*
	 * Flags live in plain shared memory (@ctl): a child that unmaps the
	 * region still sets them.
	 */
	struct xctl {
		_Atomic uint32_t ready;
		_Atomic uint32_t go;
		_Atomic uint32_t stop;
		_Atomic uint32_t rounds;
		_Atomic uint32_t loaded;
		_Atomic uint32_t prepared;
		_Atomic uint32_t fire;
		_Atomic uint32_t fired;
	} *ctl;
	uint32_t pending;		/* an async wait nobody wakes */
	uint32_t woken;			/* one woken, its record never read */
	uint32_t handed;		/* one handed off, its record never read */
	uint32_t plain;			/* the victim's passed-on wake-up */
	uint64_t owner_word;		/* held by the process that execs */
};

FIXTURE(exec) {
	struct syncmem_region *r;
	struct xshared *sh;
};

FIXTURE_SETUP(exec)
{
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	self->sh->ctl = mmap(NULL, sizeof(struct xctl), PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sh->ctl);
}

FIXTURE_TEARDOWN(exec)
{
	munmap(self->sh->ctl, sizeof(struct xctl));
	syncmem_close(self->r);
}

static uint64_t off_of(struct syncmem_region *r, const void *p)
{
	return (uint64_t)((const char *)p - (const char *)syncmem_base(r));
}

/* Wait for the flag at @f to become non-zero (10 s at most): 1 if it did. */
static int await_flag(_Atomic uint32_t *f)
{
	for (int i = 0; i < 10000; i++) {
		if (atomic_load(f))
			return 1;
		usleep(1000);
	}
	return 0;
}

/* Replace the calling child with a program that keeps its inherited fds. */
static void exec_sleeper(void)
{
	execl("/bin/sh", "sh", "-c", "exec sleep 1000", (char *)NULL);
	_exit(99);
}

static void kill_and_reap(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* A blocking SYNCMEM_IOC_WAIT on a 4-byte word, in a thread. */
struct blocked {
	int rfd;
	uint64_t offset;
	int64_t timeout;
	int ret;
	int64_t at;
};

static void *wait_blocked(void *arg)
{
	struct blocked *b = arg;
	struct syncmem_wait w = {
		.offset = b->offset,
		.deadline_ns = (uint64_t)(now_ns() + b->timeout),
		.size = 4,
	};

	b->ret = raw_ioctl(b->rfd, SYNCMEM_IOC_WAIT, &w);
	b->at = now_ns();
	return NULL;
}

/* A blocking lock with a timeout, in a thread. */
struct locker {
	struct syncmem_region *r;
	struct syncmem_lock *l;
	int64_t timeout;
	int ret;
	int64_t at;
};

static void *lock_blocked(void *arg)
{
	struct locker *k = arg;

	k->ret = syncmem_lock_timed(k->r, k->l, k->timeout);
	k->at = now_ns();
	if (k->ret == -EOWNERDEAD)
		syncmem_lock_consistent(k->r, k->l);
	if (k->ret == 0 || k->ret == -EOWNERDEAD)
		syncmem_unlock(k->r, k->l);
	return NULL;
}

static int raw_notify(int rfd, uint64_t offset, uint32_t count)
{
	struct syncmem_notify n = { .offset = offset, .count = count };

	return raw_ioctl(rfd, SYNCMEM_IOC_NOTIFY, &n);
}

static int raw_handoff(int rfd, uint64_t offset, uint64_t value)
{
	struct syncmem_handoff h = { .offset = offset, .value = value, .size = 4 };

	return raw_ioctl(rfd, SYNCMEM_IOC_HANDOFF, &h);
}

TEST_F(exec, an_exec_cancels_its_async_waits_and_passes_on_what_they_got)
{
	struct xshared *sh = self->sh;
	int rfd = syncmem_region_fd(self->r);
	struct blocked woken = { .rfd = rfd, .offset = off_of(self->r, &sh->woken),
				 .timeout = 5 * SEC };
	struct blocked handed = { .rfd = rfd, .offset = off_of(self->r, &sh->handed),
				  .timeout = 5 * SEC };
	pthread_t t1, t2;
	int64_t t0;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		/* Not close-on-exec: the handle lives on in the next program. */
		int dev = open(SYNCMEM_DEV, O_RDWR);

		if (dev < 0 ||
		    raw_wait_async(dev, rfd, off_of(self->r, &sh->pending), 0, ~0ULL, 1) !=
		    SYNCMEM_WAIT_QUEUED ||
		    raw_wait_async(dev, rfd, woken.offset, 0, ~0ULL, 2) != SYNCMEM_WAIT_QUEUED ||
		    raw_wait_async(dev, rfd, handed.offset, 0, ~0ULL, 3) != SYNCMEM_WAIT_QUEUED)
			_exit(1);
		atomic_store(&sh->ctl->ready, 1);
		while (!atomic_load(&sh->ctl->go))
			usleep(1000);
		exec_sleeper();
	}
	ASSERT_TRUE(await_flag(&sh->ctl->ready));
	/* Two blocked waiters queue behind the child's waits on two words. */
	ASSERT_EQ(0, pthread_create(&t1, NULL, wait_blocked, &woken));
	ASSERT_EQ(0, pthread_create(&t2, NULL, wait_blocked, &handed));
	ASSERT_TRUE(await_fd_waiters(rfd, 5));
	/* The child's waits are first: they get the wake-up and the hand-off. */
	EXPECT_EQ(1, raw_notify(rfd, woken.offset, 1));
	EXPECT_EQ(SYNCMEM_HANDOFF_WOKE, raw_handoff(rfd, handed.offset, 7));
	EXPECT_EQ(3, fd_waiters(rfd));
	/* It execs without reading them. */
	t0 = now_ns();
	atomic_store(&sh->ctl->go, 1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, woken.ret);
	EXPECT_EQ(SYNCMEM_WAIT_HANDED_OFF, handed.ret);
	EXPECT_EQ(0, sh->handed);	/* handed on, never stored */
	/* Passed on promptly: on the old code they slept to their deadlines. */
	EXPECT_GT(t0 + SEC, woken.at);
	EXPECT_GT(t0 + SEC, handed.at);
	TH_LOG("passed on after %lld and %lld ms", (long long)(woken.at - t0) / MS,
	       (long long)(handed.at - t0) / MS);
	/* Its untimed wait is gone from the queue, though its handle lives. */
	for (int i = 0; i < 1000 && fd_waiters(rfd); i++)
		usleep(1000);
	EXPECT_EQ(0, fd_waiters(rfd));
	TH_LOG("its pending wait was gone %lld ms after the exec",
	       (long long)(now_ns() - t0) / MS);
	kill_and_reap(pid);
}

/*
 * A child that takes the lock (blocking: a thread id; @async: from an event
 * loop, as its process) and, once told, execs.
 */
static void got_async(void *arg, int result)
{
	*(int *)arg = result;
}

static pid_t exec_holder(struct syncmem_region *r, struct xshared *sh, bool async)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_loop *loop;
		int res = 1;

		if (!async) {
			res = syncmem_lock(r, &sh->lock);
		} else {
			if (syncmem_loop_new(&loop) ||
			    syncmem_lock_async(loop, r, &sh->lock, got_async, &res))
				_exit(1);
			while (res == 1)
				syncmem_loop_run_once(loop, 1000 * MS);
		}
		if (res)
			_exit(2);
		atomic_store(&sh->ctl->ready, 1);
		while (!atomic_load(&sh->ctl->go))
			usleep(1000);
		exec_sleeper();
	}
	return pid;
}

TEST_F(exec, a_lock_holder_that_execs_wakes_the_waiters_already_asleep)
{
	struct xshared *sh = self->sh;
	int rfd = syncmem_region_fd(self->r);

	for (int async = 0; async < 2; async++) {
		struct locker k = { .r = self->r, .l = &sh->lock, .timeout = 5 * SEC };
		pthread_t t;
		int64_t t0;
		pid_t pid;

		syncmem_lock_init(&sh->lock, 0);
		atomic_store(&sh->ctl->ready, 0);
		atomic_store(&sh->ctl->go, 0);
		pid = exec_holder(self->r, sh, async);
		ASSERT_LT(0, pid);
		ASSERT_TRUE(await_flag(&sh->ctl->ready));
		ASSERT_EQ(0, pthread_create(&t, NULL, lock_blocked, &k));
		/* Asleep in the kernel before the holder execs. */
		ASSERT_TRUE(await_fd_waiters(rfd, 1));
		t0 = now_ns();
		atomic_store(&sh->ctl->go, 1);
		pthread_join(t, NULL);
		EXPECT_EQ(-EOWNERDEAD, k.ret);
		/* Promptly: on the old code it slept until its timeout. */
		EXPECT_GT(t0 + SEC, k.at);
		TH_LOG("%s holder: the waiter had the lock %lld ms after the exec",
		       async ? "async" : "blocking", (long long)(k.at - t0) / MS);
		kill_and_reap(pid);
	}
}

struct writer {
	struct syncmem_region *r;
	struct syncmem_rwlock *rw;
	int ret;
	int64_t at;
};

static void *wrlock_blocked(void *arg)
{
	struct writer *w = arg;

	w->ret = syncmem_rwlock_wrlock_timed(w->r, w->rw, 5 * SEC);
	w->at = now_ns();
	if (!w->ret)
		syncmem_rwlock_unlock(w->r, w->rw);
	return NULL;
}

TEST_F(exec, a_writer_waiting_for_a_reader_that_execs_gets_in)
{
	struct xshared *sh = self->sh;
	struct writer w = { .r = self->r, .rw = &sh->rw };
	pthread_t t;
	int64_t t0;
	pid_t pid;

	syncmem_rwlock_init(&sh->rw);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (syncmem_rwlock_rdlock(self->r, &sh->rw))
			_exit(1);
		atomic_store(&sh->ctl->ready, 1);
		while (!atomic_load(&sh->ctl->go))
			usleep(1000);
		exec_sleeper();
	}
	ASSERT_TRUE(await_flag(&sh->ctl->ready));
	ASSERT_EQ(0, pthread_create(&t, NULL, wrlock_blocked, &w));
	/* The writer sleeps on the reader's slot. */
	ASSERT_TRUE(await_fd_waiters(syncmem_region_fd(self->r), 1));
	t0 = now_ns();
	atomic_store(&sh->ctl->go, 1);
	pthread_join(t, NULL);
	EXPECT_EQ(0, w.ret);
	EXPECT_GT(t0 + SEC, w.at);
	TH_LOG("the writer was in %lld ms after the reader's exec",
	       (long long)(w.at - t0) / MS);
	kill_and_reap(pid);
}

/*
 * The piled-up garbage of one user (uid 65534, its own region): @garbage
 * untimed async waits on one word of a process that then execs holding the
 * handle (and mapping no region, so only the wakers that meet them can take
 * them out); and a loop that keeps the kernel passing things on across
 * that word: records dropped unread by closing a handle, and by processes
 * that exit with woken records unread.
 */
#define GARBAGE		10000
#define PER_ROUND	200
#define PREPARED	4

static int raw_region(int dev, uint64_t size)
{
	return raw_region_open(dev, NULL, 0, size, 0600, NULL);
}

/* Queue @n untimed async waits on word 0 of @rfd through @dev: 0 or -1. */
static int queue_waits(int dev, int rfd, int n, uint64_t first)
{
	for (int i = 0; i < n; i++)
		if (raw_wait_async(dev, rfd, 0, 0, ~0ULL, first + i) != SYNCMEM_WAIT_QUEUED)
			return -1;
	return 0;
}

/*
 * A process of the attacker with @PER_ROUND woken records it will never
 * read on the handle @h, which outlives it, waiting to be killed: its
 * death passes them on across the garbage.
 */
static pid_t prepare_victim_of_its_own(int h, int rfd, struct xctl *c)
{
	uint32_t before = atomic_load(&c->prepared);
	pid_t pid = fork();

	if (pid == 0) {
		if (queue_waits(h, rfd, PER_ROUND, 1 + before * PER_ROUND))
			_exit(1);
		raw_notify(rfd, 0, SYNCMEM_ALL);
		atomic_fetch_add(&c->prepared, 1);
		for (;;)
			pause();
	}
	/* One at a time: each one's notify wakes its own waits only. */
	while (pid > 0 && atomic_load(&c->prepared) == before)
		usleep(1000);
	return pid;
}

static void attacker(struct syncmem_region *victim, struct xshared *sh)
{
	struct xctl *c = sh->ctl;
	pid_t g, doomed[PREPARED];
	int dev, rfd;

	if (become_nobody())
		_exit(10);
	dev = dev_open();
	if (dev < 0)
		_exit(11);
	rfd = raw_region(dev, 1 << 20);
	if (rfd < 0)
		_exit(12);
	g = fork();
	if (g == 0) {
		int h = open(SYNCMEM_DEV, O_RDWR);

		/* No region mapped: nothing tells the kernel of the exec. */
		syncmem_close(victim);
		if (h < 0 || queue_waits(h, rfd, GARBAGE, 1))
			_exit(13);
		atomic_store(&c->ready, 1);
		exec_sleeper();
	}
	if (g < 0 || !await_flag(&c->ready))
		_exit(14);
	/* Its waits stay queued: the exec'd program holds the handle. */
	for (int i = 0; i < PREPARED; i++)
		doomed[i] = prepare_victim_of_its_own(dev, rfd, c);
	while (!atomic_load(&c->stop)) {
		int h = dev_open();

		/* Woken behind the garbage, dropped unread by the close. */
		if (h < 0 || queue_waits(h, rfd, PER_ROUND, 1))
			break;
		raw_notify(rfd, 0, SYNCMEM_ALL);
		close(h);
		atomic_store(&c->loaded, 1);	/* passing on has begun */
		if (atomic_load(&c->fire) && !atomic_load(&c->fired)) {
			/* Their deaths pass their records on across the garbage. */
			for (int i = 0; i < PREPARED; i++)
				kill(doomed[i], SIGKILL);
			atomic_store(&c->fired, 1);
			for (int i = 0; i < PREPARED; i++)
				waitpid(doomed[i], NULL, 0);
		}
		atomic_fetch_add(&c->rounds, 1);
	}
	kill_and_reap(g);
	_exit(0);
}

TEST_F_TIMEOUT(exec, one_users_orphaned_waits_do_not_slow_down_another_users, 300)
{
	struct xshared *sh = self->sh;
	int rfd = syncmem_region_fd(self->r);
	struct blocked b = { .rfd = rfd, .offset = off_of(self->r, &sh->plain),
			     .timeout = 60 * SEC };
	struct locker k = { .r = self->r, .l = &sh->lock, .timeout = 60 * SEC };
	int64_t t0, pass_on, recovery;
	pthread_t t;
	pid_t a, holder;
	int h;

	a = fork();
	ASSERT_LE(0, a);
	if (a == 0)
		attacker(self->r, sh);
	/* The garbage is in place and the kernel passes things on across it. */
	for (int i = 0; i < 120000 && !atomic_load(&sh->ctl->loaded); i++)
		usleep(1000);
	ASSERT_TRUE(atomic_load(&sh->ctl->loaded));
	atomic_store(&sh->ctl->ready, 0);
	usleep(500 * 1000);

	/* A passed-on wake-up: our handle's woken record is dropped unread. */
	h = dev_open();
	ASSERT_LE(0, h);
	ASSERT_EQ(SYNCMEM_WAIT_QUEUED, raw_wait_async(h, rfd, b.offset, 0, ~0ULL, 1));
	ASSERT_EQ(0, pthread_create(&t, NULL, wait_blocked, &b));
	ASSERT_TRUE(await_fd_waiters(rfd, 2));
	ASSERT_EQ(1, raw_notify(rfd, b.offset, 1));
	t0 = now_ns();
	close(h);
	pthread_join(t, NULL);
	EXPECT_EQ(SYNCMEM_WAIT_WOKEN, b.ret);
	pass_on = b.at - t0;

	/* A robust lock's recovery: its holder is killed under a waiter. */
	syncmem_lock_init(&sh->lock, 0);
	holder = exec_holder(self->r, sh, false);
	ASSERT_LT(0, holder);
	ASSERT_TRUE(await_flag(&sh->ctl->ready));
	ASSERT_EQ(0, pthread_create(&t, NULL, lock_blocked, &k));
	ASSERT_TRUE(await_fd_waiters(rfd, 1));
	/* Right after processes of the attacker died with records unread. */
	atomic_store(&sh->ctl->fire, 1);
	for (int i = 0; i < 120000 && !atomic_load(&sh->ctl->fired); i++)
		usleep(1000);
	ASSERT_TRUE(atomic_load(&sh->ctl->fired));
	t0 = now_ns();
	kill_and_reap(holder);
	pthread_join(t, NULL);
	EXPECT_EQ(-EOWNERDEAD, k.ret);
	recovery = k.at - t0;

	TH_LOG("with %u rounds of garbage: passed-on wake-up %lld ms, recovery %lld ms",
	       atomic_load(&sh->ctl->rounds), (long long)pass_on / MS, (long long)recovery / MS);
	/* The old code took seconds (one work item for all passed-on records). */
	EXPECT_GT(2 * SEC, pass_on);
	EXPECT_GT(2 * SEC, recovery);
	atomic_store(&sh->ctl->stop, 1);
	EXPECT_EQ(0, wait_exit(a));
}

TEST_F(exec, a_waker_takes_out_the_orphans_it_meets)
{
	struct xshared *sh = self->sh;
	int dev = dev_open(), rfd;
	pid_t g;

	ASSERT_LE(0, dev);
	rfd = raw_region(dev, 1 << 20);
	ASSERT_LE(0, rfd);
	g = fork();
	ASSERT_LE(0, g);
	if (g == 0) {
		int h = open(SYNCMEM_DEV, O_RDWR);
		struct xctl *c = sh->ctl;

		syncmem_close(self->r);
		if (h < 0 || queue_waits(h, rfd, 1000, 1))
			_exit(1);
		atomic_store(&c->ready, 1);
		exec_sleeper();
	}
	ASSERT_TRUE(await_flag(&sh->ctl->ready));
	ASSERT_EQ(1000, fd_waiters(rfd));
	/* Wait until the exec is done: the waits are orphans then. */
	for (int i = 0; i < 5000; i++) {
		char exe[64], buf[256];
		ssize_t n;

		snprintf(exe, sizeof(exe), "/proc/%d/exe", g);
		n = readlink(exe, buf, sizeof(buf) - 1);
		if (n > 0 && (buf[n] = 0, !strstr(buf, "exec_test")))
			break;
		usleep(1000);
	}
	/* Nobody to wake, but every orphan met leaves the queue for good. */
	EXPECT_EQ(0, raw_notify(rfd, 0, 1));
	EXPECT_EQ(0, fd_waiters(rfd));
	kill_and_reap(g);
	close(rfd);
	close(dev);
}

TEST_HARNESS_MAIN
