// SPDX-License-Identifier: GPL-2.0
/*
 * A loop's async lock acquisitions (syncmem_lock_async*) on both of its
 * paths: on the ring path a contended one is a SYNCMEM_URING_LOCK command
 * of the loop's ring, which an unlock hands the lock to; on the eventfd
 * path (SYNCMEM_LOOP=eventfd) an owner wait whose wake-up makes it look
 * again. Each test runs on each path and asserts the same results: FIFO
 * among blocking lockers, the hand-over from a blocking unlock,
 * -EOWNERDEAD after a killed holder, abort racing an unlock (one callback,
 * -ECANCELED, the lock going on), timeouts, a loop's process killed while
 * its lock waits; and for held gates (SYNCMEM_GATE_HELD), whose async
 * passes take the gate's word as a lock's do, FIFO and a killed holder.
 * Where the paths differ by design, the test says so: on
 * the ring path the unlock hands the lock over before the loop runs, and
 * a process killed after the hand-over but before its loop saw it is a
 * holder that died.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "syncmem.h"

#define MS		1000000LL

struct shared {
	struct syncmem_lock lock;
	struct syncmem_gate gate;	/* SYNCMEM_GATE_HELD */
	struct syncmem_lock spare;
	_Atomic int ready;
	_Atomic int go;
	_Atomic int seq;
	int order[8];
};

FIXTURE(loop_lock) {
	struct syncmem_region *r;
	struct shared *sh;
	struct syncmem_loop *loop;
	uint64_t me;		/* the process's owner id, an async holder's */
};

FIXTURE_VARIANT(loop_lock) {
	const char *env;	/* SYNCMEM_LOOP */
	bool ring;
};

FIXTURE_VARIANT_ADD(loop_lock, uring) {
	.env = "",
	.ring = true,
};

FIXTURE_VARIANT_ADD(loop_lock, eventfd) {
	.env = "eventfd",
	.ring = false,
};

FIXTURE_SETUP(loop_lock)
{
	struct syncmem_owner o = { .flags = SYNCMEM_OWNER_PROCESS };

	ASSERT_EQ(0, setenv("SYNCMEM_LOOP", variant->env, 1));
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	syncmem_lock_init(&self->sh->lock, 0);
	syncmem_lock_init(&self->sh->spare, 0);
	ASSERT_EQ(0, syncmem_gate_init_flags(&self->sh->gate, false, SYNCMEM_GATE_HELD));
	ASSERT_EQ(0, syncmem_loop_new(&self->loop));
	ASSERT_EQ(variant->ring ? SYNCMEM_LOOP_URING : SYNCMEM_LOOP_EVENTFD,
		  syncmem_loop_path(self->loop));
	ASSERT_EQ(0, raw_ioctl(syncmem_region_fd(self->r), SYNCMEM_IOC_OWNER, &o));
	self->me = o.id;
}

FIXTURE_TEARDOWN(loop_lock)
{
	syncmem_loop_free(self->loop);
	syncmem_close(self->r);
	unsetenv("SYNCMEM_LOOP");
}

static uint64_t holder_of(const struct syncmem_lock *l)
{
	return __atomic_load_n(&l->word, __ATOMIC_ACQUIRE) & SYNCMEM_OWNER_ID;
}

struct slot {
	int calls;
	int result;
	int64_t at;
	struct syncmem_region *r;
	struct shared *sh;	/* set: record the turn in sh->order and unlock */
	int tag;
	bool gate;		/* pass the gate on instead */
};

static void slot_cb(void *arg, int result)
{
	struct slot *s = arg;

	s->calls++;
	s->result = result;
	s->at = now_ns();
	if (s->sh && !result) {
		s->sh->order[atomic_fetch_add(&s->sh->seq, 1)] = s->tag;
		if (s->gate ? syncmem_gate_signal(s->r, &s->sh->gate) < 0 :
			      syncmem_unlock(s->r, &s->sh->lock) != 0)
			s->result = -EPERM;
	}
}

/* Run @loop until @s's callback ran (10 s at most): 1 if it did. */
static int run_until(struct syncmem_loop *loop, struct slot *s)
{
	for (int i = 0; i < 1000 && !s->calls; i++)
		syncmem_loop_run_once(loop, 10 * MS);
	return s->calls > 0;
}

