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
 *  - the thread makes any other WAIT or LOCK_WAIT, or one with bad
 *    arguments (its handler waits, or it left the handler by longjmp and
 *    then waits again);
 *  - the thread's process closes a region fd of the region (close(), dup2()
 *    over it, close-on-exec): the restarted call could not reach it. A
 *    waiter whose fd was closed before it went away does not go away
 *    (it leaves the queue), unless the same file is still installed at
 *    another fd of the process;
 *  - the thread execs or exits: the first waker that meets its waiter takes
 *    it out of its queue, and a check every SYNCMEM_AWAY_CHECK while any
 *    waiter is away (at once when a program that holds owner ids ends)
 *    cancels it;
 *  - the module is unloaded.
 * A handler that leaves by longjmp and never waits again leaves its waiter
 * queued until the thread exits; what it is given meanwhile is its own (a
 * lock handed to it is held by that thread), which is why a wait, like
 * pthread_mutex_lock(), must not be left by longjmp from a handler.
 *
 * Costs: while no waiter is away, one read of a counter per wait and per
 * region fd close. Else a wait looks its thread up without a lock (RCU), a
 * region fd close walks the waiters away on its region, the check every
 * waiter away (both SYNCMEM_AWAY_CHUNK per hold of the global lock), and
 * each is charged to the memory cgroup of its thread; a thread has at most
 * one.
 */
#include <linux/delay.h>
#include <linux/fdtable.h>
#include <linux/hashtable.h>
#include <linux/moduleparam.h>
#include <linux/rculist.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "syncmem_core.h"
#include "syncmem_queue.h"

struct syncmem_away {
	struct syncmem_sync_waiter sw;	/* queued until claimed or cancelled */
	struct hlist_node hash_node;	/* in syncmem_away_hash, by @task */
	struct list_head node;		/* in syncmem_away_list, or ended */
	struct list_head region_node;	/* in its region's away list */
	bool listed;			/* in all three; under syncmem_away_lock */
	u32 check_pass;			/* the check that looked at it last; same */
	u32 flush_pass;			/* its region's flush that did; same */
	struct task_struct *task;	/* its thread; referenced */
	u64 exec_id;			/* the program it ran */
	struct files_struct *files;	/* its fd table; compared only */
	struct syncmem_region *r;	/* referenced */
	struct syncmem_wait arg;	/* the call that takes it up again */
	struct rcu_head rcu;
};

/* How often to look for away waiters of threads that exited. */
#define SYNCMEM_AWAY_CHECK	(HZ / 10)

/* Waiters away the check looks at per hold of syncmem_away_lock. */
#define SYNCMEM_AWAY_CHUNK	64

static DEFINE_SPINLOCK(syncmem_away_lock);	/* hash and list changes, nr, dying */
static DEFINE_HASHTABLE(syncmem_away_hash, 10);	/* looked up under RCU */
static LIST_HEAD(syncmem_away_list);
static unsigned long syncmem_nr_away;
static u32 syncmem_away_pass;			/* of the check; under the lock */
static bool syncmem_away_dying;			/* the module is going */

static void syncmem_away_check(struct work_struct *work);
static DECLARE_DELAYED_WORK(syncmem_away_work, syncmem_away_check);

#ifdef SYNCMEM_TEST_HOOKS
/*
 * Test only (Documentation/syncmem/testing.rst): widen the window between
 * a waiter being listed away and its thread looking for its fd, so that a
 * test can close the fd there.
 */
static unsigned int syncmem_test_park_delay_ms;
module_param_named(test_away_park_delay_ms, syncmem_test_park_delay_ms, uint, 0600);
MODULE_PARM_DESC(test_away_park_delay_ms,
		 "Test only: ms a waiter going away sleeps once listed (default 0)");

static void syncmem_away_park_test_delay(void)
{
	unsigned int ms = READ_ONCE(syncmem_test_park_delay_ms);

	if (ms)
		msleep(ms);
}
#else
static inline void syncmem_away_park_test_delay(void)
{
}
#endif

struct syncmem_sync_waiter *syncmem_away_waiter(struct syncmem_away *a)
{
	return &a->sw;
}

/* Under syncmem_away_lock: (re)arm the check, unless the module is going. */
static void syncmem_away_arm(unsigned long delay)
{
	lockdep_assert_held(&syncmem_away_lock);
	if (syncmem_nr_away && !syncmem_away_dying)
		mod_delayed_work(system_wq, &syncmem_away_work, delay);
}

/* Under syncmem_away_lock: take @a out of the table; the caller owns it. */
static void syncmem_away_unlist(struct syncmem_away *a)
{
	lockdep_assert_held(&syncmem_away_lock);
	hash_del_rcu(&a->hash_node);
	list_del(&a->node);
	list_del(&a->region_node);
	a->listed = false;
	WRITE_ONCE(syncmem_nr_away, syncmem_nr_away - 1);
}

