// SPDX-License-Identifier: GPL-2.0
/*
 * uring-pingpong: two processes bounce a value through two words, each
 * waiting with a wait command in its own io_uring (syncmem_prep_wait32,
 * io_uring_submit_and_wait), against blocking syncmem waits, measured in
 * the same run. Prints round trips per second.
 *
 * Two ring variants: "ring" wakes its peer with a syncmem_notify() call,
 * then enters the ring to wait (the system calls of the blocking side);
 * "notify+wait in one enter" queues a NOTIFY command (syncmem_prep_notify,
 * IOSQE_CQE_SKIP_SUCCESS) that the next wait's io_uring_enter() submits
 * with it.
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

/* A NOTIFY command, sent with this process's next wait (or flush). */
static void ring_wake_later(_Atomic uint32_t *w)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(my_ring());

	syncmem_prep_notify(sqe, region, (uint32_t *)w, 1);
	io_uring_sqe_set_data64(sqe, 0);
	io_uring_sqe_set_flags(sqe, IOSQE_CQE_SKIP_SUCCESS);	/* a CQE if it fails */
}

/* The NOTIFYs no wait sent: the peer answered before this side waited, or the end. */
static void ring_flush(void)
{
	if (io_uring_sq_ready(my_ring()) && io_uring_submit(my_ring()) < 0)
		_exit(1);
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
	static const struct pp_ops rg = { .wait = ring_wait, .wake = sm_wake },
		sm = { .wait = sm_wait, .wake = sm_wake },
		rb = { .wait = ring_wait, .wake = ring_wake_later, .flush = ring_flush };
	uint32_t n = argc > 1 ? (uint32_t)atoi(argv[1]) : 10000;
	double a[RING_VARIANTS_MAX][ROUNDS], c[RING_VARIANTS_MAX][ROUNDS], b[ROUNDS], bm;
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
	for (var = 0; var < variants; var++) {
		pingpong(&rg, &rg, syncmem_base(region), n / 10);
		pingpong(&rb, &rb, syncmem_base(region), n / 10);
	}
	pingpong(&sm, &sm, syncmem_base(region), n / 10);
	for (int i = 0; i < ROUNDS; i++) {
		for (var = 0; var < variants; var++) {
			a[var][i] = pingpong(&rg, &rg, syncmem_base(region), n);
			c[var][i] = pingpong(&rb, &rb, syncmem_base(region), n);
		}
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
		what = ring_label(label, sizeof(label),
				  "uring-pingpong notify+wait in one enter (median)",
				  &variant[var], variants);
		ring_spread(what, "per s", c[var], ROUNDS);
		bench_report(what, "per s", bench_median(c[var], ROUNDS),
			     "blocking syncmem wait", bm, 1);
	}
	syncmem_close(region);
	return 0;
}