/* A child that locks, says so, and unlocks when told (go), or is killed. */
static pid_t holder(struct syncmem_region *r, struct shared *sh)
{
	pid_t pid;

	atomic_store(&sh->ready, 0);
	atomic_store(&sh->go, 0);
	pid = fork();
	if (pid == 0) {
		if (syncmem_lock(r, &sh->lock))
			_exit(10);
		atomic_store(&sh->ready, 1);
		while (!atomic_load(&sh->go))
			usleep(1000);
		_exit(syncmem_unlock(r, &sh->lock) ? 11 : 0);
	}
	while (pid > 0 && !atomic_load(&sh->ready))
		usleep(1000);
	return pid;
}

/* A child that blocks on the lock, records its turn as @tag, and unlocks. */
static pid_t blocking_locker(struct syncmem_region *r, struct shared *sh, int tag)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (syncmem_lock_timed(r, &sh->lock, 10000 * MS))
			_exit(10);
		sh->order[atomic_fetch_add(&sh->seq, 1)] = tag;
		_exit(syncmem_unlock(r, &sh->lock) ? 11 : 0);
	}
	return pid;
}

TEST_F(loop_lock, fifo_with_blocking_lockers_and_the_hand_over)
{
	struct slot a = { .r = self->r, .sh = self->sh, .tag = 1 };
	struct slot c = { .r = self->r, .sh = self->sh, .tag = 3 };
	pid_t b;

	atomic_store(&self->sh->seq, 0);
	/* Held by this thread, blocking; then A (loop), B (blocking), C (loop). */
	ASSERT_EQ(0, syncmem_lock(self->r, &self->sh->lock));
	ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, &self->sh->lock, slot_cb, &a));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	b = blocking_locker(self->r, self->sh, 2);
	ASSERT_LT(0, b);
	ASSERT_EQ(1, await_waiters(self->r, 2));
	ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, &self->sh->lock, slot_cb, &c));
	ASSERT_EQ(1, await_waiters(self->r, 3));
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 0));

	/*
	 * The blocking unlock: the ring command is handed the lock there and
	 * then (the word names the process before the loop runs); the
	 * eventfd path's waiter is woken to take it.
	 */
	ASSERT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	EXPECT_EQ(variant->ring ? self->me : 0, holder_of(&self->sh->lock));
	ASSERT_EQ(1, run_until(self->loop, &a));
	EXPECT_EQ(0, a.result);
	/* A unlocked in its callback: B, then C. */
	EXPECT_EQ(0, wait_exit(b));
	ASSERT_EQ(1, run_until(self->loop, &c));
	EXPECT_EQ(0, c.result);
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(1, c.calls);
	ASSERT_EQ(3, atomic_load(&self->sh->seq));
	EXPECT_EQ(1, self->sh->order[0]);
	EXPECT_EQ(2, self->sh->order[1]);
	EXPECT_EQ(3, self->sh->order[2]);
	EXPECT_EQ(0, self->sh->lock.word);
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F(loop_lock, a_killed_holder_is_eownerdead)
{
	struct slot s = { 0 };
	pid_t h = holder(self->r, self->sh);

	ASSERT_LT(0, h);
	ASSERT_EQ(0, syncmem_lock_async(self->loop, self->r, &self->sh->lock, slot_cb, &s));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	kill(h, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(h));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-EOWNERDEAD, s.result);
	EXPECT_EQ(self->me, holder_of(&self->sh->lock));
	EXPECT_EQ(0, syncmem_lock_consistent(self->r, &self->sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	EXPECT_EQ(0, self->sh->lock.word);
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 20 * MS));
	EXPECT_EQ(1, s.calls);
}

