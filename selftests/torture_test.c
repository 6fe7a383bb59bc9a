// SPDX-License-Identifier: GPL-2.0
/*
 * Kill torture: worker processes take locks (default, fair, blocking and
 * async, the write side of an rwlock, a held gate blocking and async) and
 * update two counters that are
 * only equal outside a critical section, while a killer SIGKILLs random
 * workers at random moments and starts new ones. Checked after every kill:
 * the survivors' objects can be taken within a second, a state left
 * half-updated is always reported (-EOWNERDEAD) and never afterwards, and
 * nothing is reported without a death. At the end the kernel's counters are
 * back to where they started.
 *
 * SYNCMEM_TORTURE_SECONDS sets the length (default 20); `make torture`
 * runs it for long.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define MS		1000000LL
#define NLOCKS		5	/* 0, 1: default; 2: fair; 3: rwlock's write side; 4: gate */
#define RW		3
#define GATE		4
#define NWORKERS	6

struct guarded {
	uint64_t a, b;		/* equal outside the critical section */
};

struct tshared {
	struct syncmem_lock locks[3];
	struct syncmem_rwlock rw;
	struct syncmem_gate gate;	/* SYNCMEM_GATE_HELD */
	struct guarded g[NLOCKS];
	_Atomic uint64_t ownerdead[NLOCKS];	/* reports seen */
	_Atomic uint64_t dirty_unreported;	/* a != b without -EOWNERDEAD */
	_Atomic uint64_t errors;		/* any other unexpected result */
	_Atomic uint64_t sections;
	_Atomic int last_error;
	_Atomic uint64_t last_word;		/* the lock word it was met with */
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void spin_a_little(uint32_t *s)
{
	for (volatile uint32_t i = rnd(s) % 2000; i; i--)
		;
}

/* Holding lock @i (acquired with @ret): check, repair, update. */
static void section(struct tshared *sh, int i, int ret, uint32_t *s)
{
	struct guarded *g = &sh->g[i];

	if (ret == -EOWNERDEAD) {
		atomic_fetch_add(&sh->ownerdead[i], 1);
		g->b = g->a;		/* the repair */
	} else if (g->a != g->b) {
		atomic_fetch_add(&sh->dirty_unreported, 1);
	}
	g->a++;
	spin_a_little(s);	/* a kill here leaves a != b */
	g->b++;
	atomic_fetch_add(&sh->sections, 1);
}

static void error(struct tshared *sh, int ret)
{
	atomic_fetch_add(&sh->errors, 1);
	atomic_store(&sh->last_error, ret);
}

static int lock_any(struct syncmem_region *r, struct tshared *sh, int i, int64_t timeout)
{
	if (i == RW)
		return syncmem_rwlock_wrlock_timed(r, &sh->rw, timeout);
	if (i == GATE)
		return syncmem_gate_wait(r, &sh->gate, timeout);
	return syncmem_lock_timed(r, &sh->locks[i], timeout);
}

static int repair_and_unlock(struct syncmem_region *r, struct tshared *sh, int i, int ret)
{
	if (i == RW)
		return syncmem_rwlock_unlock(r, &sh->rw);	/* goes on by itself */
	if (i == GATE)	/* goes on by itself too: 1 handed over, 0 opened */
		return syncmem_gate_signal(r, &sh->gate) < 0 ? -5000 : 0;
	atomic_store(&sh->last_word, sh->locks[i].word);
	ret = ret == -EOWNERDEAD ? syncmem_lock_consistent(r, &sh->locks[i]) : 0;
	if (ret)
		return ret - 100;
	return syncmem_unlock(r, &sh->locks[i]);
}

struct async_ctx {
	struct syncmem_region *r;
	struct tshared *sh;
	int i;
	int done;
	uint32_t *s;
};

static void async_locked(void *arg, int result)
{
	struct async_ctx *c = arg;

	if (result == 0 || result == -EOWNERDEAD) {
		section(c->sh, c->i, result, c->s);
		int ret = repair_and_unlock(c->r, c->sh, c->i, result);

		if (ret)
			error(c->sh, ret - 1000 * (result == -EOWNERDEAD ? 2 : 1));
	} else {
		error(c->sh, result);
	}
	c->done = 1;
}

static void worker(struct syncmem_region *r, struct tshared *sh, uint32_t seed)
{
	struct syncmem_loop *loop = NULL;
	uint32_t s = seed | 1;

	if (syncmem_loop_new(&loop))
		_exit(1);
	for (;;) {
		int i = rnd(&s) % NLOCKS, ret;

		if (i != RW && rnd(&s) % 3 == 0) {
			struct async_ctx c = { r, sh, i, 0, &s };

			ret = i == GATE ?
			      syncmem_gate_wait_async(loop, r, &sh->gate, async_locked, &c) :
			      syncmem_lock_async(loop, r, &sh->locks[i], async_locked, &c);
			if (ret) {
				error(sh, ret);
				continue;
			}
			while (!c.done)
				if (syncmem_loop_run_once(loop, 1000 * MS) < 0)
					error(sh, -2000);
			continue;
		}
		ret = lock_any(r, sh, i, SYNCMEM_FOREVER);
		if (ret && ret != -EOWNERDEAD) {
			error(sh, ret);
			continue;
		}
		section(sh, i, ret, &s);
		if (repair_and_unlock(r, sh, i, ret))
			error(sh, -3000);
	}
}

static pid_t spawn(struct syncmem_region *r, struct tshared *sh, uint32_t seed)
{
	pid_t pid = fork();

	if (pid == 0)
		worker(r, sh, seed);
	return pid;
}

/*
 * The killer's check: every object can be taken within a second, and a
 * state found half-updated was reported. Counts the reports it got itself.
 */
static int take_everything(struct syncmem_region *r, struct tshared *sh, uint32_t *s)
{
	for (int i = 0; i < NLOCKS; i++) {
		int ret = lock_any(r, sh, i, 1000 * MS);

		if (ret && ret != -EOWNERDEAD)
			return ret ? ret : -1;
		section(sh, i, ret, s);
		if (repair_and_unlock(r, sh, i, ret))
			return -4000;
	}
	return 0;
}

FIXTURE(torture) {
	int unused;
};

FIXTURE_SETUP(torture)
{
}

FIXTURE_TEARDOWN(torture)
{
}

/* Its own length bounds it (SYNCMEM_TORTURE_SECONDS); the harness's limit is a backstop. */
TEST_F_TIMEOUT(torture, kill_torture, 7200)
{
	const char *env = getenv("SYNCMEM_TORTURE_SECONDS");
	int64_t end = now_ns() + (env ? atoll(env) : 20) * 1000 * MS;
	struct syncmem_stats before, after;
	uint64_t kills = 0, checks = 0, reports = 0;
	struct syncmem_region *r;
	pid_t pids[NWORKERS];
	struct tshared *sh;
	uint32_t s = 20261123;
	int dev = dev_open();

	ASSERT_LE(0, dev);
	before = get_stats(dev);
	ASSERT_EQ(0, syncmem_open(NULL, 1 << 16, 0, 0, &r));
	sh = syncmem_base(r);
	syncmem_lock_init(&sh->locks[0], 0);
	syncmem_lock_init(&sh->locks[1], 0);
	syncmem_lock_init(&sh->locks[2], SYNCMEM_LOCK_FAIR);
	syncmem_rwlock_init(&sh->rw);
	ASSERT_EQ(0, syncmem_gate_init_flags(&sh->gate, true, SYNCMEM_GATE_HELD));
	for (int w = 0; w < NWORKERS; w++) {
		pids[w] = spawn(r, sh, rnd(&s));
		ASSERT_LT(0, pids[w]);
	}
	while (now_ns() < end) {
		int w = rnd(&s) % NWORKERS, ret;

		usleep(rnd(&s) % 20000);
		kill(pids[w], SIGKILL);
		ASSERT_EQ(pids[w], waitpid(pids[w], NULL, 0));
		kills++;
		ret = take_everything(r, sh, &s);
		if (ret) {
			TH_LOG("after kill %llu: an object could not be taken within 1 s: %d",
			       (unsigned long long)kills, ret);
			break;
		}
		checks += NLOCKS;
		pids[w] = spawn(r, sh, rnd(&s));
		ASSERT_LT(0, pids[w]);
	}
	for (int w = 0; w < NWORKERS; w++) {
		kill(pids[w], SIGKILL);
		waitpid(pids[w], NULL, 0);
	}
	EXPECT_EQ(0, take_everything(r, sh, &s));
	for (int i = 0; i < NLOCKS; i++)
		reports += atomic_load(&sh->ownerdead[i]);
	TH_LOG("%llu kills survived, %llu objects taken back within 1 s, %llu sections, "
	       "%llu -EOWNERDEAD reports", (unsigned long long)kills,
	       (unsigned long long)checks, (unsigned long long)atomic_load(&sh->sections),
	       (unsigned long long)reports);
	EXPECT_LT(0, kills);
	EXPECT_EQ(0, atomic_load(&sh->dirty_unreported));
	EXPECT_EQ(0, atomic_load(&sh->errors));
	if (atomic_load(&sh->errors))
		TH_LOG("last unexpected result %d, lock word %#llx", atomic_load(&sh->last_error),
		       (unsigned long long)atomic_load(&sh->last_word));
	/* A death is reported at most once (a kill leaves at most one lock held). */
	EXPECT_GE(kills + NWORKERS, reports);
	for (int i = 0; i < NLOCKS; i++)
		EXPECT_EQ(sh->g[i].a, sh->g[i].b);
	/* Every waiter and async wait of the dead is gone. */
	EXPECT_TRUE(await_waiters(r, 0));
	syncmem_close(r);
	after = get_stats(dev);
	EXPECT_EQ(before.waiters, after.waiters);
	EXPECT_EQ(before.async_waits, after.async_waits);
	EXPECT_EQ(before.regions, after.regions);
	close(dev);
}

TEST_HARNESS_MAIN
