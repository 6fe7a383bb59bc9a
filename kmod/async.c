// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem async waits: Atomics.waitAsync across processes.
 *
 * WAIT_ASYNC queues a waiter in the word's FIFO queue, with the blocked
 * waiters, and returns at once. Whoever claims it (notify, hand-off, its
 * deadline, CANCEL, or the handle's release) completes it: the waiter itself
 * becomes the completion record on the handle's completion list, so the slot
 * was reserved when the wait was queued and the list can never overflow.
 * The handle's eventfd is signalled for each record, outside any spinlock;
 * read() on the handle drains the records. Outstanding waits (queued, or
 * completed and unread) are capped per handle (max_async_waits) and charged
 * to the user who opened it (max_user_async_waits).
 *
 * A waiter enters the handle's pending set (an rbtree by user_data, whose
 * nodes live in the waiters: nothing to allocate, all charged) in the same
 * step that queues it, under the word's bucket lock: CANCEL can only ever
 * find a waiter that is queued or already claimed, never one on its way in.
 *
 * References on a waiter: the owner's (from WAIT_ASYNC until its record is
 * read, or until it is dropped without a record), the timer's (while armed or
 * while its expiry work is queued), and short-lived ones taken by CANCEL and
 * release. The waiter holds references on its handle and its region, so
 * each of those outlives it. The last reference is always dropped in process
 * context.
 *
 * Deadlines: an hrtimer armed under the bucket lock once the waiter is
 * queued. Its callback moves the waiter onto its handle's expired list and
 * queues the handle's expiry work, which claims each waiter under its bucket
 * lock and completes it with SYNCMEM_WAIT_TIMED_OUT, yielding the CPU
 * between waiters. Each handle has its own work item on an unbound
 * workqueue, so a flood of expiries on one handle runs beside, not in front
 * of, the expiries of others.
 */
#include <linux/eventfd.h>
#include <linux/file.h>
#include <linux/hrtimer.h>
#include <linux/poll.h>
#include <linux/rbtree.h>
#include <linux/sched/signal.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"
#include "syncmem_queue.h"

struct syncmem_async {
	struct syncmem_waiter w;
	struct rb_node pending;		/* in h->pending while queued */
	struct list_head node;		/* in h->pending_list, then h->cq */
	u64 user_data;
	u64 seq;			/* arrival in the pending set */
	struct syncmem_handle *h;
	struct syncmem_region *region;
	struct syncmem_life *life;	/* the program that queued it; referenced */
	u64 offset;			/* of its word */
	refcount_t ref;
	int result;
};

/* An async wait with a deadline. */
struct syncmem_async_timed {
	struct syncmem_async a;
	ktime_t deadline;
	struct hrtimer timer;
	struct list_head expire_node;	/* in h->expired once fired */
};

static struct kmem_cache *syncmem_async_cache;
static struct kmem_cache *syncmem_async_timed_cache;
static struct workqueue_struct *syncmem_async_wq;
/* Async waits alive; module exit waits for zero (timers and work in flight). */
static atomic64_t syncmem_nr_async = ATOMIC64_INIT(0);

static const struct syncmem_waiter_ops syncmem_async_ops, syncmem_async_timed_ops;

/* Has @a a deadline? Its kind says (a flag would cost a waiter 8 bytes). */
static bool syncmem_async_has_deadline(const struct syncmem_async *a)
{
	return a->w.ops == &syncmem_async_timed_ops;
}

static struct syncmem_async_timed *to_timed(struct syncmem_async *a)
{
	return container_of(a, struct syncmem_async_timed, a);
}

/*
 * Has the program that queued @a ended (its process exited or exec'd)? It
 * will never read the record. A POST record of a process that has no life
 * is nobody's orphan.
 */
static bool syncmem_async_orphan(const struct syncmem_async *a)
{
	return a->life && syncmem_life_over(a->life);
}

/*
 * ->gone, under its bucket lock: nobody will read its record once its
 * handle is closing or its program has ended (exit or execve).
 */
static enum syncmem_gone syncmem_async_gone(const struct syncmem_waiter *w, bool owner_dead)
{
	const struct syncmem_async *a = container_of(w, struct syncmem_async, w);

	lockdep_assert_held(&w->b->lock);
	return owner_dead || READ_ONCE(a->h->closed) || syncmem_async_orphan(a) ?
	       SYNCMEM_GONE : SYNCMEM_LIVE;
}

