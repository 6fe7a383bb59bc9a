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

TEST_HARNESS_MAIN
