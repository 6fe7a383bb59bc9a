// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem wait queues: Atomics-style wait/notify on region words, strict
 * FIFO, and the hand-off that fair locks are built on.
 *
 * Each region has a fixed array of buckets, sized from the region when it is
 * created and charged to its creator's memory cgroup; a word's offset hashes
 * to one bucket. A bucket's spinlock guards the queues hashed to it: one per
 * word that has waiters (plus a few idle ones kept for reuse, up to
 * SYNCMEM_IDLE_QUEUES per region). The value check and the enqueue of WAIT,
 * and the decisions of NOTIFY and HANDOFF, run under that lock, which rules
 * out lost wake-ups. A queue is allocated only by a waiter, before it takes
 * the lock; NOTIFY and HANDOFF never allocate (no queue: nobody waits).
 *
 * A queue keeps two lists in arrival order: waiters of writable region fds,
 * and observers (waiters of read-only fds), who can never be handed
 * anything: a read-only open confers no ownership. Every notify of the word
 * wakes all observers besides its count of writable waiters, and so does a
 * hand-off that stores because no writable waiter is queued.
 *
 * Claim: a waiter's state leaves SYNCMEM_W_QUEUED exactly once, under the
 * bucket lock: to WOKEN or HANDED_OFF by a notify or hand-off, or to
 * TIMED_OUT or CANCELLED by its own side (deadline, signal, cancel, close).
 * Whoever changes it also unlinks it, so a notify can never count a waiter
 * that is leaving, and a waiter a notify has claimed reports woken even if
 * its deadline or a signal arrived in the same instant.
 *
 * Waking: a notify claims at most SYNCMEM_WAKE_BATCH waiters per hold of the
 * lock, holding a reference on each sleeping task, and wakes them (and
 * completes async waiters) after dropping it; then it takes the lock again
 * for the next batch. So the lock is never held for more than a batch, and
 * nothing that may sleep on PREEMPT_RT (waking, dropping a task) runs under
 * it. Arrival numbers keep a notify to the waiters queued when it began.
 */
#include <linux/hash.h>
#include <linux/hrtimer.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/pid_namespace.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

struct syncmem_bucket {
	spinlock_t lock;		/* seq, queues and their waiters */
	u64 seq;			/* stamp of the latest arrival */
	struct hlist_head queues;
};

struct syncmem_queue {
	struct hlist_node node;		/* in its bucket */
	u64 offset;			/* the key */
	struct list_head waiters;	/* writable fds' waiters, oldest first */
	struct list_head observers;	/* read-only fds' waiters, oldest first */
	u32 nr;				/* waiters and observers queued */
	bool idle;			/* empty but kept in the bucket */
	bool owner_word;		/* in its region's owner_queues */
	/*
	 * The region's scan that took it last. Every pass takes every queue
	 * listed when it starts, so 16 bits never wrap onto a live value;
	 * they fit where padding was (a queue is part of a waiter's cost).
	 */
	u16 scan_pass;
	struct list_head owner_node;	/* there, while it has waiters */
};

/*
 * Queues of owner words that have (or are getting) waiters are listed in
 * their region (under its owner_lock), and the regions that have some here:
 * what a death makes syncmem_owner_words_scan() look at. Both locks are
 * taken inside bucket locks, this one inside a region's; neither is held
 * across more than a chunk of a list.
 */
static DEFINE_SPINLOCK(syncmem_owner_regions_lock);
static LIST_HEAD(syncmem_owner_regions);
static u32 syncmem_owner_walk_pass;	/* under syncmem_owner_regions_lock */

/* Where the scans of owner words run (syncmem_owner_words_scan()). */
static struct workqueue_struct *syncmem_scan_wq;

/* Empty queues a region keeps for reuse. */
#define SYNCMEM_IDLE_QUEUES	64

/* Buckets per page of region, and the bounds of a region's bucket count. */
#define SYNCMEM_BUCKETS_PER_PAGE	4
#define SYNCMEM_BUCKETS_MIN		16
#define SYNCMEM_BUCKETS_MAX		16384

/* Waiters claimed per hold of a bucket lock. */
#define SYNCMEM_WAKE_BATCH	16

/* Gone waiters (syncmem_waiter_gone()) taken out per hold of a bucket lock. */
#define SYNCMEM_GONE_BATCH	64

/* How long the next heir of a lock word may spin before it sleeps. */
#define SYNCMEM_HEIR_SPIN_NS	(100 * NSEC_PER_USEC)

static struct kmem_cache *syncmem_queue_cache;

static void syncmem_region_owner_scan(struct work_struct *work);
static void syncmem_owner_queue_unmark(struct syncmem_region *r,
				       struct syncmem_queue *q);

/*
 * Queues go back to the cache with both lists empty, so they are built once
 * per slab object, not per use. (A cache with a constructor is also never
 * merged with another: /proc/slabinfo counts exactly the queues.)
 */
static void syncmem_queue_ctor(void *obj)
{
	struct syncmem_queue *q = obj;

	INIT_LIST_HEAD(&q->waiters);
	INIT_LIST_HEAD(&q->observers);
}

int syncmem_wait_init(void)
{
	syncmem_queue_cache = kmem_cache_create("syncmem_queue",
						sizeof(struct syncmem_queue),
						__alignof__(struct syncmem_queue),
						SLAB_ACCOUNT, syncmem_queue_ctor);
	syncmem_scan_wq = alloc_workqueue("syncmem_scan", WQ_UNBOUND, 0);
	if (!syncmem_queue_cache || !syncmem_scan_wq) {
		syncmem_wait_exit();
		return -ENOMEM;
	}
	return 0;
}

/* No region is left, so no region's scan either; the walk may still run. */
void syncmem_wait_exit(void)
{
	if (syncmem_scan_wq)
		destroy_workqueue(syncmem_scan_wq);
	kmem_cache_destroy(syncmem_queue_cache);
}

int syncmem_region_queues_init(struct syncmem_region *r)
{
	unsigned long n = clamp_t(unsigned long,
				  r->nr_pages * SYNCMEM_BUCKETS_PER_PAGE,
				  SYNCMEM_BUCKETS_MIN, SYNCMEM_BUCKETS_MAX);
	unsigned long i;

	n = roundup_pow_of_two(n);
	r->buckets = kvcalloc(n, sizeof(*r->buckets), GFP_KERNEL_ACCOUNT);
	if (!r->buckets)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		spin_lock_init(&r->buckets[i].lock);
		INIT_HLIST_HEAD(&r->buckets[i].queues);
	}
	r->bucket_bits = ilog2(n);
	r->bucket_seed = get_random_u64();
	atomic_set(&r->nr_waiters, 0);
	atomic_set(&r->nr_idle_queues, 0);
	spin_lock_init(&r->owner_lock);
	INIT_LIST_HEAD(&r->owner_queues);
	INIT_WORK(&r->owner_scan_work, syncmem_region_owner_scan);
	INIT_LIST_HEAD(&r->away);
	mutex_init(&r->away_flush_mutex);
	return 0;
}

