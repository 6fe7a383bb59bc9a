/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The event loop's ring path (loop_uring.c), for the loop's calls (loop.c). */
#ifndef SYNCMEM_LOOP_URING_H
#define SYNCMEM_LOOP_URING_H

#include <stdint.h>

#include "loop_core.h"

/*
 * Take the ring path, unless SYNCMEM_LOOP=eventfd, io_uring or the module
 * lacks it (loop->uring says which): 0, or -ENOMEM.
 */
int syncmem__ring_init(struct syncmem_loop *loop);
/* Let go of the ring path's ring, fds and memory. */
void syncmem__ring_exit(struct syncmem_loop *loop);

/*
 * Make completion records show in the ring while waits on the handle are
 * pending: 0 or -errno.
 */
int syncmem__ring_arm(struct syncmem_loop *loop);

/* syncmem_loop_fd() was called: make the ring's fd readable for what is in. */
void syncmem__ring_fd_given(struct syncmem_loop *loop);

/*
 * Run the callbacks whose completions are in: spilled CQEs, the ring's,
 * and the records the eventfd counted. Each is taken off before its
 * callback runs. The number run, or -errno.
 */
int syncmem__ring_reap(struct syncmem_loop *loop);

/*
 * Wait until a completion may be in, for at most @left_ns (negative: no
 * limit): 0, -ETIME when the time ran out, or -errno.
 */
int syncmem__ring_wait_some(struct syncmem_loop *loop, int64_t left_ns);

/*
 * Queue the wait as a command of the loop's ring, under @id, ending after
 * @timeout_ns (negative: no limit). SYNCMEM_WAIT_QUEUED, or the result of
 * a wait that ended before the submit returned without being queued (no
 * callback).
 */
int syncmem__ring_wait(struct syncmem_loop *loop, struct syncmem_region *r, const void *addr,
		       uint32_t width, uint64_t expected, int64_t timeout_ns, uint64_t id);

/* Cancel the ring wait @id: 0 (it ends with -ECANCELED), -ENOENT, or -errno. */
int syncmem__ring_cancel(struct syncmem_loop *loop, uint64_t id);

/*
 * Free: cancel every ring wait still pending. Successful cancels post no
 * CQE of their own; the waits' CQEs are run as they come.
 */
void syncmem__ring_cancel_all(struct syncmem_loop *loop);

#endif
