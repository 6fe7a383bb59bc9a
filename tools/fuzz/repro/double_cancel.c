// SPDX-License-Identifier: GPL-2.0
/*
 * Reproducer: two CANCELs of one pending async wait at the same time.
 *
 * Both find the wait in the handle's pending table and take a reference;
 * the first claims it (state CANCELLED) and completes it. The second's
 * syncmem_waiter_claim() finds the state no longer QUEUED and returns it,
 * CANCELLED, which syncmem_async_cancel_one() takes for its own successful
 * claim: it completes the wait a second time. The record is queued twice
 * (two -ECANCELED records for one wait, both CANCELs return 0), or the
 * second list_del_init() meets a node read() already list_del()ed: "list_del
 * corruption ... LIST_POISON1", kernel BUG at lib/list_debug.c, from an
 * unprivileged caller; the owner's reference is dropped twice.
 *
 * Found by tools/fuzz on the PREEMPT_RT kernel (seed 0x27, 120 s), with the
 * CANCEL/WAIT_ASYNC oops patched out locally. Exits 0 when every wait got
 * exactly one record and one CANCEL succeeded for SECONDS (default 20).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

static int handle;
static atomic_int round_no, done_no;
static atomic_long second_result;

static long cancel(void)
{
	struct syncmem_cancel c = { .user_data = 7 };

	return ioctl(handle, SYNCMEM_IOC_CANCEL, &c) ? -errno : 0;
}

/* The second canceller: waits for each round to start, then cancels. */
static void *canceller(void *arg)
{
	(void)arg;
	for (int seen = 0;;) {
		while (atomic_load(&round_no) == seen)
			;
		seen = atomic_load(&round_no);
		if (seen < 0)
			return NULL;
		atomic_store(&second_result, cancel());
		atomic_store(&done_no, seen);
	}
}

int main(int argc, char **argv)
{
	struct syncmem_region_open ro = { .size = 4096 };
	struct syncmem_wait_async w = {
		.size = 4, .expected = 0, .deadline_ns = SYNCMEM_NO_DEADLINE, .user_data = 7,
	};
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 20);
	struct syncmem_completion recs[4];
	unsigned long rounds = 0;
	pthread_t t;

	handle = open("/dev/syncmem", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	w.region_fd = ioctl(handle, SYNCMEM_IOC_REGION_OPEN, &ro);
	if (handle < 0 || w.region_fd < 0) {
		perror("syncmem");
		return 2;
	}
	pthread_create(&t, NULL, canceller, NULL);
	for (int r = 1; time(NULL) < end; r++, rounds++) {
		long mine, theirs;
		ssize_t n;

		if (ioctl(handle, SYNCMEM_IOC_WAIT_ASYNC, &w) != SYNCMEM_WAIT_QUEUED) {
			perror("WAIT_ASYNC");
			return 2;
		}
		atomic_store(&round_no, r);	/* both cancel now */
		mine = cancel();
		while (atomic_load(&done_no) != r)
			;
		theirs = atomic_load(&second_result);
		n = read(handle, recs, sizeof(recs));
		if (!((mine == 0) ^ (theirs == 0)) || n != (ssize_t)sizeof(recs[0]) ||
		    recs[0].result != -ECANCELED) {
			printf("round %d: CANCELs returned %ld and %ld, read() returned %zd bytes (one -ECANCELED record expected)\n",
			       r, mine, theirs, n);
			return 1;
		}
	}
	atomic_store(&round_no, -1);
	pthread_join(t, NULL);
	printf("%lu waits cancelled twice at once, each completed once\n", rounds);
	return 0;
}
