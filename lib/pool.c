// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A lock-free fixed-size block allocator living in shared memory (the seed's
 * LocklessFixedAllocator, with ABA, double frees and foreign offsets dealt
 * with).
 *
 * Layout, all offsets from the pool start (never pointers, so any process
 * may map the memory at any address):
 *
 *   0      struct syncmem_pool_header (576 bytes: identity, then 8 list heads)
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
 *
 * Hostile peers: any process mapping the pool may write anything into it at
 * any moment. Each process therefore keeps the geometry it validated when
 * it built or attached the pool in its private handle (struct
 * syncmem_pool, pool.h) and never reads it from the shared header again;
 * every index + 1 it reads from shared memory (list tops, links) is checked
 * against the handle's block count before it is used, and every CAS loop
 * gives up after SYNCMEM__RETRY_MAX failures. A value the library never
 * writes is reported as -EUCLEAN. Whatever a peer writes, calls stay inside
 * the pool and return; a peer can only make blocks be lost or handed out
 * twice, which breaks the pool for everyone but nothing else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "pool.h"
#include "ready.h"

#define BLOCK_USED		0xffffffffu	/* link of an allocated block */

_Static_assert(sizeof(struct syncmem_pool_header) == 64 * (1 + SYNCMEM_POOL_SHARDS),
	       "pool header layout");
_Static_assert(offsetof(struct syncmem_pool_header, magic) == 0 &&
	       offsetof(struct syncmem_pool_header, state) == 8 &&
	       offsetof(struct syncmem_pool_header, requested_size) == 20 &&
	       offsetof(struct syncmem_pool_header, blocks_off) == 28 &&
	       offsetof(struct syncmem_pool_header, footprint) == 32 &&
	       offsetof(struct syncmem_pool_header, shard_shift) == 48 &&
	       offsetof(struct syncmem_pool_header, shard) == 64 &&
	       sizeof(((struct syncmem_pool_header *)0)->shard[0]) == 64,
	       "pool header fields: identity and geometry on line 0, one head per line");

static uint64_t align64(uint64_t v)
{
	return (v + SYNCMEM_POOL_ALIGN - 1) & ~(uint64_t)(SYNCMEM_POOL_ALIGN - 1);
}

/* Blocks per free list: the smallest power of two that spreads @n over them. */
static uint32_t shard_shift_for(uint32_t nblocks)
{
	uint32_t shift = 0;

	while (((uint64_t)(nblocks - 1) >> shift) >= SYNCMEM_POOL_SHARDS)
		shift++;
	return shift;
}

/* Geometry of a pool: 0 on success, -EINVAL or -E2BIG. */
static int pool_geometry(uint32_t block_size, uint32_t nblocks, struct pool_geom *g)
{
	uint32_t stride;

	if (!block_size || block_size > SYNCMEM_POOL_MAX_BLOCK || !nblocks ||
	    nblocks > (1u << 31))
		return -EINVAL;
	stride = (uint32_t)align64(block_size);
	g->requested_size = block_size;
	g->block_size = stride;
	g->nblocks = nblocks;
	g->blocks_off = (uint32_t)align64(sizeof(struct syncmem_pool_header) +
					  (uint64_t)nblocks * sizeof(uint32_t));
	g->footprint = g->blocks_off + (uint64_t)nblocks * stride;
	/* Every offset alloc() returns must fit in 32 bits. */
	if (g->footprint > UINT32_MAX)
		return -E2BIG;
	g->blocks_len = nblocks * stride;
	g->block_shift = (stride & (stride - 1)) ? 0 : (uint32_t)__builtin_ctz(stride);
	g->shard_shift = shard_shift_for(nblocks);
	return 0;
}

size_t syncmem_pool_footprint(uint32_t block_size, uint32_t nblocks)
{
	struct pool_geom g;

	return pool_geometry(block_size, nblocks, &g) ? 0 : (size_t)g.footprint;
}

/* The links always follow the header. */
static inline uint32_t *pool_links(const struct syncmem_pool *p)
{
	return (uint32_t *)(p->hdr + 1);
}

/* A handle on @h with geometry @g. */
static void handle_fill(struct syncmem_pool *p, struct syncmem_pool_header *h,
			const struct pool_geom *g, bool writable)
{
	p->hdr = h;
	p->g = *g;
	p->rdonly = !writable;
	p->top_max = writable ? g->nblocks : 0;
	p->free_len = writable ? g->blocks_len : 0;
	p->owned = false;
}

