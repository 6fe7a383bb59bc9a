// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The event loop's core, under both of its paths: the table of pending
 * callbacks, running a callback when its wait ends, and reading the
 * completion records the kernel queues on the loop's handle (all of the
 * eventfd path's completions; the ring path's lock waits and posts).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <linux/syncmem.h>

#include "loop_core.h"

int syncmem__loop_usable(const struct syncmem_loop *loop)
{
	if (!loop)
		return -EINVAL;
	return loop->process == syncmem__process_gen() ? 0 : -EBADFD;
}

bool syncmem__loop_stopped(const struct syncmem_loop *loop)
{
	return (loop->closing && !loop->freeing) || syncmem__loop_usable(loop);
}

void syncmem__loop_pending_add(struct syncmem_loop *loop, uint64_t id, syncmem_wait_cb cb,
			       void *arg, bool raw, bool ring)
{
	struct idmap_entry e = { .id = id, .cb = cb, .arg = arg, .raw = raw, .ring = ring };

	syncmem__idmap_insert(&loop->pending, &e);
	if (!ring)
		loop->handle_waits++;
}

/* Take wait @id's entry into *@e: false if it is not pending. */
static bool pending_take(struct syncmem_loop *loop, uint64_t id, struct idmap_entry *e)
{
	if (!syncmem__idmap_remove(&loop->pending, id, e))
		return false;
	if (!e->ring)
		loop->handle_waits--;
	return true;
}

static int user_result(int result)
{
	switch (result) {
	case SYNCMEM_WAIT_WOKEN:
	case SYNCMEM_WAIT_HANDED_OFF:
		return SYNCMEM_OK;
	case SYNCMEM_WAIT_TIMED_OUT:
		return SYNCMEM_TIMED_OUT;
	default:
		return result;	/* -ECANCELED */
	}
}

bool syncmem__loop_run_one(struct syncmem_loop *loop, uint64_t id, int result)
{
	struct idmap_entry e;

	if (!pending_take(loop, id, &e))
		return false;	/* not ours, or already run with -ECANCELED by a free */
	e.cb(e.arg, e.raw ? result : user_result(result));
	return true;
}

int syncmem__loop_dispatch(struct syncmem_loop *loop)
{
	bool more = true;	/* the last read filled the buffer */
	int ran = 0;

	for (;;) {
		size_t want = LOOP_BATCH;
		ssize_t n;

		while (loop->rec_head < loop->rec_count) {
			struct syncmem_completion rec = loop->recs[loop->rec_head++];

			if (!syncmem__loop_run_one(loop, rec.user_data, rec.result))
				continue;
			ran++;
			if (syncmem__loop_stopped(loop))
				return ran;
		}
		if (loop->uring && !loop->closing) {
			if (!loop->rec_owed)
				return ran;
			if (loop->rec_owed < want)
				want = (size_t)loop->rec_owed;
		} else if (!more) {
			return ran;
		}
		n = read(loop->handle, loop->recs, want * sizeof(loop->recs[0]));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			loop->rec_owed = 0;
			return (errno == EAGAIN || ran) ? ran : -errno;
		}
		loop->rec_head = 0;
		loop->rec_count = (size_t)n / sizeof(loop->recs[0]);
		loop->rec_owed -= loop->rec_owed < loop->rec_count ? loop->rec_owed :
				  loop->rec_count;
		more = loop->rec_count == want;
	}
}

void *syncmem__loop_room(void *items, size_t count, size_t *cap, size_t size, size_t first)
{
	size_t n = *cap ? *cap * 2 : first;
	void *grown;

	if (count < *cap)
		return items;
	grown = reallocarray(items, n, size);
	if (grown)
		*cap = n;
	return grown;
}