static u64 syncmem_async_deadline(const struct syncmem_async *a)
{
	if (!syncmem_async_has_deadline(a))
		return SYNCMEM_NO_DEADLINE;
	return ktime_to_ns(container_of(a, struct syncmem_async_timed, a)->deadline);
}

/* ->describe, under its bucket lock: its process and deadline. */
static void syncmem_async_describe(const struct syncmem_waiter *w, struct pid_namespace *ns,
				   struct syncmem_waiter_entry *e)
{
	const struct syncmem_async *a = container_of(w, struct syncmem_async, w);

	lockdep_assert_held(&w->b->lock);
	e->flags |= SYNCMEM_WAITER_ASYNC;
	e->pid = pid_nr_ns(syncmem_life_tgid(a->life), ns);
	e->deadline_ns = syncmem_async_deadline(a);
}

static void syncmem_async_free(struct syncmem_async *a)
{
	struct syncmem_handle *h = a->h;

	/*
	 * A timer callback may still be on its way out (it already handed
	 * its reference on): module exit must not see the last wait go
	 * before the callback is done with module text and the workqueue.
	 */
	if (syncmem_async_has_deadline(a))
		hrtimer_cancel(&to_timed(a)->timer);
	if (a->region)
		syncmem_region_put(a->region);
	syncmem_life_put(a->life);
	spin_lock(&h->lock);
	h->nr_outstanding--;
	spin_unlock(&h->lock);
	syncmem_uncharge_user(h->user, SYNCMEM_USAGE(async_waits));
	atomic_long_dec(&h->ns->usage.async_waits);
	if (syncmem_async_has_deadline(a))
		kmem_cache_free(syncmem_async_timed_cache, to_timed(a));
	else
		kmem_cache_free(syncmem_async_cache, a);
	syncmem_handle_put(h);
	if (atomic64_dec_and_test(&syncmem_nr_async))
		wake_up_var(&syncmem_nr_async);
}

static void syncmem_async_put(struct syncmem_async *a)
{
	if (refcount_dec_and_test(&a->ref))
		syncmem_async_free(a);
}

static void syncmem_handle_signal(struct syncmem_handle *h)
{
	mutex_lock(&h->eventfd_mutex);
	if (h->eventfd)
		syncmem_eventfd_signal(h->eventfd);
	mutex_unlock(&h->eventfd_mutex);
}

/* Under h->lock: the pending wait of @user_data, or NULL. */
static struct syncmem_async *syncmem_pending_find(struct syncmem_handle *h,
						  u64 user_data)
{
	struct rb_node *n = h->pending.rb_node;

	lockdep_assert_held(&h->lock);
	while (n) {
		struct syncmem_async *a = rb_entry(n, struct syncmem_async, pending);

		if (user_data < a->user_data)
			n = n->rb_left;
		else if (user_data > a->user_data)
			n = n->rb_right;
		else
			return a;
	}
	return NULL;
}

/* Under h->lock: add @a to the pending set; -EEXIST for a taken user_data. */
static int syncmem_pending_insert(struct syncmem_handle *h, struct syncmem_async *a)
{
	struct rb_node **link = &h->pending.rb_node, *parent = NULL;

	lockdep_assert_held(&h->lock);
	while (*link) {
		struct syncmem_async *b = rb_entry(*link, struct syncmem_async, pending);

		parent = *link;
		if (a->user_data < b->user_data)
			link = &parent->rb_left;
		else if (a->user_data > b->user_data)
			link = &parent->rb_right;
		else
			return -EEXIST;
	}
	rb_link_node(&a->pending, parent, link);
	rb_insert_color(&a->pending, &h->pending);
	list_add_tail(&a->node, &h->pending_list);
	a->seq = ++h->pending_seq;
	return 0;
}

/* Under h->lock: take @a out of the pending set, if it is there. */
static void syncmem_pending_remove(struct syncmem_handle *h, struct syncmem_async *a)
{
	lockdep_assert_held(&h->lock);
	if (RB_EMPTY_NODE(&a->pending))
		return;
	rb_erase(&a->pending, &h->pending);
	RB_CLEAR_NODE(&a->pending);
	list_del_init(&a->node);
}

/* Records one run of a handle's pass-on work passes on before it yields. */
#define SYNCMEM_PASS_ON_BATCH	32

static void syncmem_handle_queue_pass_on(struct syncmem_handle *h)
{
	/* A queued work item holds a handle reference. */
	kref_get(&h->ref);
	if (!queue_work(syncmem_async_wq, &h->pass_on_work))
		syncmem_handle_put(h);	/* never the last: the caller holds one */
}

