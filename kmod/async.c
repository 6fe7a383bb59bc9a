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
 * completed and unread) are capped per handle by max_async_waits.
 *
 * References on a waiter: the owner's (from WAIT_ASYNC until its record is
 * read, or until it is dropped without a record), the timer's (while armed or
 * on the expired list), and short-lived ones taken by CANCEL and release. The
 * waiter holds references on its handle, its region and, once queued, its
 * queue, so each of those outlives it. The last reference is always dropped
 * in process context.
 *
 * Deadlines: an hrtimer armed under the queue lock once the waiter is queued.
 * Its callback (hard irq) takes no queue lock: it moves the waiter onto a
 * global expired list and kicks a work item, which claims the waiter under
 * the queue lock and completes it with SYNCMEM_WAIT_TIMED_OUT.
 */
#include <linux/eventfd.h>
#include <linux/file.h>
#include <linux/hrtimer.h>
#include <linux/poll.h>
#include <linux/rhashtable.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

struct syncmem_async {
	struct syncmem_waiter w;
	struct rhash_head hnode;	/* in h->pending, by user_data */
	struct list_head node;		/* in h->pending_list, then h->cq */
	u64 user_data;
	struct syncmem_handle *h;
	struct syncmem_region *region;
	refcount_t ref;
	int result;
	bool timed;
};

/* An async wait with a deadline. */
struct syncmem_async_timed {
	struct syncmem_async a;
	ktime_t deadline;
	struct hrtimer timer;
	struct list_head expire_node;	/* in syncmem_expired */
};

static const struct rhashtable_params syncmem_pending_params = {
	.key_len		= sizeof(u64),
	.key_offset		= offsetof(struct syncmem_async, user_data),
	.head_offset		= offsetof(struct syncmem_async, hnode),
	.automatic_shrinking	= true,
};

static struct kmem_cache *syncmem_async_cache;
static struct kmem_cache *syncmem_async_timed_cache;
static atomic64_t syncmem_nr_async = ATOMIC64_INIT(0);

static DEFINE_SPINLOCK(syncmem_expired_lock);
static LIST_HEAD(syncmem_expired);		/* under syncmem_expired_lock */
static void syncmem_expire_work_fn(struct work_struct *work);
static DECLARE_WORK(syncmem_expire_work, syncmem_expire_work_fn);

static struct syncmem_async_timed *to_timed(struct syncmem_async *a)
{
	return container_of(a, struct syncmem_async_timed, a);
}

u64 syncmem_async_total(void)
{
	return atomic64_read(&syncmem_nr_async);
}

static void syncmem_handle_release_kref(struct kref *ref)
{
	struct syncmem_handle *h = container_of(ref, struct syncmem_handle, ref);

	if (h->eventfd)
		eventfd_ctx_put(h->eventfd);
	rhashtable_destroy(&h->pending);
	kfree(h);
}

static void syncmem_handle_put(struct syncmem_handle *h)
{
	kref_put(&h->ref, syncmem_handle_release_kref);
}

static void syncmem_async_free(struct syncmem_async *a)
{
	struct syncmem_handle *h = a->h;

	syncmem_waiter_release(&a->w);
	if (a->region)
		syncmem_region_put(a->region);
	spin_lock(&h->lock);
	h->nr_outstanding--;
	spin_unlock(&h->lock);
	if (a->timed)
		kmem_cache_free(syncmem_async_timed_cache, to_timed(a));
	else
		kmem_cache_free(syncmem_async_cache, a);
	atomic64_dec(&syncmem_nr_async);
	syncmem_handle_put(h);
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

/*
 * @a has been claimed (it is out of its queue): stop its timer and turn it
 * into a completion record, or drop it if the handle is closing.
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
	if (a->timed && hrtimer_try_to_cancel(&to_timed(a)->timer) == 1)
		refcount_dec(&a->ref);	/* never the last: the owner's is held */

	spin_lock(&h->lock);
	rhashtable_remove_fast(&h->pending, &a->hnode, syncmem_pending_params);
	list_del_init(&a->node);
	closed = h->closed;
	if (!closed) {
		a->result = result;
		list_add_tail(&a->node, &h->cq);
	}
	spin_unlock(&h->lock);

	if (closed) {
		syncmem_async_put(a);	/* the owner's: nobody will read it */
	} else {
		wake_up_interruptible_poll(&h->wq, EPOLLIN | EPOLLRDNORM);
		syncmem_handle_signal(h);
	}
	syncmem_handle_put(h);
}

