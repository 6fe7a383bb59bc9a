// SPDX-License-Identifier: GPL-2.0
/*
 * The lock-free block allocator on real syncmem regions: the seed's
 * 50-process test with every process mapping the region itself (so at its
 * own address), a region mapped twice, and SIGKILL in the middle of churn.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "pool_common.h"
#include "syncmem_test.h"

FIXTURE(pool) {
	char name[64];
};

FIXTURE_SETUP(pool)
{
	snprintf(self->name, sizeof(self->name), "pool-test-%d", getpid());
}

FIXTURE_TEARDOWN(pool)
{
	syncmem_unlink(self->name);
}

/* A child: open the region by name (its own mapping), attach, churn. */
static int churn_child(const char *name, uint32_t id, double seconds)
{
	struct syncmem_region *r;
	struct syncmem_pool *p;
	struct churn_stats *st;

	if (syncmem_open(name, 0, 0, 0, &r))
		return 10;
	if (syncmem_pool_attach(syncmem_base(r), syncmem_size(r) - 4096, &p))
		return 11;
	st = (void *)((char *)syncmem_base(r) + syncmem_size(r) - 4096);
	churn(p, st, id, 3, seconds);
	syncmem_pool_detach(p);
	syncmem_close(r);
	return 0;
}

TEST_F(pool, fifty_processes_twenty_blocks_on_a_region)
{
	size_t len = syncmem_pool_footprint(64, 20);
	struct syncmem_region *r;
	struct syncmem_pool *p, *q;
	struct churn_stats *st;
	pid_t pids[50];
	int bad = 0;

	ASSERT_EQ(0, syncmem_open(self->name, len + 4096, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r));
	/* A fresh region is zeroed: not a pool yet. */
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(syncmem_base(r), len, &q));
	ASSERT_EQ(0, syncmem_pool_init(syncmem_base(r), len, 64, 20, &p));
	st = (void *)((char *)syncmem_base(r) + len);
	for (int i = 0; i < 50; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(churn_child(self->name, (uint32_t)i + 1, 3.0));
	}
	for (int i = 0; i < 50; i++)
		bad += wait_exit(pids[i]) != 0;
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, atomic_load(&st->double_allocs));
	EXPECT_EQ(0, atomic_load(&st->bad_stamps));
	EXPECT_EQ(0, atomic_load(&st->errors));
	EXPECT_EQ(atomic_load(&st->allocs), atomic_load(&st->frees));
	EXPECT_LT(100, atomic_load(&st->allocs));
	EXPECT_EQ(20, syncmem_pool_free_count(p));
	EXPECT_EQ(20, pool_drain_check(p, 20));
	TH_LOG("%llu allocations by 50 processes, %llu times exhausted: 0 double allocations, 0 lost blocks",
	       (unsigned long long)st->allocs, (unsigned long long)st->exhausted);
	syncmem_pool_detach(p);
	syncmem_close(r);
}

TEST_F(pool, region_mapped_twice)
{
	size_t len = syncmem_pool_footprint(4096, 8);
	struct syncmem_region *r;
	struct syncmem_pool *a, *b;
	char *second;
	uint32_t off;

	ASSERT_EQ(0, syncmem_open(NULL, len, 0, 0, &r));
	second = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, syncmem_region_fd(r), 0);
	ASSERT_NE(MAP_FAILED, second);
	ASSERT_NE((void *)second, syncmem_base(r));
	ASSERT_EQ(0, syncmem_pool_init(syncmem_base(r), len, 4096, 8, &a));
	ASSERT_EQ(0, syncmem_pool_attach(second, len, &b));
	off = syncmem_pool_alloc(a);
	ASSERT_NE(0, off);
	memset(syncmem_pool_ptr(a, off), 0x5a, 4096);
	EXPECT_EQ(0x5a, ((unsigned char *)syncmem_pool_ptr(b, off))[4095]);
	EXPECT_EQ(off, syncmem_pool_off(b, syncmem_pool_ptr(b, off)));
	EXPECT_EQ(0, syncmem_pool_free(b, off));
	EXPECT_EQ(-EALREADY, syncmem_pool_free(a, off));
	EXPECT_EQ(8, syncmem_pool_free_count(a));
	syncmem_pool_detach(a);
	syncmem_pool_detach(b);
	munmap(second, len);
	syncmem_close(r);
}