/*
 * A handle's pass-on work: records of it dropped unread that carried a
 * wake-up or a hand-off are passed on, in process context, one after the
 * other (passing one on may complete, and drop, another). Each handle has
 * its own work item, which after a batch goes to the back of the queue:
 * however many records one handle drops, the others' go on beside them.
 */
static void syncmem_handle_pass_on(struct work_struct *work)
{
	struct syncmem_handle *h = container_of(work, struct syncmem_handle,
						pass_on_work);
	struct syncmem_async *a;
	unsigned int n;

	for (n = 0; n < SYNCMEM_PASS_ON_BATCH; n++) {
		spin_lock(&h->lock);
		a = list_first_entry_or_null(&h->pass_on, struct syncmem_async, node);
		if (a)
			list_del_init(&a->node);
		spin_unlock(&h->lock);
		if (!a)
			break;
		syncmem_wait_pass_on(a->region, a->offset, &a->w, a->result);
		syncmem_async_put(a);
		cond_resched();
	}
	if (n == SYNCMEM_PASS_ON_BATCH)
		syncmem_handle_queue_pass_on(h);
	syncmem_handle_put(h);	/* the work's */
}

/*
 * Was @a, completed with @result, given something that must go on if its
 * record is never read? A POST record (no region) was never a waiter.
 */
static bool syncmem_async_carries(const struct syncmem_async *a, int result)
{
	return a->region && (result == SYNCMEM_WAIT_WOKEN ||
			     result == SYNCMEM_WAIT_HANDED_OFF ||
			     result == SYNCMEM_WAIT_OWNER_DIED);
}

/*
 * Drop the owner's reference of a completed wait nobody will read; what it
 * was given (@result) goes on to somebody else.
 */
static void syncmem_async_drop(struct syncmem_async *a, int result)
{
	struct syncmem_handle *h = a->h;

	if (syncmem_async_carries(a, result)) {
		a->result = result;
		/* Once listed, @a (and its hold on @h) may be gone at once. */
		kref_get(&h->ref);
		spin_lock(&h->lock);
		list_add_tail(&a->node, &h->pass_on);
		spin_unlock(&h->lock);
		syncmem_handle_queue_pass_on(h);
		syncmem_handle_put(h);
		return;
	}
	syncmem_async_put(a);
}

/*
 * @a has been claimed (it is out of its queue): stop its timer and turn it
 * into a completion record, or drop it if nobody will read it.
 */
static void syncmem_async_complete(struct syncmem_async *a, int result)
{
	struct syncmem_handle *h = a->h;
	bool closed;

	/*
	 * Once the record is on the list, its reader may free @a and close
	 * the handle before we signal: keep the handle alive until then.
	 */
	kref_get(&h->ref);

	/* A timer that already fired hands its reference to the work item. */
	if (syncmem_async_has_deadline(a) && hrtimer_try_to_cancel(&to_timed(a)->timer) == 1)
		refcount_dec(&a->ref);	/* never the last: the owner's is held */

	spin_lock(&h->lock);
	syncmem_pending_remove(h, a);
	/* A record of a process that exited: syncmem_async_reap() ran or runs. */
	closed = h->closed || syncmem_async_orphan(a);
	if (!closed) {
		a->result = result;
		list_add_tail(&a->node, &h->cq);
	}
	spin_unlock(&h->lock);
	/* A canceller may wait for this claimed wait to settle. */
	if (wq_has_sleeper(&h->settle_wq))
		wake_up_all(&h->settle_wq);

	if (closed) {
		syncmem_async_drop(a, result);	/* nobody will read it */
	} else {
		wake_up_interruptible_poll(&h->wq, EPOLLIN | EPOLLRDNORM);
		syncmem_handle_signal(h);
	}
	syncmem_handle_put(h);
}

/* ->complete: a waker claimed it (-ECANCELED: it was gone). */
static void syncmem_async_complete_waiter(struct syncmem_waiter *w, int result)
{
	syncmem_async_complete(container_of(w, struct syncmem_async, w), result);
}

/*
 * An async waiter is completed once its waker dropped the bucket lock. A
 * timed one is of a kind of its own, which tells it has a timer to stop.
 */
static const struct syncmem_waiter_ops syncmem_async_ops = {
	.wake		= syncmem_wake_defer,
	.complete	= syncmem_async_complete_waiter,
	.gone		= syncmem_async_gone,
	.describe	= syncmem_async_describe,
};