/* A notify or hand-off claimed an async waiter (wait.c). */
void syncmem_async_complete_waiter(struct syncmem_waiter *w, int result)
{
	syncmem_async_complete(container_of(w, struct syncmem_async, w), result);
}

static enum hrtimer_restart syncmem_async_timer_fn(struct hrtimer *timer)
{
	struct syncmem_async_timed *t =
		container_of(timer, struct syncmem_async_timed, timer);
	unsigned long flags;

	/* The timer's reference moves to the expired list. */
	spin_lock_irqsave(&syncmem_expired_lock, flags);
	list_add_tail(&t->expire_node, &syncmem_expired);
	spin_unlock_irqrestore(&syncmem_expired_lock, flags);
	queue_work(system_wq, &syncmem_expire_work);
	return HRTIMER_NORESTART;
}

static void syncmem_expire_work_fn(struct work_struct *work)
{
	struct syncmem_async_timed *t, *tmp;
	LIST_HEAD(batch);

	spin_lock_irq(&syncmem_expired_lock);
	list_splice_init(&syncmem_expired, &batch);
	spin_unlock_irq(&syncmem_expired_lock);

	list_for_each_entry_safe(t, tmp, &batch, expire_node) {
		struct syncmem_async *a = &t->a;

		list_del(&t->expire_node);
		if (syncmem_waiter_claim(a->region, &a->w, SYNCMEM_W_TIMED_OUT) ==
		    SYNCMEM_W_TIMED_OUT)
			syncmem_async_complete(a, SYNCMEM_WAIT_TIMED_OUT);
		syncmem_async_put(a);	/* the timer's */
	}
}

/* Under the queue lock, right after the waiter was queued: arm its timer. */
static void syncmem_async_queued(struct syncmem_waiter *w)
{
	struct syncmem_async *a = container_of(w, struct syncmem_async, w);
	struct syncmem_async_timed *t;

	if (!a->timed)
		return;
	t = to_timed(a);
	refcount_inc(&a->ref);	/* the timer's */
	hrtimer_start_range_ns(&t->timer, t->deadline, current->timer_slack_ns,
			       HRTIMER_MODE_ABS);
}

static struct syncmem_async *syncmem_async_alloc(u64 deadline)
{
	struct syncmem_async_timed *t;
	struct syncmem_async *a;

	if (deadline == SYNCMEM_NO_DEADLINE) {
		a = kmem_cache_zalloc(syncmem_async_cache, GFP_KERNEL);
		return a;
	}
	t = kmem_cache_zalloc(syncmem_async_timed_cache, GFP_KERNEL);
	if (!t)
		return NULL;
	syncmem_hrtimer_setup(&t->timer, syncmem_async_timer_fn,
			      CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	t->deadline = ns_to_ktime(min_t(u64, deadline, KTIME_MAX));
	t->a.timed = true;
	return &t->a;
}

/* Reserve a slot against max_async_waits. */
static int syncmem_handle_reserve(struct syncmem_handle *h)
{
	int err = 0;

	spin_lock(&h->lock);
	if (h->nr_outstanding >= READ_ONCE(syncmem_max_async_waits))
		err = -EAGAIN;
	else
		h->nr_outstanding++;
	spin_unlock(&h->lock);
	return err;
}

/*
 * A new async wait of @h with the owner's reference, taking a slot, a
 * handle reference and the caller's reference on @r (may be NULL). On
 * failure nothing is taken: ERR_PTR(-EAGAIN) or ERR_PTR(-ENOMEM).
 */
static struct syncmem_async *syncmem_async_new(struct syncmem_handle *h,
					       u64 deadline, u64 user_data,
					       struct syncmem_region *r)
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
		return ERR_PTR(-ENOMEM);
	}
	atomic64_inc(&syncmem_nr_async);
	a->w.async = true;
	refcount_set(&a->ref, 1);
	a->user_data = user_data;
	a->region = r;
	a->h = h;
	kref_get(&h->ref);
	INIT_LIST_HEAD(&a->node);
	return a;
}

