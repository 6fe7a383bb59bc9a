// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem wait queue core: the FIFO queues of region words, in which every
 * kind of waiter (a blocked WAIT, an async wait) waits alike, and the claims
 * and batched wake-ups that NOTIFY, HANDOFF and the owner words are built
 * on (wake.c, lockword.c). Each kind brings its own struct
 * syncmem_waiter_ops: how a claimed waiter is woken or completed, whether it
 * is gone, and what introspection may know of it. This file names no kind.
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
 * lock; each kind's ->wake notes what is to be done in a struct
 * syncmem_wake (a sleeping task, with a reference; a waiter to complete),
 * which is done after dropping it; then it takes the lock again
 * for the next batch. So the lock is never held for more than a batch, and
 * nothing that may sleep on PREEMPT_RT (waking, dropping a task) runs under
 * it. Arrival numbers keep a notify to the waiters queued when it began.
 */
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "syncmem_core.h"
#include "syncmem_queue.h"

/*
 * Queues of owner words that have (or are getting) waiters are listed in
 * their region (under its owner_lock), and the regions that have some here:
 * what a death makes syncmem_owner_words_scan() look at. Both locks are
 * taken inside bucket locks, this one inside a region's; neither is held
 * across more than a chunk of a list.
 */
DEFINE_SPINLOCK(syncmem_owner_regions_lock);
LIST_HEAD(syncmem_owner_regions);
u32 syncmem_owner_walk_pass;	/* under syncmem_owner_regions_lock */

/* Empty queues a region keeps for reuse. */
#define SYNCMEM_IDLE_QUEUES	64

/* Buckets per page of region, and the bounds of a region's bucket count. */
#define SYNCMEM_BUCKETS_PER_PAGE	4
#define SYNCMEM_BUCKETS_MIN		16
#define SYNCMEM_BUCKETS_MAX		16384

static struct kmem_cache *syncmem_queue_cache;

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

int syncmem_queue_init(void)
{
	syncmem_queue_cache = kmem_cache_create("syncmem_queue",
						sizeof(struct syncmem_queue),
						__alignof__(struct syncmem_queue),
						SLAB_ACCOUNT, syncmem_queue_ctor);
	return syncmem_queue_cache ? 0 : -ENOMEM;
}

