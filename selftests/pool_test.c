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

	ASSERT_EQ(0, syncmem_open(NULL, len + 4096, 0, 0, &r));
	ASSERT_EQ(0, syncmem_pool_init(syncmem_base(r), len, 64, N, &p));
	st = (void *)((char *)syncmem_base(r) + len);
	leaked = churn_with_kills(p, st, PROCS, KILL, HELD, N);
	ASSERT_LE(0, leaked);
	EXPECT_GE(KILL * (HELD + 1), leaked);
	EXPECT_EQ(0, atomic_load(&st->double_allocs));
	EXPECT_EQ(0, atomic_load(&st->bad_stamps));
	TH_LOG("%ld blocks leaked by %d killed processes; the list is intact", leaked, KILL);
	syncmem_pool_detach(p);
	syncmem_close(r);
}

TEST_HARNESS_MAIN
