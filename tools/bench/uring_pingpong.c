// SPDX-License-Identifier: GPL-2.0
/*
 * uring-pingpong: two processes bounce a value through two words, each
 * waiting with a wait command in its own io_uring (syncmem_prep_wait32,
 * io_uring_submit_and_wait), against blocking syncmem waits, measured in
 * the same run. Prints round trips per second.
 *
 * Usage: uring_pingpong [ROUND_TRIPS]; SYNCMEM_RING_FLAGS picks the rings'
 * setup flags (ringflags.h).
 */
#define _GNU_SOURCE
#include <liburing.h>
#include <unistd.h>

#include "pingpong.h"
#include "ringflags.h"
#include "syncmem.h"

#define ROUNDS 5

static struct syncmem_region *region;
static struct ring_variant variant[RING_VARIANTS_MAX];
static int var;			/* the variant in use */
static struct io_uring ring[RING_VARIANTS_MAX];
static pid_t ring_pid[RING_VARIANTS_MAX];

/* This process's ring of the current variant: a forked child makes its own. */
static struct io_uring *my_ring(void)
{
	if (ring_pid[var] != getpid()) {
		if (io_uring_queue_init(8, &ring[var], variant[var].flags)) {
			fprintf(stderr, "uring-pingpong: no io_uring\n");
			_exit(1);
		}
		ring_pid[var] = getpid();
	}
	return &ring[var];
}

static void ring_wait(_Atomic uint32_t *w, uint32_t cur)
{
	struct io_uring *r = my_ring();
	struct io_uring_cqe *cqe;

	syncmem_prep_wait32(io_uring_get_sqe(r), region, (uint32_t *)w, cur, SYNCMEM_FOREVER);
	if (io_uring_submit_and_wait(r, 1) < 0 || io_uring_wait_cqe(r, &cqe))
		_exit(1);
	if (cqe->res < 0) {
		fprintf(stderr, "uring-pingpong: %s\n", syncmem_strerror(cqe->res));
		_exit(1);
	}
	io_uring_cqe_seen(r, cqe);
}

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
	static const struct pp_ops rg = { ring_wait, sm_wake }, sm = { sm_wait, sm_wake };
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 10000;
	double a[RING_VARIANTS_MAX][ROUNDS], b[ROUNDS], bm;
	int err, variants = ring_variants("uring-pingpong", variant);
	char label[80];

	if (variants <= 0)
		return 1;
	err = syncmem_open(NULL, 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "uring-pingpong: %s\n", syncmem_strerror(err));
		return 1;
	}
	/* Warm up all, then alternate rounds so drift hits all alike. */
	for (var = 0; var < variants; var++)
		pingpong(&rg, &rg, syncmem_base(region), n / 10);
	pingpong(&sm, &sm, syncmem_base(region), n / 10);
	for (int i = 0; i < ROUNDS; i++) {
		for (var = 0; var < variants; var++)
			a[var][i] = pingpong(&rg, &rg, syncmem_base(region), n);
		b[i] = pingpong(&sm, &sm, syncmem_base(region), n);
	}
	ring_spread("blocking syncmem wait", "per s", b, ROUNDS);
	bm = bench_median(b, ROUNDS);
	for (var = 0; var < variants; var++) {
		const char *what = ring_label(label, sizeof(label),
					      "uring-pingpong round trips (median)",
					      &variant[var], variants);

		ring_spread(what, "per s", a[var], ROUNDS);
		bench_report(what, "per s", bench_median(a[var], ROUNDS),
			     "blocking syncmem wait", bm, 1);
	}
	syncmem_close(region);
	return 0;
}