TEST_F(loop_lock, timeouts)
{
	struct slot s = { 0 }, t = { 0 };
	uint64_t id = 0;
	int64_t t0;
	pid_t h = holder(self->r, self->sh);

	ASSERT_LT(0, h);
	/* 0: at once, nothing queued, no callback. */
	EXPECT_EQ(-ETIMEDOUT, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock, 0,
						       slot_cb, &t, &id));
	EXPECT_EQ(0, region_waiters(self->r));
	t0 = now_ns();
	ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock, 50 * MS,
					      slot_cb, &s, &id));
	EXPECT_EQ(1, region_waiters(self->r));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-ETIMEDOUT, s.result);
	EXPECT_LE(50 * MS, s.at - t0);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(h));
	EXPECT_EQ(0, self->sh->lock.word);
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 20 * MS));
	EXPECT_EQ(1, s.calls);
	EXPECT_EQ(0, t.calls);
}

/*
 * The other side of the abort race, a thread of this process: it takes the
 * lock when asked (take), then unlocks once a round starts (round), after
 * a delay that varies by round.
 */
struct racer {
	struct syncmem_region *r;
	struct shared *sh;
	_Atomic int take;	/* set: lock for that round; -1 ends */
	_Atomic int taken;	/* the last round it locked in */
	_Atomic int round;	/* set: unlock for that round */
	_Atomic int done;	/* the last round it unlocked in */
	int err;
};

static void *racer_thread(void *arg)
{
	struct racer *x = arg;

	for (int i = 1;; i++) {
		while (atomic_load(&x->take) != i)
			if (atomic_load(&x->take) < 0)
				return NULL;
		if (syncmem_lock(x->r, &x->sh->lock))
			x->err++;
		atomic_store(&x->taken, i);
		while (atomic_load(&x->round) != i)
			;
		for (int64_t end = now_ns() + (i % 16) * 1000; now_ns() < end;)
			;
		if (syncmem_unlock(x->r, &x->sh->lock))
			x->err++;
		atomic_store(&x->done, i);
	}
}

TEST_F(loop_lock, abort_racing_an_unlock_ends_once_and_the_lock_goes_on)
{
	struct racer x = { .r = self->r, .sh = self->sh };
	int rounds = on_debug_kernel() ? 100 : 400;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, racer_thread, &x));
	for (int i = 1; i <= rounds; i++) {
		struct slot s = { 0 };
		uint64_t id = 0;

		atomic_store(&x.take, i);
		while (atomic_load(&x.taken) != i)
			;
		ASSERT_EQ(0, syncmem_lock_async_timed(self->loop, self->r, &self->sh->lock,
						      SYNCMEM_FOREVER, slot_cb, &s, &id));
		atomic_store(&x.round, i);
		for (int64_t end = now_ns() + (i % 13) * 1000; now_ns() < end;)
			;
		ASSERT_EQ(0, syncmem_loop_abort(self->loop, id));
		EXPECT_EQ(-ENOENT, syncmem_loop_abort(self->loop, id));
		EXPECT_EQ(0, s.calls);
		ASSERT_EQ(1, run_until(self->loop, &s));
		EXPECT_EQ(-ECANCELED, s.result);
		while (atomic_load(&x.done) != i)
			;
		/* Whatever the wait got went on: free, nobody queued, one callback. */
		EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 0));
		EXPECT_EQ(1, s.calls);
		ASSERT_EQ(0, region_waiters(self->r));
		ASSERT_EQ(0, holder_of(&self->sh->lock));
	}
	atomic_store(&x.take, -1);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, x.err);
	EXPECT_EQ(0, syncmem_trylock(self->r, &self->sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
}

/*
 * A child whose loop waits for the lock is killed: before the unlock (its
 * wait goes, the lock is free), and after the unlock but before its loop
 * ran. Then the eventfd path passes the unread hand-over on (or its
 * wake-up: the lock is free); on the ring path the lock was the child
 * process's already: the next locker is told its holder died.
 */
static pid_t async_locker(struct syncmem_region *r, struct shared *sh)
{
	pid_t pid;

	atomic_store(&sh->ready, 0);
	pid = fork();
	if (pid == 0) {
		struct syncmem_loop *loop;
		struct slot s = { 0 };

		if (syncmem_loop_new(&loop) ||
		    syncmem_lock_async(loop, r, &sh->lock, slot_cb, &s))
			_exit(10);
		atomic_store(&sh->ready, 1);
		pause();	/* never runs its loop */
		_exit(11);
	}
	while (pid > 0 && !atomic_load(&sh->ready))
		usleep(1000);
	return pid;
}

TEST_F(loop_lock, a_loops_process_killed_while_its_lock_waits)
{
	pid_t c;

	/* Killed while queued. */
	ASSERT_EQ(0, syncmem_lock(self->r, &self->sh->lock));
	c = async_locker(self->r, self->sh);
	ASSERT_LT(0, c);
	ASSERT_EQ(1, await_waiters(self->r, 1));
	kill(c, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(c));
	ASSERT_EQ(1, await_waiters(self->r, 0));
	ASSERT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	EXPECT_EQ(0, self->sh->lock.word);

	/* Killed after the unlock, before its loop ran. */
	ASSERT_EQ(0, syncmem_lock(self->r, &self->sh->lock));
	c = async_locker(self->r, self->sh);
	ASSERT_LT(0, c);
	ASSERT_EQ(1, await_waiters(self->r, 1));
	ASSERT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	ASSERT_EQ(1, await_waiters(self->r, 0));
	/* From 6.7 the child's task work posts the CQE: let it run. */
	usleep(200000);
	kill(c, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(c));
	EXPECT_EQ(variant->ring ? -EOWNERDEAD : 0,
		  syncmem_lock_timed(self->r, &self->sh->lock, 5000 * MS));
	if (variant->ring)
		EXPECT_EQ(0, syncmem_lock_consistent(self->r, &self->sh->lock));
	EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	EXPECT_EQ(0, self->sh->lock.word);
	EXPECT_EQ(0, region_waiters(self->r));
}

/* Has child @pid exited? It stays to be reaped. */
static bool exited(pid_t pid)
{
	siginfo_t info = { 0 };

	return !waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) && info.si_pid == pid;
}