/* Last reference of the region: no waiter is left, only idle queues. */
void syncmem_region_queues_destroy(struct syncmem_region *r)
{
	unsigned long i, n = 1UL << r->bucket_bits;
	struct syncmem_queue *q;
	struct hlist_node *tmp;

	if (!r->buckets)
		return;
	for (i = 0; i < n; i++) {
		hlist_for_each_entry_safe(q, tmp, &r->buckets[i].queues, node) {
			WARN_ON_ONCE(!list_empty(&q->waiters) ||
				     !list_empty(&q->observers));
			kmem_cache_free(syncmem_queue_cache, q);
		}
	}
	kvfree(r->buckets);
}

static struct syncmem_bucket *syncmem_bucket_of(struct syncmem_region *r,
						u64 offset)
{
	return &r->buckets[hash_64(offset ^ r->bucket_seed, r->bucket_bits)];
}

/* The caller holds the lock of the bucket of @q. */
static void syncmem_assert_queue_locked(struct syncmem_region *r,
					struct syncmem_queue *q)
{
	lockdep_assert_held(&syncmem_bucket_of(r, q->offset)->lock);
}

static struct syncmem_queue *syncmem_queue_find(struct syncmem_bucket *b,
						u64 offset)
{
	struct syncmem_queue *q;

	lockdep_assert_held(&b->lock);
	hlist_for_each_entry(q, &b->queues, node)
		if (q->offset == offset)
			return q;
	return NULL;
}

/*
 * Under b->lock: @q may have emptied. Keep it idle while the region has
 * fewer than SYNCMEM_IDLE_QUEUES of those, else unhash it and return it for
 * the caller to free once the lock is dropped.
 */
static struct syncmem_queue *syncmem_queue_settle(struct syncmem_region *r,
						  struct syncmem_queue *q)
{
	if (!q || !list_empty(&q->waiters) || !list_empty(&q->observers))
		return NULL;
	if (q->owner_word)
		syncmem_owner_queue_unmark(r, q);
	if (q->idle)
		return NULL;
	if (atomic_inc_return(&r->nr_idle_queues) <= SYNCMEM_IDLE_QUEUES) {
		q->idle = true;
		return NULL;
	}
	atomic_dec(&r->nr_idle_queues);
	hlist_del(&q->node);
	return q;
}

static void syncmem_queue_free(struct syncmem_queue *q)
{
	if (q)
		kmem_cache_free(syncmem_queue_cache, q);
}

static void syncmem_waiter_unlink(struct syncmem_region *r,
				  struct syncmem_waiter *w)
{
	list_del(&w->node);
	w->q->nr--;
	atomic_dec(&r->nr_waiters);
	atomic_long_dec(&r->ns->usage.waiters);
}

/* The WAIT result of a waiter claimed by a waker. */
static int syncmem_wait_result(int state)
{
	switch (state) {
	case SYNCMEM_W_HANDED_OFF:
		return SYNCMEM_WAIT_HANDED_OFF;
	case SYNCMEM_W_OWNER_DIED:
		return SYNCMEM_WAIT_OWNER_DIED;
	default:
		return SYNCMEM_WAIT_WOKEN;
	}
}

/*
 * A waiter that will never take up what it is given: an async waiter whose
 * handle is closing or whose program has ended (exit or execve), a blocked
 * waiter away from its wait whose thread is gone. Wakers take it out of its
 * queue (syncmem_gone_claim()).
 */
static bool syncmem_waiter_gone(const struct syncmem_waiter *w)
{
	if (w->async ? syncmem_async_gone(w) : syncmem_away_gone(w))
		return true;
	/* An owner waiter whose owner died: its process is gone or going. */
	return w->owner && !syncmem_owner_alive(w->owner);
}

/* What one hold of a bucket lock claimed, to be woken once it is dropped. */
struct syncmem_wake {
	struct task_struct *tasks[SYNCMEM_WAKE_BATCH];
	unsigned int nr_tasks;
	unsigned int nr;		/* claimed in this batch */
	unsigned int nr_gone;		/* gone waiters taken out in this hold */
	struct list_head async;		/* claimed async waiters */
	struct list_head gone;		/* gone async waiters taken out */
	struct task_struct *heir;	/* woken early to spin: next in line */
};

static void syncmem_wake_init(struct syncmem_wake *wk)
{
	*wk = (struct syncmem_wake){ .nr = 0 };
	INIT_LIST_HEAD(&wk->async);
	INIT_LIST_HEAD(&wk->gone);
}

/*
 * Under b->lock: take gone waiter @w out of its queue, so that no waker
 * walks it again. An async waiter is completed once the lock is dropped
 * (its record is dropped: nobody will read it); a waiter away is left for
 * away.c to end (it was given nothing, so nothing is passed on). The caller
 * bounds how many one hold takes (SYNCMEM_GONE_BATCH), and leaves a blocked
 * waiter still in its call (syncmem_gone_stays()): it is on its way out.
 */
static void syncmem_gone_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			       struct syncmem_wake *wk)
{
	lockdep_assert_held(&w->b->lock);
	syncmem_waiter_unlink(r, w);
	wk->nr_gone++;
	w->state = SYNCMEM_W_CANCELLED;
	if (w->async)
		list_add_tail(&w->node, &wk->gone);
}

/* Is gone waiter @w one that stays queued (syncmem_gone_claim())? */
static bool syncmem_gone_stays(const struct syncmem_waiter *w)
{
	return !w->async && container_of(w, struct syncmem_sync_waiter, w)->task;
}

/* Under b->lock: may this hold take out one more gone waiter? */
static bool syncmem_gone_room(const struct syncmem_wake *wk)
{
	return wk->nr_gone < SYNCMEM_GONE_BATCH;
}

/*
 * Under b->lock: the oldest writable waiter of @q that can take a hand-off,
 * taking out the gone ones ahead of it; NULL if there is none. When this
 * hold has taken out SYNCMEM_GONE_BATCH gone waiters before finding it,
 * ERR_PTR(-EAGAIN): the caller drops the lock, flushes @wk and looks again.
 */
