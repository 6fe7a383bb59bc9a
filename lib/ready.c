// SPDX-License-Identifier: LGPL-2.1-or-later
/* The create-then-attach protocol of shared structures (see ready.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <time.h>

#include "internal.h"
#include "ready.h"

int syncmem__ready_claim(uint32_t *state)
{
	uint32_t expected = 0;

	if (!syncmem__writable(state))
		return -EBADF;
	return __atomic_compare_exchange_n(state, &expected, SYNCMEM__INITIALISING, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ? 0 : -EEXIST;
}

void syncmem__ready_publish(uint32_t *state)
{
	/* Release: an attacher that sees READY (acquire) sees the build. */
	__atomic_store_n(state, SYNCMEM__READY, __ATOMIC_RELEASE);
}

int syncmem__ready_wait(const uint32_t *state, long max_ms)
{
	struct timespec nap = { 0, 100000 };	/* 100 us, doubling to 10 ms */
	long waited_ns = 0;
	uint32_t s;

	while ((s = __atomic_load_n(state, __ATOMIC_ACQUIRE)) == SYNCMEM__INITIALISING) {
		if (waited_ns >= max_ms * 1000000L)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
		waited_ns += nap.tv_nsec;
		if (nap.tv_nsec < 10000000)
			nap.tv_nsec *= 2;
	}
	return s == SYNCMEM__READY ? 0 : -EPROTO;
}