long syncmem_ioctl_wait_async(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_wait_async arg;
	struct syncmem_region *r;
	struct syncmem_async *a;
	struct syncmem_wait w;
	long ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.pad)
		return -EINVAL;
	r = syncmem_region_get_fd(arg.region_fd, false);
	if (IS_ERR(r))
		return PTR_ERR(r);
	w = (struct syncmem_wait){
		.offset = arg.offset,
		.expected = arg.expected,
		.deadline_ns = arg.deadline_ns,
		.size = arg.size,
	};
	ret = syncmem_wait_check(r, &w);
	if (ret)
		goto out_region;
	a = syncmem_async_new(h, arg.deadline_ns, arg.user_data, r);
	if (IS_ERR(a)) {
		ret = PTR_ERR(a);
		goto out_region;
	}

	spin_lock(&h->lock);
	ret = rhashtable_lookup_insert_fast(&h->pending, &a->hnode,
					    syncmem_pending_params);
	if (!ret)
		list_add_tail(&a->node, &h->pending_list);
	spin_unlock(&h->lock);
	if (ret) {
		if (ret != -EEXIST)
			ret = -ENOMEM;
		syncmem_async_put(a);	/* gives back region, slot, handle */
		return ret;
	}

	ret = syncmem_wait_enqueue(r, &w, &a->w, syncmem_async_queued);
	if (ret == SYNCMEM_WAIT_QUEUED)
		return ret;
	/* Not queued: no completion will come. */
	spin_lock(&h->lock);
	rhashtable_remove_fast(&h->pending, &a->hnode, syncmem_pending_params);
	list_del_init(&a->node);
	spin_unlock(&h->lock);
	syncmem_async_put(a);
	return ret;

out_region:
	syncmem_region_put(r);
	return ret;
}

long syncmem_ioctl_post(struct syncmem_handle *h, void __user *uarg)
{
	struct syncmem_post arg;
	struct syncmem_async *a;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	a = syncmem_async_new(h, SYNCMEM_NO_DEADLINE, arg.user_data, NULL);
	if (IS_ERR(a))
		return PTR_ERR(a);
	/* Never queued on a word: it is complete from the start. */
	syncmem_async_complete(a, arg.result);
	return 0;
}

/* Claim and complete @a with -ECANCELED; false if somebody claimed it first. */
static bool syncmem_async_cancel_one(struct syncmem_async *a)
{
	if (syncmem_waiter_claim(a->region, &a->w, SYNCMEM_W_CANCELLED) !=
	    SYNCMEM_W_CANCELLED)
		return false;
	syncmem_async_complete(a, -ECANCELED);
	return true;
}