/*
 * The ring path's async acquisitions are commands of the loop's ring: a
 * child that may make no ioctl (SIGSYS) takes a held lock and passes a
 * closed held gate from its loop. The eventfd path queues each by ioctl.
 */
TEST_F(loop_lock, on_the_ring_path_a_contended_acquisition_makes_no_ioctl)
{
	pid_t c;

	ASSERT_EQ(128 + SIGSYS, filter_kills_child(forbid_ioctl));
	atomic_store(&self->sh->ready, 0);
	ASSERT_EQ(0, syncmem_lock(self->r, &self->sh->lock));
	c = fork();
	ASSERT_LE(0, c);
	if (c == 0) {
		struct syncmem_loop *loop;
		struct slot w = { 0 }, s = { 0 }, g = { 0 };

		/* Its owner ids first (ioctls), through a free lock. */
		if (syncmem_loop_new(&loop) ||
		    syncmem_lock_async(loop, self->r, &self->sh->spare, slot_cb, &w) ||
		    !run_until(loop, &w) || w.result ||
		    syncmem_unlock(self->r, &self->sh->spare) || forbid_ioctl())
			_exit(10);
		if (syncmem_lock_async(loop, self->r, &self->sh->lock, slot_cb, &s))
			_exit(11);
		atomic_store(&self->sh->ready, 1);
		if (!run_until(loop, &s) || s.result ||
		    syncmem_unlock(self->r, &self->sh->lock))
			_exit(12);
		if (syncmem_gate_wait_async(loop, self->r, &self->sh->gate, slot_cb, &g))
			_exit(13);
		atomic_store(&self->sh->ready, 2);
		if (!run_until(loop, &g) || g.result)
			_exit(14);
		_exit(0);	/* syncmem_loop_free() would cancel by ioctl */
	}
	while (atomic_load(&self->sh->ready) == 0 && !exited(c))
		usleep(1000);
	if (atomic_load(&self->sh->ready) == 1) {
		ASSERT_EQ(1, await_waiters(self->r, 1));
		ASSERT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
		while (atomic_load(&self->sh->ready) == 1 && !exited(c))
			usleep(1000);
		if (atomic_load(&self->sh->ready) == 2) {
			ASSERT_EQ(1, await_waiters(self->r, 1));
			EXPECT_EQ(1, syncmem_gate_signal(self->r, &self->sh->gate));
		}
	}
	EXPECT_EQ(variant->ring ? 0 : 128 + SIGSYS, wait_exit(c));
	if (!variant->ring && holder_of(&self->sh->lock))
		EXPECT_EQ(0, syncmem_unlock(self->r, &self->sh->lock));
	EXPECT_EQ(0, region_waiters(self->r));
}

