// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem owner words: lock words whose value names their holder (an owner
 * id), as LOCK_WAIT and UNLOCK use them. UNLOCK hands the word to the
 * oldest owner waiter; a word whose holder died goes to its oldest live
 * waiter, marked SYNCMEM_OWNER_DIED, as soon as the death is known: each
 * death queues a walk of the regions whose owner words have waiters
 * (listed by queue.c), and each such region's scan settles its words.
 */
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "syncmem_core.h"
#include "syncmem_queue.h"

/* Where the scans of owner words run (syncmem_owner_words_scan()). */
static struct workqueue_struct *syncmem_scan_wq;

/*
 * Under no lock: the owner word at @offset may name a dead owner (or be
 * free) while waiters are queued. Give it to its oldest live waiter now,
 * taking out the gone waiters ahead of it a batch per hold of the lock.
 */
void syncmem_owner_word_settle(struct syncmem_region *r, u64 offset)
{
	struct syncmem_bucket *b = syncmem_bucket_of(r, offset);
	struct syncmem_wake wk;
	struct syncmem_queue *q, *dead;
	bool observed = false;
	int res;

	syncmem_wake_init(&wk);
	do {
		res = 0;
		dead = NULL;
		spin_lock(&b->lock);
		q = syncmem_queue_find(b, offset);
		if (q && q->owner_word) {
			res = syncmem_owner_word_resolve(r, q, &wk);
			if (res > 0)
				observed = !list_empty(&q->observers);
			dead = syncmem_queue_settle(r, q);
		}
		spin_unlock(&b->lock);
		syncmem_wake_flush(&wk);
		syncmem_queue_free(dead);
		if (res < 0)
			cond_resched();
	} while (res < 0);
	if (observed)
		syncmem_wake_observers(r, offset);
}

/* Owner words a scan looks up per hold of its region's owner lock. */
#define SYNCMEM_SCAN_CHUNK	64

/*
 * A region's scan: each owner word of it with waiters whose owner has died
 * (or that is free) goes to its oldest waiter. One pass looks at the
 * queues listed when it starts: a chunk at a time, each moved to the tail
 * as it is taken, so the pass ends when the head is one it took. The lock
 * is held for a chunk, never across the region's queues. Each region has
 * its own work item: a region with many owner words is scanned beside, not
 * in front of, the others. Holds a region reference, taken by whoever
 * queued it.
 */
static void syncmem_region_owner_scan(struct work_struct *work)
{
	struct syncmem_region *r = container_of(work, struct syncmem_region,
						owner_scan_work);
	u64 offsets[SYNCMEM_SCAN_CHUNK];
	struct syncmem_queue *q;
	unsigned int n, i;
	u8 pass;

	spin_lock(&r->owner_lock);
	pass = ++r->owner_scan_pass;
	spin_unlock(&r->owner_lock);
	do {
		n = 0;
		spin_lock(&r->owner_lock);
		while (n < SYNCMEM_SCAN_CHUNK && !list_empty(&r->owner_queues)) {
			q = list_first_entry(&r->owner_queues, struct syncmem_queue,
					     owner_node);
			if (q->scan_pass == pass)
				break;
			q->scan_pass = pass;
			list_move_tail(&q->owner_node, &r->owner_queues);
			offsets[n++] = q->offset;
		}
		spin_unlock(&r->owner_lock);
		for (i = 0; i < n; i++) {
			syncmem_owner_word_settle(r, offsets[i]);
			cond_resched();
		}
	} while (n == SYNCMEM_SCAN_CHUNK);
	syncmem_region_put(r);
}

/*
 * The walk that a death queues: it queues the scan of every region with
 * owner words waited on. The regions are taken a chunk per hold of the
 * lock and moved to the tail, as a region's scan takes its queues. One work
 * item for all, which only queues the regions' own; a death while it runs
 * queues it again.
 */