void syncmem_away_free(struct syncmem_away *a)
{
	put_task_struct(a->task);
	syncmem_region_put(a->r);
	kfree_rcu(a, rcu);	/* a lookup may still look at it */
}

/**
 * syncmem_away_end - cancel a waiter away, passing on what it got; free it
 * @a:	A waiter away, out of the table (NULL: nothing to do).
 */
void syncmem_away_end(struct syncmem_away *a)
{
	if (!a)
		return;
	syncmem_waiter_abandon(a->r, a->arg.offset, &a->sw.w);
	syncmem_away_free(a);
}

/* Has the thread of @a exited, or exec'd (it will never come back)? */
static bool syncmem_away_lost(const struct syncmem_away *a)
{
	return (READ_ONCE(a->task->flags) & PF_EXITING) ||
	       READ_ONCE(a->task->self_exec_id) != a->exec_id;
}

/**
 * syncmem_away_gone - is @w the waiter away of a thread that is gone?
 * @w:	A blocked (not async) waiter, under its bucket lock.
 *
 * Such a waiter will never be taken up: wakers pass it over.
 */
bool syncmem_away_gone(const struct syncmem_waiter *w)
{
	const struct syncmem_sync_waiter *sw;

	lockdep_assert_held(&w->b->lock);
	sw = container_of(w, struct syncmem_sync_waiter, w);
	if (sw->task)
		return false;	/* asleep in its call */
	return syncmem_away_lost(container_of(sw, struct syncmem_away, sw));
}

/* The thread of a waiter away (referenced while it is away). */
struct task_struct *syncmem_away_task(const struct syncmem_sync_waiter *sw)
{
	return container_of(sw, struct syncmem_away, sw)->task;
}

/*
 * The calling thread's waiter away, taken out of the table: the caller owns
 * it. NULL if it has none, or if another thread unlisted it first (a region
 * fd close, the check): that one owns it and may free it at once. Found
 * afresh, never through a pointer kept from before: nothing but the table
 * keeps a waiter away alive.
 */
static struct syncmem_away *syncmem_away_unlist_mine(void)
{
	struct task_struct *me = current;
	struct syncmem_away *a, *found = NULL;

	/* Our own entry, if any, was added by this thread: never missed. */
	if (!READ_ONCE(syncmem_nr_away))
		return NULL;
	rcu_read_lock();
	hash_for_each_possible_rcu(syncmem_away_hash, a, hash_node, (unsigned long)me) {
		if (a->task != me)
			continue;
		/* Not freed before rcu_read_unlock(); unlisted maybe. */
		spin_lock(&syncmem_away_lock);
		if (a->listed) {
			syncmem_away_unlist(a);
			found = a;
		}
		spin_unlock(&syncmem_away_lock);
		break;
	}
	rcu_read_unlock();
	return found;
}

/**
 * syncmem_away_take - the calling thread's waiter away, out of the table
 *
 * Returns NULL if it has none. The caller takes it up (syncmem_away_keep())
 * or ends it (syncmem_away_end()). One its thread has exec'd away from
 * (which wakers passed over) is ended here: it must never come back.
 */
struct syncmem_away *syncmem_away_take(void)
{
	struct syncmem_away *found = syncmem_away_unlist_mine();

	if (found && syncmem_away_lost(found)) {
		syncmem_away_end(found);
		found = NULL;
	}
	return found;
}

/**
 * syncmem_away_keep - is @a the waiter of this very call?
 * @a:		The calling thread's waiter away (NULL: none).
 * @r:		The region of the wait the thread makes now.
 * @arg:	That wait.
 * @observer:	Made through a read-only region fd.
 * @owner:	The owner id it waits as (LOCK_WAIT), else 0.
 *
 * Returns @a if the call is the one it was left by, restarted; else ends it
 * and returns NULL.
 */
struct syncmem_away *syncmem_away_keep(struct syncmem_away *a,
				       struct syncmem_region *r,
				       const struct syncmem_wait *arg,
				       bool observer, u64 owner)
{
	if (a && a->r == r && a->sw.w.observer == observer &&
	    a->sw.w.owner == owner && a->arg.offset == arg->offset &&
	    a->arg.expected == arg->expected &&
	    a->arg.deadline_ns == arg->deadline_ns &&
	    a->arg.size == arg->size && a->arg.flags == arg->flags)
		return a;
	syncmem_away_end(a);
	return NULL;
}

static int syncmem_fd_is(const void *file, struct file *f, unsigned int fd)
{
	return f == file;
}