/* A malloc'd copy of @p for the caller, or -ENOMEM. */
static int handle_dup(const struct syncmem_pool *p, struct syncmem_pool **out)
{
	struct syncmem_pool *q = malloc(sizeof(*q));

	if (!q)
		return -ENOMEM;
	*q = *p;
	q->owned = true;
	*out = q;
	return 0;
}

int syncmem_pool_init(void *mem, size_t len, uint32_t block_size, uint32_t nblocks,
		      struct syncmem_pool **out)
{
	struct syncmem_pool_header *h = mem;
	struct syncmem_pool p;
	struct pool_geom g;
	uint32_t *link;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!mem || ((uintptr_t)mem & (SYNCMEM_POOL_ALIGN - 1)))
		return -EINVAL;
	err = pool_geometry(block_size, nblocks, &g);
	if (err)
		return err;
	if (len < g.footprint)
		return -EINVAL;
	handle_fill(&p, h, &g, true);
	err = handle_dup(&p, out);
	if (err)
		return err;
	/* Claim the memory: only one creator, and only on zeroed memory. */
	err = syncmem__ready_claim(&h->state, &h->builder);
	if (err) {
		syncmem_pool_detach(*out);
		*out = NULL;
		return err;
	}

	h->version = SYNCMEM_POOL_VERSION;
	h->block_size = g.block_size;
	h->nblocks = nblocks;
	h->requested_size = block_size;
	h->meta_off = sizeof(*h);
	h->blocks_off = g.blocks_off;
	h->footprint = g.footprint;
	h->block_shift = g.block_shift;
	h->blocks_len = g.blocks_len;
	h->shard_shift = g.shard_shift;
	h->reserved0 = 0;
	/* Stack s holds blocks [s << shift, (s + 1) << shift), in order. */
	link = pool_links(&p);
	for (uint32_t s = 0; s < SYNCMEM_POOL_SHARDS; s++) {
		uint64_t first = (uint64_t)s << g.shard_shift;
		uint64_t end = (uint64_t)(s + 1) << g.shard_shift;

		if (end > nblocks)
			end = nblocks;
		for (uint64_t i = first; i < end; i++)
			link[i] = i + 1 < end ? (uint32_t)i + 2 : 0;
		h->shard[s].head = first < end ? (first + 1) << 32 : 0;	/* tag 0 */
		memset(h->shard[s].reserved, 0, sizeof(h->shard[s].reserved));
	}
	h->magic = SYNCMEM_POOL_MAGIC;
	syncmem__ready_publish(&h->state);
	return 0;
}

/* One relaxed load: the field may change under us; this copy is what we check. */
static inline uint32_t shared_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Validate the header of a ready pool once, into @g: 0, -EPROTO or -EINVAL. */
static int pool_check(const struct syncmem_pool_header *h, size_t len, struct pool_geom *g)
{
	if (shared_u32(&h->magic) != SYNCMEM_POOL_MAGIC ||
	    shared_u32(&h->version) != SYNCMEM_POOL_VERSION)
		return -EPROTO;
	if (pool_geometry(shared_u32(&h->requested_size), shared_u32(&h->nblocks), g) ||
	    shared_u32(&h->block_size) != g->block_size ||
	    shared_u32(&h->meta_off) != sizeof(*h) ||
	    shared_u32(&h->blocks_off) != g->blocks_off ||
	    __atomic_load_n(&h->footprint, __ATOMIC_RELAXED) != g->footprint ||
	    shared_u32(&h->block_shift) != g->block_shift ||
	    shared_u32(&h->blocks_len) != g->blocks_len ||
	    shared_u32(&h->shard_shift) != g->shard_shift)
		return -EPROTO;
	return len < g->footprint ? -EINVAL : 0;
}

int syncmem__pool_attach_at(struct syncmem_pool *p, void *mem, size_t len, long wait_ms,
			    bool writable)
{
	struct syncmem_pool_header *h = mem;
	struct pool_geom g;
	int err;

	if (!mem || ((uintptr_t)mem & (SYNCMEM_POOL_ALIGN - 1)) || len < sizeof(*h))
		return -EINVAL;
	/* Wait (bounded) while the creator is still building the pool. */
	err = syncmem__ready_wait(&h->state, &h->builder, wait_ms);
	if (err)
		return err;
	err = pool_check(h, len, &g);
	if (err)
		return err;
	handle_fill(p, h, &g, writable || syncmem__writable(&h->state));
	return 0;
}

int syncmem_pool_attach(void *mem, size_t len, struct syncmem_pool **out)
{
	struct syncmem_pool p;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	err = syncmem__pool_attach_at(&p, mem, len, SYNCMEM_POOL_ATTACH_WAIT_MS, false);
	return err ? err : handle_dup(&p, out);
}