static const struct syncmem_waiter_ops syncmem_async_timed_ops = {
	.wake		= syncmem_wake_defer,
	.complete	= syncmem_async_complete_waiter,
	.gone		= syncmem_async_gone,
	.describe	= syncmem_async_describe,
};

/* The handle's expiry work: time out what its timers put on its list. */
static void syncmem_handle_expire(struct work_struct *work)
{
	struct syncmem_handle *h = container_of(work, struct syncmem_handle,
						expire_work);
	struct syncmem_async_timed *t;

	for (;;) {
		spin_lock_irq(&h->expire_lock);
		t = list_first_entry_or_null(&h->expired,
					     struct syncmem_async_timed, expire_node);
		if (t)
			list_del(&t->expire_node);
		spin_unlock_irq(&h->expire_lock);
		if (!t)
			break;
		if (syncmem_waiter_claim(t->a.region, &t->a.w, SYNCMEM_W_TIMED_OUT, NULL))
			syncmem_async_complete(&t->a, SYNCMEM_WAIT_TIMED_OUT);
		syncmem_async_put(&t->a);	/* the timer's */
		cond_resched();
	}
	syncmem_handle_put(h);	/* taken by the timer that queued us */
}

static enum hrtimer_restart syncmem_async_timer_fn(struct hrtimer *timer)
{
	struct syncmem_async_timed *t =
		container_of(timer, struct syncmem_async_timed, timer);
	struct syncmem_handle *h = t->a.h;
	unsigned long flags;

	/*
	 * The timer's reference on the waiter moves to the list. A queued
	 * work item holds a handle reference; ours is never the last (the
	 * waiter holds one, and if the work that drains it runs first, the
	 * pending one we then fail to queue holds another).
	 */
	kref_get(&h->ref);
	spin_lock_irqsave(&h->expire_lock, flags);
	list_add_tail(&t->expire_node, &h->expired);
	spin_unlock_irqrestore(&h->expire_lock, flags);
	if (!queue_work(syncmem_async_wq, &h->expire_work))
		syncmem_handle_put(h);
	return HRTIMER_NORESTART;
}

/*
 * Under the bucket lock, right after the waiter was queued: make it
 * pending (cancellable) and arm its timer; -EEXIST takes it out again.
 */
static int syncmem_async_admit(struct syncmem_waiter *w)
{
	struct syncmem_async *a = container_of(w, struct syncmem_async, w);
	struct syncmem_handle *h = a->h;
	struct syncmem_async_timed *t;
	int err;

	spin_lock(&h->lock);
	err = syncmem_pending_insert(h, a);
	spin_unlock(&h->lock);
	if (err || !syncmem_async_has_deadline(a))
		return err;
	t = to_timed(a);
	refcount_inc(&a->ref);	/* the timer's */
	hrtimer_start_range_ns(&t->timer, t->deadline, current->timer_slack_ns,
			       HRTIMER_MODE_ABS);
	return 0;
}

static struct syncmem_async *syncmem_async_alloc(u64 deadline)
{
	struct syncmem_async_timed *t;
	struct syncmem_async *a;

	if (deadline == SYNCMEM_NO_DEADLINE) {
		a = kmem_cache_zalloc(syncmem_async_cache, GFP_KERNEL);
		if (a)
			a->w.ops = &syncmem_async_ops;
		return a;
	}
	t = kmem_cache_zalloc(syncmem_async_timed_cache, GFP_KERNEL);
	if (!t)
		return NULL;
	syncmem_hrtimer_setup(&t->timer, syncmem_async_timer_fn,
			      CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	t->deadline = ns_to_ktime(min_t(u64, deadline, KTIME_MAX));
	t->a.w.ops = &syncmem_async_timed_ops;
	return &t->a;
}

/* Reserve a slot against max_async_waits, then the user's limit. */
static int syncmem_handle_reserve(struct syncmem_handle *h)
{
	int err = 0;

	spin_lock(&h->lock);
	if (h->nr_outstanding >= READ_ONCE(syncmem_max_async_waits))
		err = -EAGAIN;
	else
		h->nr_outstanding++;
	spin_unlock(&h->lock);
	if (err)
		return err;
	err = syncmem_charge_user(h->user, SYNCMEM_USAGE(async_waits), h->unlimited);
	if (err) {
		spin_lock(&h->lock);
		h->nr_outstanding--;
		spin_unlock(&h->lock);
	}
	return err;
}

/*
 * A new async wait of @h with the owner's reference, taking a slot, a
 * charge, a handle reference and the caller's references on @r and @life
 * (either may be NULL). On failure nothing is taken: ERR_PTR(-EAGAIN),
 * ERR_PTR(-EDQUOT) or ERR_PTR(-ENOMEM).
 */
static struct syncmem_async *syncmem_async_new(struct syncmem_handle *h,
					       u64 deadline, u64 user_data,
					       struct syncmem_region *r,
					       struct syncmem_life *life)
{
	struct syncmem_async *a;
	int err = syncmem_handle_reserve(h);

