// SPDX-License-Identifier: GPL-2.0
/*
 * The block allocator against hostile peers: another process may write
 * anything into the pool's shared memory at any moment. The pool may break
 * (blocks lost or handed out twice), but no call may touch memory outside
 * the pool, crash or hang: results are blocks of the pool, 0, or a
 * documented errno. The pool sits between guard pages, and each victim runs
 * in a child whose exit status says how it ended.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "hostile.h"
#include "syncmem.h"

#define NBLOCKS		16
#define BLOCK		64

/* The geometry of a 16-block pool of 64-byte blocks, as built. */
#define BLOCKS_OFF	(sizeof(struct syncmem_pool_header) + NBLOCKS * 8)
#define LINKS(mem)	((uint64_t *)((char *)(mem) + sizeof(struct syncmem_pool_header)))

/* Is @off a block of the pool as it was built? */
static bool is_block(uint32_t off)
{
	return off >= BLOCKS_OFF && off < BLOCKS_OFF + NBLOCKS * BLOCK &&
	       (off - BLOCKS_OFF) % BLOCK == 0;
}

struct edit_case {
	const char *what;
	void (*apply)(struct syncmem_pool_header *h);
	int expect;		/* what alloc_checked() answers after the edit */
};

static void heads_out_of_bounds(struct syncmem_pool_header *h)
{
	for (int s = 0; s < SYNCMEM_POOL_SHARDS; s++)
		h->shard[s].head = (uint64_t)0x40000000 << 32 | 7;
}

/* Block 2s is the top of stack s (2 blocks per stack): damage its link. */
static void links_out_of_bounds(struct syncmem_pool_header *h)
{
	for (int s = 0; s < SYNCMEM_POOL_SHARDS; s++)
		LINKS(h)[2 * s] = 0x10000000;
}

/* A free block marked allocated: looks like a stale read, forever. */
static void links_marked_used(struct syncmem_pool_header *h)
{
	for (int s = 0; s < SYNCMEM_POOL_SHARDS; s++)
		LINKS(h)[2 * s] = 1ULL << 63;
}

static void blocks_moved(struct syncmem_pool_header *h)
{
	h->blocks_off = 0x7fff0000;
}

static void blocks_grown(struct syncmem_pool_header *h)
{
	h->block_size = 1u << 30;
	h->block_shift = 0;
	h->blocks_len = UINT32_MAX;
}

static void more_blocks(struct syncmem_pool_header *h)
{
	h->nblocks = UINT32_MAX;
	h->footprint = UINT64_MAX;
	h->shard_shift = 31;
}

static const struct edit_case cases[] = {
	{ "list heads out of bounds", heads_out_of_bounds, -EUCLEAN },
	{ "links out of bounds", links_out_of_bounds, -EUCLEAN },
	{ "free blocks marked allocated", links_marked_used, -EUCLEAN },
	/* The geometry the handle validated at attach is what counts. */
	{ "blocks moved far away", blocks_moved, 0 },
	{ "blocks grown to 1 GiB", blocks_grown, 0 },
	{ "block count at its maximum", more_blocks, 0 },
};

struct edit_arg {
	struct guarded *g;
	const struct edit_case *c;
};

/*
 * Attach, let the edit happen, then use the pool: every result is a block
 * of the pool as built, or the expected errno. Exit status 0 when so.
 */
static int edited_victim(void *arg)
{
	struct edit_arg *a = arg;
	struct syncmem_pool *p;
	uint32_t offs[NBLOCKS], off;
	uint64_t holder;
	int n = 0, ret;

	if (syncmem_pool_attach(a->g->mem, a->g->len, &p))
		return 10;
	a->c->apply((struct syncmem_pool_header *)a->g->mem);
	for (int i = 0; i < 2 * NBLOCKS; i++) {
		int want = a->c->expect ?: n < NBLOCKS ? 0 : -ENOMEM;

		ret = syncmem_pool_alloc_checked(p, &off);
		if (ret != want)
			return 11;
		if (ret) {
			if (off || syncmem_pool_alloc(p))
				return 12;
			continue;
		}
		if (!is_block(off))
			return 13;
		memset(syncmem_pool_ptr(p, off), 0x5a, BLOCK);
		offs[n++] = off;
	}
	if (!a->c->expect && n != NBLOCKS)
		return 14;
	for (int i = 0; i < n; i++)
		if (syncmem_pool_free(p, offs[i]))
			return 15;
	if (syncmem_pool_free_count(p) > NBLOCKS)
		return 16;
	/* An allocated block whose link a peer set to garbage. */
	if (!a->c->expect) {
		off = syncmem_pool_alloc(p);
		LINKS(a->g->mem)[(off - BLOCKS_OFF) / BLOCK] = 0x10000000;
		if (syncmem_pool_free(p, off) != -EUCLEAN)
			return 17;
		/* Give, take and holder see the same garbage the same way. */
		if (syncmem_pool_give(p, off, SYNCMEM_POOL_ANYONE) != -EUCLEAN ||
		    syncmem_pool_take(p, off, 0) != -EUCLEAN ||
		    syncmem_pool_holder(p, off, &holder) != -EUCLEAN)
			return 18;
	}
	syncmem_pool_detach(p);
	return 0;
}

