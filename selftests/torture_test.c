// SPDX-License-Identifier: GPL-2.0
/*
 * Kill torture: worker processes take locks (default, fair, blocking and
 * async, both sides of an rwlock, a held gate blocking and async) and
 * update two counters that are
 * only equal outside a critical section, and allocate, free and pass pool
 * blocks to each other through a mailbox, while a killer SIGKILLs random
 * workers at random moments and starts new ones. Checked after every kill:
 * the survivors' objects can be taken within a second, a state left
 * half-updated is always reported (-EOWNERDEAD) and never afterwards,
 * nothing is reported without a death, and reclaiming the pool never takes
 * a block from a live holder. At the end the pool reclaims to its full
 * count and the kernel's counters are back to where they started.
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
#define NBLOCKS		48
#define MAILBOX		8	/* blocks in transit between workers */
#define HELD_MAX	4	/* blocks a worker holds at most */
#define IN_TRANSIT	0xffffffffu	/* stamp of a block in the mailbox */

/* What a holder writes into its block and checks before letting it go. */
struct stamp {
	_Atomic uint32_t pid;
	_Atomic uint32_t seq;
};

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
	_Atomic uint64_t read_sections;	/* of the rwlock */
	_Atomic int last_error;
	_Atomic uint64_t last_word;		/* the lock word it was met with */
	/* The pool: a message is msg(offset, giver, tag), 0 an empty slot. */
	_Atomic uint64_t mailbox[MAILBOX];
	_Atomic uint64_t next_tag;
	_Atomic uint32_t in_pool_call[NWORKERS];	/* set around each pool call */
	_Atomic uint64_t bad_stamps;	/* a block changed under its holder */
	_Atomic uint64_t blocks_moved;	/* pool steps tried */
	_Atomic uint64_t given, taken, taken_over;	/* messages posted and received */
	uint8_t pool[] __attribute__((aligned(64)));
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

/*
 * A read section of the rwlock; a kill inside leaves a share behind. A
 * reader told of a writer that died inside repairs, as a writer would: no
 * writer is in, and other readers do not touch the pair.
 */
static void read_section(struct tshared *sh, int ret, uint32_t *s)
{
	if (ret == -EOWNERDEAD) {
		atomic_fetch_add(&sh->ownerdead[RW], 1);
		sh->g[RW].b = sh->g[RW].a;
	}
	spin_a_little(s);
	atomic_fetch_add(&sh->read_sections, 1);
}

static void read_locked(void *arg, int result)
{
	struct async_ctx *c = arg;

	if (result == 0 || result == -EOWNERDEAD) {
		read_section(c->sh, result, c->s);
		if (syncmem_rwlock_unlock(c->r, &c->sh->rw))
			error(c->sh, -6000);
	} else {
		error(c->sh, result);
	}
	c->done = 1;
}

/* Read the rwlock, blocking or async. */
static void read_step(struct syncmem_region *r, struct tshared *sh, struct syncmem_loop *loop,
		      uint32_t *s)
{
	struct async_ctx c = { r, sh, RW, 0, s };
	int ret;

	if (rnd(s) % 3 == 0) {
		ret = syncmem_rwlock_rdlock_async(loop, r, &sh->rw, read_locked, &c);
		if (ret) {
			error(sh, ret);
			return;
		}
		while (!c.done)
			if (syncmem_loop_run_once(loop, 1000 * MS) < 0)
				error(sh, -6001);
		return;
	}
	ret = syncmem_rwlock_rdlock(r, &sh->rw);
	if (ret && ret != -EOWNERDEAD) {
		error(sh, ret);
		return;
	}
	read_section(sh, ret, s);
	if (syncmem_rwlock_unlock(r, &sh->rw))
		error(sh, -6002);
}

/* A mailbox message: the block (16 bits), its giver's id (32), a tag (16). */
static uint64_t msg_make(uint32_t off, uint64_t giver, uint64_t tag)
{
	return (tag & 0xffff) << 48 | (giver & 0xffffffff) << 16 | off;
}

