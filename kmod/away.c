// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem away waiters: a blocked wait keeps its place in its queue while
 * its thread runs a signal handler, is stopped (SIGSTOP, ptrace) or frozen.
 *
 * A signal ends the sleep of a WAIT or LOCK_WAIT, and the call has to go
 * back to user space for the handler to run or the stop or freeze to
 * happen; it returns -ERESTARTNOINTR, so the same call is made again
 * afterwards. Leaving the queue there and coming back at its tail would let
 * a steady stream of signals starve a waiter of a fair lock. Instead the
 * waiter moves off the stack into a heap copy that stays in the queue,
 * "away", and the restarted call takes it up again: same thread, region,
 * word and arguments. Meanwhile the waiter may be claimed as if it slept:
 * the claim is recorded and the restarted call returns it at once. So
 * grants follow arrival order, also past a waiter that is stopped (which
 * holds up those behind it exactly as long as it would if it were running).
 *
 * A thread has at most one waiter away. The waiter is cancelled, and
 * whatever it was given passed on as for a wait dropped unread, when
 *  - the thread makes any other wait (its handler waits, or it left the
 *    handler by longjmp and then waits again);
 *  - the thread exits: found by a check every SYNCMEM_AWAY_CHECK while any
 *    waiter is away, and at once when a process that holds owner ids exits
 *    (wakers pass over an exiting thread's waiter meanwhile);
 *  - the module is unloaded.
 * A handler that leaves by longjmp and never waits again leaves its waiter
 * queued until the thread exits; what it is given meanwhile is its own (a
 * lock handed to it is held by that thread), which is why a wait, like
 * pthread_mutex_lock(), must not be left by longjmp from a handler.
 *
 * Each away waiter is charged to the memory cgroup of its thread; a thread
 * has at most one, so they are bounded by the threads a user may run.
 */
#include <linux/hashtable.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "syncmem_core.h"

struct syncmem_away {
	struct syncmem_sync_waiter sw;	/* queued until claimed or cancelled */
	struct hlist_node node;		/* in syncmem_away_table, by @task */
	struct task_struct *task;	/* its thread; referenced */
	struct syncmem_region *r;	/* referenced */
	struct syncmem_wait arg;	/* the call that takes it up again */
};

/* How often to look for away waiters of threads that exited. */
#define SYNCMEM_AWAY_CHECK	(HZ / 10)

static DEFINE_HASHTABLE(syncmem_away_table, 6);
static DEFINE_SPINLOCK(syncmem_away_lock);	/* the table, syncmem_nr_away */
static unsigned long syncmem_nr_away;

static void syncmem_away_check(struct work_struct *work);
static DECLARE_DELAYED_WORK(syncmem_away_work, syncmem_away_check);

struct syncmem_sync_waiter *syncmem_away_waiter(struct syncmem_away *a)
{
	return &a->sw;
}

void syncmem_away_free(struct syncmem_away *a)
{
	put_task_struct(a->task);
	syncmem_region_put(a->r);
	kfree(a);
}

/* Out of the table: cancel the waiter, pass on what it got, free it. */
static void syncmem_away_end(struct syncmem_away *a)
{
	syncmem_waiter_abandon(a->r, a->arg.offset, &a->sw.w);
	syncmem_away_free(a);
}

/**
 * syncmem_away_gone - is @w the waiter of an exiting thread, away?
 * @w:	A blocked (not async) waiter, under its bucket lock.
 *
 * Such a waiter will never be taken up: wakers pass it over.
 */
bool syncmem_away_gone(const struct syncmem_waiter *w)
{
	const struct syncmem_sync_waiter *sw;
	const struct syncmem_away *a;

	sw = container_of(w, struct syncmem_sync_waiter, w);
	if (sw->task)
		return false;	/* asleep in its call */
	a = container_of(sw, struct syncmem_away, sw);
	return READ_ONCE(a->task->flags) & PF_EXITING;
}

static bool syncmem_away_matches(const struct syncmem_away *a,
				 struct syncmem_region *r,
				 const struct syncmem_wait *arg, bool observer,
				 u64 owner)
{
	return a->r == r && a->sw.w.observer == observer &&
	       a->sw.w.owner == owner && a->arg.offset == arg->offset &&
	       a->arg.expected == arg->expected &&
	       a->arg.deadline_ns == arg->deadline_ns &&
	       a->arg.size == arg->size && a->arg.flags == arg->flags;
}

/**
 * syncmem_away_take - the calling thread's waiter away, for its wait
 * @r:		The region of the wait the thread makes now.
 * @arg:	That wait.
 * @observer:	Made through a read-only region fd.
 * @owner:	The owner id it waits as (LOCK_WAIT), else 0.
 *
 * Returns the waiter away if this is the call it was left by (now out of
 * the table: the caller takes it up and frees it), else NULL, having
 * cancelled any other waiter the thread had away.
 */
struct syncmem_away *syncmem_away_take(struct syncmem_region *r,
				       const struct syncmem_wait *arg,
				       bool observer, u64 owner)
{
	struct syncmem_away *a;

	/* Our own entry, if any, was added by this thread: never missed. */
	if (!READ_ONCE(syncmem_nr_away))
		return NULL;
	spin_lock(&syncmem_away_lock);
	hash_for_each_possible(syncmem_away_table, a, node, (unsigned long)current) {
		if (a->task == current) {
			hash_del(&a->node);
			WRITE_ONCE(syncmem_nr_away, syncmem_nr_away - 1);
			break;
		}
	}
	spin_unlock(&syncmem_away_lock);
	if (!a)
		return NULL;
	if (syncmem_away_matches(a, r, arg, observer, owner))
		return a;
	syncmem_away_end(a);
	return NULL;
}

/**
 * syncmem_away_park - keep a signalled waiter queued while its thread is away
 * @r:		The region of its word.
 * @arg:	Its wait, as the restarted call will make it.
 * @sw:		The waiter, queued when the signal came.
 * @a:		NULL if @sw is on the stack, else the away waiter it is.
 *
 * Returns SYNCMEM_W_QUEUED: the waiter is away and in the table. Else it
 * was not parked: SYNCMEM_W_CANCELLED (no memory: the caller takes it out
 * of the queue), or the state it was claimed with meanwhile.
 */
int syncmem_away_park(struct syncmem_region *r, const struct syncmem_wait *arg,
		      struct syncmem_sync_waiter *sw, struct syncmem_away *a)
{
	int state;

	if (a) {
		state = syncmem_waiter_set_task(sw, NULL);
		if (state != SYNCMEM_W_QUEUED)
			return state;
	} else {
		a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT);
		if (!a)
			return SYNCMEM_W_CANCELLED;
		/* Set before it is queued: wakers look at its task. */
		a->task = get_task_struct(current);
		a->arg = *arg;
		kref_get(&r->ref);
		a->r = r;
		if (!syncmem_waiter_move(&sw->w, &a->sw)) {
			syncmem_away_free(a);
			/* Claimed under the bucket lock that the move took. */
			return READ_ONCE(sw->w.state);
		}
	}
	spin_lock(&syncmem_away_lock);
	hash_add(syncmem_away_table, &a->node, (unsigned long)current);
	WRITE_ONCE(syncmem_nr_away, syncmem_nr_away + 1);
	spin_unlock(&syncmem_away_lock);
	queue_delayed_work(system_wq, &syncmem_away_work, SYNCMEM_AWAY_CHECK);
	return SYNCMEM_W_QUEUED;
}

