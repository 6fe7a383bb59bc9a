// SPDX-License-Identifier: GPL-2.0
/*
 * Signals against blocked waiters: a waiter that runs a handler, is stopped
 * or frozen keeps its FIFO place, so a fair lock's grants follow arrival
 * order through any storm of them; a waiter whose thread dies while away
 * from its wait gives up its place and passes on what it was given.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define WAITERS	4
#define ROUNDS	10
#define MS	1000000LL
#define FREEZER	"/sys/fs/cgroup/syncmem-freeze"

struct sshared {
	struct syncmem_lock lock;
	uint32_t word;			/* plain waits */
	uint32_t other;			/* what a handler waits on */
	_Atomic uint32_t granted;	/* grants so far this round */
	_Atomic uint32_t order[WAITERS]; /* who got the lock, in grant order */
	_Atomic uint32_t handled;	/* handlers run by blocked lockers */
};

FIXTURE(signals) {
	struct syncmem_region *r;
	struct sshared *sh;
};

FIXTURE_SETUP(signals)
{
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
}

FIXTURE_TEARDOWN(signals)
{
	syncmem_close(self->r);
}

static volatile sig_atomic_t handled;

static void count_signal(int sig)
{
	(void)sig;
	handled++;
}

static void spin_ns(int64_t ns)
{
	int64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

/*
 * A locker: with @ticking, a handler runs every millisecond while it
 * waits. Once granted it notes its place, holds the lock 2 ms (so that the
 * others are signalled while they wait on) and unlocks.
 */
static pid_t fair_locker(struct syncmem_region *r, struct sshared *sh, int idx,
			 bool ticking)
{
	struct sigaction sa = { .sa_handler = count_signal };
	struct itimerval tick = { { 0, 1000 }, { 0, 1000 } };
	struct itimerval off = { 0 };
	pid_t pid = fork();
	int ret;

	if (pid)
		return pid;
	if (ticking && (sigaction(SIGALRM, &sa, NULL) ||
			setitimer(ITIMER_REAL, &tick, NULL)))
		_exit(2);
	ret = syncmem_lock(r, &sh->lock);
	setitimer(ITIMER_REAL, &off, NULL);
	atomic_fetch_add(&sh->handled, handled);
	if (ret)
		_exit(3);
	atomic_store(&sh->order[atomic_fetch_add(&sh->granted, 1)], idx);
	spin_ns(2 * MS);
	_exit(syncmem_unlock(r, &sh->lock) ? 4 : 0);
}

/* Queue WAITERS lockers behind our hold of the fair lock, in index order. */
static int queue_lockers(struct syncmem_region *r, struct sshared *sh,
			 pid_t *pids, bool ticking)
{
	syncmem_lock_init(&sh->lock, SYNCMEM_LOCK_FAIR);
	atomic_store(&sh->granted, 0);
	if (syncmem_lock(r, &sh->lock))
		return -1;
	for (int i = 0; i < WAITERS; i++) {
		pids[i] = fair_locker(r, sh, i, ticking);
		if (pids[i] < 0 || !await_waiters(r, i + 1))
			return -1;
	}
	return 0;
}

static bool in_arrival_order(struct sshared *sh)
{
	for (int i = 0; i < WAITERS; i++)
		if (atomic_load(&sh->order[i]) != (uint32_t)i)
			return false;
	return atomic_load(&sh->granted) == WAITERS;
}

TEST_F(signals, fair_grants_follow_arrival_order_while_handlers_run_every_millisecond)
{
	pid_t pids[WAITERS];

	for (int round = 0; round < ROUNDS; round++) {
		ASSERT_EQ(0, queue_lockers(self->r, self->sh, pids, true));
		spin_ns(5 * MS);	/* every waiter runs handlers, queued */
		ASSERT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
		for (int i = 0; i < WAITERS; i++)
			ASSERT_EQ(0, wait_exit(pids[i]));
		ASSERT_TRUE(in_arrival_order(self->sh)) {
			TH_LOG("round %d: granted %u %u %u %u", round,
			       self->sh->order[0], self->sh->order[1],
			       self->sh->order[2], self->sh->order[3]);
		}
	}
	/* The handlers did run while the lockers were blocked. */
	EXPECT_LE(ROUNDS * WAITERS * 3, atomic_load(&self->sh->handled));
	EXPECT_EQ(0, region_waiters(self->r));
}

/* Stop and continue random lockers until all of them exited. */
static int stop_storm(const pid_t *pids, unsigned int *stops)
{
	bool done[WAITERS] = { 0 };
	int left = WAITERS, status, bad = 0;

	while (left) {
		int i = rand() % WAITERS;

		if (!done[i]) {
			kill(pids[i], SIGSTOP);
			usleep(700);
			kill(pids[i], SIGCONT);
			(*stops)++;
		}
		for (i = 0; i < WAITERS; i++) {
			if (done[i] || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			done[i] = true;
			left--;
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				bad++;
		}
	}
	return bad;
}

TEST_F(signals, fair_grants_follow_arrival_order_while_waiters_are_stopped_and_continued)
{
	unsigned int stops = 0;
	pid_t pids[WAITERS];

	srand(20261123);
	for (int round = 0; round < ROUNDS; round++) {
		ASSERT_EQ(0, queue_lockers(self->r, self->sh, pids, false));
		for (int i = 0; i < WAITERS; i++) {
			kill(pids[i], SIGSTOP);
			usleep(500);
			kill(pids[i], SIGCONT);
		}
		ASSERT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
		ASSERT_EQ(0, stop_storm(pids, &stops));
		ASSERT_TRUE(in_arrival_order(self->sh)) {
			TH_LOG("round %d: granted %u %u %u %u", round,
			       self->sh->order[0], self->sh->order[1],
			       self->sh->order[2], self->sh->order[3]);
		}
	}
	TH_LOG("%u stops during grants", stops);
	EXPECT_EQ(0, region_waiters(self->r));
}

static int freeze(bool on)
{
	return write_file(FREEZER "/cgroup.freeze", on ? "1" : "0");
}

TEST_F(signals, a_frozen_waiter_keeps_its_place_and_is_granted_the_lock_when_thawed)
{
	struct sshared *sh = self->sh;
	char pid[32];
	pid_t pids[WAITERS];

	rmdir(FREEZER);
	ASSERT_EQ(0, mkdir(FREEZER, 0755));
	ASSERT_EQ(0, queue_lockers(self->r, sh, pids, false));
	/* The first in line is frozen: the lock waits for it, as FIFO says. */
	snprintf(pid, sizeof(pid), "%d", pids[0]);
	ASSERT_EQ(0, write_file(FREEZER "/cgroup.procs", pid));
	ASSERT_EQ(0, freeze(true));
	usleep(20 * 1000);
	ASSERT_EQ(0, syncmem_unlock(self->r, &sh->lock));
	usleep(50 * 1000);
	EXPECT_EQ(0, atomic_load(&sh->granted));
	EXPECT_EQ(WAITERS - 1, region_waiters(self->r));
	ASSERT_EQ(0, freeze(false));
	for (int i = 0; i < WAITERS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_TRUE(in_arrival_order(sh));
	EXPECT_EQ(0, rmdir(FREEZER));
}

/* A plain waiter of sh->word that exits with its wait's result. */
static pid_t plain_waiter(struct syncmem_region *r, struct sshared *sh)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(syncmem_wait32(r, &sh->word, 0, SYNCMEM_FOREVER));
	return pid;
}

static void stop_and_await(pid_t pid)
{
	int status;

	kill(pid, SIGSTOP);
	waitpid(pid, &status, WUNTRACED);
}

/*
 * Plain waiters a, then b, of sh->word; a is stopped (away) and handed
 * the word. 0, or -1 if they did not queue or the hand-off went elsewhere.
 */
static int first_stopped_and_handed(struct syncmem_region *r, struct sshared *sh,
				    pid_t *a, pid_t *b)
{
	sh->word = 0;
	*a = plain_waiter(r, sh);
	if (*a < 0 || !await_waiters(r, 1))
		return -1;
	*b = plain_waiter(r, sh);
	if (*b < 0 || !await_waiters(r, 2))
		return -1;
	stop_and_await(*a);
	/* Away but in first place: the hand-off is its. */
	if (syncmem_handoff32(r, &sh->word, 1) != 1 || region_waiters(r) != 1)
		return -1;
	return 0;
}

TEST_F(signals, a_stopped_waiter_is_handed_off_to_and_takes_it_when_continued)
{
	struct sshared *sh = self->sh;
	pid_t a, b;

	ASSERT_EQ(0, first_stopped_and_handed(self->r, sh, &a, &b));
	kill(a, SIGCONT);
	EXPECT_EQ(SYNCMEM_OK, wait_exit(a));
	EXPECT_EQ(1, region_waiters(self->r));
	EXPECT_EQ(1, syncmem_notify(self->r, &sh->word, 1));
	EXPECT_EQ(SYNCMEM_OK, wait_exit(b));
}

TEST_F(signals, a_waiter_killed_while_stopped_passes_its_hand_off_on_within_a_second)
{
	struct sshared *sh = self->sh;
	int64_t t0;
	pid_t a, b;

	ASSERT_EQ(0, first_stopped_and_handed(self->r, sh, &a, &b));
	t0 = now_ns();
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	/* What the dead waiter was handed goes to the next one. */
	EXPECT_EQ(SYNCMEM_OK, wait_exit(b));
	EXPECT_GT(1000 * MS, now_ns() - t0);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, sh->word);	/* handed over, not stored */

	/* Killed while stopped with nothing given: its place goes, promptly. */
	a = plain_waiter(self->r, sh);
	ASSERT_TRUE(await_waiters(self->r, 1));
	stop_and_await(a);
	t0 = now_ns();
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	EXPECT_TRUE(await_waiters(self->r, 0));
	EXPECT_GT(1000 * MS, now_ns() - t0);
	/* Nobody waits: a hand-off stores. */
	EXPECT_EQ(0, syncmem_handoff32(self->r, &sh->word, 5));
	EXPECT_EQ(5, sh->word);
}

static struct syncmem_region *handler_region;
static struct sshared *handler_shared;
static volatile sig_atomic_t handler_result = -100;

/* A handler that waits itself (on another word, briefly). */
static void wait_in_handler(int sig)
{
	(void)sig;
	handler_result = syncmem_wait32(handler_region, &handler_shared->other,
					0, 1 * MS);
}

TEST_F(signals, a_handler_that_waits_itself_costs_the_outer_wait_its_place_only)
{
	struct sigaction sa = { .sa_handler = wait_in_handler };
	struct sshared *sh = self->sh;
	int fds[2], result;
	pid_t a, b;

	handler_region = self->r;
	handler_shared = sh;
	sh->word = 0;
	ASSERT_EQ(0, pipe(fds));
	a = fork();
	if (a == 0) {
		sigaction(SIGUSR1, &sa, NULL);
		result = syncmem_wait32(self->r, &sh->word, 0, SYNCMEM_FOREVER);
		/* The handler's own wait timed out; the outer one was woken. */
		if (write(fds[1], (int[]){ handler_result }, sizeof(int)) != sizeof(int))
			_exit(9);
		_exit(result);
	}
	ASSERT_TRUE(await_waiters(self->r, 1));
	b = plain_waiter(self->r, sh);
	ASSERT_TRUE(await_waiters(self->r, 2));
	kill(a, SIGUSR1);
	/* The handler's wait ended the outer one's place: it is last now. */
	usleep(100 * 1000);
	EXPECT_EQ(2, region_waiters(self->r));
	EXPECT_EQ(1, syncmem_notify(self->r, &sh->word, 1));
	EXPECT_EQ(SYNCMEM_OK, wait_exit(b));
	EXPECT_EQ(1, syncmem_notify(self->r, &sh->word, 1));
	EXPECT_EQ(SYNCMEM_OK, wait_exit(a));
	ASSERT_EQ(sizeof(int), read(fds[0], &result, sizeof(int)));
	EXPECT_EQ(SYNCMEM_TIMED_OUT, result);
	EXPECT_EQ(0, region_waiters(self->r));
	close(fds[0]);
	close(fds[1]);
}

static void exec_in_handler(int sig)
{
	(void)sig;
	execl("/bin/sh", "sh", "-c", "sleep 2", (char *)NULL);
	_exit(99);
}

TEST_F(signals, a_waiter_whose_handler_execs_gives_up_its_place_and_what_it_got)
{
	struct sigaction sa = { .sa_handler = exec_in_handler };
	struct sshared *sh = self->sh;
	int64_t t0;
	pid_t a, b;

	sh->word = 0;
	a = fork();
	if (a == 0) {
		sigaction(SIGUSR1, &sa, NULL);
		_exit(syncmem_wait32(self->r, &sh->word, 0, SYNCMEM_FOREVER));
	}
	ASSERT_TRUE(await_waiters(self->r, 1));
	b = plain_waiter(self->r, sh);
	ASSERT_TRUE(await_waiters(self->r, 2));
	/* Stopped first, so that the hand-off comes while it is away. */
	stop_and_await(a);
	EXPECT_EQ(1, syncmem_handoff32(self->r, &sh->word, 1));
	kill(a, SIGUSR1);
	t0 = now_ns();
	kill(a, SIGCONT);
	/* The exec closed its region fd: the hand-off goes on to b. */
	EXPECT_EQ(SYNCMEM_OK, wait_exit(b));
	EXPECT_GT(1000 * MS, now_ns() - t0);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, wait_exit(a));	/* sh -c 'sleep 2' */
}

