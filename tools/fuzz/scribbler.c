// SPDX-License-Identifier: GPL-2.0
/*
 * The scribbler: a thread that keeps writing values into the words other
 * threads and processes wait on, notify and hand off, through this
 * process's writable mappings, so compares see words change at any moment.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>

#include "fuzz.h"

static void *scribble(void *p)
{
	struct rng r;

	rng_seed(&r, (uint64_t)(uintptr_t)p);
	while (!should_stop()) {
		struct mapping *m = map_enter(&r, 0, true);
		struct timespec pause = { 0, 50000 + (long)rng_below(&r, 450000) };

		if (m) {
			int n = 1 + (int)rng_below(&r, 32);

			for (int i = 0; i < n; i++) {
				uint32_t width = rng_chance(&r, 1, 4) ? 8 : 4;
				uint64_t off = pick_offset(&r, m->len, width);
				uint64_t v = rng_chance(&r, 3, 4) ? rng_below(&r, 4) : rng_next(&r);
				char *word = (char *)m->addr + off;

				if (width == 4)
					atomic_store_explicit((_Atomic uint32_t *)word, (uint32_t)v,
							      memory_order_relaxed);
				else
					atomic_store_explicit((_Atomic uint64_t *)word, v,
							      memory_order_relaxed);
			}
			atomic_fetch_add_explicit(&shared->scribbles, n, memory_order_relaxed);
			map_leave(m);
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

void scribbler_start(uint64_t seed)
{
	pthread_t t;

	/* 64-bit pointers carry the seed. */
	if (pthread_create(&t, NULL, scribble, (void *)(uintptr_t)seed) == 0)
		pthread_detach(t);
}