/* No region is left, so no queue either. */
void syncmem_queue_exit(void)
{
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

struct syncmem_bucket *syncmem_bucket_of(struct syncmem_region *r, u64 offset)
{
	return &r->buckets[hash_64(offset ^ r->bucket_seed, r->bucket_bits)];
}

/* The caller holds the lock of the bucket of @q. */
static void syncmem_assert_queue_locked(struct syncmem_region *r,
					struct syncmem_queue *q)
{
	lockdep_assert_held(&syncmem_bucket_of(r, q->offset)->lock);
}

/* Under b->lock: the queue of the word at @offset, or NULL. */
struct syncmem_queue *syncmem_queue_find(struct syncmem_bucket *b, u64 offset)
{
	struct syncmem_queue *q;

	lockdep_assert_held(&b->lock);
	hlist_for_each_entry(q, &b->queues, node)
		if (q->offset == offset)
			return q;
	return NULL;
}

static void syncmem_owner_queue_unmark(struct syncmem_region *r,
				       struct syncmem_queue *q);

/*
 * Under b->lock: @q may have emptied. Keep it idle while the region has
 * fewer than SYNCMEM_IDLE_QUEUES of those, else unhash it and return it for
 * the caller to free once the lock is dropped.
 */
struct syncmem_queue *syncmem_queue_settle(struct syncmem_region *r,
					   struct syncmem_queue *q)
{
	if (!q || !list_empty(&q->waiters) || !list_empty(&q->observers))
		return NULL;
	syncmem_assert_queue_locked(r, q);
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

void syncmem_queue_free(struct syncmem_queue *q)
{
	if (q)
		kmem_cache_free(syncmem_queue_cache, q);
}

/*
 * Is @w one a wake-up to look again may not claim while its word is
 * recoverable (syncmem_queue_passes_over()): an owner waiter that can only
 * be handed its word? Fixed before it is queued.
 */
static bool syncmem_waiter_handed_only(const struct syncmem_waiter *w)
{
	return w->owner && w->ops->handed_only;
}

/* Under b->lock: take @w out of its queue. */
static void syncmem_waiter_unlink(struct syncmem_region *r,
				  struct syncmem_waiter *w)
{
	struct syncmem_queue *q = w->q;

	lockdep_assert_held(&w->b->lock);
	list_del(&w->node);
	if (!w->observer && !syncmem_waiter_handed_only(w) && q->wakeable != U16_MAX)
		q->wakeable--;
	if (list_empty(&q->waiters))
		q->wakeable = 0;
	q->nr--;
	atomic_dec(&r->nr_waiters);
	atomic_long_dec(&r->ns->usage.waiters);
}

/* The WAIT result of a waiter claimed by a waker. */
int syncmem_wait_result(int state)
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
 * Under b->lock: will @w never take up what it is given, and who takes it
 * out then (enum syncmem_gone)? Its kind knows (a closed handle, an ended
 * program, a thread away that is gone); an owner waiter whose owner died is
 * gone whatever its kind: its process is gone or going.
 */
static enum syncmem_gone syncmem_waiter_gone(const struct syncmem_waiter *w)
{
	lockdep_assert_held(&w->b->lock);
	return w->ops->gone(w, w->owner && !syncmem_owner_alive(w->owner));
}

/* Under b->lock: is @w one that can take up what it is given? */
bool syncmem_waiter_live(const struct syncmem_waiter *w)
{
	lockdep_assert_held(&w->b->lock);
	return syncmem_waiter_gone(w) == SYNCMEM_LIVE;
}

void syncmem_wake_init(struct syncmem_wake *wk)
{
	*wk = (struct syncmem_wake){ .nr = 0 };
	INIT_LIST_HEAD(&wk->deferred);
}

/**
 * syncmem_wake_defer - a ->wake that completes the waiter once unlocked
 * @w:		A waiter just claimed (out of its queue), under its bucket lock.
 * @state:	The state it was claimed with.
 * @wk:		The hold's wake-ups: ->complete runs in syncmem_wake_flush().
 */
void syncmem_wake_defer(struct syncmem_waiter *w, int state, struct syncmem_wake *wk)
{
	lockdep_assert_held(&w->b->lock);
	w->state = state;
	list_add_tail(&w->node, &wk->deferred);
}

/*
 * Under b->lock: take gone waiter @w out of its queue (SYNCMEM_GONE), so
 * that no waker walks it again; its kind's ->wake gets it CANCELLED, for
 * nothing: nothing it was given is passed on. The caller bounds how many
 * one hold takes (SYNCMEM_GONE_BATCH).
 */
static void syncmem_gone_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			       struct syncmem_wake *wk)
{
	lockdep_assert_held(&w->b->lock);
	syncmem_waiter_unlink(r, w);
	wk->nr_gone++;
	w->ops->wake(w, SYNCMEM_W_CANCELLED, wk);
}

/*
 * Under b->lock: the first waiter of @w's kind after @w (after the head of
 * @q's writable waiters if @w is NULL) that can take a hand-off, taking out
 * the gone ones on the way; NULL if there is none. When this hold has taken
 * out SYNCMEM_GONE_BATCH gone waiters before finding it, ERR_PTR(-EAGAIN):
 * the caller drops the lock, flushes @wk and looks again (or, asking only
 * whether anybody is left, takes that as a yes).
 */
struct syncmem_waiter *syncmem_next_live(struct syncmem_region *r, struct syncmem_queue *q,
					 struct syncmem_waiter *w, struct syncmem_wake *wk)
{
	struct syncmem_waiter *tmp;

	syncmem_assert_queue_locked(r, q);
	w = list_prepare_entry(w, &q->waiters, node);
	list_for_each_entry_safe_continue(w, tmp, &q->waiters, node) {
		switch (syncmem_waiter_gone(w)) {
		case SYNCMEM_LIVE:
			return w;
		case SYNCMEM_GONE_LEAVING:
			continue;
		case SYNCMEM_GONE:
			if (wk->nr_gone >= SYNCMEM_GONE_BATCH)
				return ERR_PTR(-EAGAIN);
			syncmem_gone_claim(r, w, wk);
		}
	}
	return NULL;
}

/* Under b->lock: claim @w for a notify or hand-off (@state). */
void syncmem_wake_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			int state, struct syncmem_wake *wk)
{
	lockdep_assert_held(&w->b->lock);
	syncmem_waiter_unlink(r, w);
	wk->nr++;
	w->ops->wake(w, state, wk);
}

