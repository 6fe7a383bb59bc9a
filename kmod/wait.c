// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem wait queues: Atomics-style wait/notify on region words, strict
 * FIFO, and the hand-off that fair locks are built on.
 *
 * Each region keeps an rhashtable of queues keyed by byte offset; a queue
 * exists only while it has waiters (or for the instant a waiter creates it),
 * so a notify costs a hash lookup plus the waiters it wakes, whatever other
 * addresses are busy. Each queue has its own spinlock: the value check and
 * the enqueue of WAIT, and the whole of NOTIFY and HANDOFF, run under it.
 *
 * Lifetime of a queue: one reference for being in the table (dropped when it
 * is removed, "dead"), one per waiter from enqueue until that waiter has
 * observed its outcome. Lookups run under RCU, so the memory is freed an RCU
 * grace period after the last reference. A queue that empties stays in the
 * table as "idle" (up to SYNCMEM_IDLE_QUEUES per region), so a word that is
 * waited on again and again costs no allocation; past that cap emptied
 * queues are removed.
 *
 * Claim: a waiter's state leaves SYNCMEM_W_QUEUED exactly once, under the
 * queue lock: to WOKEN or HANDED_OFF by a notify or hand-off, or to
 * CANCELLED by the waiter itself (deadline or signal). Whoever changes it
 * also unlinks it, so a notify can never count a waiter that is leaving, and
 * a waiter a notify has claimed reports woken even if its deadline or a
 * signal arrived in the same instant.
 */
#include <linux/hrtimer.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

/* A blocked WAIT; lives on the waiting task's stack. */
struct syncmem_sync_waiter {
	struct syncmem_waiter w;
	struct task_struct *task;
};

struct syncmem_queue {
	struct rhash_head hnode;
	u64 offset;			/* the key */
	spinlock_t lock;
	struct list_head waiters;	/* oldest first */
	bool dead;			/* removed from the table */
	bool idle;			/* empty but kept in the table */
	refcount_t ref;
	struct rcu_head rcu;
};

static const struct rhashtable_params syncmem_queue_params = {
	.key_len		= sizeof(u64),
	.key_offset		= offsetof(struct syncmem_queue, offset),
	.head_offset		= offsetof(struct syncmem_queue, hnode),
	.automatic_shrinking	= true,
};

/* Empty queues a region keeps for reuse. */
#define SYNCMEM_IDLE_QUEUES	64

static struct kmem_cache *syncmem_queue_cache;
static atomic64_t syncmem_nr_waiters = ATOMIC64_INIT(0);

int syncmem_wait_init(void)
{
	syncmem_queue_cache = KMEM_CACHE(syncmem_queue, SLAB_ACCOUNT);
	return syncmem_queue_cache ? 0 : -ENOMEM;
}

void syncmem_wait_exit(void)
{
	rcu_barrier();	/* queued syncmem_queue_free_rcu() callbacks */
	kmem_cache_destroy(syncmem_queue_cache);
}

u64 syncmem_waiters_total(void)
{
	return atomic64_read(&syncmem_nr_waiters);
}

int syncmem_region_queues_init(struct syncmem_region *r)
{
	atomic_set(&r->nr_waiters, 0);
	atomic_set(&r->nr_idle_queues, 0);
	return rhashtable_init(&r->queues, &syncmem_queue_params);
}

static void syncmem_queue_free_rcu(struct rcu_head *head)
{
	kmem_cache_free(syncmem_queue_cache,
			container_of(head, struct syncmem_queue, rcu));
}

static void syncmem_queue_free_idle(void *ptr, void *arg)
{
	struct syncmem_queue *q = ptr;

	WARN_ON_ONCE(!list_empty(&q->waiters));
	kmem_cache_free(syncmem_queue_cache, q);
}

/* Last reference of the region: no waiter is left, only idle queues. */
void syncmem_region_queues_destroy(struct syncmem_region *r)
{
	rhashtable_free_and_destroy(&r->queues, syncmem_queue_free_idle, NULL);
}

static void syncmem_queue_put(struct syncmem_queue *q)
{
	if (refcount_dec_and_test(&q->ref))
		call_rcu(&q->rcu, syncmem_queue_free_rcu);
}