/* A child that waits at the held gate, records its turn as @tag, and signals. */
static pid_t blocking_passer(struct syncmem_region *r, struct shared *sh, int tag)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (syncmem_gate_wait(r, &sh->gate, 10000 * MS))
			_exit(10);
		sh->order[atomic_fetch_add(&sh->seq, 1)] = tag;
		_exit(syncmem_gate_signal(r, &sh->gate) < 0 ? 11 : 0);
	}
	return pid;
}

/* Held gates: the same as locks, a signal being an unlock that hands off. */
TEST_F(loop_lock, held_gate_fifo_with_blocking_waiters)
{
	struct slot a = { .r = self->r, .sh = self->sh, .tag = 1, .gate = true };
	struct slot c = { .r = self->r, .sh = self->sh, .tag = 3, .gate = true };
	pid_t b;

	atomic_store(&self->sh->seq, 0);
	ASSERT_EQ(0, syncmem_gate_wait_async(self->loop, self->r, &self->sh->gate, slot_cb, &a));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	b = blocking_passer(self->r, self->sh, 2);
	ASSERT_LT(0, b);
	ASSERT_EQ(1, await_waiters(self->r, 2));
	ASSERT_EQ(0, syncmem_gate_wait_async(self->loop, self->r, &self->sh->gate, slot_cb, &c));
	ASSERT_EQ(1, await_waiters(self->r, 3));
	EXPECT_EQ(0, syncmem_loop_run_once(self->loop, 0));
	/* One signal lets A through, which lets B, which lets C. */
	ASSERT_EQ(1, syncmem_gate_signal(self->r, &self->sh->gate));
	EXPECT_EQ(self->me, self->sh->gate.word & SYNCMEM_OWNER_ID);
	ASSERT_EQ(1, run_until(self->loop, &a));
	EXPECT_EQ(0, a.result);
	EXPECT_EQ(0, wait_exit(b));
	ASSERT_EQ(1, run_until(self->loop, &c));
	EXPECT_EQ(0, c.result);
	ASSERT_EQ(3, atomic_load(&self->sh->seq));
	EXPECT_EQ(1, self->sh->order[0]);
	EXPECT_EQ(2, self->sh->order[1]);
	EXPECT_EQ(3, self->sh->order[2]);
	/* C's signal found nobody: open. */
	EXPECT_EQ(0, self->sh->gate.word);
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(1, c.calls);
}

TEST_F(loop_lock, held_gate_of_a_killed_holder_is_eownerdead)
{
	struct slot s = { 0 };
	pid_t h;

	/* A child passes the open gate (it names the child) and dies holding it. */
	self->sh->gate.word = 0;
	atomic_store(&self->sh->ready, 0);
	h = fork();
	ASSERT_LE(0, h);
	if (h == 0) {
		if (syncmem_gate_wait(self->r, &self->sh->gate, 0))
			_exit(10);
		atomic_store(&self->sh->ready, 1);
		pause();
		_exit(11);
	}
	while (!atomic_load(&self->sh->ready))
		usleep(1000);
	ASSERT_EQ(0, syncmem_gate_wait_async(self->loop, self->r, &self->sh->gate, slot_cb, &s));
	ASSERT_EQ(1, await_waiters(self->r, 1));
	kill(h, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(h));
	ASSERT_EQ(1, run_until(self->loop, &s));
	EXPECT_EQ(-EOWNERDEAD, s.result);
	EXPECT_EQ(self->me | SYNCMEM_OWNER_DIED, self->sh->gate.word & ~SYNCMEM_OWNER_WAITERS);
	/* The next signal drops the died bit: open. */
	EXPECT_EQ(0, syncmem_gate_signal(self->r, &self->sh->gate));
	EXPECT_EQ(0, self->sh->gate.word);
	EXPECT_EQ(1, s.calls);
}

TEST_HARNESS_MAIN
