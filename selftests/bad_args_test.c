// SPDX-License-Identifier: GPL-2.0
/*
 * Every function of <syncmem.h> with each of its pointer arguments NULL,
 * on a real region and a real event loop (selftests/bad_args.h): the
 * result it documents, never a crash. The host test runs the same table
 * without the rows that need a loop.
 */
#define _GNU_SOURCE
#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "bad_args.h"

FIXTURE(bad_args) {
};

FIXTURE_SETUP(bad_args)
{
}

FIXTURE_TEARDOWN(bad_args)
{
}

/*
 * A child per row, most with a loop of their own: some 220 rows outgrow
 * the harness's default 30 s on the debug kernel.
 */
TEST_F_TIMEOUT(bad_args, null_pointer_arguments_give_their_documented_result, 300)
{
	struct bad_args_ctx c = { 0 };
	unsigned int ran, failed;

	ASSERT_EQ(0, syncmem_open(NULL, bad_args_size(), 0, 0, &c.r));
	ASSERT_EQ(0, bad_args_build(&c));
	failed = bad_args_run(&c, true, &ran);
	TH_LOG("%u of %zu rows run, %u failed", ran, BAD_ARGS_N, failed);
	EXPECT_EQ(BAD_ARGS_N, ran);
	EXPECT_EQ(0, failed);
	/* Nothing was taken by any row. */
	EXPECT_EQ(0, c.o->lock.word);
	EXPECT_EQ(0, c.o->gate.word);
	EXPECT_EQ(1, syncmem_sem_value(&c.o->sem));
	EXPECT_EQ(BAD_ARGS_POOL_BLOCKS, syncmem_pool_free_count(c.pool));
	syncmem_pool_detach(c.pool);
	syncmem_close(c.r);
}

/*
 * The common mistakes, each with an errno that tells it apart and a
 * syncmem_strerror() text that names the likely cause.
 */
TEST(common_mistakes_say_what_to_fix)
{
	struct syncmem_region *r, *again = (void *)1;
	struct syncmem_rwlock *rw;
	struct syncmem_pool *p = (void *)1;
	char name[64];

	/* An object at the end of a region too small for it. */
	ASSERT_EQ(0, syncmem_open(NULL, 4096, 0, 0, &r));
	rw = (struct syncmem_rwlock *)((char *)syncmem_base(r) + 4096 - 128);
	EXPECT_EQ(-ERANGE, syncmem_rwlock_wrlock(r, rw));
	EXPECT_EQ(-ERANGE, syncmem_rwlock_rdlock(r, rw));
	EXPECT_EQ(-ERANGE, syncmem_sem_post(r, (struct syncmem_sem *)((char *)syncmem_base(r) + 4096 - 32)));
	EXPECT_NE(NULL, strstr(syncmem_strerror(-ERANGE), "region is smaller than the object"));
	/* A pool attached in memory nobody initialised. */
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(syncmem_base(r), 4096, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EPROTO), "never initialised"));
	syncmem_close(r);
	/* A region opened again with another size. */
	snprintf(name, sizeof(name), "mistakes-%d", getpid());
	ASSERT_EQ(0, syncmem_open(name, 8192, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &r));
	EXPECT_EQ(-EINVAL, syncmem_open(name, 4096, 0, 0, &again));
	EXPECT_EQ(NULL, again);
	EXPECT_NE(NULL, strstr(syncmem_strerror(-EINVAL), "a size other than 0 or the region's own"));
	EXPECT_EQ(0, syncmem_open(name, 0, 0, 0, &again));
	EXPECT_EQ(8192, syncmem_size(again));
	syncmem_close(again);
	EXPECT_EQ(0, syncmem_unlink(name));
	syncmem_close(r);
}

TEST_HARNESS_MAIN