/*
 * Unlock @q. If nobody waits on it any more, keep it idle for reuse while the
 * region has fewer than SYNCMEM_IDLE_QUEUES of those, else remove it.
 */
static void syncmem_queue_unlock(struct syncmem_region *r,
				 struct syncmem_queue *q)
	__releases(&q->lock)
{
	if (list_empty(&q->waiters) && !q->idle) {
		if (atomic_inc_return(&r->nr_idle_queues) <= SYNCMEM_IDLE_QUEUES) {
			q->idle = true;
			spin_unlock(&q->lock);
			return;
		}
		atomic_dec(&r->nr_idle_queues);
		q->dead = true;
		rhashtable_remove_fast(&r->queues, &q->hnode,
				       syncmem_queue_params);
		spin_unlock(&q->lock);
		syncmem_queue_put(q);	/* the table's reference */
		return;
	}
	spin_unlock(&q->lock);
}

static struct syncmem_queue *syncmem_queue_alloc(u64 offset)
{
	struct syncmem_queue *q;

	q = kmem_cache_alloc(syncmem_queue_cache, GFP_KERNEL);
	if (!q)
		return NULL;
	q->offset = offset;
	spin_lock_init(&q->lock);
	INIT_LIST_HEAD(&q->waiters);
	q->dead = false;
	q->idle = false;
	refcount_set(&q->ref, 1);
	return q;
}

/* Runs with the queue's lock held; @q is NULL only when not creating. */
typedef long (*syncmem_queue_fn)(struct syncmem_region *r,
				 struct syncmem_queue *q, void *arg);

/*
 * Call @fn on the live queue of @offset with its lock held, then unlock it
 * (dropping it if it ended up empty). Without a queue: create one if
 * @create, else call @fn with NULL. A new queue is locked before it is
 * published, so nobody sees it empty and unlocked. A queue found dead
 * (emptied and removed after our lookup) counts as none.
 */
static long syncmem_queue_call(struct syncmem_region *r, u64 offset,
			       bool create, syncmem_queue_fn fn, void *arg)
{
	struct syncmem_queue *q, *old;
	long ret;

	for (;;) {
		rcu_read_lock();
		q = rhashtable_lookup(&r->queues, &offset, syncmem_queue_params);
		if (q) {
			spin_lock(&q->lock);
			rcu_read_unlock();
			if (likely(!q->dead)) {
				ret = fn(r, q, arg);
				syncmem_queue_unlock(r, q);
				return ret;
			}
			spin_unlock(&q->lock);
		} else {
			rcu_read_unlock();
		}
		if (!create)
			return fn(r, NULL, arg);

		q = syncmem_queue_alloc(offset);
		if (!q)
			return -ENOMEM;
		spin_lock(&q->lock);
		old = rhashtable_lookup_get_insert_fast(&r->queues, &q->hnode,
							syncmem_queue_params);
		if (!old) {
			ret = fn(r, q, arg);
			syncmem_queue_unlock(r, q);
			return ret;
		}
		/* Lost a race with another creator, or no memory. */
		spin_unlock(&q->lock);
		kmem_cache_free(syncmem_queue_cache, q);
		if (IS_ERR(old))
			return -ENOMEM;
	}
}

static void syncmem_waiter_unlink(struct syncmem_region *r,
				  struct syncmem_waiter *w)
{
	list_del(&w->node);
	atomic_dec(&r->nr_waiters);
	atomic64_dec(&syncmem_nr_waiters);
}

/*
 * Called with w->q->lock held: claim @w for a notify or hand-off. A blocked
 * WAIT is woken at once; an async waiter goes on @done, to be completed once
 * the queue lock is dropped.
 */
static void syncmem_waiter_wake(struct syncmem_region *r,
				struct syncmem_waiter *w, int state,
				struct list_head *done)
{
	struct task_struct *task;

	syncmem_waiter_unlink(r, w);
	if (w->async) {
		w->state = state;
		list_add_tail(&w->node, done);
		return;
	}
	task = container_of(w, struct syncmem_sync_waiter, w)->task;
	get_task_struct(task);
	/*
	 * The last access to *w: once the sleeper sees the new state it
	 * returns and its stack frame is gone. Release orders the unlink
	 * before it.
	 */
	smp_store_release(&w->state, state);
	wake_up_process(task);
	put_task_struct(task);
}