/* With the lock dropped: wake what a batch claimed. */
void syncmem_wake_flush(struct syncmem_wake *wk)
{
	struct syncmem_waiter *w, *tmp;
	unsigned int i;

	for (i = 0; i < wk->nr_tasks; i++) {
		wake_up_process(wk->tasks[i]);
		put_task_struct(wk->tasks[i]);
	}
	wk->nr_tasks = 0;
	wk->nr = 0;
	wk->nr_gone = 0;
	if (wk->heir) {
		wake_up_process(wk->heir);
		put_task_struct(wk->heir);
		wk->heir = NULL;
	}
	list_for_each_entry_safe(w, tmp, &wk->deferred, node) {
		list_del(&w->node);
		w->ops->complete(w, w->state == SYNCMEM_W_CANCELLED ? -ECANCELED :
				 syncmem_wait_result(w->state));
	}
}

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
struct syncmem_waiter *syncmem_decide_first(struct syncmem_region *r,
					    struct syncmem_queue *q,
					    struct syncmem_wake_op *op)
{
	struct syncmem_waiter *w = q ? syncmem_next_live(r, q, NULL, op->wk) : NULL;

	if (!IS_ERR(w))
		return w;
	op->again = true;
	return NULL;
}

/*
 * Under b->lock: does a wake-up to look again (SYNCMEM_W_WOKEN) pass over
 * the owner waiters of @q that can only be handed its word? Unless the word
 * is unrecoverable: nobody will ever be handed it, so they are woken too.
 */
static bool syncmem_queue_passes_over(struct syncmem_region *r, struct syncmem_queue *q)
{
	syncmem_assert_queue_locked(r, q);
	return (syncmem_word_read(r, q->offset, 8) & SYNCMEM_OWNER_ID) !=
	       SYNCMEM_OWNER_NOTRECOVERABLE;
}

/*
 * Under b->lock: claim with @state up to *@want (NULL: all) of the waiters
 * of @list of @q that arrived by @limit, taking out the gone ones on the
 * way, and passing over the ones a wake-up may not claim (@op->settle).
 * A wake-up to look again of a recoverable word's waiters stops where
 * none it may claim are left (@q->wakeable), rather than walk the rest;
 * those it passes over ahead of one it may claim it still walks.
 * True if this batch had to stop before the end.
 */
static bool syncmem_wake_list(struct syncmem_region *r, struct syncmem_queue *q,
			      struct list_head *list, struct syncmem_wake_op *op,
			      int state, u32 *want, u64 limit, struct syncmem_wake *wk)
{
	bool pass_over = false;
	struct syncmem_waiter *w, *tmp;

	syncmem_assert_queue_locked(r, q);
	if (state == SYNCMEM_W_WOKEN && list == &q->waiters && !list_empty(list))
		pass_over = syncmem_queue_passes_over(r, q);
	list_for_each_entry_safe(w, tmp, list, node) {
		if ((want && !*want) || w->seq > limit)
			break;
		if (pass_over && !q->wakeable) {
			/* Only waiters handed their word are left. */
			op->settle = true;
			break;
		}
		if (wk->nr == SYNCMEM_WAKE_BATCH)
			return true;
		switch (syncmem_waiter_gone(w)) {
		case SYNCMEM_GONE_LEAVING:
			continue;
		case SYNCMEM_GONE:
			if (wk->nr_gone >= SYNCMEM_GONE_BATCH)
				return true;
			syncmem_gone_claim(r, w, wk);
			continue;
		case SYNCMEM_LIVE:
			break;
		}
		if (pass_over && syncmem_waiter_handed_only(w)) {
			op->settle = true;
			continue;
		}
		if (want) {
			syncmem_note_handoff(op, w);
			(*want)--;
		}
		syncmem_wake_claim(r, w, state, wk);
	}
	return false;
}

/* Under b->lock: claim what this batch may of @q. True if it had to stop. */
static bool syncmem_wake_batch(struct syncmem_region *r, struct syncmem_queue *q,
			       struct syncmem_wake_op *op, u64 limit,
			       struct syncmem_wake *wk)
{
	if (syncmem_wake_list(r, q, &q->waiters, op, op->state, &op->want, limit, wk))
		return true;
	return op->observers &&
	       syncmem_wake_list(r, q, &q->observers, op, SYNCMEM_W_WOKEN, NULL, limit, wk);
}

