// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A lock-free fixed-size block allocator living in shared memory (the seed's
 * LocklessFixedAllocator, with ABA, double frees and foreign offsets dealt
 * with).
 *
 * Layout, all offsets from the pool start (never pointers, so any process
 * may map the memory at any address):
 *
 *   0      struct syncmem_pool (192 bytes: identity, head, free count)
 *   192    struct pool_meta[nblocks]: {next, state} per block, 64-aligned end
 *   ...    the blocks, each block_size bytes (a multiple of 64)
 *
 * The free list is a Treiber stack. Its head is one 64-bit word: the low 32
 * bits hold the index + 1 of the first free block (0: empty), the high 32
 * bits a tag that every successful push and pop increments. The links live in
 * the metadata, not in the blocks, so a block's owner cannot corrupt the
 * list by writing its block, and a block of 8 bytes is fine.
 *
 * Why ABA cannot hit (the seed's version can): a popper reads head = {A, t}
 * and next(A) = B, then stalls. Others pop A, pop B and push A back: the
 * head is {A, t + 3}. The stalled popper's CAS expects {A, t} and fails, so
 * it never installs the stale B. A false success needs the tag to wrap: 2^32
 * successful operations while one thread sits between its load and its CAS.
 *
 * Every block has a state word, FREE or USED. free() moves it USED -> FREE
 * with a CAS before pushing, so of two racing frees exactly one wins and the
 * other gets -EALREADY; the list is never touched twice for one block. A
 * process killed between those two steps leaks that block (state FREE, not
 * in the list): it never corrupts the list.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "syncmem.h"

#define POOL_INITIALISING	0x494e4954u	/* "INIT" */
#define POOL_READY		0x52454459u	/* "REDY" */
#define BLOCK_FREE		0x46524545u	/* "FREE" */
#define BLOCK_USED		0x55534544u	/* "USED" */

struct pool_meta {
	uint32_t next;		/* index + 1 of the next free block, 0: none */
	uint32_t state;		/* BLOCK_FREE or BLOCK_USED */
};

_Static_assert(sizeof(struct syncmem_pool) == 192, "pool header layout");
_Static_assert(offsetof(struct syncmem_pool, head) == 64, "head has its own line");
_Static_assert(offsetof(struct syncmem_pool, free_count) == 128, "count has its own line");

static uint64_t align64(uint64_t v)
{
	return (v + SYNCMEM_POOL_ALIGN - 1) & ~(uint64_t)(SYNCMEM_POOL_ALIGN - 1);
}

/* Geometry of a pool: 0 on success, -EINVAL or -E2BIG. */
static int pool_geometry(uint32_t block_size, uint32_t nblocks, uint32_t *stride,
			 uint64_t *meta_off, uint64_t *blocks_off, uint64_t *footprint)
{
	if (!block_size || block_size > SYNCMEM_POOL_MAX_BLOCK || !nblocks ||
	    nblocks > (1u << 31))
		return -EINVAL;
	*stride = (uint32_t)align64(block_size);
	*meta_off = sizeof(struct syncmem_pool);
	*blocks_off = align64(*meta_off + (uint64_t)nblocks * sizeof(struct pool_meta));
	*footprint = *blocks_off + (uint64_t)nblocks * *stride;
	/* Every offset alloc() returns must fit in 32 bits. */
	if (*footprint > UINT32_MAX)
		return -E2BIG;
	return 0;
}

size_t syncmem_pool_footprint(uint32_t block_size, uint32_t nblocks)
{
	uint64_t meta_off, blocks_off, footprint;
	uint32_t stride;

	if (pool_geometry(block_size, nblocks, &stride, &meta_off, &blocks_off, &footprint))
		return 0;
	return (size_t)footprint;
}

static struct pool_meta *pool_meta(const struct syncmem_pool *p)
{
	return (struct pool_meta *)((char *)p + p->meta_off);
}

int syncmem_pool_init(void *mem, size_t len, uint32_t block_size, uint32_t nblocks,
		      struct syncmem_pool **out)
{
	struct syncmem_pool *p = mem;
	uint64_t meta_off, blocks_off, footprint;
	struct pool_meta *meta;
	uint32_t stride, expected = 0;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (SYNCMEM_POOL_ALIGN - 1)))
		return -EINVAL;
	err = pool_geometry(block_size, nblocks, &stride, &meta_off, &blocks_off, &footprint);
	if (err)
		return err;
	if (len < footprint)
		return -EINVAL;
	/* Claim the memory: only one creator, and only on zeroed memory. */
	if (!__atomic_compare_exchange_n(&p->state, &expected, POOL_INITIALISING, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EEXIST;

	p->version = SYNCMEM_POOL_VERSION;
	p->block_size = stride;
	p->nblocks = nblocks;
	p->requested_size = block_size;
	p->meta_off = (uint32_t)meta_off;
	p->blocks_off = (uint32_t)blocks_off;
	p->footprint = footprint;
	memset(p->reserved0, 0, sizeof(p->reserved0));
	memset(p->reserved1, 0, sizeof(p->reserved1));
	memset(p->reserved2, 0, sizeof(p->reserved2));
	meta = pool_meta(p);
	for (uint32_t i = 0; i < nblocks; i++) {
		meta[i].next = i + 1 < nblocks ? i + 2 : 0;
		meta[i].state = BLOCK_FREE;
	}
	p->head = 1;			/* block 0 first, tag 0 */
	p->free_count = nblocks;
	p->magic = SYNCMEM_POOL_MAGIC;
	/* Publish: an attacher that sees READY (acquire) sees all of the above. */
	__atomic_store_n(&p->state, POOL_READY, __ATOMIC_RELEASE);
	*out = p;
	return 0;
}

static int pool_check(const struct syncmem_pool *p, size_t len)
{
	uint64_t meta_off, blocks_off, footprint;
	uint32_t stride;

	if (p->magic != SYNCMEM_POOL_MAGIC || p->version != SYNCMEM_POOL_VERSION)
		return -EPROTO;
	if (pool_geometry(p->requested_size, p->nblocks, &stride, &meta_off, &blocks_off,
			  &footprint) ||
	    stride != p->block_size || meta_off != p->meta_off ||
	    blocks_off != p->blocks_off || footprint != p->footprint)
		return -EPROTO;
	return len < footprint ? -EINVAL : 0;
}

int syncmem_pool_attach(void *mem, size_t len, struct syncmem_pool **out)
{
	struct syncmem_pool *p = mem;
	struct timespec nap = { 0, 100000 };	/* 100 us, doubling to 10 ms */
	long waited_ns = 0;
	uint32_t state;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (SYNCMEM_POOL_ALIGN - 1)) ||
	    len < sizeof(struct syncmem_pool))
		return -EINVAL;
	/* Wait (bounded) while the creator is still building the pool. */
	while ((state = __atomic_load_n(&p->state, __ATOMIC_ACQUIRE)) == POOL_INITIALISING) {
		if (waited_ns >= SYNCMEM_POOL_ATTACH_WAIT_MS * 1000000L)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
		waited_ns += nap.tv_nsec;
		if (nap.tv_nsec < 10000000)
			nap.tv_nsec *= 2;
	}
	if (state != POOL_READY)
		return -EPROTO;		/* zeroed or foreign memory */
	err = pool_check(p, len);
	if (err)
		return err;
	*out = p;
	return 0;
}

