// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A lock-free fixed-size block allocator living in shared memory, with ABA,
 * double frees, foreign offsets and dead holders dealt with.
 *
 * Layout, all offsets from the pool start (never pointers, so any process
 * may map the memory at any address):
 *
 *   0      struct syncmem_pool_header (576 bytes: identity, then 8 list heads)
 *   576    uint64_t word[nblocks], 64-aligned end
 *   ...    the blocks, each block_size bytes (a multiple of 64)
 *
 * Free blocks sit on SYNCMEM_POOL_SHARDS Treiber stacks. Each head is one
 * 64-bit word on its own cache line: the high 32 bits hold the index + 1 of
 * the first free block (0: empty), the low 32 bits a tag that every
 * successful push and pop increments. Block i belongs to stack
 * i >> shard_shift (contiguous ranges, so neighbouring words share a list)
 * and is always freed back onto it; alloc() pops from its thread's stack
 * first (spread round-robin) and tries the others when that one is empty.
 * Threads thus rarely touch the same line.
 *
 * A block's word says who holds it. While it is allocated: BLOCK_USED
 * (the top bit) | the holder's owner id (the process the kernel issued it
 * to; SYNCMEM_POOL_TABLE for a table's block; 0 when the allocating
 * process could not get an id), or BLOCK_USED | BLOCK_TRANSIT | the
 * giver's id while it is in transit. While it is free: the index + 1 of
 * the next free block on its stack (0: last), top bits clear. The words
 * live outside the blocks, so a block's holder cannot corrupt a list by
 * writing its block, and an 8-byte block is fine. Every change of hands (alloc, free, give,
 * take, reclaim) is one store or CAS of that one word, so a block is
 * always either free, or held by exactly one recorded holder.
 *
 * Why ABA cannot hit the lists: a popper reads head = {A, t} and
 * word(A) = B, then stalls. Others pop A, pop B and push A back: the head
 * is {A, t + 3}. The stalled popper's CAS expects {A, t} and fails, so it
 * never installs the stale B. A false success needs the tag to wrap: 2^32
 * successful operations on one stack while one thread sits between its load
 * and its CAS.
 *
 * Double frees: free() claims the block by moving its word from "held" to
 * a list link with one CAS, before pushing. Of two racing frees exactly
 * one wins and the other gets -EALREADY; the list is never touched twice for
 * one block. A process killed between the claim and the push leaks that
 * block (not held, not in a list): it never corrupts a list.
 *
 * Dead holders: syncmem_pool_reclaim() asks the kernel whether each
 * recorded holder is alive (SYNCMEM_OWNER_QUERY) and frees the blocks of
 * the dead with the same CAS from the exact word it read, so a block that
 * changed hands meanwhile is left alone. A dead holder's word can no
 * longer change but by that CAS: only its holder gives a block away, and
 * ids are never reused.
 *
 * Hostile peers: any process mapping the pool may write anything into it at
 * any moment. Each process therefore keeps the geometry it validated when
 * it built or attached the pool in its private handle (struct
 * syncmem_pool, pool.h) and never reads it from the shared header again;
 * every index + 1 it reads from shared memory (list tops, words) is checked
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

#include <linux/syncmem.h>

#define BLOCK_USED		(1ULL << 63)	/* in the word of an allocated block */
#define BLOCK_TRANSIT		(1ULL << 62)	/* given to anyone: the id is the giver's */
#define BLOCK_HOLDER		SYNCMEM_OWNER_ID	/* the holder's (or giver's) id */

_Static_assert(SYNCMEM_POOL_TABLE == SYNCMEM_OWNER_NOBODY,
	       "a table's block: an id the kernel counts as alive, never reclaimed");
_Static_assert(SYNCMEM_POOL_ANYONE == BLOCK_TRANSIT, "give to anyone: the transit bit");
_Static_assert(!((BLOCK_USED | BLOCK_TRANSIT) & BLOCK_HOLDER), "ids below the flag bits");

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
					  (uint64_t)nblocks * sizeof(uint64_t));
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