TEST_F(pool, sigkill_mid_churn_on_a_region)
{
	enum { N = 40, PROCS = 10, KILL = 3, HELD = 4 };
	size_t len = syncmem_pool_footprint(64, N);
	struct syncmem_region *r;
	struct syncmem_pool *p;
	struct churn_stats *st;
	long leaked;
	int reclaimed;

	ASSERT_EQ(0, syncmem_open(NULL, len + 4096, 0, 0, &r));
	ASSERT_EQ(0, syncmem_pool_init(syncmem_base(r), len, 64, N, &p));
	st = (void *)((char *)syncmem_base(r) + len);
	leaked = churn_with_kills(p, st, PROCS, KILL, HELD, N);
	ASSERT_LE(0, leaked);
	EXPECT_GE(KILL * (HELD + 1), leaked);
	EXPECT_EQ(0, atomic_load(&st->double_allocs));
	EXPECT_EQ(0, atomic_load(&st->bad_stamps));
	/*
	 * The dead held them: reclaim frees them all, but for a block whose
	 * process died inside an alloc or a free (not held, not yet listed).
	 */
	reclaimed = syncmem_pool_reclaim(p);
	ASSERT_LE(0, reclaimed);
	EXPECT_GE(leaked, reclaimed);
	EXPECT_GE(KILL, leaked - reclaimed);
	EXPECT_EQ(N - (leaked - reclaimed), pool_drain_check(p, N));
	EXPECT_EQ(0, syncmem_pool_reclaim(p));
	TH_LOG("%ld blocks held by %d killed processes, %d reclaimed; the list is intact",
	       leaked, KILL, reclaimed);
	syncmem_pool_detach(p);
	syncmem_close(r);
}

/* What the parent tells the child, and what the child reports. */
struct holder_order {
	uint64_t parent;
	uint32_t in_transit, parents_own;
};

struct holder_report {
	uint64_t id;
	uint32_t kept[3], in_transit, unsent;
	int take, take_again, take_not_given;
};

/*
 * The child: keeps three blocks, puts one in transit, keeps one it never
 * gives (a sender that dies before giving), takes the block the parent put
 * in transit, reports, and waits to be killed.
 */
static void holder_child(struct syncmem_pool *p, int to_parent, int from_parent)
{
	struct holder_report rep = { 0 };
	struct holder_order o;

	if (syncmem_pool_self_id(&rep.id))
		_exit(1);
	for (int i = 0; i < 3; i++)
		rep.kept[i] = syncmem_pool_alloc(p);
	rep.in_transit = syncmem_pool_alloc(p);
	rep.unsent = syncmem_pool_alloc(p);
	if (syncmem_pool_give(p, rep.in_transit, SYNCMEM_POOL_ANYONE))
		_exit(2);
	if (read(from_parent, &o, sizeof(o)) != sizeof(o))
		_exit(3);
	rep.take = syncmem_pool_take(p, o.in_transit, o.parent);
	rep.take_again = syncmem_pool_take(p, o.in_transit, o.parent);
	rep.take_not_given = syncmem_pool_take(p, o.parents_own, o.parent);
	if (write(to_parent, &rep, sizeof(rep)) != sizeof(rep))
		_exit(4);
	pause();
	_exit(5);
}

/*
 * Holders: an allocation records its process, give and take change hands,
 * a taker is told a stale or early message, a dead sender's block goes to
 * its receiver, and reclaim frees exactly the blocks whose holder died
 * (never a live holder's, never one in transit).
 */
