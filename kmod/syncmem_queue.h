/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The wait queue core (queue.c) as the files built on it see it: buckets,
 * queues, and what one hold of a bucket lock claims. Waiter kinds (wait.c,
 * async.c) and wake-ups (wake.c, lockword.c) use it; it names none of them.
 */
#ifndef _SYNCMEM_QUEUE_H
#define _SYNCMEM_QUEUE_H

#include <linux/kconfig.h>
#include <linux/list.h>
#include <linux/lockdep.h>
#include <linux/spinlock.h>
#include <linux/types.h>

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
	u8 idle:1;			/* empty but kept in the bucket */
	u8 owner_word:1;		/* in its region's owner_queues */
	/*
	 * The region's scan that took it last (under its owner_lock, so a
	 * byte of its own). Every pass takes every queue listed when it
	 * starts, so listed queues hold the latest pass or the one before:
	 * 8 bits never wrap onto a live value.
	 */
	u8 scan_pass;
	/*
	 * Of @waiters, those a wake-up may claim while the word is
	 * recoverable: all but owner waiters only handed their word
	 * (->handed_only), so that a notify stops at the last one it may
	 * claim instead of walking those after it. It sticks at
	 * U16_MAX once there (a notify walks them all then) until @waiters
	 * empties. It fits where the queue has no padding left: a queue is
	 * part of what a waiter costs.
	 */
	u16 wakeable;
	struct list_head owner_node;	/* there, while it has waiters */
};

/* What a parked command may cost is budgeted (Documentation/syncmem/async.rst). */
static_assert(!IS_ENABLED(CONFIG_64BIT) || sizeof(struct syncmem_queue) <= 80);

/* Waiters claimed per hold of a bucket lock. */
#define SYNCMEM_WAKE_BATCH	16

/* Gone waiters (syncmem_waiter_gone()) taken out per hold of a bucket lock. */
#define SYNCMEM_GONE_BATCH	64

/*
 * What one hold of a bucket lock claimed, to be woken once it is dropped:
 * the tasks of blocked waiters (their kind's ->wake puts them here), and
 * the waiters whose kind completes them outside the lock (->complete).
 */
struct syncmem_wake {
	struct task_struct *tasks[SYNCMEM_WAKE_BATCH];
	unsigned int nr_tasks;
	unsigned int nr;		/* claimed in this batch */
	unsigned int nr_gone;		/* gone waiters taken out in this hold */
	struct list_head deferred;	/* claimed, completed by ->complete */
	struct task_struct *heir;	/* woken early to spin: next in line */
};

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
	/*
	 * Set by a batch that passed over waiters only handed their word
	 * (->handed_only): the caller settles the word once the lock is
	 * dropped (syncmem_owner_word_settle()), so that they get it if it
	 * is free or its holder dead.
	 */
	bool settle;
	struct syncmem_wake *wk;	/* of the hold @decide runs in */
};

/*
 * Owner words with waiters, listed by queue.c as their queues fill and
 * empty, walked by lockword.c after a death: the regions that have some
 * (each region lists its own under its owner_lock). Taken inside bucket
 * locks, this one inside a region's.
 */
extern spinlock_t syncmem_owner_regions_lock;
extern struct list_head syncmem_owner_regions;
extern u32 syncmem_owner_walk_pass;	/* under syncmem_owner_regions_lock */

struct syncmem_bucket *syncmem_bucket_of(struct syncmem_region *r, u64 offset);
struct syncmem_queue *syncmem_queue_find(struct syncmem_bucket *b, u64 offset);
struct syncmem_queue *syncmem_queue_settle(struct syncmem_region *r,
					   struct syncmem_queue *q);
void syncmem_queue_free(struct syncmem_queue *q);

/* The caller holds the lock of the bucket of the word at @offset. */
static inline void syncmem_assert_word_locked(struct syncmem_region *r, u64 offset)
{
	if (IS_ENABLED(CONFIG_LOCKDEP))
		lockdep_assert_held(&syncmem_bucket_of(r, offset)->lock);
}

void syncmem_wake_init(struct syncmem_wake *wk);
void syncmem_wake_flush(struct syncmem_wake *wk);
void syncmem_wake_defer(struct syncmem_waiter *w, int state, struct syncmem_wake *wk);
void syncmem_wake_claim(struct syncmem_region *r, struct syncmem_waiter *w,
			int state, struct syncmem_wake *wk);
long syncmem_wake_word(struct syncmem_region *r, struct syncmem_wake_op *op);
void syncmem_wake_observers(struct syncmem_region *r, u64 offset);
bool syncmem_waiter_live(const struct syncmem_waiter *w);
struct syncmem_waiter *syncmem_next_live(struct syncmem_region *r, struct syncmem_queue *q,
					 struct syncmem_waiter *w, struct syncmem_wake *wk);
struct syncmem_waiter *syncmem_decide_first(struct syncmem_region *r,
					    struct syncmem_queue *q,
					    struct syncmem_wake_op *op);
u64 syncmem_owner_waiters_bit(struct syncmem_region *r, struct syncmem_queue *q,
			      struct syncmem_waiter *w, struct syncmem_wake *wk);
void syncmem_owner_queue_mark(struct syncmem_region *r, struct syncmem_queue *q);
struct syncmem_waiter *syncmem_owner_word_pass(struct syncmem_region *r,
					       struct syncmem_queue *q,
					       u64 offset, int *state,
					       struct syncmem_wake *wk);
int syncmem_owner_word_resolve(struct syncmem_region *r, struct syncmem_queue *q,
			       struct syncmem_wake *wk);

#endif /* _SYNCMEM_QUEUE_H */