/**
 * syncmem_waiter_move - put a heap copy in a queued waiter's place
 * @from:	A blocked waiter, queued when it began to sleep.
 * @to:		Its copy, taking its place and arrival number; away (no task).
 *
 * Returns true if @from was still queued and @to is now; false if it was
 * claimed first (its state says by what).
 */
bool syncmem_waiter_move(struct syncmem_waiter *from,
			 struct syncmem_sync_waiter *to)
{
	struct syncmem_bucket *b = from->b;
	bool moved;

	spin_lock(&b->lock);
	moved = from->state == SYNCMEM_W_QUEUED;
	if (moved) {
		to->w = *from;
		to->task = NULL;
		to->deadline = container_of(from, struct syncmem_sync_waiter, w)->deadline;
		list_replace(&from->node, &to->w.node);
	}
	spin_unlock(&b->lock);
	return moved;
}

/**
 * syncmem_waiter_set_task - a blocked waiter comes back, or goes away
 * @sw:		A waiter that was queued.
 * @task:	The task to wake when it is claimed, or NULL while away.
 *
 * Returns SYNCMEM_W_QUEUED if @sw is still queued (and now has @task), else
 * the state it was claimed with while away.
 */
int syncmem_waiter_set_task(struct syncmem_sync_waiter *sw,
			    struct task_struct *task)
{
	struct syncmem_bucket *b = sw->w.b;
	int state;

	spin_lock(&b->lock);
	state = sw->w.state;
	if (state == SYNCMEM_W_QUEUED)
		sw->task = task;
	spin_unlock(&b->lock);
	return state;
}

/**
 * syncmem_away_park - keep a signalled waiter queued while its thread is away
 * @r:		The region of its word.
 * @file:	The region file of the call.
 * @arg:	Its wait, as the restarted call will make it.
 * @swp:	The waiter, queued when the signal came; replaced by its heap
 *		copy if it was on the stack.
 * @ap:		NULL, or the away waiter *@swp is; set to the heap copy made.
 *
 * Returns true if the waiter is away: *@ap is no longer the caller's. Else
 * it was not parked (a claim came first, no memory, or the call's fd was
 * closed meanwhile, so no restart could come back): the caller still owns
 * *@swp (and *@ap), queued or claimed, as if it had not been called.
 */
bool syncmem_away_park(struct syncmem_region *r, struct file *file,
		       const struct syncmem_wait *arg, struct syncmem_sync_waiter **swp,
		       struct syncmem_away **ap)
{
	struct syncmem_away *a = *ap;

	if (a) {
		if (syncmem_waiter_set_task(&a->sw, NULL) != SYNCMEM_W_QUEUED)
			return false;
	} else {
		/* Failing is harmless: the waiter then goes to the tail. */
		a = kzalloc(sizeof(*a), GFP_KERNEL_ACCOUNT | __GFP_NORETRY |
					__GFP_NOWARN);
		if (!a)
			return false;
		/* Set before it is queued: wakers look at its thread. */
		a->task = get_task_struct(current);
		a->exec_id = current->self_exec_id;
		a->files = current->files;
		a->arg = *arg;
		kref_get(&r->ref);
		a->r = r;
		if (!syncmem_waiter_move(&(*swp)->w, &a->sw)) {
			syncmem_away_free(a);	/* claimed: the stack waiter says how */
			return false;
		}
		*swp = &a->sw;
		*ap = a;
	}
	spin_lock(&syncmem_away_lock);
	hash_add_rcu(syncmem_away_hash, &a->hash_node, (unsigned long)current);
	/* A check already under way need not look at a thread just here. */
	a->check_pass = syncmem_away_pass;
	/* Nor a flush: it finds the fd gone (below). */
	a->flush_pass = r->away_flush_pass;
	list_add_tail(&a->node, &syncmem_away_list);
	list_add_tail(&a->region_node, &r->away);
	a->listed = true;
	WRITE_ONCE(syncmem_nr_away, syncmem_nr_away + 1);
	if (!delayed_work_pending(&syncmem_away_work))
		syncmem_away_arm(SYNCMEM_AWAY_CHECK);
	spin_unlock(&syncmem_away_lock);
	/* Listed: no longer ours. The table's now, or whoever unlists it. */
	*ap = NULL;
	a = NULL;
	syncmem_away_park_test_delay();
	/*
	 * Listed first, then is the call's file still installed? A close
	 * takes the fd out of the table before its flush looks at the list:
	 * either we see the fd gone, or its flush sees this waiter.
	 */
	if (iterate_fd(current->files, 0, syncmem_fd_is, file))
		return true;
	/* Ours again if still listed; else the flush took it and ends it. */
	a = syncmem_away_unlist_mine();
	if (!a)
		return true;
	*ap = a;
	syncmem_waiter_set_task(&a->sw, current);	/* ours again */
	return false;
}