static void syncmem_owner_walk(struct work_struct *work)
{
	struct syncmem_region *batch[SYNCMEM_SCAN_CHUNK];
	struct syncmem_region *r;
	unsigned int n, i;
	u32 pass;

	spin_lock(&syncmem_owner_regions_lock);
	pass = ++syncmem_owner_walk_pass;
	spin_unlock(&syncmem_owner_regions_lock);
	do {
		n = 0;
		spin_lock(&syncmem_owner_regions_lock);
		while (n < SYNCMEM_SCAN_CHUNK && !list_empty(&syncmem_owner_regions)) {
			r = list_first_entry(&syncmem_owner_regions, struct syncmem_region,
					     owner_node);
			if (r->owner_walk_pass == pass)
				break;
			r->owner_walk_pass = pass;
			list_move_tail(&r->owner_node, &syncmem_owner_regions);
			/* A listed region has waiters, and they hold it. */
			if (kref_get_unless_zero(&r->ref))
				batch[n++] = r;
		}
		spin_unlock(&syncmem_owner_regions_lock);
		for (i = 0; i < n; i++) {
			/* Its reference goes to the scan, unless one is queued. */
			if (!queue_work(syncmem_scan_wq, &batch[i]->owner_scan_work))
				syncmem_region_put(batch[i]);
		}
		cond_resched();
	} while (n == SYNCMEM_SCAN_CHUNK);
}

static DECLARE_WORK(syncmem_owner_walk_work, syncmem_owner_walk);

/**
 * syncmem_owner_words_scan - after a death, look at every owner word waited on
 *
 * Each owner word with waiters whose owner has died (or that is free) goes
 * to its oldest waiter, soon: queues the walk above and returns. A scan
 * queued or running when the owner's id was dropped runs again after.
 * With no owner word waited on, nothing is queued: a queue listed after
 * this look (under the lock it is listed under) finds the id dropped.
 */
void syncmem_owner_words_scan(void)
{
	bool any;

	spin_lock(&syncmem_owner_regions_lock);
	any = !list_empty(&syncmem_owner_regions);
	spin_unlock(&syncmem_owner_regions_lock);
	if (any)
		queue_work(syncmem_scan_wq, &syncmem_owner_walk_work);
}

/*
 * Under the lock, before anything is claimed: the holder releases the word.
 * Hand it to the oldest owner waiter (with SYNCMEM_UNLOCK_HANDOFF, or if it
 * is only ever handed its word), or free it and wake the oldest waiter, or
 * free it for good when nobody waits. A waiter woken that is no owner
 * waiter (a plain wait on the word) will not take it: when others wait
 * behind it, the word is settled after (@op->settle), so that the next
 * one gets it instead of staying queued on a free word.
 */
static long syncmem_unlock_decide(struct syncmem_region *r,
				  struct syncmem_queue *q,
				  struct syncmem_wake_op *op)
{
	const struct syncmem_unlock *arg = op->arg;
	struct syncmem_waiter *w = syncmem_decide_first(r, q, op);
	u64 v = syncmem_word_read(r, arg->offset, 8), nv;
	long ret;

	syncmem_assert_word_locked(r, op->offset);
	if (op->again)
		return 0;
	if ((v | SYNCMEM_OWNER_WAITERS) != (arg->expected | SYNCMEM_OWNER_WAITERS))
		return -EAGAIN;
	if (!w) {
		nv = 0;
		ret = SYNCMEM_UNLOCK_FREED;
	} else if (w->owner && ((arg->flags & SYNCMEM_UNLOCK_HANDOFF) || w->ops->handed_only)) {
		nv = w->owner | syncmem_owner_waiters_bit(r, q, w, op->wk);
		ret = SYNCMEM_UNLOCK_HANDED;
		op->state = SYNCMEM_W_HANDED_OFF;
	} else {
		nv = SYNCMEM_OWNER_WAITERS;
		ret = SYNCMEM_UNLOCK_WOKE;
	}
	/* A waiter may set the waiters bit meanwhile: the caller retries. */
	if (!syncmem_word_cmpxchg(r, arg->offset, 8, v, nv))
		return -EAGAIN;
	op->target = w;
	op->observers = true;	/* the word changed */
	if (ret == SYNCMEM_UNLOCK_WOKE && !w->owner && !list_is_singular(&q->waiters))
		op->settle = true;
	return ret;
}