/* The block words always follow the header. */
static inline uint64_t *pool_words(const struct syncmem_pool *p)
{
	return (uint64_t *)(p->hdr + 1);
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
	uint64_t *word;
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
	word = pool_words(&p);
	for (uint32_t s = 0; s < SYNCMEM_POOL_SHARDS; s++) {
		uint64_t first = (uint64_t)s << g.shard_shift;
		uint64_t end = (uint64_t)(s + 1) << g.shard_shift;

		if (end > nblocks)
			end = nblocks;
		for (uint64_t i = first; i < end; i++)
			word[i] = i + 1 < end ? i + 2 : 0;
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

/*
 * What this process's allocations write into a block's word: BLOCK_USED |
 * its owner id (0 when the kernel gave none: such blocks are never
 * reclaimed). 0 until the process's first allocation asks the kernel, and
 * again in a forked child, which is another holder.
 */
static uint64_t my_mark;

static void forget_after_fork(void)
{
	my_stack = ~0u;
	__atomic_store_n(&my_mark, 0, __ATOMIC_RELAXED);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, forget_after_fork);
}

static unsigned int pick_stack(void)
{
	unsigned int n = __atomic_fetch_add(&next_pick, 1, __ATOMIC_RELAXED);

	pthread_once(&fork_once, register_fork_handler);
	my_stack = ((unsigned int)getpid() + n) % SYNCMEM_POOL_SHARDS;
	return my_stack;
}

/*
 * This process's mark; the first call asks the kernel for its id. Without
 * the module (-ENODEV, for good) blocks record no holder; any other failure
 * (no fd left, no memory) records none for this call and asks again next
 * time, so racing threads only ever store the id, or "no module".
 */
static uint64_t process_mark(void)
{
	uint64_t mark = __atomic_load_n(&my_mark, __ATOMIC_RELAXED);
	int64_t id;

	if (__builtin_expect(mark != 0, 1))
		return mark;
	pthread_once(&fork_once, register_fork_handler);
	id = syncmem__process_owner_any();
	if (id > 0)
		mark = BLOCK_USED | (uint64_t)id;
	else if (id == -ENODEV)
		mark = BLOCK_USED;
	else
		return BLOCK_USED;
	__atomic_store_n(&my_mark, mark, __ATOMIC_RELAXED);
	return mark;
}

/* A list top or word out of bounds: read-only memory, or a corrupted pool. */
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
	uint64_t *word = pool_words(p);
	uint64_t head, next;
	uint32_t top, failed = 0;

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
		 * Possibly stale (even a holder's) if the block moved
		 * meanwhile; the tag then fails the CAS.
		 */
		next = __atomic_load_n(&word[top - 1], __ATOMIC_RELAXED);
		if (next > p->top_max) {
			/*
			 * Held: the block was popped since we read the head;
			 * look again (acquire, as above). Any other value is
			 * never written by this library.
			 */
			if (!(next & BLOCK_USED) || syncmem__too_many(&failed))
				return pool_bad(p);
			head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
			continue;
		}
		/*
		 * Success acquires the previous holder's writes to the block
		 * (released by its free's push); failure reloads head with
		 * acquire for the next round.
		 */
		if (__atomic_compare_exchange_n(headp, &head, next_head(head, next << 32),
						true, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			return top;
		if (syncmem__too_many(&failed))
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

/*
 * Allocate from stack @s, else from the others in turn, recording @mark:
 * with retries, bounds and read-only memory, everything but the fast
 * path's single pop.
 */
/*
 * Did every stack stay empty since @seen was read of each? Each head's tag
 * moves with every push and pop, so if every head still reads as it did,
 * empty, all of them were empty at once: at the moment this check began.
 */
static bool all_stayed_empty(const struct syncmem_pool *p, const uint64_t *seen)
{
	for (unsigned int k = 0; k < SYNCMEM_POOL_SHARDS; k++)
		if (head_top(seen[k]) ||
		    __atomic_load_n(&p->hdr->shard[k].head, __ATOMIC_ACQUIRE) != seen[k])
			return false;
	return true;
}

/*
 * Pop from stack @s, else from the others in turn: the block's index + 1,
 * or 0 only when every stack was empty at one instant (a block freed to a
 * stack already passed while another stack was emptied is not missed), or
 * -EUCLEAN / -EBADF.
 */
static int64_t pop_any(const struct syncmem_pool *p, unsigned int s)
{
	uint64_t seen[SYNCMEM_POOL_SHARDS];
	uint32_t failed = 0;

	for (;;) {
		for (unsigned int k = 0; k < SYNCMEM_POOL_SHARDS; k++) {
			unsigned int at = (s + k) % SYNCMEM_POOL_SHARDS;
			int64_t got;

			seen[at] = __atomic_load_n(&p->hdr->shard[at].head, __ATOMIC_ACQUIRE);
			if (!head_top(seen[at]))
				continue;
			got = pop(p, at);
			if (got)
				return got;
			/* Emptied since: what it held went to someone else. */
			seen[at] = __atomic_load_n(&p->hdr->shard[at].head, __ATOMIC_ACQUIRE);
		}
		if (all_stayed_empty(p, seen))
			return 0;
		/* Blocks moved meanwhile: look again, a bounded number of times. */
		if (syncmem__too_many(&failed))
			return pool_bad(p);
	}
}

static uint64_t alloc_slow(const struct syncmem_pool *p, unsigned int s, uint64_t mark)
{
	int64_t got;

	if (p->rdonly)
		return alloc_error(-EBADF);
	got = pop_any(p, s);
	if (got <= 0)
		return alloc_error(got ? (int)got : -ENOMEM);
	/* The block is ours alone now. */
	__atomic_store_n(&pool_words(p)[got - 1], mark, __ATOMIC_RELAXED);
	return p->g.blocks_off + (uint32_t)(got - 1) * p->g.block_size;
}

/* The fast path's way out: the same result, as a tail call can return it. */
static __attribute__((noinline, cold)) uint32_t alloc_retry(const struct syncmem_pool *p)
{
	unsigned int s = my_stack;

	if (!p)
		return 0;
	return (uint32_t)alloc_slow(p, s == ~0u ? pick_stack() : s, process_mark());
}

/*
 * The fast path: one pop from the thread's own stack, every bound checked
 * with one compare; anything else leaves by a tail call.
 */
uint32_t syncmem_pool_alloc(struct syncmem_pool *p)
{
	unsigned int s = my_stack;
	uint64_t mark = __atomic_load_n(&my_mark, __ATOMIC_RELAXED);
	struct syncmem_pool_header *h;
	uint64_t *word, *headp, head, next;
	uint32_t top, max;

	/* The thread's first allocation, or the process's; or no pool. */
	if (__builtin_expect(s == ~0u || !mark || !p, 0))
		return alloc_retry(p);
	h = p->hdr;
	max = p->top_max;
	word = (uint64_t *)(h + 1);
	headp = &h->shard[s].head;
	/* Acquire: as in pop(). */
	head = __atomic_load_n(headp, __ATOMIC_ACQUIRE);
	top = head_top(head);
	/* One compare: an empty stack (top 0 wraps) or a top out of bounds. */
	if (__builtin_expect(top - 1 >= max, 0))
		return alloc_retry(p);
	next = __atomic_load_n(&word[top - 1], __ATOMIC_RELAXED);
	if (__builtin_expect(next > max, 0))
		return alloc_retry(p);
	/* Acquire on success: as in pop(). */
	if (__builtin_expect(!__atomic_compare_exchange_n(headp, &head,
							  next_head(head, next << 32),
							  false, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED), 0))
		return alloc_retry(p);
	/* The block is ours alone now. */
	__atomic_store_n(&word[top - 1], mark, __ATOMIC_RELAXED);
	return p->g.blocks_off + (top - 1) * p->g.block_size;
}

/* Allocate a block recorded as held by @mark: 0 or -errno, the offset in *@off. */
static int alloc_marked(struct syncmem_pool *p, uint64_t mark, uint32_t *off)
{
	unsigned int s = my_stack;
	uint64_t ret;

	if (!off)
		return -EINVAL;
	*off = 0;
	if (!p)
		return -EINVAL;
	ret = alloc_slow(p, s == ~0u ? pick_stack() : s, mark);
	*off = (uint32_t)ret;
	return -(int)(ret >> 32);
}

int syncmem_pool_alloc_checked(struct syncmem_pool *p, uint32_t *off)
{
	return alloc_marked(p, process_mark(), off);
}

int syncmem__pool_alloc_unheld(struct syncmem_pool *p, uint32_t *off)
{
	return alloc_marked(p, BLOCK_USED | SYNCMEM_POOL_TABLE, off);
}

/* An offset outside the blocks: not a block, or read-only memory. */
static __attribute__((noinline, cold)) int outside(const struct syncmem_pool *p, uint32_t off)
{
	if (p->rdonly && off - p->g.blocks_off < p->g.blocks_len)
		return -EBADF;
	return -EINVAL;
}

/*
 * The index of block @off, or -EINVAL for an offset that is not exactly a
 * block below blocks_off + @len (-EBADF for a block of read-only memory
 * when @len is free_len, which is then 0).
 */
static inline int64_t block_index(const struct syncmem_pool *p, uint32_t off, uint32_t len)
{
	uint32_t rel = off - p->g.blocks_off;	/* wraps when off < blocks_off */
	uint32_t i;

	if (rel >= len)
		return outside(p, off);
	i = __builtin_expect(p->g.block_shift != 0, 1) ? rel >> p->g.block_shift :
							 rel / p->g.block_size;
	if (i * p->g.block_size != rel)
		return -EINVAL;
	return i;
}

/*
 * The block's word was @w, not held: the block is free already (its word
 * an index + 1 in bounds), or the pool is corrupted.
 */
static __attribute__((noinline, cold)) int not_held(const struct syncmem_pool *p, uint64_t w)
{
	return w > p->top_max ? pool_bad(p) : -EALREADY;
}

/*
 * Push block @i onto its stack, whose head was @head: the block is claimed
 * (its word no longer held) and already links to @head's top.
 */
static int push_claimed(const struct syncmem_pool *p, uint32_t i, uint64_t *headp, uint64_t head)
{
	uint32_t failed = 0;

	/*
	 * Release publishes the link and everything the holder wrote into the
	 * block to the next popper (its acquire).
	 */
	while (!__atomic_compare_exchange_n(headp, &head, next_head(head, (uint64_t)(i + 1) << 32),
					    true, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
		/* Lost too often: give up (the claimed block is lost). */
		if (syncmem__too_many(&failed))
			return pool_bad(p);
		__atomic_store_n(&pool_words(p)[i], head_top(head), __ATOMIC_RELAXED);
	}
	return 0;
}

int syncmem_pool_free(struct syncmem_pool *p, uint32_t off)
{
	int64_t i = p ? block_index(p, off, p->free_len) : -EINVAL;
	uint64_t *word, *headp, head, w;
	uint32_t failed = 0;

	if (i < 0)
		return (int)i;
	word = &pool_words(p)[i];
	headp = &p->hdr->shard[i >> p->g.shard_shift].head;
	w = __atomic_load_n(word, __ATOMIC_RELAXED);
	/*
	 * The top is only copied into our word, never used as an index here:
	 * a pop that meets it out of bounds reports the corruption.
	 */
	head = __atomic_load_n(headp, __ATOMIC_RELAXED);
	/*
	 * Claim the block from whoever holds it (one winner among racing
	 * frees) and link it in one go; a give or take meanwhile changes @w.
	 */
	do {
		if (!(w & BLOCK_USED))
			return not_held(p, w);
	} while (!__atomic_compare_exchange_n(word, &w, head_top(head), false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED) &&
		 !syncmem__too_many(&failed));
	if (failed > SYNCMEM__RETRY_MAX)
		return pool_bad(p);
	return push_claimed(p, (uint32_t)i, headp, head);
}

/* The word of block @off, to change hands; NULL with *@err set when not a block. */
static uint64_t *word_to_change(struct syncmem_pool *p, uint32_t off, int *err)
{
	int64_t i;

	*err = -EINVAL;
	if (!p)
		return NULL;
	i = block_index(p, off, p->free_len);
	if (i < 0) {
		*err = (int)i;
		return NULL;
	}
	return &pool_words(p)[i];
}

int syncmem_pool_give(struct syncmem_pool *p, uint32_t off, uint64_t to)
{
	uint64_t *word, me, w, now;
	int err;

	word = word_to_change(p, off, &err);
	if (!word)
		return err;
	me = process_mark();
	/* A process's id (the kernel's are below the table's), or anyone. */
	if (to == SYNCMEM_POOL_ANYONE)
		now = BLOCK_USED | BLOCK_TRANSIT | (me & BLOCK_HOLDER);
	else if (to && to < SYNCMEM_POOL_TABLE)
		now = BLOCK_USED | to;
	else
		return -EINVAL;
	w = __atomic_load_n(word, __ATOMIC_RELAXED);
	/* Only its holder gives a block away (anyone, when none is recorded). */
	if (!(w & BLOCK_USED))
		return not_held(p, w);
	if (w != me && w != BLOCK_USED)
		return -EPERM;
	/* Release: the receiver that takes it (acquire) sees what we wrote. */
	if (!__atomic_compare_exchange_n(word, &w, now, false, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED))
		return (w & BLOCK_USED) ? -EPERM : not_held(p, w);
	return 0;
}

int syncmem_pool_take(struct syncmem_pool *p, uint32_t off, uint64_t from)
{
	uint64_t *word, me, w;
	int err, dead;

	word = word_to_change(p, off, &err);
	if (!word)
		return err;
	if (from >= SYNCMEM_POOL_TABLE)
		return -EINVAL;
	me = process_mark();
	w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	if (!(w & BLOCK_USED))
		return not_held(p, w);
	if (w == me)
		return 1;	/* ours already: allocated by us, or given to us by id */
	if (w == (BLOCK_USED | BLOCK_TRANSIT | from)) {
		/* Acquire pairs with the giver's release. Of racing takers one wins. */
		if (__atomic_compare_exchange_n(word, &w, me, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
		return (w & BLOCK_USED) ? -EBUSY : not_held(p, w);
	}
	if (w & BLOCK_TRANSIT)
		return -ESTALE;		/* given by somebody else: another message */
	if (w != (BLOCK_USED | from) || !from)
		return -EBUSY;		/* somebody else's */
	/* Still its sender's: not given yet, unless the sender died. */
	dead = syncmem__owner_dead(from);
	if (dead <= 0)
		return dead ? dead : -EAGAIN;
	/* A dead sender's: ours, as a dead holder's lock is (acquire: its writes). */
	if (__atomic_compare_exchange_n(word, &w, me, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return -EOWNERDEAD;
	return (w & BLOCK_USED) ? -EBUSY : not_held(p, w);
}

int syncmem_pool_holder(const struct syncmem_pool *p, uint32_t off, uint64_t *holder)
{
	int64_t i;
	uint64_t w;

	if (!holder)
		return -EINVAL;
	*holder = 0;
	if (!p)
		return -EINVAL;
	i = block_index(p, off, p->g.blocks_len);
	if (i < 0)
		return (int)i;
	w = __atomic_load_n(&pool_words(p)[i], __ATOMIC_RELAXED);
	if (!(w & BLOCK_USED))
		return w > p->g.nblocks ? -EUCLEAN : -EALREADY;
	*holder = w & BLOCK_HOLDER;
	return !!(w & BLOCK_TRANSIT);
}

int syncmem_pool_self_id(uint64_t *id)
{
	uint64_t me;

	if (!id)
		return -EINVAL;
	me = process_mark() & BLOCK_HOLDER;
	*id = me;
	return me ? 0 : -ENODEV;
}

/* Holders already asked about in one reclaim: most pools have few. */
#define RECLAIM_SEEN	32

struct holders_seen {
	uint64_t id[RECLAIM_SEEN];
	bool alive[RECLAIM_SEEN];
	unsigned int n, next;
};

/* Is @id alive: 1, 0, or -errno from the kernel. Asks once per id (mostly). */
static int holder_alive(struct holders_seen *seen, int fd, uint64_t id)
{
	unsigned int k;
	int alive;

	for (k = 0; k < seen->n; k++)
		if (seen->id[k] == id)
			return seen->alive[k];
	alive = syncmem__owner_alive(fd, id);
	if (alive < 0)
		return alive;
	/* Full: forget the oldest answer, round-robin. */
	k = seen->n < RECLAIM_SEEN ? seen->n++ : seen->next++ % RECLAIM_SEEN;
	seen->id[k] = id;
	seen->alive[k] = alive;
	return alive;
}

int syncmem_pool_reclaim(struct syncmem_pool *p)
{
	struct holders_seen seen = { .n = 0 };
	uint64_t *word, me;
	int fd, freed = 0, err = 0;

	if (!p)
		return -EINVAL;
	if (p->rdonly)
		return -EBADF;
	fd = syncmem__device_open();
	if (fd < 0)
		return fd;
	me = process_mark() & BLOCK_HOLDER;
	word = pool_words(p);
	for (uint32_t i = 0; i < p->g.nblocks && !err; i++) {
		uint64_t w = __atomic_load_n(&word[i], __ATOMIC_RELAXED);
		uint64_t h = w & BLOCK_HOLDER, *headp, head;
		int alive;

		/* Free, unrecorded, in transit, a table's or ours: not for reclaiming. */
		if (!(w & BLOCK_USED) || (w & BLOCK_TRANSIT) || !h || h == SYNCMEM_POOL_TABLE ||
		    h == me)
			continue;
		alive = holder_alive(&seen, fd, h);
		if (alive) {
			err = alive < 0 ? alive : 0;
			continue;
		}
		/*
		 * Dead: nobody but this CAS changes @w now (ids are never
		 * reused). Failing, it changed hands first (a free, or a
		 * racing reclaim): not ours to free.
		 */
		headp = &p->hdr->shard[i >> p->g.shard_shift].head;
		head = __atomic_load_n(headp, __ATOMIC_RELAXED);
		if (!__atomic_compare_exchange_n(&word[i], &w, head_top(head), false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		err = push_claimed(p, i, headp, head);
		freed += !err;
	}
	close(fd);
	return err ? err : freed;
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
	const uint64_t *word;
	uint32_t n = 0;

	if (!p)
		return 0;
	word = pool_words(p);
	for (uint32_t i = 0; i < p->g.nblocks; i++)
		n += !(__atomic_load_n(&word[i], __ATOMIC_RELAXED) & BLOCK_USED);
	return n;
}