static void syncmem_away_end_all(struct list_head *ended)
{
	struct syncmem_away *a, *tmp;

	list_for_each_entry_safe(a, tmp, ended, node) {
		syncmem_away_end(a);
		cond_resched();
	}
}

/*
 * Cancel the waiters away of threads that exited or exec'd. One pass looks
 * at those listed when it starts, SYNCMEM_AWAY_CHUNK per hold of the lock:
 * each it keeps goes to the tail, so the pass ends when the head is one it
 * looked at (or the list is empty). The lock is never held across all of
 * them.
 */
static void syncmem_away_check(struct work_struct *work)
{
	struct syncmem_away *a;
	unsigned int n;
	LIST_HEAD(ended);
	bool done;
	u32 pass;

	spin_lock(&syncmem_away_lock);
	pass = ++syncmem_away_pass;
	spin_unlock(&syncmem_away_lock);
	do {
		spin_lock(&syncmem_away_lock);
		for (n = 0; n < SYNCMEM_AWAY_CHUNK; n++) {
			a = list_first_entry_or_null(&syncmem_away_list,
						     struct syncmem_away, node);
			if (!a || a->check_pass == pass)
				break;
			a->check_pass = pass;
			if (syncmem_away_lost(a)) {
				syncmem_away_unlist(a);
				list_add_tail(&a->node, &ended);
			} else {
				list_move_tail(&a->node, &syncmem_away_list);
			}
		}
		done = n < SYNCMEM_AWAY_CHUNK;
		if (done)
			syncmem_away_arm(SYNCMEM_AWAY_CHECK);
		spin_unlock(&syncmem_away_lock);
		syncmem_away_end_all(&ended);
		INIT_LIST_HEAD(&ended);
		cond_resched();
	} while (!done);
}

/* A process exited: look now rather than at the next check. */
void syncmem_away_poke(void)
{
	if (!READ_ONCE(syncmem_nr_away))
		return;
	spin_lock(&syncmem_away_lock);
	syncmem_away_arm(0);
	spin_unlock(&syncmem_away_lock);
}

/**
 * syncmem_away_flush - a region fd is closed by the process with @files
 * @r:		Its region.
 * @files:	The fd table it was closed in.
 *
 * A waiter away of that process on that region could not be taken up by a
 * restarted call through it: cancel it.
 */
void syncmem_away_flush(struct syncmem_region *r, struct files_struct *files)
{
	struct syncmem_away *a;
	unsigned int n;
	LIST_HEAD(ended);
	bool done;
	u32 pass;

	/*
	 * A waiter listed after this read, or after this flush's pass began,
	 * finds its fd gone (the close took it out of the table before this
	 * flush): syncmem_away_park().
	 */
	if (!READ_ONCE(syncmem_nr_away))
		return;
	/*
	 * The global lock is held for a chunk of the region's waiters away at
	 * a time, each kept one moved to the tail, as the check does; one
	 * flush of the region at a time, so that no other moves them.
	 */
	mutex_lock(&r->away_flush_mutex);
	spin_lock(&syncmem_away_lock);
	pass = ++r->away_flush_pass;
	spin_unlock(&syncmem_away_lock);
	do {
		spin_lock(&syncmem_away_lock);
		for (n = 0; n < SYNCMEM_AWAY_CHUNK; n++) {
			a = list_first_entry_or_null(&r->away, struct syncmem_away,
						     region_node);
			if (!a || a->flush_pass == pass)
				break;
			a->flush_pass = pass;
			if (a->files == files) {
				syncmem_away_unlist(a);
				list_add_tail(&a->node, &ended);
			} else {
				list_move_tail(&a->region_node, &r->away);
			}
		}
		done = n < SYNCMEM_AWAY_CHUNK;
		spin_unlock(&syncmem_away_lock);
		syncmem_away_end_all(&ended);
		INIT_LIST_HEAD(&ended);
		cond_resched();
	} while (!done);
	mutex_unlock(&r->away_flush_mutex);
}

void syncmem_away_exit(void)
{
	struct syncmem_away *a, *tmp;
	LIST_HEAD(ended);

	spin_lock(&syncmem_away_lock);
	syncmem_away_dying = true;	/* nothing arms the check any more */
	list_for_each_entry_safe(a, tmp, &syncmem_away_list, node) {
		syncmem_away_unlist(a);
		list_add_tail(&a->node, &ended);
	}
	spin_unlock(&syncmem_away_lock);
	cancel_delayed_work_sync(&syncmem_away_work);
	syncmem_away_end_all(&ended);
}