/*
 * A peer edits the header and the links after this process attached: the
 * handle keeps the geometry it validated, and indexes out of bounds are
 * -EUCLEAN (alloc: 0), never an offset outside the pool or a fault.
 */
TEST(edits_after_attach_stay_inside_the_pool)
{
	size_t len = syncmem_pool_footprint(BLOCK, NBLOCKS);

	ASSERT_EQ(BLOCKS_OFF + NBLOCKS * BLOCK, len);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct guarded g;
		struct syncmem_pool *p;
		struct edit_arg a = { &g, &cases[i] };

		ASSERT_EQ(0, guarded_map(len, &g));
		ASSERT_EQ(0, syncmem_pool_init(g.mem, len, BLOCK, NBLOCKS, &p));
		EXPECT_EQ(0, run_victim(edited_victim, &a, 20)) {
			TH_LOG("%s", cases[i].what);
		}
		syncmem_pool_detach(p);
		guarded_unmap(&g);
	}
}

struct churn_arg {
	struct syncmem_pool *p;
	double seconds;
};

/*
 * Allocate, fill, free for a while under a scribbler. Exit status 0 when
 * every result was a block of the pool or a documented errno.
 */
static int churn_victim(void *arg)
{
	struct churn_arg *a = arg;
	double end = hostile_now() + a->seconds;
	unsigned long ok = 0, euclean = 0, enomem = 0;
	struct syncmem_pool *p = a->p;
	uint32_t off, held[5];
	int ret, n;

	while (hostile_now() < end) {
		for (n = 0; n < 4;) {
			ret = syncmem_pool_alloc_checked(p, &off);
			if (ret == -EUCLEAN || ret == -ENOMEM) {
				euclean += ret == -EUCLEAN;
				enomem += ret == -ENOMEM;
				break;
			}
			if (ret || !is_block(off))
				return 20;
			memset(syncmem_pool_ptr(p, off), 0xa5, BLOCK);
			held[n++] = off;
			ok++;
		}
		off = syncmem_pool_alloc(p);
		if (off && !is_block(off))
			return 21;
		if (off)
			held[n++] = off;
		while (n--) {
			ret = syncmem_pool_free(p, held[n]);
			if (ret && ret != -EALREADY && ret != -EUCLEAN)
				return 22;
		}
		if (syncmem_pool_free_count(p) > NBLOCKS)
			return 23;
	}
	printf("# victim %d: %lu blocks, %lu -EUCLEAN, %lu -ENOMEM\n", getpid(), ok, euclean,
	       enomem);
	fflush(stdout);
	return 0;
}

/*
 * A scribbler writes random and plausible values into the header and the
 * links while two processes allocate and free: no fault, no hang, no
 * result outside the pool.
 */
TEST(scribbler_never_gets_a_call_outside_the_pool)
{
	size_t len = syncmem_pool_footprint(BLOCK, NBLOCKS);
	struct churn_arg a = { NULL, 2.0 };
	pid_t scribbler, victims[2];
	struct guarded g;

	ASSERT_EQ(0, guarded_map(len, &g));
	/* The victims inherit the handle: validated before the scribbling. */
	ASSERT_EQ(0, syncmem_pool_init(g.mem, len, BLOCK, NBLOCKS, &a.p));
	for (int i = 0; i < 2; i++) {
		victims[i] = fork();
		ASSERT_LE(0, victims[i]);
		if (!victims[i]) {
			alarm(30);
			_exit(churn_victim(&a));
		}
	}
	/* Header and links only: the blocks are their owners' business. */
	scribbler = scribbler_start(g.mem, BLOCKS_OFF, NBLOCKS, 0x5eed);
	ASSERT_LT(0, scribbler);
	for (int i = 0; i < 2; i++)
		EXPECT_EQ(0, hostile_wait(victims[i]));
	scribbler_stop(scribbler);
	syncmem_pool_detach(a.p);
	guarded_unmap(&g);
}

struct ro_arg {
	char *rw, *ro;
	size_t len;
	uint32_t block;		/* allocated through the writable mapping */
};