/* Complete the async waiters a notify or hand-off claimed. */
static void syncmem_complete_claimed(struct list_head *done)
{
	struct syncmem_waiter *w, *tmp;

	list_for_each_entry_safe(w, tmp, done, node) {
		list_del(&w->node);
		syncmem_async_complete_waiter(w, w->state == SYNCMEM_W_HANDED_OFF ?
					      SYNCMEM_WAIT_HANDED_OFF :
					      SYNCMEM_WAIT_WOKEN);
	}
}

static u64 syncmem_word_read(struct syncmem_region *r, u64 offset, u32 size)
{
	void *p = r->kaddr + offset;

	return size == 4 ? READ_ONCE(*(u32 *)p) : READ_ONCE(*(u64 *)p);
}

static void syncmem_word_write(struct syncmem_region *r, u64 offset, u32 size,
			       u64 value)
{
	void *p = r->kaddr + offset;

	if (size == 4)
		WRITE_ONCE(*(u32 *)p, (u32)value);
	else
		WRITE_ONCE(*(u64 *)p, value);
}

/* Add @value to the word atomically: user space may CAS it meanwhile. */
static void syncmem_word_add(struct syncmem_region *r, u64 offset, u32 size,
			     u64 value)
{
	void *p = r->kaddr + offset;

	if (size == 4) {
		u32 old = READ_ONCE(*(u32 *)p);

		while (!try_cmpxchg((u32 *)p, &old, old + (u32)value))
			;
	} else {
		u64 old = READ_ONCE(*(u64 *)p);

		while (!try_cmpxchg((u64 *)p, &old, old + value))
			;
	}
}

/*
 * A naturally aligned word of @size bytes wholly inside the region, and a
 * @value that fits it: 0 or -EINVAL.
 */
int syncmem_word_check(struct syncmem_region *r, u64 offset, u32 size,
		       u64 value)
{
	if (size != 4 && size != 8)
		return -EINVAL;
	if (size == 4 && value > U32_MAX)
		return -EINVAL;
	if (offset & (size - 1))
		return -EINVAL;
	if (offset >= r->size || size > r->size - offset)
		return -EINVAL;
	return 0;
}

/**
 * syncmem_waiter_claim - take a queued waiter out of its queue
 * @r:		The region of the waiter's word.
 * @w:		A waiter that was queued (it holds a reference on its queue).
 * @state:	The final state to give it (TIMED_OUT or CANCELLED).
 *
 * Returns @state if @w was still queued (it is now out of the queue and
 * the caller completes it), else the final state a notify or hand-off gave
 * it first.
 */
int syncmem_waiter_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			 int state)
{
	struct syncmem_queue *q = w->q;

	spin_lock(&q->lock);
	if (w->state == SYNCMEM_W_QUEUED) {
		syncmem_waiter_unlink(r, w);
		w->state = state;
		syncmem_queue_unlock(r, q);
		return state;
	}
	state = w->state;
	spin_unlock(&q->lock);
	return state;
}

/* The waiter is done with its queue: drop the reference it took. */
void syncmem_waiter_release(struct syncmem_waiter *w)
{
	if (w->q)
		syncmem_queue_put(w->q);
}

/* Sleep until claimed, the deadline passes or a signal arrives. */
static long syncmem_waiter_sleep(struct syncmem_region *r,
				 struct syncmem_waiter *w, u64 deadline)
{
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
		set_current_state(TASK_INTERRUPTIBLE);
		/* Pairs with smp_store_release() in syncmem_waiter_wake(). */
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

	if (state == SYNCMEM_W_QUEUED)
		state = syncmem_waiter_claim(r, w, SYNCMEM_W_CANCELLED);
	syncmem_waiter_release(w);

	switch (state) {
	case SYNCMEM_W_WOKEN:
		return SYNCMEM_WAIT_WOKEN;
	case SYNCMEM_W_HANDED_OFF:
		return SYNCMEM_WAIT_HANDED_OFF;
	default:
		/*
		 * Cancelled by us. A signal: let its handler run, then the
		 * syscall restarts with the same arguments, hence the same
		 * absolute deadline (a fatal signal never comes back).
		 */
		return expired ? SYNCMEM_WAIT_TIMED_OUT : -ERESTARTNOINTR;
	}
}

