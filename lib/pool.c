// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A lock-free fixed-size block allocator living in shared memory (the seed's
 * LocklessFixedAllocator, with ABA, double frees and foreign offsets dealt
 * with).
 *
 * Layout, all offsets from the pool start (never pointers, so any process
 * may map the memory at any address):
 *
 *   0      struct syncmem_pool (576 bytes: identity, then 8 list heads)
 *   576    uint32_t link[nblocks], 64-aligned end
 *   ...    the blocks, each block_size bytes (a multiple of 64)
 *
 * Free blocks sit on SYNCMEM_POOL_SHARDS Treiber stacks. Each head is one
 * 64-bit word on its own cache line: the high 32 bits hold the index + 1 of
 * the first free block (0: empty), the low 32 bits a tag that every
 * successful push and pop increments. Block i belongs to stack
 * i >> shard_shift (contiguous ranges, so neighbouring links share a list)
 * and is always freed back onto it; alloc() pops from its thread's stack
 * first (spread round-robin) and tries the others when that one is empty.
 * Threads thus rarely touch the same line.
 *
 * A block's link word is BLOCK_USED while it is allocated; while it is free
 * it holds the index + 1 of the next free block on its stack (0: last). The
 * links live outside the blocks, so a block's owner cannot corrupt a list
 * by writing its block, and an 8-byte block is fine.
 *
 * Why ABA cannot hit (the seed's version can): a popper reads head = {A, t}
 * and link(A) = B, then stalls. Others pop A, pop B and push A back: the
 * head is {A, t + 3}. The stalled popper's CAS expects {A, t} and fails, so
 * it never installs the stale B. A false success needs the tag to wrap: 2^32
 * successful operations on one stack while one thread sits between its load
 * and its CAS.
 *
 * Double frees: free() claims the block by moving its link from BLOCK_USED
 * to a list link with one CAS, before pushing. Of two racing frees exactly
 * one wins and the other gets -EALREADY; the list is never touched twice for
 * one block. A process killed between the claim and the push leaks that
 * block (not USED, not in a list): it never corrupts a list.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "syncmem.h"
#include "ready.h"

#define BLOCK_USED		0xffffffffu	/* link of an allocated block */

_Static_assert(sizeof(struct syncmem_pool) == 64 * (1 + SYNCMEM_POOL_SHARDS),
	       "pool header layout");
_Static_assert(offsetof(struct syncmem_pool, shard) == 64, "heads on their own lines");

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
	*blocks_off = align64(*meta_off + (uint64_t)nblocks * sizeof(uint32_t));
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

/* The links always follow the header (pool_check() verifies meta_off). */
static uint32_t *pool_links(const struct syncmem_pool *p)
{
	return (uint32_t *)((char *)p + sizeof(*p));
}

/* Blocks per free list: the smallest power of two that spreads @n over them. */
static uint32_t shard_shift_for(uint32_t nblocks)
{
	uint32_t shift = 0;

	while (((uint64_t)(nblocks - 1) >> shift) >= SYNCMEM_POOL_SHARDS)
		shift++;
	return shift;
}

int syncmem_pool_init(void *mem, size_t len, uint32_t block_size, uint32_t nblocks,
		      struct syncmem_pool **out)
{
	struct syncmem_pool *p = mem;
	uint64_t meta_off, blocks_off, footprint;
	uint32_t stride, shift, *link;
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
	err = syncmem__ready_claim(&p->state);
	if (err)
		return err;

	p->version = SYNCMEM_POOL_VERSION;
	p->block_size = stride;
	p->nblocks = nblocks;
	p->requested_size = block_size;
	p->meta_off = (uint32_t)meta_off;
	p->blocks_off = (uint32_t)blocks_off;
	p->footprint = footprint;
	p->block_shift = (stride & (stride - 1)) ? 0 : (uint32_t)__builtin_ctz(stride);
	p->blocks_len = (uint32_t)((uint64_t)nblocks * stride);
	p->shard_shift = shift = shard_shift_for(nblocks);
	memset(p->reserved0, 0, sizeof(p->reserved0));
	/* Stack s holds blocks [s << shift, (s + 1) << shift), in order. */
	link = pool_links(p);
	for (uint32_t s = 0; s < SYNCMEM_POOL_SHARDS; s++) {
		uint64_t first = (uint64_t)s << shift, end = (uint64_t)(s + 1) << shift;

		if (end > nblocks)
			end = nblocks;
		for (uint64_t i = first; i < end; i++)
			link[i] = i + 1 < end ? (uint32_t)i + 2 : 0;
		p->shard[s].head = first < end ? (first + 1) << 32 : 0;	/* tag 0 */
		memset(p->shard[s].reserved, 0, sizeof(p->shard[s].reserved));
	}
	p->magic = SYNCMEM_POOL_MAGIC;
	syncmem__ready_publish(&p->state);
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
	    blocks_off != p->blocks_off || footprint != p->footprint ||
	    p->block_shift != ((stride & (stride - 1)) ? 0 : (uint32_t)__builtin_ctz(stride)) ||
	    p->blocks_len != (uint64_t)p->nblocks * stride ||
	    p->shard_shift != shard_shift_for(p->nblocks))
		return -EPROTO;
	return len < footprint ? -EINVAL : 0;
}

int syncmem_pool_attach(void *mem, size_t len, struct syncmem_pool **out)
{
	struct syncmem_pool *p = mem;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (SYNCMEM_POOL_ALIGN - 1)) ||
	    len < sizeof(struct syncmem_pool))
		return -EINVAL;
	/* Wait (bounded) while the creator is still building the pool. */
	err = syncmem__ready_wait(&p->state, SYNCMEM_POOL_ATTACH_WAIT_MS);
	if (err)
		return err;
	err = pool_check(p, len);
	if (err)
		return err;
	*out = p;
	return 0;
}