TEST_F(pool, reclaim_frees_what_dead_holders_held_and_nothing_else)
{
	enum { N = 16 };
	size_t len = syncmem_pool_footprint(64, N);
	struct holder_report rep;
	struct holder_order o;
	uint32_t mine, given, x;
	int up[2], down[2];
	struct syncmem_region *r;
	struct syncmem_pool *p;
	uint64_t me, h;
	pid_t child;

	ASSERT_EQ(0, syncmem_open(NULL, len, 0, 0, &r));
	ASSERT_EQ(0, syncmem_pool_init(syncmem_base(r), len, 64, N, &p));
	ASSERT_EQ(0, syncmem_pool_self_id(&me));
	EXPECT_NE(0, me);
	mine = syncmem_pool_alloc(p);
	ASSERT_NE(0, mine);
	EXPECT_EQ(0, syncmem_pool_holder(p, mine, &h));
	EXPECT_EQ(me, h);

	/* Errors. */
	EXPECT_EQ(-EINVAL, syncmem_pool_give(p, mine, 0));
	EXPECT_EQ(-EINVAL, syncmem_pool_give(p, mine, SYNCMEM_POOL_TABLE));
	EXPECT_EQ(-EINVAL, syncmem_pool_give(p, mine + 8, SYNCMEM_POOL_ANYONE));
	EXPECT_EQ(-EINVAL, syncmem_pool_take(p, 8, me));
	EXPECT_EQ(-EINVAL, syncmem_pool_take(p, mine, SYNCMEM_POOL_TABLE));
	EXPECT_EQ(-EINVAL, syncmem_pool_holder(p, 8, &h));
	EXPECT_EQ(-EINVAL, syncmem_pool_holder(p, mine, NULL));
	EXPECT_EQ(-EINVAL, syncmem_pool_reclaim(NULL));
	EXPECT_EQ(-EINVAL, syncmem_pool_self_id(NULL));
	x = syncmem_pool_alloc(p);
	ASSERT_EQ(0, syncmem_pool_free(p, x));
	EXPECT_EQ(-EALREADY, syncmem_pool_give(p, x, SYNCMEM_POOL_ANYONE));
	EXPECT_EQ(-EALREADY, syncmem_pool_take(p, x, me));
	EXPECT_EQ(-EALREADY, syncmem_pool_holder(p, x, &h));
	EXPECT_EQ(1, syncmem_pool_take(p, mine, me));	/* ours already */

	ASSERT_EQ(0, pipe(up));
	ASSERT_EQ(0, pipe(down));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0)
		holder_child(p, up[1], down[0]);
	o = (struct holder_order){ .parent = me, .in_transit = syncmem_pool_alloc(p),
				   .parents_own = mine };
	ASSERT_EQ(0, syncmem_pool_give(p, o.in_transit, SYNCMEM_POOL_ANYONE));
	EXPECT_EQ(1, syncmem_pool_holder(p, o.in_transit, &h));
	EXPECT_EQ(me, h);
	EXPECT_EQ(-EPERM, syncmem_pool_give(p, o.in_transit, me));
	ASSERT_EQ(sizeof(o), write(down[1], &o, sizeof(o)));
	ASSERT_EQ(sizeof(rep), read(up[0], &rep, sizeof(rep)));
	EXPECT_EQ(0, rep.take);
	EXPECT_EQ(1, rep.take_again);
	EXPECT_EQ(-EAGAIN, rep.take_not_given);
	EXPECT_NE(me, rep.id);
	/* The child holds it now: a second receiver is told it is gone. */
	EXPECT_EQ(0, syncmem_pool_holder(p, o.in_transit, &h));
	EXPECT_EQ(rep.id, h);
	EXPECT_EQ(-EBUSY, syncmem_pool_take(p, o.in_transit, me));
	EXPECT_EQ(-EPERM, syncmem_pool_give(p, o.in_transit, me));
	/* The child's message: in transit from the child, not from us. */
	EXPECT_EQ(1, syncmem_pool_holder(p, rep.in_transit, &h));
	EXPECT_EQ(rep.id, h);
	EXPECT_EQ(-ESTALE, syncmem_pool_take(p, rep.in_transit, me));
	EXPECT_EQ(-EAGAIN, syncmem_pool_take(p, rep.unsent, rep.id));
	/* Handed to the child by id, not taken: the child's too. */
	given = syncmem_pool_alloc(p);
	ASSERT_EQ(0, syncmem_pool_give(p, given, rep.id));
	EXPECT_EQ(0, syncmem_pool_holder(p, given, &h));
	EXPECT_EQ(rep.id, h);
	EXPECT_EQ(-EPERM, syncmem_pool_give(p, given, me));
	EXPECT_EQ(N - 8, syncmem_pool_free_count(p));

	/* A live holder keeps everything. */
	EXPECT_EQ(0, syncmem_pool_reclaim(p));
	EXPECT_EQ(N - 8, syncmem_pool_free_count(p));

	kill(child, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(child));
	/* The block it never gave is its receiver's now. */
	EXPECT_EQ(-EOWNERDEAD, syncmem_pool_take(p, rep.unsent, rep.id));
	EXPECT_EQ(0, syncmem_pool_holder(p, rep.unsent, &h));
	EXPECT_EQ(me, h);
	/* Its three, the one it took, the one given to it; not the one in transit. */
	EXPECT_EQ(5, syncmem_pool_reclaim(p));
	EXPECT_EQ(N - 3, syncmem_pool_free_count(p));
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(-EALREADY, syncmem_pool_holder(p, rep.kept[i], &h));
	EXPECT_EQ(0, syncmem_pool_reclaim(p));
	/* A message its sender left in transit is still there to be taken. */
	EXPECT_EQ(0, syncmem_pool_take(p, rep.in_transit, rep.id));
	EXPECT_EQ(0, syncmem_pool_holder(p, rep.in_transit, &h));
	EXPECT_EQ(me, h);
	EXPECT_EQ(0, syncmem_pool_free(p, rep.in_transit));
	EXPECT_EQ(0, syncmem_pool_free(p, rep.unsent));
	EXPECT_EQ(0, syncmem_pool_free(p, mine));
	EXPECT_EQ(N, syncmem_pool_free_count(p));
	EXPECT_EQ(N, pool_drain_check(p, N));
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	syncmem_pool_detach(p);
	syncmem_close(r);
}