	if (err)
		return ERR_PTR(err);
	a = syncmem_async_alloc(deadline);
	if (!a) {
		spin_lock(&h->lock);
		h->nr_outstanding--;
		spin_unlock(&h->lock);
		syncmem_uncharge_user(h->user, SYNCMEM_USAGE(async_waits));
		return ERR_PTR(-ENOMEM);
	}
	atomic64_inc(&syncmem_nr_async);
	atomic_long_inc(&h->ns->usage.async_waits);
	a->life = life;
	refcount_set(&a->ref, 1);
	RB_CLEAR_NODE(&a->pending);
	INIT_LIST_HEAD(&a->node);
	a->user_data = user_data;
	a->region = r;
	a->h = h;
	kref_get(&h->ref);
	return a;
}

long syncmem_ioctl_wait_async(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_wait_async arg;
	struct syncmem_life *life = NULL;
	struct syncmem_region *r;
	struct syncmem_async *a;
	struct syncmem_wait w;
	bool rdonly = false;
	u64 owner = 0;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SYNCMEM_WAIT_ASYNC_FLAGS) || arg.pad)
		return -EINVAL;
	if (arg.flags & SYNCMEM_WAIT_ASYNC_OWNER) {
		if (arg.size != 8)
			return -EINVAL;
		owner = syncmem_owner_current_process();
		if (!owner)
			return -EINVAL;
	}
	r = syncmem_region_get_fd(arg.region_fd, false, &rdonly);
	if (IS_ERR(r))
		return PTR_ERR(r);
	w = (struct syncmem_wait){
		.offset = arg.offset,
		.expected = arg.expected,
		.deadline_ns = arg.deadline_ns,
		.size = arg.size,
	};
	ret = syncmem_wait_check(r, &w);
	/* Its waits end with this program, whoever else keeps the handle. */
	if (!ret) {
		life = syncmem_owner_watch_handle(h);
		if (IS_ERR(life))
			ret = PTR_ERR(life);
	}
	if (ret) {
		syncmem_region_put(r);
		return ret;
	}
	a = syncmem_async_new(h, arg.deadline_ns, arg.user_data, r, life);
	if (IS_ERR(a)) {
		syncmem_life_put(life);
		syncmem_region_put(r);
		return PTR_ERR(a);
	}
	a->w.observer = rdonly;
	a->w.size = arg.size;
	a->offset = arg.offset;
	/* A read-only open confers no ownership: such a waiter observes. */
	a->w.owner = rdonly ? 0 : owner;
	ret = syncmem_wait_enqueue(r, &w, &a->w, syncmem_async_admit);
	if (ret != SYNCMEM_WAIT_QUEUED)
		syncmem_async_put(a);	/* never pending: no completion comes */
	return ret;
}

long syncmem_ioctl_post(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_life *life;
	struct syncmem_post arg;
	struct syncmem_async *a;
	int err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	/* A record of a program that ends unread is dropped with its others. */
	life = syncmem_life_get_current();
	a = syncmem_async_new(h, SYNCMEM_NO_DEADLINE, arg.user_data, NULL, life);
	if (IS_ERR(a)) {
		syncmem_life_put(life);
		return PTR_ERR(a);
	}
	/* Checked and completed in one hold of the lock: no wait can slip in. */
	spin_lock(&h->lock);
	if (syncmem_pending_find(h, arg.user_data)) {
		err = -EEXIST;
	} else {
		a->result = arg.result;
		list_add_tail(&a->node, &h->cq);
	}
	spin_unlock(&h->lock);
	if (err) {
		syncmem_async_put(a);
		return err;
	}
	wake_up_interruptible_poll(&h->wq, EPOLLIN | EPOLLRDNORM);
	syncmem_handle_signal(h);
	return 0;
}