static struct syncmem_waiter *syncmem_first_live(struct syncmem_region *r,
						 struct syncmem_queue *q,
						 struct syncmem_wake *wk)
{
	struct syncmem_waiter *w, *tmp;

	syncmem_assert_queue_locked(r, q);
	list_for_each_entry_safe(w, tmp, &q->waiters, node) {
		if (!syncmem_waiter_gone(w))
			return w;
		if (syncmem_gone_stays(w))
			continue;
		if (!syncmem_gone_room(wk))
			return ERR_PTR(-EAGAIN);
		syncmem_gone_claim(r, w, wk);
	}
	return NULL;
}

/*
 * Under b->lock, as a lock word is handed to a waiter of @q: the waiter
 * after it is next in line. A blocked one is woken now to spin for the
 * word (syncmem_heir_spin()), so that its wake-up overlaps the new
 * holder's section instead of following it. Only a hint: it looks past at
 * most SYNCMEM_GONE_BATCH gone waiters and takes none out, so that a
 * caller walking @q keeps its place.
 */
static void syncmem_heir_warn(struct syncmem_queue *q, struct syncmem_wake *wk)
{
	struct syncmem_waiter *next;
	struct syncmem_sync_waiter *sw;
	unsigned int n = 0;

	if (wk->heir)
		return;
	list_for_each_entry(next, &q->waiters, node) {
		if (!syncmem_waiter_gone(next))
			break;
		if (++n == SYNCMEM_GONE_BATCH)
			return;
	}
	if (list_entry_is_head(next, &q->waiters, node) || next->async || !next->owner)
		return;
	sw = container_of(next, struct syncmem_sync_waiter, w);
	/* Away (no task): not sleeping here. */
	if (!sw->task || READ_ONCE(sw->heir))
		return;
	WRITE_ONCE(sw->heir, true);
	get_task_struct(sw->task);
	wk->heir = sw->task;
}

/* Under b->lock: claim @w for a notify or hand-off (@state). */
static void syncmem_wake_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			       int state, struct syncmem_wake *wk)
{
	struct syncmem_queue *q = w->q;
	struct task_struct *task;

	syncmem_waiter_unlink(r, w);
	wk->nr++;
	if (w->async) {
		w->state = state;
		list_add_tail(&w->node, &wk->async);
		return;
	}
	/* Away (in a signal handler, stopped): it finds out when it comes back. */
	task = container_of(w, struct syncmem_sync_waiter, w)->task;
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
			syncmem_heir_warn(q, wk);
	}
	/*
	 * The last access to *w: once the sleeper sees the new state it
	 * returns and its stack frame is gone. Release orders the unlink
	 * before it; pairs with the acquire in syncmem_waiter_sleep().
	 */
	smp_store_release(&w->state, state);
}

/* With the lock dropped: wake what a batch claimed. */
static void syncmem_wake_flush(struct syncmem_wake *wk)
{
	struct syncmem_waiter *w, *tmp;
	unsigned int i;

	for (i = 0; i < wk->nr_tasks; i++) {
		wake_up_process(wk->tasks[i]);
		put_task_struct(wk->tasks[i]);
	}
	wk->nr_tasks = 0;
	wk->nr = 0;
	if (wk->heir) {
		wake_up_process(wk->heir);
		put_task_struct(wk->heir);
		wk->heir = NULL;
	}
	list_for_each_entry_safe(w, tmp, &wk->async, node) {
		list_del(&w->node);
		syncmem_async_complete_waiter(w, syncmem_wait_result(w->state));
	}
	wk->nr_gone = 0;
	list_for_each_entry_safe(w, tmp, &wk->gone, node) {
		list_del(&w->node);
		syncmem_async_complete_waiter(w, -ECANCELED);
	}
}

/*
 * A wake-up of one word: up to @want writable waiters get @state, and every
 * observer is woken if @observers. @decide, if set, runs once under the lock
 * before anything is claimed (with the word's queue or NULL) and may change
 * all three; its result is the call's result, else the number woken.
 */
struct syncmem_wake_op {
	u64 offset;
	u32 want;
	int state;
	bool observers;
	long (*decide)(struct syncmem_region *r, struct syncmem_queue *q,
		       struct syncmem_wake_op *op);
	const void *arg;
	const struct syncmem_handoff *handoff;	/* a HANDOFF: noted in whom it claims */
	/*
	 * Set by @decide: the one writable waiter to claim (with @state), the
	 * very one it chose (a word may name it), before any batch.
	 */
	struct syncmem_waiter *target;
	/*
	 * Set by @decide, having changed nothing, when it met more gone
	 * waiters than one hold takes out: it runs again in the next hold.
	 */
	bool again;
	struct syncmem_wake *wk;	/* of the hold @decide runs in */
};

/*
 * Under b->lock, before claiming @w for a HANDOFF: note the HANDOFF whole
 * (value, flags and size: a waiter of either size may be handed a word of
 * either size), so that a record dropped unread redoes exactly it
 * (syncmem_wait_pass_on()). Before the claim, which is the last touch of a
 * sleeper's waiter; its arrival number is done with already.
 */
static void syncmem_note_handoff(const struct syncmem_wake_op *op,
				 struct syncmem_waiter *w)
{
	const struct syncmem_handoff *h = op->handoff;

	lockdep_assert_held(&w->b->lock);
	if (!h)
		return;
	w->handoff_value = h->value;
	w->handoff = h->flags |
		     (h->size == 8 ? SYNCMEM_W_HANDOFF_8 : SYNCMEM_W_HANDOFF_4);
}

/*
 * In @decide: the oldest writable waiter of @q that can take a hand-off
 * (NULL: none). NULL with @op->again set when the gone waiters ahead of it
 * are more than this hold takes out: @decide then returns at once, having
 * changed nothing, and runs again in the next hold.
 */
static struct syncmem_waiter *syncmem_decide_first(struct syncmem_region *r,
						   struct syncmem_queue *q,
						   struct syncmem_wake_op *op)
{
	struct syncmem_waiter *w = q ? syncmem_first_live(r, q, op->wk) : NULL;

	if (!IS_ERR(w))
		return w;
	op->again = true;
	return NULL;
}

/* Under b->lock: claim what this batch may of @q. True if it had to stop. */
static bool syncmem_wake_batch(struct syncmem_region *r, struct syncmem_queue *q,
			       struct syncmem_wake_op *op, u64 limit,
			       struct syncmem_wake *wk)
{
	struct syncmem_waiter *w, *tmp;

