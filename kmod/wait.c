// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem blocked waits: WAIT and LOCK_WAIT, whose waiter sleeps in its
 * call (on its stack) until it is claimed, its deadline passes or a signal
 * comes; after a signal it may keep its place away from its call (away.c).
 * This is the blocked waiter's kind (struct syncmem_waiter_ops): claimed,
 * it is woken after the bucket lock is dropped; a lock waiter next in line
 * spins a while before it sleeps.
 */
#include <linux/hrtimer.h>
#include <linux/pid_namespace.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/sched/task.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"
#include "syncmem_queue.h"

/* How long the next heir of a lock word may spin before it sleeps. */
#define SYNCMEM_HEIR_SPIN_NS	(100 * NSEC_PER_USEC)

static const struct syncmem_waiter_ops syncmem_sync_ops;

static struct syncmem_sync_waiter *to_sync(struct syncmem_waiter *w)
{
	return container_of(w, struct syncmem_sync_waiter, w);
}

static const struct syncmem_sync_waiter *to_sync_const(const struct syncmem_waiter *w)
{
	return container_of(w, const struct syncmem_sync_waiter, w);
}

/*
 * Under b->lock, as a lock word is handed to @w: the waiter after it in
 * its queue is next in line. A blocked one is woken now to spin for the
 * word (syncmem_heir_spin()), so that its wake-up overlaps the new
 * holder's section instead of following it. Only a hint: it looks past at
 * most SYNCMEM_GONE_BATCH gone waiters and takes none out, so that a
 * caller walking the queue keeps its place.
 */
static void syncmem_heir_warn(struct syncmem_waiter *w, struct syncmem_wake *wk)
{
	struct syncmem_queue *q = w->q;
	struct syncmem_waiter *next;
	struct syncmem_sync_waiter *sw;
	unsigned int n = 0;

	lockdep_assert_held(&w->b->lock);
	if (wk->heir)
		return;
	list_for_each_entry(next, &q->waiters, node) {
		if (syncmem_waiter_live(next))
			break;
		if (++n == SYNCMEM_GONE_BATCH)
			return;
	}
	if (list_entry_is_head(next, &q->waiters, node) ||
	    next->ops != &syncmem_sync_ops || !next->owner)
		return;
	sw = to_sync(next);
	/* Away (no task): not sleeping here. */
	if (!sw->task || READ_ONCE(sw->heir))
		return;
	WRITE_ONCE(sw->heir, true);
	get_task_struct(sw->task);
	wk->heir = sw->task;
}

/*
 * ->wake, under b->lock: the waiter was claimed with @state. Its task is
 * woken once the lock is dropped; one away (in a signal handler, stopped)
 * finds out when it comes back.
 */
static void syncmem_sync_wake(struct syncmem_waiter *w, int state, struct syncmem_wake *wk)
{
	struct task_struct *task = to_sync(w)->task;

	lockdep_assert_held(&w->b->lock);
	if (task) {
		get_task_struct(task);
		wk->tasks[wk->nr_tasks++] = task;
		/*
		 * A blocked waiter handed the word runs its section soon: the
		 * next in line may get ready. Not for one away, or async: it
		 * takes the word up much later.
		 */
		if (w->owner && (state == SYNCMEM_W_HANDED_OFF ||
				 state == SYNCMEM_W_OWNER_DIED))
			syncmem_heir_warn(w, wk);
	}
	/*
	 * The last access to *w: once the sleeper sees the new state it
	 * returns and its stack frame is gone. Release orders the unlink
	 * before it; pairs with the acquire in syncmem_waiter_sleep().
	 */
	smp_store_release(&w->state, state);
}

/*
 * ->gone, under b->lock: a waiter in its call is on its way out by itself
 * if at all (its owner died: its process is exiting); one away is gone
 * when its thread is, or its owner died.
 */
static enum syncmem_gone syncmem_sync_gone(const struct syncmem_waiter *w, bool owner_dead)
{
	lockdep_assert_held(&w->b->lock);
	if (to_sync_const(w)->task)
		return owner_dead ? SYNCMEM_GONE_LEAVING : SYNCMEM_LIVE;
	return owner_dead || syncmem_away_gone(w) ? SYNCMEM_GONE : SYNCMEM_LIVE;
}

/*
 * ->describe, under b->lock: its task and deadline. A blocked waiter's task
 * is in its call (it leaves the queue before returning); a waiter away
 * holds a reference on its task.
 */
static void syncmem_sync_describe(const struct syncmem_waiter *w, struct pid_namespace *ns,
				  struct syncmem_waiter_entry *e)
{
	const struct syncmem_sync_waiter *sw = to_sync_const(w);
	struct task_struct *task = sw->task;

	lockdep_assert_held(&w->b->lock);
	e->deadline_ns = sw->deadline;
	if (!task) {
		e->flags |= SYNCMEM_WAITER_AWAY;
		task = syncmem_away_task(sw);
	}
	e->pid = task_tgid_nr_ns(task, ns);
	e->tid = task_pid_nr_ns(task, ns);
}