/* Claim and complete @a with -ECANCELED; false if somebody claimed it first. */
static bool syncmem_async_cancel_one(struct syncmem_async *a)
{
	if (!syncmem_waiter_claim(a->region, &a->w, SYNCMEM_W_CANCELLED, NULL))
		return false;
	syncmem_async_complete(a, -ECANCELED);
	return true;
}

/*
 * Cancel @a, or, if somebody else claimed it, sleep until its claimer has
 * completed it (it leaves the pending set then): true if we cancelled it.
 */
static bool syncmem_async_cancel_settled(struct syncmem_handle *h,
					 struct syncmem_async *a)
{
	if (syncmem_async_cancel_one(a))
		return true;
	wait_event(h->settle_wq, RB_EMPTY_NODE(&a->pending));
	return false;
}

/* Take a reference on the oldest pending wait (or the one of @user_data). */
static struct syncmem_async *syncmem_pending_get(struct syncmem_handle *h,
						 const u64 *user_data)
{
	struct syncmem_async *a;

	spin_lock(&h->lock);
	if (user_data)
		a = syncmem_pending_find(h, *user_data);
	else
		a = list_first_entry_or_null(&h->pending_list,
					     struct syncmem_async, node);
	if (a)
		refcount_inc(&a->ref);
	spin_unlock(&h->lock);
	return a;
}

long syncmem_ioctl_cancel(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_cancel arg;
	struct syncmem_async *a;
	long cancelled = 0;
	u64 last;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SYNCMEM_CANCEL_ALL) || arg.pad)
		return -EINVAL;
	if (!(arg.flags & SYNCMEM_CANCEL_ALL)) {
		a = syncmem_pending_get(h, &arg.user_data);
		if (!a)
			return -ENOENT;
		cancelled = syncmem_async_cancel_one(a);
		syncmem_async_put(a);
		return cancelled ? 0 : -ENOENT;
	}
	/*
	 * The waits pending when we started, oldest first: each is queued
	 * (we cancel it) or claimed (we wait for its claimer to complete it),
	 * and waits queued meanwhile by other threads are not ours to wait for.
	 */
	spin_lock(&h->lock);
	last = h->pending_seq;
	spin_unlock(&h->lock);
	while ((a = syncmem_pending_get(h, NULL))) {
		if (a->seq > last) {
			syncmem_async_put(a);
			break;
		}
		cancelled += syncmem_async_cancel_settled(h, a);
		syncmem_async_put(a);
		if (fatal_signal_pending(current))
			break;
	}
	return cancelled;
}

long syncmem_ioctl_set_eventfd(struct syncmem_handle *h, void __user *uarg)
{
	struct eventfd_ctx *ctx = NULL, *old;
	struct syncmem_eventfd arg;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.fd < -1)
		return -EINVAL;
	if (arg.fd >= 0) {
		ctx = eventfd_ctx_fdget(arg.fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	}
	mutex_lock(&h->eventfd_mutex);
	old = h->eventfd;
	h->eventfd = ctx;
	mutex_unlock(&h->eventfd_mutex);
	if (old)
		eventfd_ctx_put(old);
	return 0;
}

/* Pop up to @max records into @recs; their waiters go onto @taken. */
static unsigned int syncmem_cq_pop(struct syncmem_handle *h,
				   struct syncmem_completion *recs,
				   unsigned int max, struct list_head *taken)
{
	struct syncmem_async *a, *tmp;
	unsigned int n = 0;

	spin_lock(&h->lock);
	list_for_each_entry_safe(a, tmp, &h->cq, node) {
		if (n == max)
			break;
		recs[n].user_data = a->user_data;
		recs[n].result = a->result;
		recs[n].pad = 0;
		list_move_tail(&a->node, taken);
		n++;
	}
	spin_unlock(&h->lock);
	return n;
}

/* Records are waiting (a hint for sleeping; popping rechecks under the lock). */
static bool syncmem_cq_ready(struct syncmem_handle *h)
{
	return READ_ONCE(h->cq.next) != &h->cq;
}

#define SYNCMEM_READ_BATCH 32

/* Copy @n records out; consume those that arrived whole, give back the rest. */
static size_t syncmem_cq_deliver(struct syncmem_handle *h, struct iov_iter *to,
				 struct syncmem_completion *recs, unsigned int n,
				 struct list_head *taken)
{
	size_t copied = copy_to_iter(recs, n * sizeof(recs[0]), to);
	unsigned int whole = copied / sizeof(recs[0]);
	struct syncmem_async *a, *tmp;
	LIST_HEAD(back);

