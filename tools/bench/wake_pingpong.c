// SPDX-License-Identifier: GPL-2.0
/*
 * wake-pingpong: two processes bounce a value through two words with
 * wait/notify. syncmem (a region) against a process-shared futex (memfd
 * memory), measured in the same run. Prints round trips per second.
 */
#define _GNU_SOURCE
#include "pingpong.h"
#include "syncmem.h"

#define ROUNDS 5

static struct syncmem_region *region;

static void sm_wait(_Atomic uint32_t *w, uint32_t cur)
{
	syncmem_wait32(region, (uint32_t *)w, cur, SYNCMEM_FOREVER);
}

static void sm_wake(_Atomic uint32_t *w)
{
	syncmem_notify(region, (uint32_t *)w, 1);
}

int main(int argc, char **argv)
{
	static const struct pp_ops sm = { .wait = sm_wait, .wake = sm_wake };
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 10000;
	double a[ROUNDS], b[ROUNDS];
	struct pp_words *fw;
	int err;

	err = syncmem_open(NULL, 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "wake-pingpong: %s\n", syncmem_strerror(err));
		return 1;
	}
	fw = memfd_shared(4096);
	if (!fw)
		return 1;
	/* Warm up both, then alternate rounds so drift hits both alike. */
	pingpong(&sm, &sm, syncmem_base(region), n / 10);
	pingpong(&pp_futex, &pp_futex, fw, n / 10);
	for (int i = 0; i < ROUNDS; i++) {
		a[i] = pingpong(&sm, &sm, syncmem_base(region), n);
		b[i] = pingpong(&pp_futex, &pp_futex, fw, n);
	}
	bench_report("wake-pingpong round trips (median)", "per s",
		     bench_median(a, ROUNDS), "futex", bench_median(b, ROUNDS), 1);
	syncmem_close(region);
	return 0;
}
