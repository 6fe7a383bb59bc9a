/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The pool handle (private memory of one process) and what other parts of
 * the library need of the pool: attaching into storage of their own (no
 * malloc), and turning a stored offset into a block safely.
 */
#ifndef SYNCMEM_POOL_H
#define SYNCMEM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "syncmem.h"

/* A pool's geometry, computed from its requested block size and count. */
struct pool_geom {
	uint32_t requested_size;
	uint32_t block_size;	/* stride: requested_size rounded up to 64 */
	uint32_t nblocks;
	uint32_t blocks_off;	/* block 0, from the pool start */
	uint32_t blocks_len;	/* nblocks * block_size */
	uint32_t block_shift;	/* log2(block_size) if a power of two, else 0 */
	uint32_t shard_shift;	/* block i is on free list i >> shard_shift */
	uint64_t footprint;	/* bytes the pool spans */
};

struct syncmem_pool {
	struct syncmem_pool_header *hdr;	/* the shared header, in this mapping */
	/*
	 * Bounds the hot paths compare against: an index + 1 read from the
	 * shared lists above top_max is corrupt; free() takes offsets below
	 * blocks_off + free_len. Both 0 on read-only memory, so that those
	 * paths reach their cold branch, which tells why.
	 */
	uint32_t top_max;
	uint32_t free_len;
	struct pool_geom g;	/* validated when built or attached */
	bool rdonly;
	bool owned;		/* malloc'd: syncmem_pool_detach() frees it */
};

/*
 * Attach to the pool in @mem into @p (storage of the caller's, which
 * syncmem_pool_detach() must not be given). Waits up to @wait_ms for a
 * creator still building it (0: -ETIMEDOUT at once). @writable: the
 * caller knows the memory is mapped writable; else it is probed.
 * Errors as syncmem_pool_attach().
 */
int syncmem__pool_attach_at(struct syncmem_pool *p, void *mem, size_t len, long wait_ms,
			    bool writable);

/*
 * Allocate a block that no process holds (recorded as SYNCMEM_POOL_ANYONE):
 * for blocks a shared structure owns, which syncmem_pool_reclaim() must
 * leave alone whoever allocated them. As syncmem_pool_alloc_checked().
 */
int syncmem__pool_alloc_unheld(struct syncmem_pool *p, uint32_t *off);

/*
 * The block at @off, if @off is exactly a block of @p and @len bytes fit
 * in its requested size; else NULL.
 */
void *syncmem__pool_block(const struct syncmem_pool *p, uint32_t off, size_t len);

#endif /* SYNCMEM_POOL_H */
