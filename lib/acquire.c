// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The blocking and event-loop drivers shared by the gate and the semaphore.
 * Both loop on: try to take the object; else sleep on its word expecting the
 * value try() saw. A hand-off (the kernel's HANDOFF picking this waiter)
 * means the object was given to us and the word left as it was; a plain
 * wake-up or a changed word means: try again. For an owner word (a held
 * gate) the waits are LOCK_WAITs, and the kernel may also give the object
 * to a waiter because its holder died (SYNCMEM_WAIT_OWNER_DIED:
 * -EOWNERDEAD). A word that keeps changing between try() and the wait
 * (SYNCMEM__RETRY_MAX times in one call) is being written by something
 * else: -EUCLEAN.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include <linux/syncmem.h>

#include "acquire.h"

/* Posted results: the object was taken before the async call returned. */
#define ACQ_TAKEN	0x100
#define ACQ_TAKEN_DEAD	0x101	/* after a dead holder */

/* One blocking wait of @a on @expected. */
static int acquire_wait(struct syncmem_region *r, struct syncmem__acq *a,
			uint64_t expected, uint64_t deadline)
{
	if (a->owner)
		return syncmem__lock_wait(r, a->word, expected, a->owner, deadline, 0);
	return syncmem__wait_until(r, a->word, a->width, expected, deadline);
}

/* What the wait gave: 0 the object, -EOWNERDEAD it after a dead holder. */
static int acquire_given(struct syncmem__acq *a, int result)
{
	a->ops->handed(a);
	return result == SYNCMEM_WAIT_OWNER_DIED ? -EOWNERDEAD : 0;
}

static bool acquire_is_given(int result)
{
	return result == SYNCMEM_WAIT_HANDED_OFF || result == SYNCMEM_WAIT_OWNER_DIED;
}

int syncmem__acquire(struct syncmem_region *r, struct syncmem__acq *a, int64_t timeout_ns)
{
	uint64_t deadline = syncmem__deadline(timeout_ns);
	uint32_t changed = 0;
	uint64_t expected;
	int ret;

	for (;;) {
		ret = a->ops->try(a, &expected);
		if (ret)
			return ret > 0 ? 0 : ret;
		/* A try still asks whether an owner word's holder is alive. */
		if (!timeout_ns && !a->owner)
			return -ETIMEDOUT;
		ret = acquire_wait(r, a, expected, deadline);
		if (acquire_is_given(ret))
			return acquire_given(a, ret);
		if (syncmem__keeps_changing(ret, &changed))
			ret = -EUCLEAN;
		if (ret == SYNCMEM_WAIT_TIMED_OUT || ret < 0)
			return ret < 0 ? ret : -ETIMEDOUT;
		/* Woken or not equal: look again. */
	}
}

struct acquire_op {
	struct syncmem__job job;	/* abortable while its wait is queued (id 0: never) */
	struct syncmem__acq a;
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	syncmem_wait_cb cb;
	void *arg;
	uint64_t deadline;	/* absolute, or SYNCMEM_NO_DEADLINE */
	uint64_t kid;		/* the id of its queued kernel wait */
	bool aborted;		/* its callback reports -ECANCELED */
};

static void acquire_finish(struct acquire_op *op, int result)
{
	syncmem_wait_cb cb = op->cb;
	void *arg = op->arg;

	if (op->job.id)
		syncmem__job_del(op->loop, &op->job);
	free(op);
	cb(arg, result);
}

static void acquire_step(void *arg, int result);

/*
 * Take it or queue an async wait: 1 taken, 2 taken after a dead holder,
 * 0 queued, or a negative errno.
 */
static int acquire_try(struct acquire_op *op)
{
	uint32_t changed = 0;
	uint64_t expected;
	int ret;

	for (;;) {
		ret = op->a.ops->try(&op->a, &expected);
		if (ret)
			return ret;
		if (op->a.owner)
			ret = syncmem__lock_wait_async_until(op->loop, op->r, op->a.word, expected,
							     op->deadline, acquire_step, op,
							     &op->kid);
		else
			ret = syncmem__wait_async_until(op->loop, op->r, op->a.word, op->a.width,
							expected, op->deadline, true, acquire_step,
							op, &op->kid);
		if (ret == SYNCMEM_WAIT_QUEUED)
			return 0;
		if (ret == SYNCMEM_WAIT_OWNER_DIED)
			return acquire_given(&op->a, ret) ? 2 : 1;
		if (ret == SYNCMEM_WAIT_TIMED_OUT)
			return -ETIMEDOUT;
		if (syncmem__keeps_changing(ret, &changed))
			ret = -EUCLEAN;
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			return ret < 0 ? ret : -EIO;
	}
}

static void acquire_step(void *arg, int result)
{
	struct acquire_op *op = arg;
	int ret;

	if (result == ACQ_TAKEN || result == ACQ_TAKEN_DEAD) {
		acquire_finish(op, result == ACQ_TAKEN ? 0 : -EOWNERDEAD);
		return;
	}
	if (op->aborted) {
		/* What the kernel gave it meanwhile goes on to the next waiter. */
		if (acquire_is_given(result)) {
			acquire_given(&op->a, result);
			op->a.ops->give_back(op->r, &op->a);
		} else if (result == SYNCMEM_WAIT_WOKEN) {
			/* Its wake-up meant: look again. Another waiter does. */
			syncmem_notify(op->r, op->a.word, 1);
		}
		acquire_finish(op, -ECANCELED);
		return;
	}
	if (acquire_is_given(result)) {
		acquire_finish(op, acquire_given(&op->a, result));
		return;
	}
	if (result == SYNCMEM_WAIT_TIMED_OUT)
		result = -ETIMEDOUT;
	if (result < 0) {
		acquire_finish(op, result);
		return;
	}
	ret = acquire_try(op);
	if (ret)
		acquire_finish(op, ret == 2 ? -EOWNERDEAD : ret > 0 ? 0 : ret);
}

/* While its wait is queued: cancel it; what the wait got goes on (acquire_step()). */
static int acquire_abort(struct syncmem__job *j)
{
	struct acquire_op *op = (struct acquire_op *)j;

	if (op->aborted)
		return -ENOENT;
	op->aborted = true;
	/* -ENOENT: its completion is on its way, and sees the mark. */
	syncmem__loop_cancel(op->loop, op->kid);
	return 0;
}

int syncmem__acquire_async(struct syncmem_loop *loop, struct syncmem_region *r,
			   const struct syncmem__acq *a, int64_t timeout_ns, syncmem_wait_cb cb,
			   void *arg, uint64_t *id_out)
{
	struct acquire_op *op;
	int ret;

	if (!loop || !cb)
		return -EINVAL;
	/* Before anything is taken: a loop being freed could not deliver it. */
	ret = syncmem__loop_check(loop);
	if (ret)
		return ret;
	op = malloc(sizeof(*op));
	if (!op)
		return -ENOMEM;
	*op = (struct acquire_op){ .a = *a, .loop = loop, .r = r, .cb = cb, .arg = arg,
				   .deadline = syncmem__deadline(timeout_ns) };
	if (id_out) {
		/* An id first: nothing is taken that could not be aborted. */
		ret = syncmem__job_add(loop, &op->job, SYNCMEM__JOB_ACQUIRE, acquire_abort);
		if (ret) {
			free(op);
			return ret;
		}
	}
	ret = acquire_try(op);
	if (ret > 0) {
		/* Taken at once; the callback still runs from the loop. */
		if (op->job.id) {
			*id_out = op->job.id;
			syncmem__job_del(loop, &op->job);
			op->job.id = 0;
		}
		ret = syncmem__loop_post(loop, acquire_step, op,
					 ret == 2 ? ACQ_TAKEN_DEAD : ACQ_TAKEN);
		if (!ret)
			return 0;
		/* Could not post: the caller gets the error, we give it back. */
		op->a.ops->give_back(r, &op->a);
		free(op);
		return ret;
	}
	if (ret < 0) {
		if (op->job.id)
			syncmem__job_del(loop, &op->job);
		free(op);
		return ret;
	}
	if (op->job.id)
		*id_out = op->job.id;
	return 0;
}