	list_for_each_entry_safe(w, tmp, &q->waiters, node) {
		if (!op->want || w->seq > limit)
			break;
		if (wk->nr == SYNCMEM_WAKE_BATCH)
			return true;
		if (syncmem_waiter_gone(w)) {
			if (syncmem_gone_stays(w))
				continue;
			if (!syncmem_gone_room(wk))
				return true;
			syncmem_gone_claim(r, w, wk);
			continue;
		}
		syncmem_note_handoff(op, w);
		syncmem_wake_claim(r, w, op->state, wk);
		op->want--;
	}
	if (!op->observers)
		return false;
	list_for_each_entry_safe(w, tmp, &q->observers, node) {
		if (w->seq > limit)
			break;
		if (wk->nr == SYNCMEM_WAKE_BATCH)
			return true;
		if (syncmem_waiter_gone(w)) {
			if (syncmem_gone_stays(w))
				continue;
			if (!syncmem_gone_room(wk))
				return true;
			syncmem_gone_claim(r, w, wk);
			continue;
		}
		syncmem_wake_claim(r, w, SYNCMEM_W_WOKEN, wk);
	}
	return false;
}

static long syncmem_wake_word(struct syncmem_region *r, struct syncmem_wake_op *op)
{
	struct syncmem_bucket *b = syncmem_bucket_of(r, op->offset);
	struct syncmem_wake wk;
	struct syncmem_queue *q, *dead;
	long woken = 0, ret = 0;
	bool first = true, more;
	u64 limit = 0;

	syncmem_wake_init(&wk);
	op->wk = &wk;
	do {
		spin_lock(&b->lock);
		q = syncmem_queue_find(b, op->offset);
		more = false;
		if (first) {
			/* Only waiters queued before this call count. */
			limit = b->seq;
			op->again = false;
			if (op->decide)
				ret = op->decide(r, q, op);
			/* It took out a batch of gone waiters: decide again. */
			more = op->again;
			first = more;
			if (op->target) {
				syncmem_note_handoff(op, op->target);
				syncmem_wake_claim(r, op->target, op->state, &wk);
				op->want = 0;
			}
		}
		if (!more)
			more = q && syncmem_wake_batch(r, q, op, limit, &wk);
		dead = syncmem_queue_settle(r, q);
		spin_unlock(&b->lock);
		woken += wk.nr;
		syncmem_wake_flush(&wk);
		syncmem_queue_free(dead);
		if (more)
			cond_resched();
	} while (more && woken < INT_MAX);
	return op->decide ? ret : woken;
}

/* The word changed outside a wake-up: wake its observers (read-only waiters). */
static void syncmem_wake_observers(struct syncmem_region *r, u64 offset)
{
	struct syncmem_wake_op op = {
		.offset = offset,
		.state = SYNCMEM_W_WOKEN,
		.observers = true,
	};

	syncmem_wake_word(r, &op);
}

/*
 * The kernel address of the word at @offset: words are naturally aligned,
 * so one never straddles two pages, and region pages are never highmem.
 */
static void *syncmem_region_word(struct syncmem_region *r, u64 offset)
{
	return page_address(r->pages[offset >> PAGE_SHIFT]) +
	       offset_in_page(offset);
}

u64 syncmem_word_read(struct syncmem_region *r, u64 offset, u32 size)
{
	void *p = syncmem_region_word(r, offset);

	return size == 4 ? READ_ONCE(*(u32 *)p) : READ_ONCE(*(u64 *)p);
}

static void syncmem_word_write(struct syncmem_region *r, u64 offset, u32 size,
			       u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		WRITE_ONCE(*(u32 *)p, (u32)value);
	else
		WRITE_ONCE(*(u64 *)p, value);
}

/*
 * Add @value to the word with one atomic instruction: user space may change
 * the word meanwhile, and a loop could be kept spinning by whoever does.
 */
static void syncmem_word_add(struct syncmem_region *r, u64 offset, u32 size,
			     u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		atomic_add((int)(u32)value, (atomic_t *)p);
	else
		atomic64_add((s64)value, (atomic64_t *)p);
}

/*
 * syncmem_word_add_return - add to a word (wrapping), atomically
 * @r:		The region (a reference is held by the caller).
 * @offset:	The word, validated with syncmem_word_check().
 * @size:	4 or 8.
 * @value:	What to add (the low 32 bits for a 4-byte word).
 *
 * Returns the word's new value. Takes no lock: callable under a spinlock.
 */
u64 syncmem_word_add_return(struct syncmem_region *r, u64 offset, u32 size, u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		return (u32)atomic_add_return((int)(u32)value, (atomic_t *)p);
	return (u64)atomic64_add_return((s64)value, (atomic64_t *)p);
}

/* Clear the top bit of the word, with one atomic instruction. */
static void syncmem_word_clear_top(struct syncmem_region *r, u64 offset, u32 size)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4)
		atomic_andnot((int)BIT(31), (atomic_t *)p);
	else
		atomic64_andnot((s64)BIT_ULL(63), (atomic64_t *)p);
}