/*
 * Move to @ended the waiters away of exited threads (@all: every one);
 * return how many are left in the table.
 */
static unsigned long syncmem_away_collect(struct hlist_head *ended, bool all)
{
	struct syncmem_away *a;
	struct hlist_node *tmp;
	unsigned long left;
	int bkt;

	spin_lock(&syncmem_away_lock);
	hash_for_each_safe(syncmem_away_table, bkt, tmp, a, node) {
		if (!all && !(READ_ONCE(a->task->flags) & PF_EXITING))
			continue;
		hash_del(&a->node);
		WRITE_ONCE(syncmem_nr_away, syncmem_nr_away - 1);
		hlist_add_head(&a->node, ended);
	}
	left = syncmem_nr_away;
	spin_unlock(&syncmem_away_lock);
	return left;
}

static void syncmem_away_end_all(struct hlist_head *ended)
{
	struct syncmem_away *a;
	struct hlist_node *tmp;

	hlist_for_each_entry_safe(a, tmp, ended, node) {
		syncmem_away_end(a);
		cond_resched();
	}
}

/* Cancel the waiters away of threads that exited. */
static void syncmem_away_check(struct work_struct *work)
{
	HLIST_HEAD(ended);
	unsigned long left = syncmem_away_collect(&ended, false);

	syncmem_away_end_all(&ended);
	if (left)
		queue_delayed_work(system_wq, &syncmem_away_work,
				   SYNCMEM_AWAY_CHECK);
}

/* A process exited: look now rather than at the next check. */
void syncmem_away_poke(void)
{
	if (READ_ONCE(syncmem_nr_away))
		mod_delayed_work(system_wq, &syncmem_away_work, 0);
}

void syncmem_away_exit(void)
{
	HLIST_HEAD(ended);

	cancel_delayed_work_sync(&syncmem_away_work);
	syncmem_away_collect(&ended, true);
	syncmem_away_end_all(&ended);
}