/* Take a reference on the first pending wait (or the one of @user_data). */
static struct syncmem_async *syncmem_pending_get(struct syncmem_handle *h,
						 const u64 *user_data)
{
	struct syncmem_async *a;

	spin_lock(&h->lock);
	if (user_data) {
		rcu_read_lock();
		a = rhashtable_lookup(&h->pending, user_data,
				      syncmem_pending_params);
		rcu_read_unlock();
	} else {
		a = list_first_entry_or_null(&h->pending_list,
					     struct syncmem_async, node);
	}
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
	/* Every claimed waiter leaves the pending list, so this ends. */
	while ((a = syncmem_pending_get(h, NULL))) {
		if (syncmem_async_cancel_one(a))
			cancelled++;
		else
			cond_resched();	/* its completer is about to finish */
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

#define SYNCMEM_READ_BATCH 32

static bool syncmem_cq_ready(struct syncmem_handle *h);

ssize_t syncmem_handle_read(struct syncmem_handle *h, char __user *buf,
			    size_t count, bool nonblock)
{
	struct syncmem_completion recs[SYNCMEM_READ_BATCH];
	size_t max = count / sizeof(recs[0]);
	struct syncmem_async *a, *tmp;
	ssize_t done = 0;
	int err;

	if (!max)
		return -EINVAL;
	for (;;) {
		LIST_HEAD(taken);
		unsigned int n = syncmem_cq_pop(h, recs, min_t(size_t, max,
							       SYNCMEM_READ_BATCH),
						&taken);

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
		if (copy_to_user(buf + done, recs, n * sizeof(recs[0]))) {
			/* Give the records back, in order, for a later read. */
			spin_lock(&h->lock);
			list_splice(&taken, &h->cq);
			spin_unlock(&h->lock);
			return done ? done : -EFAULT;
		}
		list_for_each_entry_safe(a, tmp, &taken, node) {
			list_del(&a->node);
			syncmem_async_put(a);	/* the owner's: record consumed */
		}
		done += n * sizeof(recs[0]);
		max -= n;
		if (!max)
			break;
	}
	return done;
}

/* Records are waiting (a hint for sleeping; popping rechecks under the lock). */
static bool syncmem_cq_ready(struct syncmem_handle *h)
{
	return READ_ONCE(h->cq.next) != &h->cq;
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

struct syncmem_handle *syncmem_handle_create(void)
{
	struct syncmem_handle *h;

	h = kzalloc(sizeof(*h), GFP_KERNEL_ACCOUNT);
	if (!h)
		return NULL;
	if (rhashtable_init(&h->pending, &syncmem_pending_params)) {
		kfree(h);
		return NULL;
	}
	kref_init(&h->ref);
	spin_lock_init(&h->lock);
	mutex_init(&h->eventfd_mutex);
	INIT_LIST_HEAD(&h->pending_list);
	INIT_LIST_HEAD(&h->cq);
	init_waitqueue_head(&h->wq);
	syncmem_on_close_init(h);
	return h;
}

/*
 * The handle's file is closing (maybe its process died): take every queued
 * waiter out of its queue before any later notify can count it, and drop
 * every unread record.
 */
void syncmem_handle_close(struct syncmem_handle *h)
{
	struct syncmem_async *a, *tmp;
	LIST_HEAD(unread);

	spin_lock(&h->lock);
	h->closed = true;
	spin_unlock(&h->lock);

	while ((a = syncmem_pending_get(h, NULL))) {
		spin_lock(&h->lock);
		rhashtable_remove_fast(&h->pending, &a->hnode,
				       syncmem_pending_params);
		list_del_init(&a->node);
		spin_unlock(&h->lock);
		/* Claimed by somebody else: their completion drops it. */
		syncmem_async_cancel_one(a);
		syncmem_async_put(a);
	}

	spin_lock(&h->lock);
	list_splice_init(&h->cq, &unread);
	spin_unlock(&h->lock);
	list_for_each_entry_safe(a, tmp, &unread, node) {
		list_del(&a->node);
		syncmem_async_put(a);
	}
	syncmem_handle_put(h);
}

int syncmem_async_init(void)
{
	syncmem_async_cache = KMEM_CACHE(syncmem_async, SLAB_ACCOUNT);
	syncmem_async_timed_cache = KMEM_CACHE(syncmem_async_timed, SLAB_ACCOUNT);
	if (!syncmem_async_cache || !syncmem_async_timed_cache) {
		syncmem_async_exit();
		return -ENOMEM;
	}
	return 0;
}

void syncmem_async_exit(void)
{
	/* No handle is left, so no timer and no expired waiter either. */
	cancel_work_sync(&syncmem_expire_work);
	kmem_cache_destroy(syncmem_async_timed_cache);
	kmem_cache_destroy(syncmem_async_cache);
}