/* A blocked waiter is never completed by a waker: ->wake wakes it. */
static const struct syncmem_waiter_ops syncmem_sync_ops = {
	.wake		= syncmem_sync_wake,
	.gone		= syncmem_sync_gone,
	.describe	= syncmem_sync_describe,
};

/*
 * Under b->lock, once queued: a lock waiter with no writable waiter ahead
 * of it is next in line for the word, and spins before sleeping.
 */
static int syncmem_sync_admit(struct syncmem_waiter *w)
{
	lockdep_assert_held(&w->b->lock);
	to_sync(w)->heir = w->owner && !w->observer &&
			   list_is_first(&w->node, &w->q->waiters);
	return 0;
}

/*
 * A lock waiter with nobody ahead of it is the next to be handed the word,
 * and its holder is often about to unlock: sooner than a sleep and a
 * wake-up would take. It watches its state for a short while first, but
 * only while nothing else wants this CPU (that may be the holder), no
 * signal is pending and the deadline is not reached. The loop in
 * syncmem_waiter_sleep() looks at the state again, so a claim that comes
 * as the spin ends is never missed.
 */
static void syncmem_heir_spin(const struct syncmem_waiter *w, u64 deadline)
{
	u64 end = min_t(u64, ktime_get_ns() + SYNCMEM_HEIR_SPIN_NS, deadline);

	/* Pairs with smp_store_release() in syncmem_wake_claim(). */
	while (smp_load_acquire(&w->state) == SYNCMEM_W_QUEUED) {
		if (need_resched() || !single_task_running() || signal_pending(current) ||
		    ktime_get_ns() >= end)
			return;
		cpu_relax();
	}
}

/*
 * Sleep until claimed, the deadline passes or a signal arrives. Returns the
 * wait's result, or -ERESTARTNOINTR with @w still queued: a signal came.
 */
static long syncmem_waiter_sleep(struct syncmem_region *r,
				 struct syncmem_sync_waiter *sw, u64 deadline)
{
	struct syncmem_waiter *w = &sw->w;
	struct hrtimer_sleeper timer;
	bool timed = deadline != SYNCMEM_NO_DEADLINE;
	bool expired = false;
	int state;

	if (timed) {
		syncmem_hrtimer_sleeper_init(&timer, CLOCK_MONOTONIC,
					     HRTIMER_MODE_ABS);
		hrtimer_set_expires_range_ns(&timer.timer,
					     ns_to_ktime(min_t(u64, deadline, KTIME_MAX)),
					     current->timer_slack_ns);
		hrtimer_sleeper_start_expires(&timer, HRTIMER_MODE_ABS);
	}

	for (;;) {
		if (READ_ONCE(sw->heir)) {
			syncmem_heir_spin(&sw->w, deadline);
			WRITE_ONCE(sw->heir, false);
		}
		set_current_state(TASK_INTERRUPTIBLE);
		/* Pairs with smp_store_release() in syncmem_wake_claim(). */
		state = smp_load_acquire(&w->state);
		if (state != SYNCMEM_W_QUEUED)
			break;
		if (timed && !READ_ONCE(timer.task)) {
			expired = true;
			break;
		}
		if (signal_pending(current))
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);

	if (timed) {
		hrtimer_cancel(&timer.timer);
		destroy_hrtimer_on_stack(&timer.timer);
	}

	if (state != SYNCMEM_W_QUEUED)
		return syncmem_wait_result(state);
	if (!expired)
		return -ERESTARTNOINTR;
	if (syncmem_waiter_claim(r, w, SYNCMEM_W_CANCELLED, &state))
		return SYNCMEM_WAIT_TIMED_OUT;
	return syncmem_wait_result(state);
}

/* What a blocked WAIT needs besides its arguments. */
struct syncmem_wait_call {
	struct file *file;		/* its region file */
	struct syncmem_away *away;	/* the thread's waiter away, if any */
	u64 owner;			/* LOCK_WAIT: the id it waits as */
};

/*
 * A signal came while *@swp was queued. Unless the wait is interruptible or
 * the task dying, it keeps its place while the handler runs (or the task is
 * stopped or frozen) and the restarted call takes it up: see away.c. Else,
 * or if that is impossible, it leaves the queue. Returns -ERESTARTNOINTR,
 * -ERESTARTNOHAND, or the result of a claim that came first; *@parked says
 * whether the waiter stayed queued, away (and is no longer the caller's).
 */
static long syncmem_wait_signalled(struct syncmem_region *r,
				   const struct syncmem_wait *arg,
				   struct syncmem_wait_call *call,
				   struct syncmem_sync_waiter **swp, bool *parked)
{
	bool interruptible = arg->flags & SYNCMEM_WAIT_INTERRUPTIBLE;
	int state;