void syncmem_pool_detach(struct syncmem_pool *p)
{
	if (p && p->owned)
		free(p);
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

/* A list top or link out of bounds: read-only memory, or a corrupted pool. */
static __attribute__((noinline, cold)) int pool_bad(const struct syncmem_pool *p)
{
	return p->rdonly ? -EBADF : -EUCLEAN;
}

/*
 * Pop from stack @s: the block's index + 1, 0 when the stack is empty, or
 * -EUCLEAN / -EBADF.
 */
static int64_t pop(const struct syncmem_pool *p, unsigned int s)
{
	uint64_t *headp = &p->hdr->shard[s].head;
	uint32_t *link = pool_links(p);
	uint32_t top, next, failed = 0;
	uint64_t head;

	/*
	 * Acquire pairs with the release CAS of the push that put this head
	 * there: the link it wrote is visible to the relaxed load below.
	 */
	head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
	for (;;) {
		top = head_top(head);
		if (!top)
			return 0;
		if (top > p->top_max)
			return pool_bad(p);
		/*
		 * Possibly stale (even BLOCK_USED) if the block moved
		 * meanwhile; the tag then fails the CAS.
		 */
		next = __atomic_load_n(&link[top - 1], __ATOMIC_RELAXED);
		if (next > p->top_max) {
			/*
			 * BLOCK_USED: the block was popped since we read the
			 * head; look again (acquire, as above). Any other
			 * value is never written by this library.
			 */
			if (next != BLOCK_USED || ++failed > SYNCMEM__RETRY_MAX)
				return pool_bad(p);
			head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
			continue;
		}
		/*
		 * Success acquires the previous owner's writes to the block
		 * (released by its free's push); failure reloads head with
		 * acquire for the next round.
		 */
		if (__atomic_compare_exchange_n(headp, &head, next_head(head, (uint64_t)next << 32),
						true, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			return top;
		if (++failed > SYNCMEM__RETRY_MAX)
			return pool_bad(p);
	}
}

/*
 * Results of the allocation paths in one register: the block's offset in
 * the low 32 bits (0 on failure), the positive errno in the high 32 bits.
 * syncmem_pool_alloc() just truncates it.
 */
static inline uint64_t alloc_error(int err)
{
	return (uint64_t)(uint32_t)-err << 32;
}

/* Block @got (index + 1, in bounds) popped: mark it used, give its offset. */
static uint64_t take(const struct syncmem_pool *p, uint32_t got)
{
	/* The block is ours alone now. */
	__atomic_store_n(&pool_links(p)[got - 1], BLOCK_USED, __ATOMIC_RELAXED);
	return p->g.blocks_off + (got - 1) * p->g.block_size;
}

/*
 * Allocate from stack @s, else from the others in turn: with retries,
 * bounds and read-only memory, everything but the fast path's single pop.
 */
static uint64_t alloc_slow(const struct syncmem_pool *p, unsigned int s)
{
	int64_t got;

	if (p->rdonly)
		return alloc_error(-EBADF);
	got = pop(p, s);
	for (unsigned int k = 1; k < SYNCMEM_POOL_SHARDS && !got; k++)
		got = pop(p, (s + k) % SYNCMEM_POOL_SHARDS);
	if (got <= 0)
		return alloc_error(got ? (int)got : -ENOMEM);
	return take(p, (uint32_t)got);
}

/* The fast path's way out: the same result, as a tail call can return it. */
static __attribute__((noinline)) uint32_t alloc_retry(const struct syncmem_pool *p,
						      unsigned int s)
{
	return (uint32_t)alloc_slow(p, s);
}

/* The first allocation of a thread: pick its stack, then allocate. */
static __attribute__((noinline, cold)) uint32_t alloc_first(const struct syncmem_pool *p)
{
	return alloc_retry(p, pick_stack());
}

/*
 * The fast path: one pop from the thread's own stack, every bound checked
 * with one compare; anything else leaves by a tail call.
 */
uint32_t syncmem_pool_alloc(struct syncmem_pool *p)
{
	unsigned int s = my_stack;
	struct syncmem_pool_header *h;
	uint32_t *link, top, next, max;
	uint64_t *headp, head;

	if (__builtin_expect(s == ~0u, 0))
		return alloc_first(p);
	h = p->hdr;
	max = p->top_max;
	link = (uint32_t *)(h + 1);
	headp = &h->shard[s].head;
	/* Acquire: as in pop(). */
	head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
	top = head_top(head);
	/* One compare: an empty stack (top 0 wraps) or a top out of bounds. */
	if (__builtin_expect(top - 1 >= max, 0))
		return alloc_retry(p, s);
	next = __atomic_load_n(&link[top - 1], __ATOMIC_RELAXED);
	if (__builtin_expect(next > max, 0))
		return alloc_retry(p, s);
	/* Acquire on success: as in pop(). */
	if (__builtin_expect(!__atomic_compare_exchange_n(headp, &head,
							  next_head(head, (uint64_t)next << 32),
							  false, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED), 0))
		return alloc_retry(p, s);
	/* The block is ours alone now. */
	__atomic_store_n(&link[top - 1], BLOCK_USED, __ATOMIC_RELAXED);
	return p->g.blocks_off + (top - 1) * p->g.block_size;
}

int syncmem_pool_alloc_checked(struct syncmem_pool *p, uint32_t *off)
{
	unsigned int s = my_stack;
	uint64_t ret;

	if (!off)
		return -EINVAL;
	*off = 0;
	if (!p)
		return -EINVAL;
	ret = alloc_slow(p, s == ~0u ? pick_stack() : s);
	*off = (uint32_t)ret;
	return -(int)(ret >> 32);
}

/* An offset outside the blocks: not a block, or read-only memory. */
static __attribute__((noinline, cold)) int free_outside(const struct syncmem_pool *p,
							 uint32_t off)
{
	if (p->rdonly && off - p->g.blocks_off < p->g.blocks_len)
		return -EBADF;
	return -EINVAL;
}

/*
 * The block's link was @link, not BLOCK_USED: the block is free already
 * (its link an index + 1 in bounds), or the pool is corrupted.
 */
static __attribute__((noinline, cold)) int free_refused(const struct syncmem_pool *p,
							 uint32_t link)
{
	return link > p->top_max ? pool_bad(p) : -EALREADY;
}

int syncmem_pool_free(struct syncmem_pool *p, uint32_t off)
{
	uint32_t *link, rel, i, used = BLOCK_USED, failed = 0;
	uint64_t *headp, head;

	rel = off - p->g.blocks_off;	/* wraps when off < blocks_off */
	if (rel >= p->free_len)
		return free_outside(p, off);
	i = __builtin_expect(p->g.block_shift != 0, 1) ? rel >> p->g.block_shift :
							 rel / p->g.block_size;
	if (i * p->g.block_size != rel)
		return -EINVAL;

	link = pool_links(p);
	headp = &p->hdr->shard[i >> p->g.shard_shift].head;
	/*
	 * The top is only copied into our link, never used as an index here:
	 * a pop that meets it out of bounds reports the corruption.
	 */
	head = __atomic_load_n(headp, __ATOMIC_RELAXED);
	/* Claim the block (one winner among racing frees) and link it in one go. */
	if (!__atomic_compare_exchange_n(&link[i], &used, head_top(head), false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return free_refused(p, used);
	/*
	 * Release publishes the link and everything the owner wrote into the
	 * block to the next popper (its acquire).
	 */
	while (!__atomic_compare_exchange_n(headp, &head, next_head(head, (uint64_t)(i + 1) << 32),
					    true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
		/* Lost too often: give up (the claimed block is lost). */
		if (++failed > SYNCMEM__RETRY_MAX)
			return pool_bad(p);
		__atomic_store_n(&link[i], head_top(head), __ATOMIC_RELAXED);
	}
	return 0;
}

void *syncmem_pool_ptr(struct syncmem_pool *p, uint32_t off)
{
	if (!p || !off || off >= p->g.footprint)
		return NULL;
	return (char *)p->hdr + off;
}

uint32_t syncmem_pool_off(struct syncmem_pool *p, const void *ptr)
{
	uintptr_t a = (uintptr_t)ptr, base;

	if (!p)
		return 0;
	base = (uintptr_t)p->hdr;
	if (a <= base || a - base >= p->g.footprint)
		return 0;
	return (uint32_t)(a - base);
}

void *syncmem__pool_block(const struct syncmem_pool *p, uint32_t off, size_t len)
{
	uint32_t rel = off - p->g.blocks_off;	/* wraps when off < blocks_off */

	if (rel >= p->g.blocks_len || rel % p->g.block_size || len > p->g.requested_size)
		return NULL;
	return (char *)p->hdr + off;
}

uint32_t syncmem_pool_free_count(const struct syncmem_pool *p)
{
	const uint32_t *link;
	uint32_t n = 0;

	if (!p)
		return 0;
	link = pool_links(p);
	for (uint32_t i = 0; i < p->g.nblocks; i++)
		n += __atomic_load_n(&link[i], __ATOMIC_RELAXED) != BLOCK_USED;
	return n;
}