long syncmem_wake_word(struct syncmem_region *r, struct syncmem_wake_op *op)
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
void syncmem_wake_observers(struct syncmem_region *r, u64 offset)
{
	struct syncmem_wake_op op = {
		.offset = offset,
		.state = SYNCMEM_W_WOKEN,
		.observers = true,
	};

	syncmem_wake_word(r, &op);
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
 * Under b->lock: the waiters bit of an owner word handed to @w: set while
 * anybody else waits on it, observers included (they are woken whenever the
 * word changes, so its holder's unlock must come to the kernel).
 */
u64 syncmem_owner_waiters_bit(struct syncmem_region *r, struct syncmem_queue *q,
			      struct syncmem_waiter *w, struct syncmem_wake *wk)
{
	syncmem_assert_queue_locked(r, q);
	/*
	 * Past more gone waiters than one hold takes out (-EAGAIN): set. A
	 * mark too many only brings the holder's release to the kernel,
	 * which then finds nobody.
	 */
	return syncmem_next_live(r, q, w, wk) || !list_empty(&q->observers) ?
	       SYNCMEM_OWNER_WAITERS : 0;
}

/*
 * Under b->lock: list @q among its region's owner words with waiters. Done
 * before an owner waiter looks at the owner, so that a death either is seen
 * by that look or scans this queue after it: the scan of a region starts a
 * pass after the owner's id is gone, and passes over only the queues listed
 * after it started (syncmem_region_owner_scan()), under the same lock.
 */
void syncmem_owner_queue_mark(struct syncmem_region *r, struct syncmem_queue *q)
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

	if (q)
		syncmem_assert_queue_locked(r, q);
	if (!q || id == SYNCMEM_OWNER_NOTRECOVERABLE ||
	    (id && syncmem_owner_alive(id)))
		return NULL;
	w = syncmem_next_live(r, q, NULL, wk);
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
struct syncmem_waiter *syncmem_owner_word_pass(struct syncmem_region *r,
					       struct syncmem_queue *q,
					       u64 offset, int *state,
					       struct syncmem_wake *wk)
{
	u64 v = syncmem_word_read(r, offset, 8), nv;
	struct syncmem_waiter *w;

	syncmem_assert_word_locked(r, offset);
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
int syncmem_owner_word_resolve(struct syncmem_region *r, struct syncmem_queue *q,
			       struct syncmem_wake *wk)
{
	struct syncmem_waiter *w;
	int state;

	syncmem_assert_queue_locked(r, q);
	w = syncmem_owner_word_pass(r, q, q->offset, &state, wk);
	if (IS_ERR(w))
		return PTR_ERR(w);
	if (w)
		syncmem_wake_claim(r, w, state, wk);
	return !!w;
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

	syncmem_assert_word_locked(r, arg->offset);
	if (q) {
		syncmem_owner_queue_mark(r, q);
		*observed = !list_empty(&q->observers);
		res = syncmem_owner_word_resolve(r, q, wk);
		if (res)
			return res < 0 ? res : SYNCMEM_WAIT_NOT_EQUAL;
		next = syncmem_next_live(r, q, NULL, wk);
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
	lockdep_assert_held(&b->lock);
	w->state = SYNCMEM_W_QUEUED;
	w->q = q;
	w->b = b;
	w->seq = max(ktime_get_ns(), b->seq + 1);
	b->seq = w->seq;
	if (q->idle) {
		q->idle = false;
		atomic_dec(&r->nr_idle_queues);
	}
	list_add_tail(&w->node, w->observer ? &q->observers : &q->waiters);
	if (!w->observer && !syncmem_waiter_handed_only(w) && q->wakeable != U16_MAX)
		q->wakeable++;
	q->nr++;
	atomic_inc(&r->nr_waiters);
	atomic_long_inc(&r->ns->usage.waiters);
}

/* Validate a wait of @r before it is queued: its flags and its word. */
int syncmem_wait_check(struct syncmem_region *r, const struct syncmem_wait *arg)
{
	if (arg->flags & ~SYNCMEM_WAIT_FLAGS)
		return -EINVAL;
	return syncmem_word_check(r, arg->offset, arg->size, arg->expected);
}

/**
 * syncmem_wait_enqueue - compare the word and queue @w, atomically
 * @r:		The region (a reference is held by the caller).
 * @arg:	The wait, validated.
 * @w:		The waiter, its @ops, @observer, @owner and @size set.
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
		spare->wakeable = 0;
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