struct syncmem_wait_ctx {
	const struct syncmem_wait *arg;
	struct syncmem_waiter *w;
	void (*queued)(struct syncmem_waiter *w);
};

static long syncmem_wait_locked(struct syncmem_region *r,
				struct syncmem_queue *q, void *data)
{
	struct syncmem_wait_ctx *ctx = data;
	const struct syncmem_wait *arg = ctx->arg;
	struct syncmem_waiter *w = ctx->w;

	/*
	 * Full barrier between publishing the queue (and taking its lock)
	 * and reading the word; pairs with the smp_mb() in notify and
	 * hand-off between the caller's store to the word and the lookup.
	 * Either the notifier finds this queue, or we see its store.
	 */
	smp_mb__after_spinlock();
	if (syncmem_word_read(r, arg->offset, arg->size) != arg->expected)
		return SYNCMEM_WAIT_NOT_EQUAL;
	if (arg->deadline_ns != SYNCMEM_NO_DEADLINE &&
	    arg->deadline_ns <= ktime_get_ns())
		return SYNCMEM_WAIT_TIMED_OUT;
	w->state = SYNCMEM_W_QUEUED;
	w->q = q;
	if (q->idle) {
		q->idle = false;
		atomic_dec(&r->nr_idle_queues);
	}
	refcount_inc(&q->ref);
	list_add_tail(&w->node, &q->waiters);
	atomic_inc(&r->nr_waiters);
	atomic64_inc(&syncmem_nr_waiters);
	if (ctx->queued)
		ctx->queued(w);
	return SYNCMEM_WAIT_QUEUED;
}

/**
 * syncmem_wait_enqueue - compare the word and queue @w, atomically
 * @r:		The region (a reference is held by the caller).
 * @arg:	The wait, validated.
 * @w:		The waiter, its @async set.
 * @queued:	Called under the queue lock once @w is queued (may be NULL).
 *
 * Returns SYNCMEM_WAIT_NOT_EQUAL, SYNCMEM_WAIT_TIMED_OUT (deadline already
 * passed), SYNCMEM_WAIT_QUEUED, or -ENOMEM.
 */
long syncmem_wait_enqueue(struct syncmem_region *r,
			  const struct syncmem_wait *arg,
			  struct syncmem_waiter *w,
			  void (*queued)(struct syncmem_waiter *w))
{
	struct syncmem_wait_ctx ctx = { .arg = arg, .w = w, .queued = queued };

	w->q = NULL;
	return syncmem_queue_call(r, arg->offset, true, syncmem_wait_locked, &ctx);
}

static long syncmem_wait(struct syncmem_region *r, const struct syncmem_wait *arg)
{
	struct syncmem_sync_waiter sw = { .task = current };
	long ret;

	ret = syncmem_wait_enqueue(r, arg, &sw.w, NULL);
	if (ret != SYNCMEM_WAIT_QUEUED)
		return ret;
	return syncmem_waiter_sleep(r, &sw.w, arg->deadline_ns);
}

struct syncmem_notify_ctx {
	u32 count;
	struct list_head done;	/* claimed async waiters */
};

static long syncmem_notify_locked(struct syncmem_region *r,
				  struct syncmem_queue *q, void *data)
{
	struct syncmem_notify_ctx *ctx = data;
	struct syncmem_waiter *w, *tmp;
	long woken = 0;

	if (!q)
		return 0;
	list_for_each_entry_safe(w, tmp, &q->waiters, node) {
		syncmem_waiter_wake(r, w, SYNCMEM_W_WOKEN, &ctx->done);
		if (++woken == ctx->count || woken == INT_MAX)
			break;
	}
	return woken;
}

static long syncmem_notify(struct syncmem_region *r, u64 offset, u32 count)
{
	struct syncmem_notify_ctx ctx = { .count = count };
	long woken;

	if (!count)
		return 0;
	INIT_LIST_HEAD(&ctx.done);
	smp_mb();	/* see syncmem_wait_locked() */
	woken = syncmem_queue_call(r, offset, false, syncmem_notify_locked, &ctx);
	syncmem_complete_claimed(&ctx.done);
	return woken;
}