uint32_t syncmem_pool_alloc(struct syncmem_pool *p)
{
	struct pool_meta *meta = pool_meta(p);
	uint64_t head, next;
	uint32_t i;

	/*
	 * Acquire pairs with the release CAS of the push that put this head
	 * there: the next link it wrote is visible to the relaxed load below.
	 */
	head = __atomic_load_n(&p->head, __ATOMIC_ACQUIRE);
	do {
		if (!(uint32_t)head)
			return 0;
		i = (uint32_t)head - 1;
		/* Possibly stale if the block moved meanwhile; the tag then fails the CAS. */
		next = __atomic_load_n(&meta[i].next, __ATOMIC_RELAXED);
		/*
		 * Success acquires the previous owner's writes to the block
		 * (released by its free's push); failure reloads head with
		 * acquire for the next round.
		 */
	} while (!__atomic_compare_exchange_n(&p->head, &head,
					      (((head >> 32) + 1) << 32) | next, true,
					      __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE));
	/* The block is ours alone now. */
	__atomic_store_n(&meta[i].state, BLOCK_USED, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&p->free_count, 1, __ATOMIC_RELAXED);
	return p->blocks_off + i * p->block_size;
}

int syncmem_pool_free(struct syncmem_pool *p, uint32_t off)
{
	struct pool_meta *meta = pool_meta(p);
	uint32_t i, used = BLOCK_USED;
	uint64_t head;

	if (off < p->blocks_off || (off - p->blocks_off) % p->block_size)
		return -EINVAL;
	i = (off - p->blocks_off) / p->block_size;
	if (i >= p->nblocks)
		return -EINVAL;
	/* One winner among racing frees of this block. */
	if (!__atomic_compare_exchange_n(&meta[i].state, &used, BLOCK_FREE, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return used == BLOCK_FREE ? -EALREADY : -EINVAL;

	head = __atomic_load_n(&p->head, __ATOMIC_RELAXED);
	do {
		__atomic_store_n(&meta[i].next, (uint32_t)head, __ATOMIC_RELAXED);
		/*
		 * Release publishes the link above and everything the owner
		 * wrote into the block to the next popper (its acquire).
		 */
	} while (!__atomic_compare_exchange_n(&p->head, &head,
					      (((head >> 32) + 1) << 32) | (i + 1), true,
					      __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	__atomic_fetch_add(&p->free_count, 1, __ATOMIC_RELAXED);
	return 0;
}

void *syncmem_pool_ptr(struct syncmem_pool *p, uint32_t off)
{
	if (!p || !off || off >= p->footprint)
		return NULL;
	return (char *)p + off;
}

uint32_t syncmem_pool_off(struct syncmem_pool *p, const void *ptr)
{
	uintptr_t a = (uintptr_t)ptr, base = (uintptr_t)p;

	if (!p || a <= base || a - base >= p->footprint)
		return 0;
	return (uint32_t)(a - base);
}

uint32_t syncmem_pool_free_count(const struct syncmem_pool *p)
{
	return p ? __atomic_load_n(&p->free_count, __ATOMIC_RELAXED) : 0;
}