static void *wait_interruptibly(void *arg)
{
	struct sshared *sh = arg;

	return (void *)(intptr_t)syncmem_wait32_interruptible(handler_region, &sh->word,
							      0, SYNCMEM_FOREVER);
}

TEST_F(signals, a_stop_does_not_end_an_interruptible_wait_a_handler_does)
{
	struct sigaction sa = { .sa_handler = count_signal };
	struct sshared *sh = self->sh;
	void *ret;
	pid_t a;

	handler_region = self->r;
	sh->word = 0;
	a = fork();
	if (a == 0)
		_exit(syncmem_wait32_interruptible(self->r, &sh->word, 0, SYNCMEM_FOREVER));
	ASSERT_TRUE(await_waiters(self->r, 1));
	stop_and_await(a);
	kill(a, SIGCONT);
	usleep(50 * 1000);
	EXPECT_EQ(1, region_waiters(self->r));
	EXPECT_EQ(1, syncmem_notify(self->r, &sh->word, 1));
	EXPECT_EQ(SYNCMEM_OK, wait_exit(a));

	/* A handler that runs ends it: -EINTR. */
	{
		pthread_t t;

		ASSERT_EQ(0, sigaction(SIGUSR2, &sa, NULL));
		ASSERT_EQ(0, pthread_create(&t, NULL, wait_interruptibly, sh));
		ASSERT_TRUE(await_waiters(self->r, 1));
		pthread_kill(t, SIGUSR2);
		pthread_join(t, &ret);
		EXPECT_EQ(-EINTR, (int)(intptr_t)ret);
		EXPECT_EQ(0, region_waiters(self->r));
	}
}

