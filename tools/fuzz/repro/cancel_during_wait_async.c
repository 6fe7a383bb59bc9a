// SPDX-License-Identifier: GPL-2.0
/*
 * Reproducer: CANCEL racing WAIT_ASYNC of the same user_data on one handle.
 *
 * WAIT_ASYNC publishes its waiter in the handle's pending table before the
 * waiter is queued on the word (its queue pointer is still NULL); a CANCEL
 * from another thread of the same handle that finds it there claims it
 * through that NULL queue pointer: a NULL pointer dereference in
 * syncmem_waiter_claim(), from an unprivileged caller. The word never
 * matches, so every WAIT_ASYNC leaves the pending table again at once and
 * the window opens and closes as fast as one thread can loop.
 *
 * Found by tools/fuzz (seed 0x1 on the stock kernel, within a second).
 * Exits 0 when the kernel survived SECONDS (default 20) of it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

static int handle, region;
static volatile int stop;

static void *canceller(void *arg)
{
	struct syncmem_cancel one = { .user_data = 1 };
	struct syncmem_cancel all = { .flags = SYNCMEM_CANCEL_ALL };

	(void)arg;
	while (!stop) {
		ioctl(handle, SYNCMEM_IOC_CANCEL, &one);
		ioctl(handle, SYNCMEM_IOC_CANCEL, &all);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct syncmem_region_open ro = { .size = 4096 };
	struct syncmem_wait_async w = {
		.size = 4, .expected = 1,	/* the word is 0: never queued */
		.deadline_ns = SYNCMEM_NO_DEADLINE, .user_data = 1,
	};
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 20);
	unsigned long rounds = 0;
	pthread_t t;

	handle = open("/dev/syncmem", O_RDWR | O_CLOEXEC);
	if (handle < 0) {
		perror("/dev/syncmem");
		return 2;
	}
	region = ioctl(handle, SYNCMEM_IOC_REGION_OPEN, &ro);
	if (region < 0) {
		perror("REGION_OPEN");
		return 2;
	}
	w.region_fd = region;
	pthread_create(&t, NULL, canceller, NULL);
	while (time(NULL) < end) {
		for (int i = 0; i < 1000; i++)
			if (ioctl(handle, SYNCMEM_IOC_WAIT_ASYNC, &w) != SYNCMEM_WAIT_NOT_EQUAL) {
				fprintf(stderr, "WAIT_ASYNC: expected NOT_EQUAL, got %s\n",
					errno ? "an error" : "another result");
				return 1;
			}
		rounds += 1000;
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("survived %lu WAIT_ASYNC calls raced by CANCEL\n", rounds);
	return 0;
}