long syncmem_ioctl_unlock(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_unlock arg;
	struct syncmem_wake_op op = {
		.state = SYNCMEM_W_WOKEN,
		.decide = syncmem_unlock_decide,
		.arg = &arg,
	};
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SYNCMEM_UNLOCK_FLAGS) || arg.pad)
		return -EINVAL;
	ret = syncmem_word_check(r, arg.offset, 8, 0);
	if (ret)
		return ret;
	op.offset = arg.offset;
	ret = syncmem_wake_word(r, &op);
	if (op.settle)
		syncmem_owner_word_settle(r, arg.offset);
	return ret;
}

/* A wake-up that reached nobody: the word's heir, if it has one, gets it. */
static long syncmem_owner_poke_decide(struct syncmem_region *r,
				      struct syncmem_queue *q,
				      struct syncmem_wake_op *op)
{
	struct syncmem_waiter *w;
	int state;

	syncmem_assert_word_locked(r, op->offset);
	w = syncmem_owner_word_pass(r, q, op->offset, &state, op->wk);
	if (IS_ERR(w))
		op->again = true;
	if (IS_ERR_OR_NULL(w))
		return 0;
	op->target = w;
	op->state = state;
	op->observers = true;	/* the word may have changed */
	return 1;
}

/*
 * The word names @arg's owner, who will never take it up: pass it on as
 * UNLOCK's hand-off would, keeping SYNCMEM_OWNER_DIED (the state it guards
 * is still unrepaired). With nobody to take it, a word that is not dirty is
 * freed; a dirty one is left to SYNCMEM_OWNER_GONE, so that its next taker
 * is told.
 */
static long syncmem_owner_give_up_decide(struct syncmem_region *r,
					 struct syncmem_queue *q,
					 struct syncmem_wake_op *op)
{
	const u64 *owner = op->arg;
	u64 v = syncmem_word_read(r, op->offset, 8), nv;
	u64 died = v & SYNCMEM_OWNER_DIED;
	struct syncmem_waiter *w;

	syncmem_assert_word_locked(r, op->offset);
	if ((v & SYNCMEM_OWNER_ID) != *owner)
		return 0;
	w = syncmem_decide_first(r, q, op);
	if (op->again)
		return 0;
	if (w && w->owner) {
		nv = w->owner | died | syncmem_owner_waiters_bit(r, q, w, op->wk);
		op->state = died ? SYNCMEM_W_OWNER_DIED : SYNCMEM_W_HANDED_OFF;
	} else {
		nv = (died ? SYNCMEM_OWNER_GONE | died : 0) |
		     (w || (q && !list_empty(&q->observers)) ? SYNCMEM_OWNER_WAITERS : 0);
	}
	if (!syncmem_word_cmpxchg(r, op->offset, 8, v, nv))
		return 0;	/* somebody wrote it: theirs now */
	op->target = w;
	op->observers = true;	/* the word changed */
	return 1;
}

/**
 * syncmem_owner_word_pass_on - an owner waiter's claim nobody takes up
 * @r:		The region of the word (a reference is held by the caller).
 * @offset:	The word.
 * @owner:	The id the waiter waited as.
 * @result:	What it was claimed with: SYNCMEM_WAIT_WOKEN (the word goes to
 *		its heir, if it has one) or a hand-off (the word, still naming
 *		@owner, is given up as UNLOCK would).
 */
void syncmem_owner_word_pass_on(struct syncmem_region *r, u64 offset, const u64 *owner,
				int result)
{
	struct syncmem_wake_op op = {
		.offset = offset,
		.state = SYNCMEM_W_WOKEN,
		.arg = owner,
		.decide = result == SYNCMEM_WAIT_WOKEN ? syncmem_owner_poke_decide :
			  syncmem_owner_give_up_decide,
	};

	syncmem_wake_word(r, &op);
}

/* A new region: no owner word of it has waiters yet. */
void syncmem_region_owner_init(struct syncmem_region *r)
{
	INIT_WORK(&r->owner_scan_work, syncmem_region_owner_scan);
}

int syncmem_lockword_init(void)
{
	syncmem_scan_wq = alloc_workqueue("syncmem_scan", WQ_UNBOUND, 0);
	return syncmem_scan_wq ? 0 : -ENOMEM;
}

/* No region is left, so no region's scan either; the walk may still run. */
void syncmem_lockword_exit(void)
{
	if (syncmem_scan_wq)
		destroy_workqueue(syncmem_scan_wq);
}
