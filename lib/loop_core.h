/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event loop's insides: the loop, and the core (loop_core.c) that its
 * calls and eventfd path (loop.c) and its ring path (loop_uring.c) share.
 */
#ifndef SYNCMEM_LOOP_CORE_H
#define SYNCMEM_LOOP_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <liburing.h>
#include <linux/syncmem.h>

#include "idmap.h"
#include "internal.h"

#define LOOP_BATCH 64

/* A callback due with its result, queued without the kernel. */
struct loop_due {
	syncmem_wait_cb cb;
	void *arg;
	int result;
};

/* A CQE taken out of a full completion queue, not yet run. */
struct loop_cqe {
	uint64_t id;
	int res;
};

struct syncmem_loop {
	struct io_uring ring;
	bool uring;		/* the ring path (else the eventfd path: no ring) */
	/* Records read from the handle whose callbacks have not run: [rec_head, rec_count). */
	struct syncmem_completion recs[LOOP_BATCH];
	size_t rec_head, rec_count;
	uint64_t rec_owed;	/* ring path: records the eventfd counted, not read yet */
	struct loop_cqe *spill;	/* ring path: CQEs moved out of a full queue, FIFO */
	size_t spill_head, spill_count, spill_cap;
	int handle;		/* /dev/syncmem, O_NONBLOCK */
	int efd;		/* ring path: the kernel signals it; the ring reads it */
	int cancel_fd;		/* ring path: a region fd for cancel commands, or -1 */
	uint64_t efd_value;	/* target of the armed read */
	bool read_armed;
	size_t handle_waits;	/* pending entries whose completion is a record */
	uint64_t last_id;
	struct idmap pending;	/* wait id -> callback */
	struct idmap jobs;	/* job id -> its syncmem__job (abortable acquisitions) */
	uint32_t process;	/* syncmem__process_gen() of its maker */
	struct loop_due *due;	/* FIFO: [due_head, due_count) still to run */
	size_t due_head, due_count, due_cap;
	uint64_t due_queued;	/* callbacks ever queued in due, */
	uint64_t due_taken;	/* and ever taken off it */
	unsigned int depth;	/* syncmem_loop_run*() calls under way, nested */
	bool closing;		/* syncmem_loop_free() began: nothing new is queued */
	bool freeing;		/* syncmem_loop_free() is running the callbacks */
	bool free_deferred;	/* freed from a callback: the outermost run frees it */
	bool fd_given;		/* syncmem_loop_fd() was called: post through the kernel */
};

/* Track the callback of wait @id (room reserved); @ring: its end is a CQE. */
void syncmem__loop_pending_add(struct syncmem_loop *loop, uint64_t id, syncmem_wait_cb cb,
			       void *arg, bool raw, bool ring);

/*
 * Room for one more item in @items, which holds @count of *@cap items of
 * @size bytes: @items, or a larger copy (*@cap doubled, @first the first
 * time), or NULL (@items is left as it was).
 */
void *syncmem__loop_room(void *items, size_t count, size_t *cap, size_t size, size_t first);

/*
 * Must a run stop after the callback that just returned? When that
 * callback freed the loop, or forked and returned in the child (which
 * must not read the parent's records).
 */
bool syncmem__loop_stopped(const struct syncmem_loop *loop);

/* Run the callback of wait @id, ended with @result; false if it is not pending. */
bool syncmem__loop_run_one(struct syncmem_loop *loop, uint64_t id, int result);

/*
 * Run the callbacks of the handle's completion records: first those read
 * already (by a call this one runs inside), then as many as the handle
 * gives (on the ring path: as many as the eventfd counted). Each record is
 * taken off before its callback runs. The number run, or -errno when the
 * read failed before any ran.
 */
int syncmem__loop_dispatch(struct syncmem_loop *loop);

#endif