/* Store @value if the word holds @expected, atomically; true if stored. */
static bool syncmem_word_cmpxchg(struct syncmem_region *r, u64 offset,
				 u32 size, u64 expected, u64 value)
{
	void *p = r->kaddr + offset;

	if (size == 4) {
		u32 old = expected;

		return try_cmpxchg((u32 *)p, &old, (u32)value);
	}
	return try_cmpxchg((u64 *)p, &expected, value);
}

/**
 * syncmem_store_wake_all - store a value into a word, then wake all waiters
 * @r:		The region (a reference is held by the caller).
 * @offset:	The word, validated with syncmem_word_check().
 * @size:	4 or 8.
 * @if_equal:	Only if the word holds @expected (compared atomically).
 * @expected:	See @if_equal.
 * @value:	The value to store.
 *
 * The store comes first, so a waiter entering afterwards sees the new value
 * and one already queued is woken. Returns the number woken, or -EAGAIN when
 * @if_equal and the word held something else (nothing stored or woken).
 */
long syncmem_store_wake_all(struct syncmem_region *r, u64 offset, u32 size,
			    bool if_equal, u64 expected, u64 value)
{
	if (if_equal) {
		if (!syncmem_word_cmpxchg(r, offset, size, expected, value))
			return -EAGAIN;
	} else {
		syncmem_word_write(r, offset, size, value);
	}
	return syncmem_notify(r, offset, U32_MAX);
}

struct syncmem_handoff_ctx {
	const struct syncmem_handoff *arg;
	struct list_head done;
};

static long syncmem_handoff_locked(struct syncmem_region *r,
				   struct syncmem_queue *q, void *data)
{
	struct syncmem_handoff_ctx *ctx = data;
	const struct syncmem_handoff *arg = ctx->arg;

	if (list_empty(&q->waiters)) {
		if (arg->flags & SYNCMEM_HANDOFF_ADD)
			syncmem_word_add(r, arg->offset, arg->size, arg->value);
		else
			syncmem_word_write(r, arg->offset, arg->size, arg->value);
		return SYNCMEM_HANDOFF_STORED;
	}
	syncmem_waiter_wake(r, list_first_entry(&q->waiters,
						struct syncmem_waiter, node),
			    SYNCMEM_W_HANDED_OFF, &ctx->done);
	return SYNCMEM_HANDOFF_WOKE;
}

static long syncmem_handoff(struct syncmem_region *r,
			    const struct syncmem_handoff *arg)
{
	struct syncmem_handoff_ctx ctx = { .arg = arg };
	long ret;

	INIT_LIST_HEAD(&ctx.done);
	smp_mb();	/* see syncmem_wait_locked() */
	/* Created if absent: a concurrent waiter must see the store or us. */
	ret = syncmem_queue_call(r, arg->offset, true, syncmem_handoff_locked,
				 &ctx);
	syncmem_complete_claimed(&ctx.done);
	return ret;
}

/* Validate a word of @r for a wait (also used by async waits). */
int syncmem_wait_check(struct syncmem_region *r, const struct syncmem_wait *arg)
{
	if (arg->flags)
		return -EINVAL;
	return syncmem_word_check(r, arg->offset, arg->size, arg->expected);
}

long syncmem_ioctl_wait(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_wait arg;
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	err = syncmem_wait_check(r, &arg);
	if (err)
		return err;
	return syncmem_wait(r, &arg);
}

long syncmem_ioctl_notify(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_notify arg;
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	err = syncmem_word_check(r, arg.offset, 4, 0);
	if (err)
		return err;
	return syncmem_notify(r, arg.offset, arg.count);
}

long syncmem_ioctl_handoff(struct syncmem_region *r, void __user *uarg)
{
	struct syncmem_handoff arg;
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags & ~SYNCMEM_HANDOFF_FLAGS)
		return -EINVAL;
	err = syncmem_word_check(r, arg.offset, arg.size, arg.value);
	if (err)
		return err;
	return syncmem_handoff(r, &arg);
}