/* Store @value if the word holds @expected, atomically; true if stored. */
static bool syncmem_word_cmpxchg(struct syncmem_region *r, u64 offset,
				 u32 size, u64 expected, u64 value)
{
	void *p = syncmem_region_word(r, offset);

	if (size == 4) {
		u32 old = expected;

		return try_cmpxchg((u32 *)p, &old, (u32)value);
	}
	return try_cmpxchg((u64 *)p, &expected, value);
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
 * @w:		A waiter that was queued.
 * @state:	The final state to give it (TIMED_OUT or CANCELLED).
 * @final:	Set to the waiter's final state (may be NULL).
 *
 * Returns true if @w was still queued: it is now out of the queue with
 * @state and the caller completes it. False if somebody else claimed it
 * first, even with the same state (two cancels): they complete it.
 */
bool syncmem_waiter_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			  int state, int *final)
{
	struct syncmem_bucket *b = w->b;
	struct syncmem_queue *dead = NULL;
	bool claimed;

	spin_lock(&b->lock);
	claimed = w->state == SYNCMEM_W_QUEUED;
	if (claimed) {
		syncmem_waiter_unlink(r, w);
		w->state = state;
		dead = syncmem_queue_settle(r, w->q);
	}
	if (final)
		*final = w->state;
	spin_unlock(&b->lock);
	syncmem_queue_free(dead);
	return claimed;
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

/*
 * Under b->lock: is a writable waiter that can take a hand-off queued after
 * @w? Gone ones met on the way are taken out; when this hold may take out
 * no more, the answer is yes: a waiters mark too many only brings the
 * holder's release to the kernel, which then finds nobody.
 */
static bool syncmem_live_after(struct syncmem_region *r, struct syncmem_queue *q,
			       struct syncmem_waiter *w, struct syncmem_wake *wk)
{
	struct syncmem_waiter *tmp;

	syncmem_assert_queue_locked(r, q);
	list_for_each_entry_safe_continue(w, tmp, &q->waiters, node) {
		if (!syncmem_waiter_gone(w))
			return true;
		if (syncmem_gone_stays(w))
			continue;
		if (!syncmem_gone_room(wk))
			return true;
		syncmem_gone_claim(r, w, wk);
	}
	return false;
}

/*
 * Under b->lock: the waiters bit of an owner word handed to @w: set while
 * anybody else waits on it, observers included (they are woken whenever the
 * word changes, so its holder's unlock must come to the kernel).
 */
static u64 syncmem_owner_waiters_bit(struct syncmem_region *r, struct syncmem_queue *q,
				     struct syncmem_waiter *w, struct syncmem_wake *wk)
{
	return syncmem_live_after(r, q, w, wk) || !list_empty(&q->observers) ?
	       SYNCMEM_OWNER_WAITERS : 0;
}

/*
 * Under b->lock: list @q among its region's owner words with waiters. Done
 * before an owner waiter looks at the owner, so that a death either is seen
 * by that look or scans this queue after it: the scan of a region starts a
 * pass after the owner's id is gone, and passes over only the queues listed
 * after it started (syncmem_region_owner_scan()), under the same lock.
 */
static void syncmem_owner_queue_mark(struct syncmem_region *r,
				     struct syncmem_queue *q)
{
	syncmem_assert_queue_locked(r, q);
	if (q->owner_word)
		return;
	q->owner_word = true;
	spin_lock(&r->owner_lock);
	if (list_empty(&r->owner_queues)) {
		spin_lock(&syncmem_owner_regions_lock);
		r->owner_walk_pass = syncmem_owner_walk_pass;
		list_add_tail(&r->owner_node, &syncmem_owner_regions);
		spin_unlock(&syncmem_owner_regions_lock);
	}
	q->scan_pass = r->owner_scan_pass;
	list_add_tail(&q->owner_node, &r->owner_queues);
	spin_unlock(&r->owner_lock);
}

/* Under b->lock: @q, emptied, leaves its region's owner words. */
static void syncmem_owner_queue_unmark(struct syncmem_region *r,
				       struct syncmem_queue *q)
{
	syncmem_assert_queue_locked(r, q);
	spin_lock(&r->owner_lock);
	list_del(&q->owner_node);
	if (list_empty(&r->owner_queues)) {
		spin_lock(&syncmem_owner_regions_lock);
		list_del(&r->owner_node);
		spin_unlock(&syncmem_owner_regions_lock);
	}
	spin_unlock(&r->owner_lock);
	q->owner_word = false;
}

/*
 * Under b->lock: who gets an owner word holding @v that is free, or whose
 * owner is dead (a wake-up may have died with the waiter it woke): its
 * oldest live waiter. An owner waiter is handed the word, as *@nv (with
 * SYNCMEM_OWNER_DIED after a dead owner), and gets *@state; any other
 * waiter is woken to look again (*@nv is @v). NULL when the word has a live
 * owner, is unrecoverable, or nobody can take it; ERR_PTR(-EAGAIN) when
 * this hold took out all the gone waiters it may before finding one.
 */
static struct syncmem_waiter *syncmem_owner_heir(struct syncmem_region *r,
						 struct syncmem_queue *q, u64 v,
						 u64 *nv, int *state,
						 struct syncmem_wake *wk)
{
	u64 id = v & SYNCMEM_OWNER_ID;
	struct syncmem_waiter *w;

	if (!q || id == SYNCMEM_OWNER_NOTRECOVERABLE ||
	    (id && syncmem_owner_alive(id)))
		return NULL;
	w = syncmem_first_live(r, q, wk);
	if (IS_ERR_OR_NULL(w))
		return w;
	*nv = v;
	*state = SYNCMEM_W_WOKEN;
	if (w->owner) {
		*nv = w->owner | syncmem_owner_waiters_bit(r, q, w, wk);
		*state = SYNCMEM_W_HANDED_OFF;
		if (id) {
			*nv |= SYNCMEM_OWNER_DIED;
			*state = SYNCMEM_W_OWNER_DIED;
		}
	}
	return w;
}

/*
 * Under b->lock: an owner word at @offset (its queue @q) that is free or
 * whose owner is dead goes to its heir (above): the word is updated, and the
 * heir returned with the *@state to claim it with. NULL if nobody can take
 * it, or the word changed meanwhile (its writer acts); ERR_PTR(-EAGAIN) as
 * syncmem_owner_heir().
 */
static struct syncmem_waiter *syncmem_owner_word_pass(struct syncmem_region *r,
						      struct syncmem_queue *q,
						      u64 offset, int *state,
						      struct syncmem_wake *wk)
{
	u64 v = syncmem_word_read(r, offset, 8), nv;
	struct syncmem_waiter *w;

	w = syncmem_owner_heir(r, q, v, &nv, state, wk);
	if (!IS_ERR_OR_NULL(w) && nv != v &&
	    !syncmem_word_cmpxchg(r, offset, 8, v, nv))
		return NULL;
	return w;
}

/*
 * Under b->lock: the same, claiming the heir into @wk. 1 if one was, 0 if
 * nobody was, -EAGAIN as syncmem_owner_heir().
 */
static int syncmem_owner_word_resolve(struct syncmem_region *r,
				      struct syncmem_queue *q,
				      struct syncmem_wake *wk)
{
	struct syncmem_waiter *w;
	int state;

	w = syncmem_owner_word_pass(r, q, q->offset, &state, wk);
	if (IS_ERR(w))
		return PTR_ERR(w);
	if (w)
		syncmem_wake_claim(r, w, state, wk);
	return !!w;
}

/*
 * Under no lock: the owner word at @offset may name a dead owner (or be
 * free) while waiters are queued. Give it to its oldest live waiter now,
 * taking out the gone waiters ahead of it a batch per hold of the lock.
 */
static void syncmem_owner_word_settle(struct syncmem_region *r, u64 offset)
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
	u16 pass;

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
 * Under b->lock: the owner named by the word an owner waiter @w expects is
 * dead. The oldest waiter of its queue @q (NULL: none) takes the word over,
 * or else the caller does. SYNCMEM_WAIT_OWNER_DIED (the caller owns it),
 * SYNCMEM_WAIT_NOT_EQUAL (look again), or -EAGAIN when the gone waiters
 * ahead of the oldest are more than one hold takes out (drop the lock,
 * flush @wk and try again); *@observed says whether observers are to be
 * told the word changed.
 */
static long syncmem_owner_take_over(struct syncmem_region *r,
				    struct syncmem_queue *q,
				    const struct syncmem_wait *arg,
				    struct syncmem_waiter *w,
				    struct syncmem_wake *wk, bool *observed)
{
	struct syncmem_waiter *next = NULL;
	int res;
	u64 nv;

	if (q) {
		syncmem_owner_queue_mark(r, q);
		*observed = !list_empty(&q->observers);
		res = syncmem_owner_word_resolve(r, q, wk);
		if (res)
			return res < 0 ? res : SYNCMEM_WAIT_NOT_EQUAL;
		next = syncmem_first_live(r, q, wk);
		if (IS_ERR(next))
			return PTR_ERR(next);
	}
	nv = w->owner | SYNCMEM_OWNER_DIED | (next ? SYNCMEM_OWNER_WAITERS : 0);
	if (!syncmem_word_cmpxchg(r, arg->offset, 8, arg->expected, nv))
		return SYNCMEM_WAIT_NOT_EQUAL;
	return SYNCMEM_WAIT_OWNER_DIED;
}

/* Under b->lock: link @w into @q as the bucket's newest arrival. */
static void syncmem_waiter_link(struct syncmem_region *r, struct syncmem_bucket *b,
				struct syncmem_queue *q, struct syncmem_waiter *w)
{
	w->state = SYNCMEM_W_QUEUED;
	w->q = q;
	w->b = b;
	w->seq = max(ktime_get_ns(), b->seq + 1);
	b->seq = w->seq;
	if (q->idle) {
		q->idle = false;
		atomic_dec(&r->nr_idle_queues);
	}
	/* Next in line for the word: it spins before sleeping. */
	if (!w->async)
		container_of(w, struct syncmem_sync_waiter, w)->heir =
			w->owner && !w->observer && list_empty(&q->waiters);
	list_add_tail(&w->node, w->observer ? &q->observers : &q->waiters);
	q->nr++;
	atomic_inc(&r->nr_waiters);
	atomic_long_inc(&r->ns->usage.waiters);
}

/**
 * syncmem_wait_enqueue - compare the word and queue @w, atomically
 * @r:		The region (a reference is held by the caller).
 * @arg:	The wait, validated.
 * @w:		The waiter, its @async and @observer set.
 * @admit:	Called under the bucket lock once @w is queued (may be NULL);
 *		a non-zero result takes @w out again and is returned.
 *
 * Returns SYNCMEM_WAIT_NOT_EQUAL, SYNCMEM_WAIT_TIMED_OUT (deadline already
 * passed), SYNCMEM_WAIT_QUEUED, -ENOMEM, or the error of @admit.
 */
long syncmem_wait_enqueue(struct syncmem_region *r,
			  const struct syncmem_wait *arg,
			  struct syncmem_waiter *w,
			  int (*admit)(struct syncmem_waiter *w))
{
	struct syncmem_bucket *b = syncmem_bucket_of(r, arg->offset);
	struct syncmem_wake wk;
	struct syncmem_queue *q, *spare = NULL, *dead = NULL;
	u64 id = arg->expected & SYNCMEM_OWNER_ID;
	bool observed = false, retry;
	long ret;

	syncmem_wake_init(&wk);
	if (w->owner && !id)
		return SYNCMEM_WAIT_NOT_EQUAL;		/* free: take it */
	if (w->owner && id == SYNCMEM_OWNER_NOTRECOVERABLE)
		return -ENOTRECOVERABLE;
again:
	retry = false;
	for (;;) {
		spin_lock(&b->lock);
		/* Pairs with the store a notifier makes before taking the lock. */
		if (syncmem_word_read(r, arg->offset, arg->size) != arg->expected) {
			ret = SYNCMEM_WAIT_NOT_EQUAL;
			goto unlock;
		}
		/* A dead owner's word is taken over, even by a try (deadline 0). */
		if (w->owner && !syncmem_owner_alive(id)) {
			q = syncmem_queue_find(b, arg->offset);
			goto take_over;
		}
		if (arg->deadline_ns != SYNCMEM_NO_DEADLINE &&
		    arg->deadline_ns <= ktime_get_ns()) {
			ret = SYNCMEM_WAIT_TIMED_OUT;
			goto unlock;
		}
		q = syncmem_queue_find(b, arg->offset);
		if (q || spare)
			break;
		spin_unlock(&b->lock);
		/* The first waiter of the word brings its queue. */
		spare = kmem_cache_alloc(syncmem_queue_cache, GFP_KERNEL);
		if (!spare)
			return -ENOMEM;
		spare->offset = arg->offset;
		spare->nr = 0;
		spare->idle = false;
		spare->owner_word = false;
	}
	if (!q) {
		q = spare;
		spare = NULL;
		hlist_add_head(&q->node, &b->queues);
	}
	if (w->owner) {
		/* Listed first, then looked at again: see syncmem_owner_queue_mark(). */
		syncmem_owner_queue_mark(r, q);
		if (!syncmem_owner_alive(id))
			goto take_over;
	}
	syncmem_waiter_link(r, b, q, w);
	ret = admit ? admit(w) : 0;
	if (ret) {
		syncmem_waiter_unlink(r, w);
		dead = syncmem_queue_settle(r, q);
	} else {
		ret = SYNCMEM_WAIT_QUEUED;
	}
	goto unlock;
take_over:
	ret = syncmem_owner_take_over(r, q, arg, w, &wk, &observed);
	/* Only the take-over's -EAGAIN means "look again", never admit's. */
	retry = ret == -EAGAIN;
	dead = syncmem_queue_settle(r, q);
unlock:
	spin_unlock(&b->lock);
	syncmem_wake_flush(&wk);
	syncmem_queue_free(dead);
	if (retry) {
		/* Gone waiters were taken out ahead of the heir: look again. */
		dead = NULL;
		cond_resched();
		goto again;
	}
	syncmem_queue_free(spare);
	if (observed)
		syncmem_wake_observers(r, arg->offset);
	return ret;
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
		ret = syncmem_wait_enqueue(r, arg, &sw->w, NULL);
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

static long syncmem_notify(struct syncmem_region *r, u64 offset, u32 count)
{
	struct syncmem_wake_op op = {
		.offset = offset,
		.want = count,
		.state = SYNCMEM_W_WOKEN,
		.observers = true,
	};

	if (!count)
		return 0;
	return syncmem_wake_word(r, &op);
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

/* The same for an addition (wrapping): returns the number woken. */
long syncmem_add_wake_all(struct syncmem_region *r, u64 offset, u32 size, u64 value)
{
	syncmem_word_add_return(r, offset, size, value);
	return syncmem_notify(r, offset, U32_MAX);
}

/*
 * Under the lock, before anything is claimed: hand the word to the oldest
 * writable waiter, or else store (or add) the value and wake the observers;
 * with SYNCMEM_HANDOFF_WAITERS, clear the mark when nobody is left queued.
 */
static long syncmem_handoff_decide(struct syncmem_region *r,
				   struct syncmem_queue *q,
				   struct syncmem_wake_op *op)
{
	const struct syncmem_handoff *arg = op->arg;
	bool mark = arg->flags & SYNCMEM_HANDOFF_WAITERS;
	struct syncmem_waiter *w = syncmem_decide_first(r, q, op);

	if (op->again)
		return 0;
	op->target = w;
	if (op->target) {
		/* The last writable waiter goes: nobody is left to mark. */
		if (mark && !syncmem_live_after(r, q, op->target, op->wk)) {
			syncmem_word_clear_top(r, arg->offset, arg->size);
			op->observers = true;
		}
		return SYNCMEM_HANDOFF_WOKE;
	}
	if (arg->flags & SYNCMEM_HANDOFF_ADD)
		syncmem_word_add(r, arg->offset, arg->size, arg->value);
	else
		syncmem_word_write(r, arg->offset, arg->size, arg->value);
	if (mark)
		syncmem_word_clear_top(r, arg->offset, arg->size);
	op->observers = true;
	return SYNCMEM_HANDOFF_STORED;
}

static long syncmem_handoff(struct syncmem_region *r,
			    const struct syncmem_handoff *arg)
{
	struct syncmem_wake_op op = {
		.offset = arg->offset,
		.state = SYNCMEM_W_HANDED_OFF,
		.decide = syncmem_handoff_decide,
		.arg = arg,
		.handoff = arg,
	};

	return syncmem_wake_word(r, &op);
}

/* Validate a word of @r for a wait (also used by async waits). */
int syncmem_wait_check(struct syncmem_region *r, const struct syncmem_wait *arg)
{
	if (arg->flags & ~SYNCMEM_WAIT_FLAGS)
		return -EINVAL;
	return syncmem_word_check(r, arg->offset, arg->size, arg->expected);
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

/*
 * Under the lock, before anything is claimed: the holder releases the word.
 * Hand it to the oldest owner waiter, or free it and wake the oldest waiter,
 * or free it for good when nobody waits.
 */
static long syncmem_unlock_decide(struct syncmem_region *r,
				  struct syncmem_queue *q,
				  struct syncmem_wake_op *op)
{
	const struct syncmem_unlock *arg = op->arg;
	struct syncmem_waiter *w = syncmem_decide_first(r, q, op);
	u64 v = syncmem_word_read(r, arg->offset, 8), nv;
	long ret;

	if (op->again)
		return 0;
	if ((v | SYNCMEM_OWNER_WAITERS) != (arg->expected | SYNCMEM_OWNER_WAITERS))
		return -EAGAIN;
	if (!w) {
		nv = 0;
		ret = SYNCMEM_UNLOCK_FREED;
	} else if ((arg->flags & SYNCMEM_UNLOCK_HANDOFF) && w->owner) {
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
	int err;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SYNCMEM_UNLOCK_FLAGS) || arg.pad)
		return -EINVAL;
	err = syncmem_word_check(r, arg.offset, 8, 0);
	if (err)
		return err;
	op.offset = arg.offset;
	return syncmem_wake_word(r, &op);
}

/* A wake-up that reached nobody: the word's heir, if it has one, gets it. */
static long syncmem_owner_poke_decide(struct syncmem_region *r,
				      struct syncmem_queue *q,
				      struct syncmem_wake_op *op)
{
	struct syncmem_waiter *w;
	int state;

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
 * syncmem_waiter_abandon - a queued waiter nobody will come back for
 * @r:		The region of its word (a reference is held by the caller).
 * @offset:	The word.
 * @w:		The waiter.
 *
 * Takes it out of its queue or, if it was claimed first, passes on what it
 * was given: nothing if a waker took it out as gone (syncmem_gone_claim()).
 * Process context.
 */
void syncmem_waiter_abandon(struct syncmem_region *r, u64 offset,
			    struct syncmem_waiter *w)
{
	int state;

	if (syncmem_waiter_claim(r, w, SYNCMEM_W_CANCELLED, &state) ||
	    state == SYNCMEM_W_CANCELLED)
		return;
	syncmem_wait_pass_on(r, offset, w, syncmem_wait_result(state));
}

/**
 * syncmem_wait_pass_on - a completed wait whose record nobody will read
 * @r:		The region of its word (a reference is held by the caller).
 * @offset:	The word.
 * @w:		The waiter, claimed with @result.
 * @result:	SYNCMEM_WAIT_WOKEN, _HANDED_OFF or _OWNER_DIED.
 *
 * Its handle was closed first, or its thread will never come back. What it
 * was given goes on, as if it had never been queued: a wake-up to the next
 * waiter; a HANDOFF's hand-off done again whole (its value, flags and
 * size, whatever the waiter's size), to the next waiter or else into the
 * word; an owner word to the next waiter or else freed. Process context.
 */
void syncmem_wait_pass_on(struct syncmem_region *r, u64 offset,
			  const struct syncmem_waiter *w, int result)
{
	struct syncmem_handoff h;
	struct syncmem_wake_op op = {
		.offset = offset,
		.state = SYNCMEM_W_WOKEN,
		.arg = &w->owner,
	};

	if (w->observer)
		return;		/* observers are owed nothing */
	/* A HANDOFF's, to any waiter: it goes on as that HANDOFF. */
	if (result == SYNCMEM_WAIT_HANDED_OFF && w->handoff) {
		h = (struct syncmem_handoff){
			.offset = offset,
			.value = w->handoff_value,
			.size = w->handoff & SYNCMEM_W_HANDOFF_8 ? 8 : 4,
			.flags = w->handoff & SYNCMEM_HANDOFF_FLAGS,
		};
		syncmem_handoff(r, &h);
		return;
	}
	if (w->owner) {
		op.decide = result == SYNCMEM_WAIT_WOKEN ? syncmem_owner_poke_decide :
			    syncmem_owner_give_up_decide;
		syncmem_wake_word(r, &op);
		return;
	}
	syncmem_notify(r, offset, 1);
}

/* Under b->lock: what a caller in @ns may know of queued waiter @w. */
static void syncmem_waiter_describe(const struct syncmem_waiter *w,
				    struct pid_namespace *ns,
				    struct syncmem_waiter_entry *e)
{
	const struct syncmem_sync_waiter *sw;
	struct task_struct *task;

	*e = (struct syncmem_waiter_entry){
		.offset = w->q->offset,
		.since_ns = w->seq,
		.owner = w->owner,
		.size = w->size,
	};
	if (w->observer)
		e->flags |= SYNCMEM_WAITER_OBSERVER;
	if (w->owner)
		e->flags |= SYNCMEM_WAITER_OWNER;
	if (w->async) {
		e->flags |= SYNCMEM_WAITER_ASYNC;
		syncmem_async_describe(w, ns, e);
		return;
	}
	/*
	 * A blocked waiter's task is in its call (it leaves the queue before
	 * returning); a waiter away holds a reference on its task.
	 */
	sw = container_of(w, struct syncmem_sync_waiter, w);
	e->deadline_ns = sw->deadline;
	task = sw->task;
	if (!task) {
		e->flags |= SYNCMEM_WAITER_AWAY;
		task = syncmem_away_task(sw);
	}
	e->pid = task_tgid_nr_ns(task, ns);
	e->tid = task_pid_nr_ns(task, ns);
}

/*
 * A place in a queue's arrival order, which merges its two lists (both in
 * arrival order): the next writable waiter and the next observer from
 * there, NULL at the end of either.
 */
struct syncmem_queue_cursor {
	struct syncmem_queue *q;
	struct syncmem_waiter *wa;
	struct syncmem_waiter *ob;
};

static struct syncmem_waiter *syncmem_list_next(struct syncmem_waiter *w,
						struct list_head *head)
{
	return list_is_last(&w->node, head) ? NULL : list_next_entry(w, node);
}

static struct syncmem_waiter *syncmem_list_prev(struct syncmem_waiter *w,
						struct list_head *head)
{
	return list_is_first(&w->node, head) ? NULL : list_prev_entry(w, node);
}

static struct syncmem_waiter *syncmem_list_last(struct list_head *head)
{
	return list_empty(head) ? NULL : list_last_entry(head, struct syncmem_waiter, node);
}

/* Under b->lock: the waiter at the cursor, which then moves past it. */
static struct syncmem_waiter *syncmem_cursor_next(struct syncmem_queue_cursor *c)
{
	struct syncmem_waiter *w;

	if (!c->wa || (c->ob && c->ob->seq < c->wa->seq)) {
		w = c->ob;
		if (w)
			c->ob = syncmem_list_next(w, &c->q->observers);
		return w;
	}
	w = c->wa;
	c->wa = syncmem_list_next(w, &c->q->waiters);
	return w;
}

/*
 * Under b->lock: put the cursor at @position (below q->nr), walking from
 * whichever end of the queue is nearer.
 */
static void syncmem_cursor_seek(struct syncmem_queue_cursor *c, struct syncmem_queue *q,
				u32 position)
{
	struct syncmem_waiter *pw, *po;
	u32 i;

	c->q = q;
	if (position <= q->nr / 2) {
		c->wa = list_first_entry_or_null(&q->waiters, struct syncmem_waiter, node);
		c->ob = list_first_entry_or_null(&q->observers, struct syncmem_waiter, node);
		for (i = 0; i < position; i++)
			syncmem_cursor_next(c);
		return;
	}
	/* Back from the newest: each step takes the newer list's last one. */
	pw = syncmem_list_last(&q->waiters);
	po = syncmem_list_last(&q->observers);
	c->wa = NULL;
	c->ob = NULL;
	for (i = q->nr; i > position; i--) {
		if (!po || (pw && pw->seq > po->seq)) {
			c->wa = pw;
			pw = syncmem_list_prev(pw, &q->waiters);
		} else {
			c->ob = po;
			po = syncmem_list_prev(po, &q->observers);
		}
	}
}

/*
 * Under b->lock: offer the waiters of @q from @p's cursor on, in arrival
 * order, until @p keeps no more of them. The count comes from q->nr, so a
 * reader walks at most the entries it keeps plus the way to the cursor
 * (from the nearer end), not the whole queue.
 */
static void syncmem_queue_describe(struct syncmem_queue *q, struct pid_namespace *ns,
				   struct syncmem_waiter_pick *p)
{
	struct syncmem_queue_cursor c;
	struct syncmem_waiter_entry *e;
	struct syncmem_waiter *w;
	u32 position = 0;

	if (q->offset < p->from_offset)
		return;
	if (q->offset == p->from_offset)
		position = p->from_position;
	if (position >= q->nr)
		return;
	p->total += q->nr - position;
	if (!syncmem_pick_wanted(p, q->offset, position))
		return;
	syncmem_cursor_seek(&c, q, position);
	for (; position < q->nr; position++) {
		w = syncmem_cursor_next(&c);
		e = syncmem_pick_slot(p, q->offset, position);
		if (!e)
			break;		/* and none after it in this queue */
		syncmem_waiter_describe(w, ns, e);
		e->position = position;
		syncmem_pick_placed(p);
	}
}

/**
 * syncmem_waiters_walk - offer every waiter of a region to a selection
 * @r:	The region (a reference is held by the caller).
 * @p:	The selection; with @p->one only the word at @p->offset is looked at.
 *
 * Each queue is read whole under its bucket lock, one bucket after another.
 */
void syncmem_waiters_walk(struct syncmem_region *r, struct syncmem_waiter_pick *p)
{
	struct pid_namespace *ns = task_active_pid_ns(current);
	unsigned long i, first = 0, last = (1UL << r->bucket_bits) - 1;
	struct syncmem_queue *q;

	if (p->one) {
		first = syncmem_bucket_of(r, p->offset) - r->buckets;
		last = first;
	}
	for (i = first; i <= last; i++) {
		struct syncmem_bucket *b = &r->buckets[i];

		spin_lock(&b->lock);
		hlist_for_each_entry(q, &b->queues, node)
			if (!p->one || q->offset == p->offset)
				syncmem_queue_describe(q, ns, p);
		spin_unlock(&b->lock);
		cond_resched();
	}
}