static uint32_t msg_off(uint64_t msg)
{
	return (uint32_t)(msg & 0xffff);
}

static uint64_t msg_giver(uint64_t msg)
{
	return (msg >> 16) & 0xffffffff;
}

/* A worker's blocks, each with the stamp it wrote. */
struct holding {
	struct syncmem_pool *p;
	_Atomic uint32_t *busy;		/* this worker's in_pool_call flag */
	uint32_t off[HELD_MAX], seq[HELD_MAX], n, next_seq, pid;
	uint64_t id;			/* its pool id, which messages carry */
};

static struct stamp *stamp_of(struct holding *h, uint32_t off)
{
	return syncmem_pool_ptr(h->p, off);
}

/* Did @off keep the stamp this holder wrote? */
static bool stamp_kept(struct tshared *sh, struct holding *h, int k)
{
	struct stamp *st = stamp_of(h, h->off[k]);

	if (atomic_load(&st->pid) == h->pid && atomic_load(&st->seq) == h->seq[k])
		return true;
	atomic_fetch_add(&sh->bad_stamps, 1);
	return false;
}

static void hold(struct holding *h, uint32_t off)
{
	struct stamp *st = stamp_of(h, off);

	h->seq[h->n] = ++h->next_seq;
	atomic_store(&st->pid, h->pid);
	atomic_store(&st->seq, h->seq[h->n]);
	h->off[h->n++] = off;
}

/* Let go of block @k (freed or given away). */
static uint32_t drop(struct holding *h, int k)
{
	uint32_t off = h->off[k];

	h->off[k] = h->off[--h->n];
	h->seq[k] = h->seq[h->n];
	return off;
}

/* One pool step: allocate, free, put a block in the mailbox or take one out. */
static void pool_step(struct tshared *sh, struct holding *h, uint32_t *s)
{
	int op = rnd(s) % 4, k = h->n ? (int)(rnd(s) % h->n) : 0, slot = rnd(s) % MAILBOX, ret;
	uint64_t msg, tag;
	uint32_t off;

	atomic_store(h->busy, 1);
	if (op == 0 && h->n < HELD_MAX) {
		off = syncmem_pool_alloc(h->p);
		if (off)
			hold(h, off);
	} else if (op == 1 && h->n) {
		if (stamp_kept(sh, h, k)) {
			off = drop(h, k);
			ret = syncmem_pool_free(h->p, off);
			if (ret)
				error(sh, ret - 6000);
		}
	} else if (op == 2 && h->n && !atomic_load(&sh->mailbox[slot])) {
		/*
		 * Post, then give to anyone: a death in between leaves the
		 * block to its receiver (-EOWNERDEAD) or to a reclaim, never
		 * lost in transit.
		 */
		if (stamp_kept(sh, h, k)) {
			off = h->off[k];
			atomic_store(&stamp_of(h, off)->pid, IN_TRANSIT);
			tag = atomic_fetch_add(&sh->next_tag, 1) + 1;
			msg = msg_make(off, h->id, tag);
			if (atomic_compare_exchange_strong(&sh->mailbox[slot], &(uint64_t){ 0 },
							   msg)) {
				drop(h, k);
				ret = syncmem_pool_give(h->p, off, SYNCMEM_POOL_ANYONE);
				if (ret)
					error(sh, ret - 7000);
				else
					atomic_fetch_add(&sh->given, 1);
			} else {	/* the slot filled meanwhile: keep it */
				atomic_store(&stamp_of(h, off)->pid, h->pid);
			}
		}
	} else if (op == 3 && h->n < HELD_MAX && (msg = atomic_load(&sh->mailbox[slot]))) {
		/*
		 * Take before emptying the slot: a death in between leaves
		 * the block held by the dead (reclaimed), never lost.
		 */
		off = msg_off(msg);
		ret = syncmem_pool_take(h->p, off, msg_giver(msg));
		if (ret == 0 || ret == -EOWNERDEAD) {
			/*
			 * Ours (from a sender that died before giving it, for
			 * -EOWNERDEAD: what it wrote before posting is there).
			 * Emptying fails when another receiver dropped the
			 * message meanwhile: the block is ours all the same.
			 */
			atomic_compare_exchange_strong(&sh->mailbox[slot], &msg, 0);
			/* A dead holder's block may be from a stale read: any stamp. */
			if (ret == 0 && atomic_load(&stamp_of(h, off)->pid) != IN_TRANSIT)
				atomic_fetch_add(&sh->bad_stamps, 1);
			atomic_fetch_add(ret ? &sh->taken_over : &sh->taken, 1);
			hold(h, off);
		} else if (ret == -EALREADY || ret == 1 || ret == -EBUSY || ret == -ESTALE) {
			/*
			 * Stale (its block changed hands since it was posted)
			 * or taken by another receiver: drop the message.
			 */
			atomic_compare_exchange_strong(&sh->mailbox[slot], &msg, 0);
		} else if (ret != -EAGAIN) {	/* not given yet */
			error(sh, ret - 9000);
		}
	}
	atomic_store(h->busy, 0);
	atomic_fetch_add(&sh->blocks_moved, 1);
}