static volatile sig_atomic_t slow_handler_ms;

static void slow_handler(int sig)
{
	(void)sig;
	usleep(slow_handler_ms * 1000);
}

struct raw_wait {
	int fd;
	int ret;
};

static void *raw_wait_forever(void *arg)
{
	struct raw_wait *w = arg;
	struct syncmem_wait wait = { .offset = 0, .expected = 0,
				     .deadline_ns = SYNCMEM_NO_DEADLINE, .size = 4 };

	w->ret = raw_ioctl(w->fd, SYNCMEM_IOC_WAIT, &wait);
	return NULL;
}

TEST_F(signals, a_waiter_whose_fd_is_closed_does_not_stay_queued)
{
	struct sigaction sa = { .sa_handler = slow_handler };
	struct raw_wait w;
	pthread_t t;

	self->sh->word = 0;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	for (int away_first = 0; away_first < 2; away_first++) {
		w = (struct raw_wait){ .fd = dup(syncmem_region_fd(self->r)), .ret = 1 };
		ASSERT_LE(0, w.fd);
		ASSERT_EQ(0, pthread_create(&t, NULL, raw_wait_forever, &w));
		ASSERT_TRUE(await_waiters(self->r, 1));
		if (away_first) {
			/* Away in a slow handler when the fd goes. */
			slow_handler_ms = 200;
			pthread_kill(t, SIGUSR1);
			usleep(50 * 1000);
			EXPECT_EQ(1, region_waiters(self->r));
			close(w.fd);
		} else {
			/* The fd goes while it sleeps; then a signal. */
			slow_handler_ms = 0;
			close(w.fd);
			usleep(10 * 1000);
			pthread_kill(t, SIGUSR1);
		}
		/* Its restart cannot reach the wait: nothing is left queued. */
		EXPECT_TRUE(await_waiters(self->r, 0));
		pthread_join(t, NULL);
		EXPECT_EQ(-EBADF, w.ret);
		EXPECT_EQ(0, syncmem_notify(self->r, &self->sh->word, 1));
	}
}