	list_for_each_entry_safe(a, tmp, taken, node) {
		list_del(&a->node);
		if (whole) {
			whole--;
			syncmem_async_put(a);	/* the owner's: record consumed */
		} else {
			list_add_tail(&a->node, &back);
		}
	}
	if (!list_empty(&back)) {
		/* In order, for a later read. */
		spin_lock(&h->lock);
		list_splice(&back, &h->cq);
		spin_unlock(&h->lock);
	}
	return copied / sizeof(recs[0]);
}

ssize_t syncmem_handle_read(struct syncmem_handle *h, struct iov_iter *to,
			    bool nonblock)
{
	struct syncmem_completion recs[SYNCMEM_READ_BATCH];
	size_t max = iov_iter_count(to) / sizeof(recs[0]);
	ssize_t done = 0;
	int err;

	if (!max)
		return -EINVAL;
	while (max) {
		LIST_HEAD(taken);
		unsigned int n = syncmem_cq_pop(h, recs, min_t(size_t, max,
							       SYNCMEM_READ_BATCH),
						&taken);
		size_t got;

		if (!n) {
			if (done)
				break;
			if (nonblock)
				return -EAGAIN;
			err = wait_event_interruptible(h->wq, syncmem_cq_ready(h));
			if (err)
				return err;
			continue;
		}
		got = syncmem_cq_deliver(h, to, recs, n, &taken);
		done += got * sizeof(recs[0]);
		if (got < n)
			return done ? done : -EFAULT;
		max -= n;
	}
	return done;
}

__poll_t syncmem_handle_poll(struct syncmem_handle *h, struct file *file,
			     poll_table *pt)
{
	__poll_t mask = 0;

	poll_wait(file, &h->wq, pt);
	spin_lock(&h->lock);
	if (!list_empty(&h->cq))
		mask = EPOLLIN | EPOLLRDNORM;
	spin_unlock(&h->lock);
	return mask;
}

/* Pending async waits one fdinfo read lists at most. */
#define SYNCMEM_FDINFO_PENDING	32

/*
 * /proc/<pid>/fdinfo of a handle, its async part: how many async waits it
 * has outstanding (pending, or completed and not read) and the oldest
 * pending ones. Regions are named by the inode number that fstat() of
 * their fds gives. Bounded: a reader holds h->lock, which the handle's
 * completions take, only for a few lines.
 */
void syncmem_async_show_fdinfo(struct seq_file *m, struct syncmem_handle *h)
{
	unsigned int n = 0;
	struct syncmem_async *a;

	seq_printf(m, "syncmem-eventfd:\t%d\n", READ_ONCE(h->eventfd) ? 1 : 0);
	spin_lock(&h->lock);
	seq_printf(m, "syncmem-outstanding:\t%u\n", h->nr_outstanding);
	list_for_each_entry(a, &h->pending_list, node) {
		u64 deadline = syncmem_async_deadline(a);

		if (n++ == SYNCMEM_FDINFO_PENDING)
			break;

		/* Pending: queued, or claimed and about to be completed. */
		seq_printf(m, "syncmem-wait:\tregion=%lu offset=0x%llx size=%u user_data=0x%llx",
			   a->region->inode->i_ino, a->offset, a->w.size,
			   a->user_data);
		if (deadline != SYNCMEM_NO_DEADLINE)
			seq_printf(m, " deadline=%llu", deadline);
		if (a->w.owner)
			seq_printf(m, " owner=0x%llx", a->w.owner);
		seq_puts(m, a->w.observer ? " observer\n" : "\n");
	}
	spin_unlock(&h->lock);
}

/* A new handle's async state: no wait, no record, no eventfd. */
void syncmem_async_handle_init(struct syncmem_handle *h)
{
	mutex_init(&h->eventfd_mutex);
	h->pending = RB_ROOT;
	INIT_LIST_HEAD(&h->pending_list);
	INIT_LIST_HEAD(&h->cq);
	spin_lock_init(&h->expire_lock);
	INIT_LIST_HEAD(&h->expired);
	INIT_WORK(&h->expire_work, syncmem_handle_expire);
	INIT_LIST_HEAD(&h->pass_on);
	INIT_WORK(&h->pass_on_work, syncmem_handle_pass_on);
}

/*
 * The handle's file is closing (maybe its process died), and it is marked
 * closed (syncmem_handle_close()): every queued waiter is taken out of its
 * queue and every unread record dropped, passing on what they were given.
 */