static void worker(struct syncmem_region *r, struct tshared *sh, int w, uint32_t seed)
{
	struct syncmem_loop *loop = NULL;
	struct holding h = { .busy = &sh->in_pool_call[w], .pid = (uint32_t)getpid() };
	uint32_t s = seed | 1;

	if (syncmem_loop_new(&loop) || syncmem_pool_attach(sh->pool, NBLOCKS * 256, &h.p) ||
	    syncmem_pool_self_id(&h.id))
		_exit(1);
	for (;;) {
		int i = rnd(&s) % NLOCKS, ret;

		if (rnd(&s) % 2) {
			pool_step(sh, &h, &s);
			continue;
		}
		if (i == RW && rnd(&s) % 2) {
			read_step(r, sh, loop, &s);
			continue;
		}

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

static pid_t spawn(struct syncmem_region *r, struct tshared *sh, int w, uint32_t seed)
{
	pid_t pid = fork();

	if (pid == 0)
		worker(r, sh, w, seed);
	return pid;
}

/*
 * After every worker is gone: empty the mailbox (take and free what is
 * still in transit), then reclaim what the dead held. Returns the number
 * of blocks reclaimed, or a negative error.
 */
static int pool_take_back(struct tshared *sh, struct syncmem_pool *p)
{
	for (int i = 0; i < MAILBOX; i++) {
		uint64_t msg = atomic_exchange(&sh->mailbox[i], 0);
		int ret = msg ? syncmem_pool_take(p, msg_off(msg), msg_giver(msg)) : 1;

		/* Else stale: a dead taker's block, which reclaim sees to. */
		if ((ret == 0 || ret == -EOWNERDEAD) && syncmem_pool_free(p, msg_off(msg)))
			return -1;
	}
	return syncmem_pool_reclaim(p);
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

/* Blocks that can be allocated, all freed again. */
static uint32_t pool_drain_count(struct syncmem_pool *p)
{
	uint32_t offs[NBLOCKS + 1], n = 0;

	while (n <= NBLOCKS && (offs[n] = syncmem_pool_alloc(p)))
		n++;
	for (uint32_t i = 0; i < n; i++)
		syncmem_pool_free(p, offs[i]);
	return n;
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
	uint64_t kills = 0, checks = 0, reports = 0, reclaimed = 0, kills_in_pool = 0;
	size_t pool_len = syncmem_pool_footprint(sizeof(struct stamp), NBLOCKS);
	struct syncmem_pool *pool;
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
	ASSERT_GE(NBLOCKS * 256, pool_len);
	ASSERT_EQ(0, syncmem_pool_init(sh->pool, pool_len, sizeof(struct stamp), NBLOCKS, &pool));
	for (int w = 0; w < NWORKERS; w++) {
		pids[w] = spawn(r, sh, w, rnd(&s));
		ASSERT_LT(0, pids[w]);
	}
	while (now_ns() < end) {
		int w = rnd(&s) % NWORKERS, ret;

		usleep(rnd(&s) % 20000);
		kill(pids[w], SIGKILL);
		ASSERT_EQ(pids[w], waitpid(pids[w], NULL, 0));
		kills++;
		kills_in_pool += atomic_exchange(&sh->in_pool_call[w], 0);
		/* Under the survivors' feet: only the dead's blocks may go. */
		ret = syncmem_pool_reclaim(pool);
		if (ret < 0) {
			TH_LOG("after kill %llu: reclaim: %d", (unsigned long long)kills, ret);
			break;
		}
		reclaimed += ret;
		ret = take_everything(r, sh, &s);
		if (ret) {
			TH_LOG("after kill %llu: an object could not be taken within 1 s: %d",
			       (unsigned long long)kills, ret);
			break;
		}
		checks += NLOCKS;
		pids[w] = spawn(r, sh, w, rnd(&s));
		ASSERT_LT(0, pids[w]);
	}
	for (int w = 0; w < NWORKERS; w++) {
		kill(pids[w], SIGKILL);
		waitpid(pids[w], NULL, 0);
		kills_in_pool += atomic_exchange(&sh->in_pool_call[w], 0);
	}
	{
		int ret = pool_take_back(sh, pool);
		uint32_t drained = pool_drain_count(pool);

		EXPECT_LE(0, ret);
		reclaimed += ret > 0 ? ret : 0;
		TH_LOG("pool: %llu steps, %llu messages given, %llu taken, %llu taken over from "
		       "a dead sender, %llu blocks reclaimed from the dead, %u of %u back at the "
		       "end; %llu kills landed inside a pool call",
		       (unsigned long long)atomic_load(&sh->blocks_moved),
		       (unsigned long long)atomic_load(&sh->given),
		       (unsigned long long)atomic_load(&sh->taken),
		       (unsigned long long)atomic_load(&sh->taken_over),
		       (unsigned long long)reclaimed, drained, NBLOCKS,
		       (unsigned long long)kills_in_pool);
		/* Blocks did change hands, and the dead's were taken back. */
		EXPECT_LT(0, atomic_load(&sh->given));
		EXPECT_LT(0, atomic_load(&sh->taken));
		EXPECT_LT(0, reclaimed);
		/*
		 * Full count, but for blocks of a process killed inside alloc
		 * or free between its two atomic steps (documented): never more
		 * than the kills that landed inside a pool call. Every block
		 * that can be allocated is counted free, and nothing is held.
		 */
		EXPECT_GE(kills_in_pool, NBLOCKS - drained);
		EXPECT_EQ(NBLOCKS, syncmem_pool_free_count(pool));
		EXPECT_EQ(0, atomic_load(&sh->bad_stamps));
	}
	EXPECT_EQ(0, take_everything(r, sh, &s));
	for (int i = 0; i < NLOCKS; i++)
		reports += atomic_load(&sh->ownerdead[i]);
	TH_LOG("%llu kills survived, %llu objects taken back within 1 s, %llu sections, "
	       "%llu read sections, %llu -EOWNERDEAD reports", (unsigned long long)kills,
	       (unsigned long long)checks, (unsigned long long)atomic_load(&sh->sections),
	       (unsigned long long)atomic_load(&sh->read_sections), (unsigned long long)reports);
	EXPECT_LT(0, kills);
	EXPECT_LT(0, atomic_load(&sh->read_sections));
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
	syncmem_pool_detach(pool);
	after = get_stats(dev);
	EXPECT_EQ(before.waiters, after.waiters);
	EXPECT_EQ(before.async_waits, after.async_waits);
	EXPECT_EQ(before.regions, after.regions);
	close(dev);
}

TEST_HARNESS_MAIN