/* The state letter of thread @tid of this process (/proc: R, S, D...), or 0. */
static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* The thread of the one waiter of @r once it is away (0: not within 10 s). */
static pid_t await_away(struct syncmem_region *r)
{
	struct syncmem_waiter_info w;
	int64_t end = now_ns() + 10000 * MS;

	while (now_ns() < end) {
		if (syncmem_waiters(r, NULL, &w, 1) == 1 && (w.flags & SYNCMEM_WAITER_AWAY))
			return w.tid;
		usleep(1000);
	}
	return 0;
}

/*
 * A waiter going away is listed, then looks for its fd. The test-only hook
 * test_away_park_delay_ms (testing.rst) holds it between the two; its fd,
 * the only one of its file, is closed there, so the close's flush ends and
 * frees the waiter, and the slab shrinkers (drop_caches) make the free
 * happen before the thread looks. The thread must then leave the waiter to
 * the flush, never touch it: on the debug kernel KASAN reports any use
 * after the free.
 */
TEST_F(signals, a_close_while_a_waiter_goes_away_leaves_it_to_the_close)
{
	struct sigaction sa = { .sa_handler = count_signal };
	struct syncmem_region *r;
	struct raw_wait w;
	char name[64];
	pthread_t t;
	int64_t end;
	pid_t tid;
	int dev;

	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, set_param("test_away_park_delay_ms", 2000)) {
		TH_LOG("a module built with SYNCMEM_TEST_HOOKS=y is needed");
	}
	/* The waiter's file is its own (a dup would share the test's). */
	snprintf(name, sizeof(name), "signals-%d-park", getpid());
	ASSERT_EQ(0, syncmem_open(name, 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r));
	dev = dev_open();
	ASSERT_LE(0, dev);
	w = (struct raw_wait){ .fd = raw_region_open(dev, name, 0, 0, 0, NULL), .ret = 1 };
	close(dev);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, raw_wait_forever, &w));
	ASSERT_TRUE(await_waiters(r, 1));
	pthread_kill(t, SIGUSR1);
	tid = await_away(r);
	ASSERT_NE(0, tid);
	/* Moved to the heap, then listed and asleep in the hook (D). */
	for (end = now_ns() + 10000 * MS; thread_state(tid) != 'D' && now_ns() < end;)
		usleep(1000);
	ASSERT_EQ('D', thread_state(tid));
	close(w.fd);
	/* The close cancelled it. */
	EXPECT_EQ(0, region_waiters(r));
	EXPECT_EQ(0, write_file("/proc/sys/vm/drop_caches", "2"));
	pthread_join(t, NULL);
	EXPECT_EQ(0, set_param("test_away_park_delay_ms", 0));
	/* Its restart found the fd gone. */
	EXPECT_EQ(-EBADF, w.ret);
	EXPECT_EQ(0, region_waiters(r));
	EXPECT_EQ(0, syncmem_unlink(name));
	syncmem_close(r);
}

TEST_HARNESS_MAIN