/* Head words: {index + 1 of the top block: high 32 bits, tag: low 32 bits}. */
static inline uint32_t head_top(uint64_t head)
{
	return (uint32_t)(head >> 32);
}

/* The head after a push or pop: @top (index + 1, pre-shifted), the tag one higher. */
static inline uint64_t next_head(uint64_t head, uint64_t top_shifted)
{
	return top_shifted | (uint32_t)(head + 1);
}

/*
 * Each thread allocates from one stack first, picked round-robin the first
 * time it allocates, starting from its process id so that two processes do
 * not both start on stack 0. One TLS load on the fast path.
 */
static __thread unsigned int my_stack __attribute__((tls_model("initial-exec"))) = ~0u;
static unsigned int next_pick;

/* A forked child picks again: it should not share its parent's stack. */
static void forget_stack(void)
{
	my_stack = ~0u;
}

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, forget_stack);
}

static unsigned int pick_stack(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	unsigned int n = __atomic_fetch_add(&next_pick, 1, __ATOMIC_RELAXED);

	pthread_once(&once, register_fork_handler);
	my_stack = ((unsigned int)getpid() + n) % SYNCMEM_POOL_SHARDS;
	return my_stack;
}

/* Pop from one stack: the block's index + 1, or 0 when the stack is empty. */
static inline __attribute__((always_inline)) uint32_t pop(uint64_t *headp, uint32_t *link)
{
	uint64_t head, next;

	/*
	 * Acquire pairs with the release CAS of the push that put this head
	 * there: the link it wrote is visible to the relaxed load below.
	 */
	head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
	do {
		if (!head_top(head))
			return 0;
		/*
		 * Possibly stale (even BLOCK_USED) if the block moved
		 * meanwhile; the tag then fails the CAS.
		 */
		next = __atomic_load_n(&link[head_top(head) - 1], __ATOMIC_RELAXED);
		/*
		 * Success acquires the previous owner's writes to the block
		 * (released by its free's push); failure reloads head with
		 * acquire for the next round.
		 */
	} while (!__atomic_compare_exchange_n(headp, &head, next_head(head, next << 32),
					      true, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE));
	return head_top(head);
}

/* Our CPU's stack was empty: try the others in turn. */
static __attribute__((noinline)) uint32_t alloc_elsewhere(struct syncmem_pool *p,
							  unsigned int s)
{
	uint32_t *link = pool_links(p), got = 0;

	for (unsigned int k = 1; k < SYNCMEM_POOL_SHARDS && !got; k++)
		got = pop(&p->shard[(s + k) % SYNCMEM_POOL_SHARDS].head, link);
	if (!got)
		return 0;
	__atomic_store_n(&link[got - 1], BLOCK_USED, __ATOMIC_RELAXED);
	return p->blocks_off + (got - 1) * p->block_size;
}

/* The first allocation of a thread: pick its stack, then allocate. */
static __attribute__((noinline, cold)) uint32_t alloc_first(struct syncmem_pool *p)
{
	unsigned int s = pick_stack();
	uint32_t *link = pool_links(p);
	uint32_t got = pop(&p->shard[s].head, link);

	if (!got)
		return alloc_elsewhere(p, s);
	__atomic_store_n(&link[got - 1], BLOCK_USED, __ATOMIC_RELAXED);
	return p->blocks_off + (got - 1) * p->block_size;
}

uint32_t syncmem_pool_alloc(struct syncmem_pool *p)
{
	uint32_t *link = pool_links(p);
	unsigned int s = my_stack;
	uint32_t got;

	if (__builtin_expect(s == ~0u, 0))
		return alloc_first(p);
	got = pop(&p->shard[s].head, link);
	if (__builtin_expect(!got, 0))
		return alloc_elsewhere(p, s);
	/* The block is ours alone now. */
	__atomic_store_n(&link[got - 1], BLOCK_USED, __ATOMIC_RELAXED);
	return p->blocks_off + (got - 1) * p->block_size;
}

int syncmem_pool_free(struct syncmem_pool *p, uint32_t off)
{
	uint32_t *link = pool_links(p);
	uint32_t rel = off - p->blocks_off;	/* wraps when off < blocks_off */
	uint32_t i, used = BLOCK_USED;
	uint64_t *headp, head;

	if (rel >= p->blocks_len)
		return -EINVAL;
	i = __builtin_expect(p->block_shift != 0, 1) ? rel >> p->block_shift :
						       rel / p->block_size;
	if (i * p->block_size != rel)
		return -EINVAL;

	headp = &p->shard[i >> p->shard_shift].head;
	head = __atomic_load_n(headp, __ATOMIC_RELAXED);
	/* Claim the block (one winner among racing frees) and link it in one go. */
	if (!__atomic_compare_exchange_n(&link[i], &used, head_top(head), false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return -EALREADY;
	/*
	 * Release publishes the link and everything the owner wrote into the
	 * block to the next popper (its acquire).
	 */
	while (!__atomic_compare_exchange_n(headp, &head, next_head(head, (uint64_t)(i + 1) << 32),
					    true, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		__atomic_store_n(&link[i], head_top(head), __ATOMIC_RELAXED);
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
	const uint32_t *link;
	uint32_t n = 0;

	if (!p)
		return 0;
	link = pool_links(p);
	for (uint32_t i = 0; i < p->nblocks; i++)
		n += __atomic_load_n(&link[i], __ATOMIC_RELAXED) != BLOCK_USED;
	return n;
}