	*parked = !interruptible && !fatal_signal_pending(current) &&
		  syncmem_away_park(r, call->file, arg, swp, &call->away);
	if (*parked)
		return -ERESTARTNOINTR;
	if (!syncmem_waiter_claim(r, &(*swp)->w, SYNCMEM_W_CANCELLED, &state))
		return syncmem_wait_result(state);
	/*
	 * Restarted with the same arguments, hence the same absolute
	 * deadline, once the handler ran (a fatal signal never comes back);
	 * an interruptible wait ends if a handler ran, else restarts too.
	 */
	return interruptible ? -ERESTARTNOHAND : -ERESTARTNOINTR;
}

static long syncmem_wait(struct syncmem_region *r, bool observer,
			 const struct syncmem_wait *arg, struct syncmem_wait_call *call)
{
	struct syncmem_sync_waiter stack_waiter = {
		.w.ops = &syncmem_sync_ops,
		.w.observer = observer,
		.w.owner = call->owner,
		.w.size = arg->size,
		.task = current,
		.deadline = arg->deadline_ns,
	};
	struct syncmem_sync_waiter *sw = &stack_waiter;
	bool parked;
	long ret;

	/* A restart after a signal: the waiter kept its place. */
	call->away = syncmem_away_keep(call->away, r, arg, observer, call->owner);
	if (call->away) {
		sw = syncmem_away_waiter(call->away);
		/* Its owner died meanwhile (a thread of a live process). */
		if (call->owner && !syncmem_owner_alive(arg->expected & SYNCMEM_OWNER_ID))
			syncmem_owner_word_settle(r, arg->offset);
		ret = syncmem_waiter_set_task(sw, current);
		ret = ret == SYNCMEM_W_QUEUED ? SYNCMEM_WAIT_QUEUED :
		      syncmem_wait_result(ret);
	} else {
		ret = syncmem_wait_enqueue(r, arg, &sw->w, syncmem_sync_admit);
	}
	if (ret == SYNCMEM_WAIT_QUEUED) {
		ret = syncmem_waiter_sleep(r, sw, arg->deadline_ns);
		if (ret == -ERESTARTNOINTR) {
			ret = syncmem_wait_signalled(r, arg, call, &sw, &parked);
			if (parked)
				return ret;
		}
	}
	/*
	 * Claimed just as a fatal signal came: we will never return to take
	 * it up, so what we were given goes on now.
	 */
	if ((ret == SYNCMEM_WAIT_WOKEN || ret == SYNCMEM_WAIT_HANDED_OFF ||
	     ret == SYNCMEM_WAIT_OWNER_DIED) && fatal_signal_pending(current)) {
		syncmem_wait_pass_on(r, arg->offset, &sw->w, ret);
		ret = -EINTR;
	}
	if (call->away)
		syncmem_away_free(call->away);
	return ret;
}

/* A blocked WAIT or LOCK_WAIT begins: before it reads its arguments. */
static void syncmem_wait_call_begin(struct file *file, struct syncmem_wait_call *call)
{
	call->file = file;
	call->away = syncmem_away_take();
	call->owner = 0;
}

long syncmem_ioctl_wait(struct syncmem_region *r, struct file *file,
			void __user *uarg)
{
	struct syncmem_wait_call call;
	struct syncmem_wait arg;
	int err = -EFAULT;

	syncmem_wait_call_begin(file, &call);
	if (copy_from_user(&arg, uarg, sizeof(arg)))
		goto fail;
	err = syncmem_wait_check(r, &arg);
	if (err)
		goto fail;
	return syncmem_wait(r, !(file->f_mode & FMODE_WRITE), &arg, &call);
fail:
	syncmem_away_end(call.away);
	return err;
}

long syncmem_ioctl_lock_wait(struct syncmem_region *r, struct file *file,
			     void __user *uarg)
{
	struct syncmem_wait_call call;
	struct syncmem_lock_wait arg;
	struct syncmem_wait w;
	int err = -EFAULT;

	syncmem_wait_call_begin(file, &call);
	if (copy_from_user(&arg, uarg, sizeof(arg)))
		goto fail;
	err = -EINVAL;
	if ((arg.flags & ~SYNCMEM_WAIT_FLAGS) || arg.pad)
		goto fail;
	w = (struct syncmem_wait){
		.offset = arg.offset,
		.expected = arg.expected,
		.deadline_ns = arg.deadline_ns,
		.size = 8,
		.flags = arg.flags,
	};
	err = syncmem_wait_check(r, &w);
	if (err)
		goto fail;
	/* A read-only open confers no ownership: such a waiter observes. */
	if (!(file->f_mode & FMODE_WRITE))
		return syncmem_wait(r, true, &w, &call);
	err = -EINVAL;
	if (!arg.owner || !syncmem_owner_is_current(arg.owner))
		goto fail;
	call.owner = arg.owner;
	return syncmem_wait(r, false, &w, &call);
fail:
	syncmem_away_end(call.away);
	return err;
}