void syncmem_async_release(struct syncmem_handle *h)
{
	struct syncmem_async *a, *tmp;
	LIST_HEAD(unread);

	while ((a = syncmem_pending_get(h, NULL))) {
		/* Claimed by somebody else: their completion drops it. */
		syncmem_async_cancel_settled(h, a);
		syncmem_async_put(a);
	}
	/*
	 * The end of a program that waited here may have taken some of its
	 * waits off the pending list (syncmem_async_reap()): once no end
	 * can begin here any more, wait for those in flight to be done.
	 */
	syncmem_owner_unwatch_handle(h);
	wait_event(h->settle_wq, !atomic_read(&h->reaping));

	spin_lock(&h->lock);
	list_splice_init(&h->cq, &unread);
	spin_unlock(&h->lock);
	list_for_each_entry_safe(a, tmp, &unread, node) {
		list_del(&a->node);
		syncmem_async_drop(a, a->result);
	}
}

/*
 * Pass on now what @a, a record nobody will read, was given (the reaper
 * runs before it looks at owner words: see syncmem_async_reap()).
 */
static void syncmem_async_pass_on_now(struct syncmem_async *a)
{
	if (syncmem_async_carries(a, a->result))
		syncmem_wait_pass_on(a->region, a->offset, &a->w, a->result);
	syncmem_async_put(a);
}

/**
 * syncmem_async_reap - the program of @life, which waited on @h, has ended
 * @h:		The handle (a reference is held by the caller).
 * @life:	The program (it exited or exec'd: syncmem_life_over()).
 *
 * @h may live on in another process (a forked child), or in the program
 * the process runs next: its waits there are not that program's. Cancel
 * the program's waits and drop its unread records, passing on what those
 * were given, as if the handle had been closed for them alone. Their
 * completions from now on are dropped too (syncmem_async_complete()).
 * Process context; runs before the end's scan of owner words, so that a
 * hand-off the program never read goes on as a hand-off.
 */
void syncmem_async_reap(struct syncmem_handle *h, struct syncmem_life *life)
{
	struct syncmem_async *a, *tmp;
	LIST_HEAD(mine);
	LIST_HEAD(unread);

	/*
	 * Its pending waits move to @mine in one pass. They stay pending:
	 * whoever completes one (its claimer, or CANCEL by user_data) takes
	 * it off @mine under h->lock, as off the pending list.
	 */
	spin_lock(&h->lock);
	list_for_each_entry_safe(a, tmp, &h->pending_list, node)
		if (a->life == life)
			list_move_tail(&a->node, &mine);
	list_for_each_entry_safe(a, tmp, &h->cq, node)
		if (a->life == life)
			list_move_tail(&a->node, &unread);
	spin_unlock(&h->lock);
	for (;;) {
		spin_lock(&h->lock);
		a = list_first_entry_or_null(&mine, struct syncmem_async, node);
		if (a) {
			list_del_init(&a->node);
			refcount_inc(&a->ref);
		}
		spin_unlock(&h->lock);
		if (!a)
			break;
		/* Claimed by somebody else: its completion drops it (an orphan). */
		syncmem_async_cancel_one(a);
		syncmem_async_put(a);
		cond_resched();
	}
	list_for_each_entry_safe(a, tmp, &unread, node) {
		list_del(&a->node);
		syncmem_async_pass_on_now(a);
		cond_resched();
	}
}

int syncmem_async_init(void)
{
	syncmem_async_cache = KMEM_CACHE(syncmem_async, SLAB_ACCOUNT);
	syncmem_async_timed_cache = KMEM_CACHE(syncmem_async_timed, SLAB_ACCOUNT);
	syncmem_async_wq = alloc_workqueue("syncmem", WQ_UNBOUND, 0);
	if (!syncmem_async_cache || !syncmem_async_timed_cache || !syncmem_async_wq) {
		syncmem_async_exit();
		return -ENOMEM;
	}
	return 0;
}

void syncmem_async_exit(void)
{
	/*
	 * No handle file is left, but a timer that fired just before its wait
	 * was claimed may still be on its way to its handle's work item: wait
	 * for every wait to be freed, then for the work items to return.
	 */
	wait_var_event(&syncmem_nr_async, !atomic64_read(&syncmem_nr_async));
	if (syncmem_async_wq)
		destroy_workqueue(syncmem_async_wq);
	kmem_cache_destroy(syncmem_async_timed_cache);
	kmem_cache_destroy(syncmem_async_cache);
}
