// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The C side of bench.py's per-call overhead: nanoseconds per call of the
 * calls the Python package wraps, in a loop in C. Prints "name ns" lines.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "syncmem.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define MEASURE(name, n, body)                                              \
	do {                                                                \
		double best = 1e9;                                          \
		for (int round = 0; round < 5; round++) {                   \
			double t = now();                                   \
			for (long i = 0; i < (n); i++) {                    \
				body;                                       \
			}                                                   \
			t = (now() - t) * 1e9 / (n);                        \
			if (t < best)                                       \
				best = t;                                   \
		}                                                           \
		printf("%s %.1f\n", name, best);                            \
	} while (0)

int main(void)
{
	struct syncmem_region *r;
	struct syncmem_lock *l;
	uint32_t *word;
	int err = syncmem_open(NULL, 4096, 0, 0600, &r);

	if (err < 0) {
		fprintf(stderr, "overhead: %s\n", syncmem_strerror(err));
		return 1;
	}
	l = syncmem_base(r);
	word = (uint32_t *)((char *)syncmem_base(r) + 128);
	syncmem_lock_init(l, 0);
	MEASURE("lock_unlock", 200000, { syncmem_lock(r, l); syncmem_unlock(r, l); });
	MEASURE("trylock_unlock", 200000, { syncmem_trylock(r, l); syncmem_unlock(r, l); });
	MEASURE("wait_not_equal", 20000, { syncmem_wait32(r, word, 1, 0); });
	MEASURE("notify_none", 20000, { syncmem_notify(r, word, 1); });
	syncmem_close(r);
	return 0;
}