/* A process that execs another program is a new holder: its old blocks go. */
TEST_F(pool, blocks_of_a_process_that_execd_are_reclaimed)
{
	size_t len = syncmem_pool_footprint(64, 4);
	struct syncmem_region *r;
	struct syncmem_pool *p;
	int go[2];
	pid_t child;
	char c;

	ASSERT_EQ(0, syncmem_open(NULL, len, 0, 0, &r));
	ASSERT_EQ(0, syncmem_pool_init(syncmem_base(r), len, 64, 4, &p));
	ASSERT_EQ(0, pipe(go));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		if (!syncmem_pool_alloc(p) || !syncmem_pool_alloc(p))
			_exit(1);
		close(go[0]);
		/* The write end stays open across exec: the parent sees EOF when it dies. */
		if (write(go[1], "x", 1) != 1)
			_exit(2);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(3);
	}
	close(go[1]);
	ASSERT_EQ(1, read(go[0], &c, 1));
	/* Give the exec a moment; then the old program's id is dead. */
	for (int i = 0; i < 200 && syncmem_pool_free_count(p) != 4; i++) {
		ASSERT_LE(0, syncmem_pool_reclaim(p));
		usleep(10000);
	}
	EXPECT_EQ(4, syncmem_pool_free_count(p));
	kill(child, SIGKILL);
	wait_exit(child);
	close(go[0]);
	syncmem_pool_detach(p);
	syncmem_close(r);
}

TEST_HARNESS_MAIN
