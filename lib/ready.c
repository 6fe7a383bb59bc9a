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

/*
 * The builder word is claimed first, the state second: a creator that dies
 * between the two leaves a dead builder on a state still 0, which the next
 * init takes over like any other dead builder. A creator the kernel gives
 * no id (no module) claims the builder word as SYNCMEM_OWNER_NOBODY, which
 * is never taken for dead, so it races with the others all the same.
 */
int syncmem__ready_claim(uint32_t *state, uint64_t *builder)
{
	int64_t got = syncmem__process_owner_any();
	uint64_t me = got > 0 ? (uint64_t)got : SYNCMEM_OWNER_NOBODY, b = 0;
	bool took_over = false;
	uint32_t s;

	if (!syncmem__writable(state))
		return -EBADF;
	s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
	if (s != 0 && s != SYNCMEM__INITIALISING)
		return -EEXIST;
	if (!__atomic_compare_exchange_n(builder, &b, me, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* Somebody claimed it: a builder that died? Then the build is ours. */
		took_over = syncmem__owner_dead(b) == 1 &&
			    __atomic_compare_exchange_n(builder, &b, me, false, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED);
		if (!took_over)
			return -EEXIST;
	}
	/*
	 * The builder is us: the state is ours to move, from 0 (a first
	 * build, or a creator that died before it got here), or from INIT
	 * when we took the build over from a dead builder. INIT under a
	 * builder word we found 0 is a build we cannot tell the builder of
	 * (a library from before builders came first): not ours. READY means
	 * the builder published before it died: built and in use.
	 */
	s = 0;
	if (__atomic_compare_exchange_n(state, &s, SYNCMEM__INITIALISING, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
	    (s == SYNCMEM__INITIALISING && took_over))
		return 0;
	return -EEXIST;
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

	/*
	 * Being built: INIT, or 0 under a claimed builder word (a creator
	 * between its two claims). Zeroed memory is not a build at all.
	 */
	while ((s = __atomic_load_n(state, __ATOMIC_ACQUIRE)) == SYNCMEM__INITIALISING ||
	       (!s && __atomic_load_n(builder, __ATOMIC_RELAXED))) {
		/* Past the first naps: is the builder still alive? */
		if (waited_ns >= 1000000L) {
			if (!opened) {
				fd = syncmem__device_open();
				opened = true;
			}
			if (builder_dead(fd, __atomic_load_n(builder, __ATOMIC_RELAXED))) {
				/* Unless it published before it died. */
				if (__atomic_load_n(state, __ATOMIC_ACQUIRE) != SYNCMEM__READY) {
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