/* Through a read-only mapping: reads work, writes are -EBADF. */
static int read_only_victim(void *arg)
{
	struct ro_arg *a = arg;
	struct syncmem_pool *p;
	uint32_t off = 1;
	uint64_t holder = 1;

	if (syncmem_pool_attach(a->ro, a->len, &p))
		return 30;
	if (syncmem_pool_free_count(p) != NBLOCKS - 1 ||
	    syncmem_pool_ptr(p, a->block) != a->ro + a->block)
		return 31;
	if (syncmem_pool_alloc(p) || syncmem_pool_alloc_checked(p, &off) != -EBADF || off)
		return 32;
	if (syncmem_pool_free(p, a->block) != -EBADF)
		return 33;
	if (syncmem_pool_free(p, 8) != -EINVAL)
		return 34;
	if (syncmem_pool_give(p, a->block, SYNCMEM_POOL_ANYONE) != -EBADF ||
	    syncmem_pool_take(p, a->block, 0) != -EBADF || syncmem_pool_reclaim(p) != -EBADF)
		return 36;
	/* Holders can be read: none recorded where no kernel gives ids. */
	if (syncmem_pool_holder(p, a->block, &holder) || holder != 0)
		return 37;
	syncmem_pool_detach(p);
	/* Building a pool there cannot work either. */
	if (syncmem_pool_init(a->ro + a->len, a->len, BLOCK, NBLOCKS, &p) != -EBADF || p)
		return 35;
	return 0;
}

TEST(read_only_memory_is_ebadf_not_sigsegv)
{
	struct ro_arg a = { .len = syncmem_pool_footprint(BLOCK, NBLOCKS) };
	int fd = memfd_create("pool-ro", MFD_CLOEXEC);
	struct syncmem_pool *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, (off_t)(2 * a.len)));
	a.rw = mmap(NULL, 2 * a.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	a.ro = mmap(NULL, 2 * a.len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, a.rw);
	ASSERT_NE(MAP_FAILED, a.ro);
	ASSERT_EQ(0, syncmem_pool_init(a.rw, a.len, BLOCK, NBLOCKS, &p));
	a.block = syncmem_pool_alloc(p);
	ASSERT_TRUE(is_block(a.block));
	EXPECT_EQ(0, run_victim(read_only_victim, &a, 20));
	/* Nothing changed through the read-only mapping. */
	EXPECT_EQ(NBLOCKS - 1, syncmem_pool_free_count(p));
	EXPECT_EQ(0, syncmem_pool_free(p, a.block));
	syncmem_pool_detach(p);
	munmap(a.rw, 2 * a.len);
	munmap(a.ro, 2 * a.len);
	close(fd);
}

TEST(checked_alloc_reports_exhaustion_and_bad_arguments)
{
	size_t len = syncmem_pool_footprint(BLOCK, 2);
	struct syncmem_pool *p;
	uint32_t a, b, c = 1;
	struct guarded g;
	uint64_t id = 1;

	ASSERT_EQ(0, guarded_map(len, &g));
	ASSERT_EQ(0, syncmem_pool_init(g.mem, len, BLOCK, 2, &p));
	EXPECT_EQ(0, syncmem_pool_alloc_checked(p, &a));
	EXPECT_EQ(0, syncmem_pool_alloc_checked(p, &b));
	EXPECT_NE(a, b);
	EXPECT_EQ(-ENOMEM, syncmem_pool_alloc_checked(p, &c));
	EXPECT_EQ(0, c);
	EXPECT_EQ(-EINVAL, syncmem_pool_alloc_checked(p, NULL));
	c = 1;
	EXPECT_EQ(-EINVAL, syncmem_pool_alloc_checked(NULL, &c));
	EXPECT_EQ(0, c);
	/* Without the module: no ids, nothing recorded, nothing to ask. */
	EXPECT_EQ(-ENODEV, syncmem_pool_self_id(&id));
	EXPECT_EQ(0, syncmem_pool_holder(p, a, &id));
	EXPECT_EQ(0, id);
	EXPECT_EQ(-ENODEV, syncmem_pool_reclaim(p));
	/* Unrecorded blocks may be handed on by anyone. */
	EXPECT_EQ(0, syncmem_pool_give(p, a, SYNCMEM_POOL_ANYONE));
	EXPECT_EQ(1, syncmem_pool_holder(p, a, &id));	/* in transit, from "no id" */
	EXPECT_EQ(0, id);
	EXPECT_EQ(-ESTALE, syncmem_pool_take(p, a, 5));
	EXPECT_EQ(0, syncmem_pool_take(p, a, 0));
	EXPECT_EQ(0, syncmem_pool_holder(p, a, &id));
	EXPECT_EQ(0, id);
	EXPECT_EQ(1, syncmem_pool_take(p, a, 0));
	EXPECT_EQ(0, syncmem_pool_free(p, a));
	EXPECT_EQ(0, syncmem_pool_free(p, b));
	syncmem_pool_detach(p);
	guarded_unmap(&g);
}

TEST_HARNESS_MAIN
