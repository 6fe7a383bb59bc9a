// SPDX-License-Identifier: GPL-2.0
/*
 * The scribbler: a process writing random values into the arena's objects
 * (their words, list heads, links, table headers) while the workers use
 * them, as a hostile or buggy peer sharing the region would.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "libfuzz.h"

/* Values that mean something to some object: 0, all ones, bit 31, small
 * counts, offsets and indexes near the pool's, this process's id. */
static uint64_t value(struct rng *r, const struct arena *a)
{
	switch (rng_below(r, 9)) {
	case 0:
		return 0;
	case 1:
		return ~0ull;
	case 2:
		return 0x80000000u | rng_below(r, 4);
	case 3:
		return rng_below(r, 4);
	case 4:
		return rng_below(r, a->at.pool_len + 4096);
	case 5:
		return rng_below(r, POOL_BLOCKS + 2);
	case 6:
		return (uint64_t)getpid();
	case 7:
		return rng_below(r, POOL_BLOCKS + 2) << 32 | rng_below(r, 8);
	default:
		return rng_next(r);
	}
}

void scribble_run(struct arena *a, unsigned int objects, uint64_t seed, uint64_t until)
{
	struct rng r = { seed };
	struct timespec pause = { 0, 20000 };
	/* Where each kind of object starts, and how far it reaches. */
	struct {
		unsigned int kind;
		size_t start, len;
	} all[] = {
		{ OBJ_LOCKS, a->at.locks, a->at.keyed - a->at.locks },
		{ OBJ_KEYED, a->at.keyed, a->at.keyed_len },
		{ OBJ_POOL, a->at.pool, a->at.pool_len },
		{ OBJ_POOL, a->at.pool + sizeof(struct syncmem_pool_header), a->at.pool_len - 576 },
		{ OBJ_WEBLOCKS, a->at.weblocks, a->weblocks ? a->at.weblocks_len : 0 },
	}, mine[5];
	unsigned int n = 0;

	for (unsigned int i = 0; i < 5; i++)
		if ((objects & all[i].kind) && all[i].len)
			mine[n++] = all[i];
	while (n && now_ns() < until) {
		for (int i = 0; i < 16; i++) {
			/* Mostly an object's first bytes (headers, words, heads), then anywhere in it. */
			unsigned int which = (unsigned int)rng_below(&r, n);
			size_t span = rng_below(&r, 4) ? 256 : mine[which].len;
			size_t off = mine[which].start + rng_below(&r, span);
			unsigned int width = 1u << rng_below(&r, 4);
			char *p;

			off = off / width * width;
			if (off + width > ARENA_BYTES)
				continue;
			p = a->base + off;
			switch (width) {
			case 1:
				*(volatile uint8_t *)p = (uint8_t)value(&r, a);
				break;
			case 2:
				*(volatile uint16_t *)p = (uint16_t)value(&r, a);
				break;
			case 4:
				atomic_store((_Atomic uint32_t *)p, (uint32_t)value(&r, a));
				break;
			default:
				atomic_store((_Atomic uint64_t *)p, value(&r, a));
				break;
			}
		}
		atomic_fetch_add(&books->scribbles, 16);
		nanosleep(&pause, NULL);
	}
	_exit(0);
}
