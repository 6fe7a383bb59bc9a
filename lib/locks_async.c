// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Web Locks requests from an event loop: syncmem_locks_request_async() and
 * syncmem_locks_abort().
 *
 * An async request is the blocking request's state machine (locks.c)
 * driven by the loop: the fast path or syncmem__locks_begin() grants it or
 * queues its req; a queued req is waited for with an owner wait on its
 * word on behalf of the process, so that it keeps its place in the name's
 * one FIFO queue, among blocking requests, and a death named by its word
 * wakes it. Each wake-up repairs what a death left (syncmem__locks_woken())
 * and looks again; a grant ends it.
 *
 * Abort takes a pending req out of its queue under the cell's mutex (the
 * next request of the name is considered there and then) and wakes its
 * wait; that wait's completion, from the loop, reports -ECANCELED. A req
 * the manager granted already stays granted: abort says -ENOENT, and the
 * callback reports the grant. The loop keeps its pending requests under
 * their ids, so a loop aborts only its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include <linux/syncmem.h>

#include "locks.h"

struct locks_op {
	struct syncmem__job job;	/* in the loop's list while pending */
	struct syncmem_loop *loop;
	struct syncmem_locks *m;
	syncmem_held_cb cb;
	void *arg;
	struct syncmem_held *h;		/* a grant posted before the call returned */
	uint64_t expect;		/* the value its wait sleeps on */
	uint32_t req;
	uint32_t changed;		/* wake-ups that found nothing to do */
	bool aborted;			/* out of its queue: its wait's end says -ECANCELED */
};

static void op_step(void *arg, int result);

/* The outcome of a grant (1) as a callback's result. */
static int granted(bool died)
{
	return died ? -EOWNERDEAD : 0;
}

/* Run the callback with the outcome, once, and forget the request. */
static void op_finish(struct locks_op *op, int result, struct syncmem_held *h)
{
	syncmem__job_del(op->loop, &op->job);
	op->cb(op->arg, result, h);
	free(op);
}

/* Give the request up with @err: the grant if it came first, else @err. */
static void op_give_up(struct locks_op *op, int err)
{
	struct syncmem_held *h = NULL;
	bool died = false;
	int ret = syncmem__locks_give_up(op->m, op->req, err, &h, &died);

	if (ret == 1)
		op_finish(op, granted(died), h);
	else
		op_finish(op, ret, NULL);
}

/*
 * Look at the pending req: 1 granted (*@h, *@died), 0 its wait is queued,
 * or -errno (still pending: give it up).
 */
static int op_arm(struct locks_op *op, struct syncmem_held **h, bool *died)
{
	struct syncmem_locks *m = op->m;

	for (;;) {
		int ret = syncmem__locks_pending(m, op->req, &op->expect, h, died);
		int w;

		if (ret)
			return ret;
		w = syncmem__lock_wait_async(op->loop, m->r, &m->reqs[op->req].word, op->expect,
					     op_step, op);
		if (w == SYNCMEM_WAIT_QUEUED)
			return 0;
		if (w < 0)
			return w;
		/* Not queued: the word moved, or names a process that died. */
		if (syncmem__keeps_changing(SYNCMEM_WAIT_NOT_EQUAL, &op->changed))
			return -EUCLEAN;
		ret = syncmem__locks_woken(m, op->req, op->expect, w);
		if (ret)
			return ret;
	}
}

/* From the loop: the wait on the req's word ended with @result (raw). */
static void op_step(void *arg, int result)
{
	struct locks_op *op = arg;
	struct syncmem_held *h = NULL;
	bool died = false;
	int ret;

	if (op->aborted) {
		/* Out of the queue since the abort: the req is ours to drop. */
		syncmem__locks_drop(op->m, op->req);
		op_finish(op, -ECANCELED, NULL);
		return;
	}
	/* -ECANCELED: the loop is being freed (a grant that came first stands). */
	if (result < 0) {
		op_give_up(op, result);
		return;
	}
	/* Woken by deaths without end: the queue names processes that are not. */
	if (syncmem__keeps_changing(result == SYNCMEM_WAIT_WOKEN ? 0 : SYNCMEM_WAIT_NOT_EQUAL,
				    &op->changed)) {
		op_give_up(op, -EUCLEAN);
		return;
	}
	ret = syncmem__locks_woken(op->m, op->req, op->expect, result);
	if (!ret)
		ret = op_arm(op, &h, &died);
	if (ret == 1)
		op_finish(op, granted(died), h);
	else if (ret)
		op_give_up(op, ret);
}

/* Take the pending request out of its queue; its wait's end reports -ECANCELED. */
static int op_abort(struct syncmem__job *j)
{
	struct locks_op *op = (struct locks_op *)j;
	int ret;

	if (op->aborted)
		return -ENOENT;
	ret = syncmem__locks_cancel(op->m, op->req);
	if (!ret)
		op->aborted = true;
	return ret;
}

/* Posted: decided before request_async returned. */
static void op_posted(void *arg, int result)
{
	struct locks_op *op = arg;

	op->cb(op->arg, result, op->h);
	free(op);
}

int syncmem_locks_request_async(struct syncmem_loop *loop, struct syncmem_locks *m,
				const void *name, size_t len, unsigned flags,
				syncmem_held_cb cb, void *arg, uint64_t *id_out)
{
	struct syncmem_held *h = NULL;
	struct locks_ask a;
	struct locks_op *op;
	bool died = false;
	int64_t me;
	int ret;

	if (!cb)
		return -EINVAL;
	/* Before anything is taken: a loop being freed could not deliver it. */
	ret = syncmem__loop_check(loop);
	if (ret)
		return ret;
	ret = syncmem__locks_check(m, name, len, flags, &a);
	if (ret)
		return ret;
	me = syncmem__locks_me(m);
	if (me < 0)
		return (int)me;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct locks_op){ .loop = loop, .m = m, .cb = cb, .arg = arg };
	/* Its id first: nothing is taken that could not be tracked. */
	ret = syncmem__job_add(loop, &op->job, SYNCMEM__JOB_LOCKS, op_abort);
	if (ret) {
		free(op);
		return ret;
	}
	if (!(flags & SYNCMEM_LOCKS_STEAL))
		ret = syncmem__locks_fast(m, &a, &h);
	if (!ret)
		ret = syncmem__locks_begin(m, &a, flags & SYNCMEM_LOCKS_IF_AVAILABLE, &op->req,
					   &h, &died);
	if (!ret) {
		/* Queued: it waits from the loop, and may be aborted. */
		ret = op_arm(op, &h, &died);
		if (!ret) {
			if (id_out)
				*id_out = op->job.id;
			return 0;
		}
		if (ret < 0)
			ret = syncmem__locks_give_up(m, op->req, ret, &h, &died);
	}
	if (ret == 1)
		ret = granted(died);
	/* Decided at once (granted, -EBUSY, -ENOSPC...): reported from the loop. */
	syncmem__job_del(loop, &op->job);
	op->h = h;
	if (syncmem__loop_post(loop, op_posted, op, ret)) {
		if (h)
			syncmem_locks_release(h);
		free(op);
		return -ENOMEM;
	}
	if (id_out)
		*id_out = op->job.id;
	return 0;
}

int syncmem_locks_abort(struct syncmem_loop *loop, uint64_t id)
{
	struct syncmem__job *j;
	int ret = syncmem__loop_usable(loop);

	if (ret)
		return ret;
	j = syncmem__job_find(loop, id, SYNCMEM__JOB_LOCKS);
	return j ? j->abort(j) : -ENOENT;
}
