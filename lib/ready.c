// SPDX-License-Identifier: LGPL-2.1-or-later
/* The create-then-attach protocol of shared structures (see ready.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "internal.h"
#include "ready.h"

/* Did the builder @id die? Never for 0 (unknown) or a kernel that cannot say. */
static bool builder_dead(int fd, uint64_t id)
{
	return id && fd >= 0 && syncmem__owner_alive(fd, id) == 0;
}

int syncmem__ready_claim(uint32_t *state, uint64_t *builder)
{
	uint32_t expected = 0;
	uint64_t me, b;
	int fd, ret;

	if (!syncmem__writable(state))
		return -EBADF;
	me = syncmem__process_owner_any();
	if (__atomic_compare_exchange_n(state, &expected, SYNCMEM__INITIALISING, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(builder, me, __ATOMIC_RELAXED);
		return 0;
	}
	if (expected != SYNCMEM__INITIALISING || !me)
		return -EEXIST;
	/* Being built: by a builder that died? Then the build is ours. */
	b = __atomic_load_n(builder, __ATOMIC_RELAXED);
	fd = syncmem__device_open();
	ret = builder_dead(fd, b) &&
	      __atomic_compare_exchange_n(builder, &b, me, false, __ATOMIC_ACQ_REL,
					  __ATOMIC_RELAXED) ? 0 : -EEXIST;
	/*
	 * The builder may have published before it died: then it is built
	 * (and in use), not ours to build again. Dead, it publishes no more.
	 */
	if (!ret && __atomic_load_n(state, __ATOMIC_ACQUIRE) != SYNCMEM__INITIALISING)
		ret = -EEXIST;
	if (fd >= 0)
		close(fd);
	return ret;
}

void syncmem__ready_publish(uint32_t *state)
{
	/* Release: an attacher that sees READY (acquire) sees the build. */
	__atomic_store_n(state, SYNCMEM__READY, __ATOMIC_RELEASE);
}

int syncmem__ready_wait(const uint32_t *state, const uint64_t *builder, long max_ms)
{
	struct timespec nap = { 0, 100000 };	/* 100 us, doubling to 10 ms */
	long waited_ns = 0;
	int fd = -1, ret;
	bool opened = false;
	uint32_t s;

	while ((s = __atomic_load_n(state, __ATOMIC_ACQUIRE)) == SYNCMEM__INITIALISING) {
		/* Past the first naps: is the builder still alive? */
		if (waited_ns >= 1000000L) {
			if (!opened) {
				fd = syncmem__device_open();
				opened = true;
			}
			if (builder_dead(fd, __atomic_load_n(builder, __ATOMIC_RELAXED))) {
				/* Unless it published before it died. */
				if (__atomic_load_n(state, __ATOMIC_ACQUIRE) ==
				    SYNCMEM__INITIALISING) {
					ret = -ESRCH;
					goto out;
				}
				continue;
			}
		}
		if (waited_ns >= max_ms * 1000000L) {
			ret = -ETIMEDOUT;
			goto out;
		}
		nanosleep(&nap, NULL);
		waited_ns += nap.tv_nsec;
		if (nap.tv_nsec < 10000000)
			nap.tv_nsec *= 2;
	}
	ret = s == SYNCMEM__READY ? 0 : -EPROTO;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}
