// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem ring waits: WAIT32/WAIT64 and LOCK as io_uring commands on a
 * region fd, completed as a CQE in the submitter's own ring, CANCEL for
 * them, and NOTIFY, which completes as it is issued: a ring wakes its peer
 * and parks its own wait in one io_uring_enter().
 *
 * A command's waiter joins the word's FIFO queue beside blocked and async
 * waiters (it is a third kind of waiter: struct syncmem_waiter_ops), and
 * the command stays parked in io_uring (-EIOCBQUEUED) until whoever claims
 * the waiter completes it: a wake-up or hand-off (after the bucket lock is
 * dropped), its deadline (an hrtimer, whose expiries a work item claims in
 * process context), CANCEL, or the ring's or submitter's end. Only the
 * claimer completes: exactly one CQE a command. Where io_uring_cmd_done()
 * may be called from any task (before 6.7), the claimer posts the CQE
 * itself, so the ring's waiter is woken once, as a blocked waiter is;
 * else through io_uring_cmd_complete_in_task(), whose task work posts it.
 *
 * Ends nobody takes up: a ring being torn down, or a submitter exiting or
 * exec'ing, waits in io_uring for its parked commands. From 6.7 a command
 * is marked cancelable and io_uring asks for it (IO_URING_F_CANCEL); before
 * that, a check runs every SYNCMEM_URING_CHECK while any command is parked
 * and cancels those whose ring or submitter ends. Wakers pass such waiters
 * over meanwhile, so a hand-off goes to a live waiter. A parked command
 * pins its region file, as every io_uring request pins its file.
 *
 * LOCK takes an owner word for the submitting process: at once if it is
 * free, else as an owner waiter that is only ever handed the word
 * (->handed_only: UNLOCK hands it over, a dead holder's word passes to it,
 * and a wake-up passes it over), so that its CQE means held. The one
 * wake-up it gets is the word's becoming unrecoverable.
 *
 * Each command is charged to the submitting user as an async wait
 * (max_user_async_waits), and one of its IPC namespace.
 */
#include <linux/capability.h>
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/hrtimer.h>
#include <linux/llist.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"
#include "syncmem_queue.h"

/* How often parked commands are checked for an end, where io_uring does not tell. */
#define SYNCMEM_URING_CHECK	(HZ / 20)

/*
 * Parked commands one check looks at per hold of the table lock (and at
 * most one chain of the table more), and ends per batch.
 */
#define SYNCMEM_URING_CHUNK	64

struct syncmem_uring {
	struct syncmem_waiter w;
	struct io_uring_cmd *cmd;	/* which CANCEL finds by ring and user_data */
	struct syncmem_region *r;	/* referenced */
	struct syncmem_user *user;	/* charged; referenced */
	struct hlist_node hash_node;	/* in the table while pending */
	refcount_t ref;			/* the command's, the timer's, lookups' */
	int result;			/* once claimed: the CQE's res */
	union {
		u64 res2;		/* a wait's big_cqe[0], once claimed */
		u64 offset;		/* a LOCK's word (its big_cqe[0] is 0) */
	};
	bool pending;			/* in the table; under its lock */
	bool lock;			/* a LOCK: w.owner is the process's id */
	bool timed;			/* a struct syncmem_uring_timed */
};

/*
 * A command with a deadline: the timer besides. One without costs no timer
 * (an async wait's budget: Documentation/syncmem/async.rst).
 */
struct syncmem_uring_timed {
	struct syncmem_uring u;
	u64 deadline;			/* CLOCK_MONOTONIC ns */
	struct llist_node expired;	/* once its timer fired */
	struct hrtimer timer;		/* armed while queued */
};

static struct kmem_cache *syncmem_uring_cache, *syncmem_uring_timed_cache;

/*
 * Pending commands by (ring, user_data), and how many (under the lock). The
 * check walks the table: a list of them besides would cost every command
 * 16 bytes.
 */
static DEFINE_SPINLOCK(syncmem_uring_lock);
static DEFINE_HASHTABLE(syncmem_uring_table, 10);
static unsigned long syncmem_uring_nr_pending;

/* Commands alive; module exit waits for zero (timers and work in flight). */
static atomic_t syncmem_nr_uring = ATOMIC_INIT(0);

static LLIST_HEAD(syncmem_uring_expired);
static void syncmem_uring_expire(struct work_struct *work);
static DECLARE_WORK(syncmem_uring_expire_work, syncmem_uring_expire);
static void syncmem_uring_check(struct work_struct *work);
static DECLARE_DELAYED_WORK(syncmem_uring_check_work, syncmem_uring_check);

static struct syncmem_uring *to_uring(const struct syncmem_waiter *w)
{
	return container_of(w, struct syncmem_uring, w);
}

static struct syncmem_uring_timed *to_timed(struct syncmem_uring *u)
{
	return container_of(u, struct syncmem_uring_timed, u);
}

static u32 syncmem_uring_key(const void *ring, u64 user_data)
{
	return hash_64((unsigned long)ring ^ user_data, HASH_BITS(syncmem_uring_table));
}

static void syncmem_uring_free(struct syncmem_uring *u)
{
	atomic_long_dec(&u->r->ns->usage.async_waits);
	syncmem_region_put(u->r);
	syncmem_uncharge_user(u->user, SYNCMEM_USAGE(async_waits));
	syncmem_user_put(u->user);
	if (u->timed)
		kmem_cache_free(syncmem_uring_timed_cache, to_timed(u));
	else
		kmem_cache_free(syncmem_uring_cache, u);
	if (atomic_dec_and_test(&syncmem_nr_uring))
		wake_up_var(&syncmem_nr_uring);
}

static void syncmem_uring_put(struct syncmem_uring *u)
{
	if (refcount_dec_and_test(&u->ref))
		syncmem_uring_free(u);
}

/* Take @u out of the table (once): it is claimed and about to complete. */
static void syncmem_uring_unlist(struct syncmem_uring *u)
{
	spin_lock(&syncmem_uring_lock);
	if (u->pending) {
		u->pending = false;
		hash_del(&u->hash_node);
		syncmem_uring_nr_pending--;
	}
	spin_unlock(&syncmem_uring_lock);
}

/*
 * Post the CQE of claimed @u. A LOCK handed its word whose ring is being
 * torn down gives the word up as an unlock would: nobody will ever read
 * the CQE, which says -ECANCELED instead. (Before 6.7 the ring may die
 * between the look and the post: the lock then stays the process's.)
 */
static void syncmem_uring_post(struct syncmem_uring *u, unsigned int issue_flags)
{
	if (u->lock && (u->result == 0 || u->result == -EOWNERDEAD) &&
	    syncmem_uring_ring_dying(u->cmd)) {
		syncmem_owner_word_pass_on(u->r, u->offset, &u->w.owner,
					   SYNCMEM_WAIT_HANDED_OFF);
		u->result = -ECANCELED;
	}
	io_uring_cmd_done(u->cmd, u->result, u->lock ? 0 : u->res2, issue_flags);
	syncmem_uring_put(u);	/* the command's */
}

/* Task work of a completed command: post its CQE, then let it go. */
static void syncmem_uring_done(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	syncmem_uring_post(*(struct syncmem_uring **)cmd->pdu, issue_flags);
}

/*
 * A LOCK's res for what its waiter got: held (0, or -EOWNERDEAD after a
 * dead holder), or not. Its only wake-up is the word's becoming
 * unrecoverable (syncmem_queue_passes_over()).
 */
static int syncmem_uring_lock_result(int result)
{
	switch (result) {
	case SYNCMEM_WAIT_HANDED_OFF:
		return 0;
	case SYNCMEM_WAIT_OWNER_DIED:
		return -EOWNERDEAD;
	case SYNCMEM_WAIT_TIMED_OUT:
		return -ETIMEDOUT;
	case SYNCMEM_WAIT_WOKEN:
		return -ENOTRECOVERABLE;
	default:
		return result < 0 ? result : -EIO;
	}
}

/*
 * @u has been claimed (it is out of its queue) with @result: stop its
 * timer and post its CQE, at once in io_uring's cancel call (@now, with
 * its @issue_flags) or where any task may, else by the submitter's task.
 */
static void syncmem_uring_complete(struct syncmem_uring *u, int result, bool now,
				   unsigned int issue_flags)
{
	/* A timer that already fired hands its reference to the expiry work. */
	if (u->timed && hrtimer_try_to_cancel(&to_timed(u)->timer) == 1)
		refcount_dec(&u->ref);	/* never the last: the command's is held */
	syncmem_uring_unlist(u);
	if (u->lock)
		result = syncmem_uring_lock_result(result);
	else
		u->res2 = result == SYNCMEM_WAIT_HANDED_OFF ? u->w.handoff_value : 0;
	u->result = result;
	if (now || SYNCMEM_URING_DONE_ANYWHERE) {
		syncmem_uring_post(u, now ? issue_flags : IO_URING_F_UNLOCKED);
		return;
	}
	io_uring_cmd_complete_in_task(u->cmd, syncmem_uring_done);
}

/* ->complete: a waker claimed it (-ECANCELED: it was gone). */
static void syncmem_uring_complete_waiter(struct syncmem_waiter *w, int result)
{
	syncmem_uring_complete(to_uring(w), result, false, 0);
}

/*
 * ->gone, under its bucket lock: its ring is being torn down or its
 * submitter is exiting or exec'ing, so nobody will see its CQE.
 */
static enum syncmem_gone syncmem_uring_gone(const struct syncmem_waiter *w, bool owner_dead)
{
	lockdep_assert_held(&w->b->lock);
	return owner_dead || syncmem_uring_abandoned(to_uring(w)->cmd) ?
	       SYNCMEM_GONE : SYNCMEM_LIVE;
}

/* ->describe, under its bucket lock: its submitter's process and its deadline. */
static void syncmem_uring_describe(const struct syncmem_waiter *w, struct pid_namespace *ns,
				   struct syncmem_waiter_entry *e)
{
	struct syncmem_uring *u = to_uring(w);

	lockdep_assert_held(&w->b->lock);
	e->flags |= SYNCMEM_WAITER_ASYNC;
	e->pid = task_tgid_nr_ns(cmd_to_io_kiocb(u->cmd)->task, ns);
	e->deadline_ns = u->timed ? to_timed(u)->deadline : SYNCMEM_NO_DEADLINE;
}

/*
 * A ring waiter is completed once its waker dropped the bucket lock. A LOCK
 * (an owner waiter) cannot look at its word again: it is handed the word.
 */
static const struct syncmem_waiter_ops syncmem_uring_ops = {
	.wake		= syncmem_wake_defer,
	.complete	= syncmem_uring_complete_waiter,
	.gone		= syncmem_uring_gone,
	.describe	= syncmem_uring_describe,
	.handed_only	= true,
};

/*
 * Claim @u with @state and complete it with @result (at once if @now);
 * false if somebody else claimed it first: they complete it.
 */
static bool syncmem_uring_end(struct syncmem_uring *u, int state, int result, bool now,
			      unsigned int issue_flags)
{
	if (!syncmem_waiter_claim(u->r, &u->w, state, NULL))
		return false;
	syncmem_uring_complete(u, result, now, issue_flags);
	return true;
}

/* The expiry work: time out what the timers put on the list. */
static void syncmem_uring_expire(struct work_struct *work)
{
	struct llist_node *list = llist_del_all(&syncmem_uring_expired);
	struct syncmem_uring_timed *t, *tmp;

	llist_for_each_entry_safe(t, tmp, list, expired) {
		syncmem_uring_end(&t->u, SYNCMEM_W_TIMED_OUT, SYNCMEM_WAIT_TIMED_OUT, false, 0);
		syncmem_uring_put(&t->u);	/* the timer's */
		cond_resched();
	}
}

static enum hrtimer_restart syncmem_uring_timer_fn(struct hrtimer *timer)
{
	struct syncmem_uring_timed *t = container_of(timer, struct syncmem_uring_timed, timer);

	/* The timer's reference moves to the list. */
	if (llist_add(&t->expired, &syncmem_uring_expired))
		queue_work(system_unbound_wq, &syncmem_uring_expire_work);
	return HRTIMER_NORESTART;
}

/*
 * Under the bucket lock, right after the waiter was queued: make it
 * findable by CANCEL and by the check, and arm its timer.
 */
static int syncmem_uring_admit(struct syncmem_waiter *w)
{
	struct syncmem_uring *u = to_uring(w);
	bool first;

	lockdep_assert_held(&w->b->lock);
	spin_lock(&syncmem_uring_lock);
	hash_add(syncmem_uring_table, &u->hash_node,
		 syncmem_uring_key(syncmem_uring_ring(u->cmd), syncmem_uring_user_data(u->cmd)));
	first = !syncmem_uring_nr_pending++;
	u->pending = true;
	spin_unlock(&syncmem_uring_lock);
	if (!SYNCMEM_URING_F_CANCEL && first)
		mod_delayed_work(system_wq, &syncmem_uring_check_work, SYNCMEM_URING_CHECK);
	if (u->timed) {
		refcount_inc(&u->ref);	/* the timer's */
		hrtimer_start_range_ns(&to_timed(u)->timer,
				       ns_to_ktime(min_t(u64, to_timed(u)->deadline, KTIME_MAX)),
				       current->timer_slack_ns, HRTIMER_MODE_ABS);
	}
	return 0;
}

/* The absolute deadline of a packed timeout, from now: U64_MAX for none. */
static u64 syncmem_uring_deadline(u32 code)
{
	u32 shift = code >> SYNCMEM_URING_TIMEOUT_MANT_BITS;
	u64 mant = code & ((1U << SYNCMEM_URING_TIMEOUT_MANT_BITS) - 1);
	u64 now = ktime_get_ns();

	if (code == SYNCMEM_URING_NO_TIMEOUT || (mant && shift >= 64 - ilog2(mant)))
		return SYNCMEM_NO_DEADLINE;
	mant <<= shift;
	return mant >= SYNCMEM_NO_DEADLINE - now ? SYNCMEM_NO_DEADLINE : now + mant;
}

/*
 * A new command's waiter for the word at @arg->offset, charged to the
 * submitting user, or an ERR_PTR; its ops, size and owner are the caller's.
 */
static struct syncmem_uring *syncmem_uring_new(struct syncmem_region *r,
					       struct io_uring_cmd *cmd,
					       const struct syncmem_wait *arg)
{
	bool timed = arg->deadline_ns != SYNCMEM_NO_DEADLINE;
	struct syncmem_uring_timed *t = NULL;
	struct syncmem_user *user;
	struct syncmem_uring *u;
	long ret;

	user = syncmem_user_get_current();
	if (!user)
		return ERR_PTR(-ENOMEM);
	ret = syncmem_charge_user(user, SYNCMEM_USAGE(async_waits),
				  ns_capable_noaudit(&init_user_ns, CAP_SYS_RESOURCE));
	if (!ret && timed) {
		t = kmem_cache_zalloc(syncmem_uring_timed_cache, GFP_KERNEL_ACCOUNT);
		u = t ? &t->u : NULL;
	} else {
		u = ret ? NULL : kmem_cache_zalloc(syncmem_uring_cache, GFP_KERNEL_ACCOUNT);
	}
	if (!u) {
		if (!ret)
			syncmem_uncharge_user(user, SYNCMEM_USAGE(async_waits));
		syncmem_user_put(user);
		return ERR_PTR(ret ?: -ENOMEM);
	}
	atomic_inc(&syncmem_nr_uring);
	atomic_long_inc(&r->ns->usage.async_waits);
	kref_get(&r->ref);
	u->r = r;
	u->user = user;
	u->cmd = cmd;
	refcount_set(&u->ref, 1);
	u->w.ops = &syncmem_uring_ops;
	u->w.size = arg->size;
	u->timed = timed;
	if (t) {
		t->deadline = arg->deadline_ns;
		syncmem_hrtimer_setup(&t->timer, syncmem_uring_timer_fn, CLOCK_MONOTONIC,
				      HRTIMER_MODE_ABS);
	}
	*(struct syncmem_uring **)cmd->pdu = u;
	return u;
}

/*
 * After syncmem_wait_enqueue() (or the LOCK loop) gave @ret for @u: park
 * @cmd if @u is queued, else end it with @ret as the CQE's res. A queued
 * @u may be claimed, completed and freed at once (before 6.7 its waker
 * posts the CQE): only @cmd is touched after.
 */
static int syncmem_uring_park(struct syncmem_uring *u, struct io_uring_cmd *cmd, long ret,
			      unsigned int issue_flags)
{
	if (ret != SYNCMEM_WAIT_QUEUED) {
		syncmem_uring_put(u);	/* never pending: its result is the CQE's */
		return ret;
	}
	/*
	 * Only now: a command marked cancelable must complete through
	 * io_uring_cmd_done(). Where it is marked (6.7+), its completion runs
	 * as task work of this task, and the issue is this task's (inline,
	 * or as task work: syncmem_uring_cmd()), so it cannot come before.
	 */
	syncmem_uring_mark_cancelable(cmd, issue_flags);
	return -EIOCBQUEUED;
}

static int syncmem_uring_wait(struct syncmem_region *r, bool observer,
			      struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	const struct syncmem_uring_wait *uw = syncmem_uring_payload(cmd);
	u32 op = READ_ONCE(cmd->cmd_op);
	struct syncmem_wait arg = {
		.offset = READ_ONCE(uw->offset),
		.expected = READ_ONCE(uw->expected),
		.size = (op & SYNCMEM_URING_OP_MASK) == SYNCMEM_URING_WAIT64 ? 8 : 4,
		.deadline_ns = syncmem_uring_deadline(op >> SYNCMEM_URING_TIMEOUT_SHIFT),
	};
	struct syncmem_uring *u;
	long ret;

	ret = syncmem_wait_check(r, &arg);
	if (ret)
		return ret;
	u = syncmem_uring_new(r, cmd, &arg);
	if (IS_ERR(u))
		return PTR_ERR(u);
	u->w.observer = observer;
	ret = syncmem_wait_enqueue(r, &arg, &u->w, syncmem_uring_admit);
	return syncmem_uring_park(u, cmd, ret, issue_flags);
}

/* Looks at a LOCK's word that keeps changing before it gives up (-EUCLEAN). */
#define SYNCMEM_URING_LOCK_TRIES	1024

/*
 * Take the owner word of @u for its owner if it is free (the waiters bit
 * kept), else mark it waited on and queue @u as its owner waiter, as a
 * blocked LOCK_WAIT would. SYNCMEM_WAIT_HANDED_OFF (taken),
 * SYNCMEM_WAIT_QUEUED, SYNCMEM_WAIT_OWNER_DIED (a dead holder's, taken
 * over), SYNCMEM_WAIT_TIMED_OUT (a try), or -errno.
 */
static long syncmem_uring_lock_take(struct syncmem_uring *u, struct syncmem_wait *arg)
{
	struct syncmem_region *r = u->r;
	unsigned int tries;
	u64 v, id;
	long ret;

	for (tries = 0; tries < SYNCMEM_URING_LOCK_TRIES; tries++) {
		/* Any value is some owner id, live or dead: no bound needed. */
		v = syncmem_word_read(r, arg->offset, 8);
		id = v & SYNCMEM_OWNER_ID;
		if (id == SYNCMEM_OWNER_NOTRECOVERABLE)
			return -ENOTRECOVERABLE;
		if (!id) {
			/* Full barrier: the last holder's section happens before. */
			if (syncmem_word_cmpxchg(r, arg->offset, 8, v,
						 u->w.owner | (v & SYNCMEM_OWNER_WAITERS)))
				return SYNCMEM_WAIT_HANDED_OFF;
			continue;
		}
		/*
		 * A try (or a deadline already past) of a live holder's word:
		 * failed, and no waiters mark that would send the holder's
		 * unlock to the kernel to find nobody. A dead holder's word is
		 * taken over below, even by a try.
		 */
		if (arg->deadline_ns != SYNCMEM_NO_DEADLINE &&
		    arg->deadline_ns <= ktime_get_ns() && syncmem_owner_alive(id))
			return SYNCMEM_WAIT_TIMED_OUT;
		if (!(v & SYNCMEM_OWNER_WAITERS) &&
		    !syncmem_word_cmpxchg(r, arg->offset, 8, v, v | SYNCMEM_OWNER_WAITERS))
			continue;
		arg->expected = v | SYNCMEM_OWNER_WAITERS;
		ret = syncmem_wait_enqueue(r, arg, &u->w, syncmem_uring_admit);
		if (ret != SYNCMEM_WAIT_NOT_EQUAL)
			return ret;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return -EUCLEAN;
}

static int syncmem_uring_lock_cmd(struct syncmem_region *r, bool rdonly,
				  struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	const struct syncmem_uring_lock *ul = syncmem_uring_payload(cmd);
	u32 op = READ_ONCE(cmd->cmd_op);
	u64 owner = READ_ONCE(ul->owner);
	struct syncmem_wait arg = {
		.offset = READ_ONCE(ul->offset),
		.size = 8,
		.deadline_ns = syncmem_uring_deadline(op >> SYNCMEM_URING_TIMEOUT_SHIFT),
	};
	struct syncmem_uring *u;
	long ret;

	/* A read-only open confers no ownership. */
	if (rdonly)
		return -EBADF;
	ret = syncmem_wait_check(r, &arg);
	if (ret)
		return ret;
	if (!owner || owner != syncmem_owner_current_process())
		return -EINVAL;
	u = syncmem_uring_new(r, cmd, &arg);
	if (IS_ERR(u))
		return PTR_ERR(u);
	u->lock = true;
	u->offset = arg.offset;
	u->w.owner = owner;
	ret = syncmem_uring_lock_take(u, &arg);
	if (ret != SYNCMEM_WAIT_QUEUED)
		ret = syncmem_uring_lock_result(ret);
	return syncmem_uring_park(u, cmd, ret, issue_flags);
}

static int syncmem_uring_cancel(struct io_uring_cmd *cmd)
{
	const struct syncmem_uring_cancel *uc = syncmem_uring_payload(cmd);
	const void *ring = syncmem_uring_ring(cmd);
	u64 user_data = READ_ONCE(uc->user_data);
	struct syncmem_uring *u, *found = NULL;
	bool ended;

	if (READ_ONCE(cmd->cmd_op) != SYNCMEM_URING_CANCEL || READ_ONCE(uc->pad))
		return -EINVAL;
	spin_lock(&syncmem_uring_lock);
	hash_for_each_possible(syncmem_uring_table, u, hash_node,
			       syncmem_uring_key(ring, user_data)) {
		if (syncmem_uring_ring(u->cmd) == ring &&
		    syncmem_uring_user_data(u->cmd) == user_data) {
			refcount_inc(&u->ref);
			found = u;
			break;
		}
	}
	spin_unlock(&syncmem_uring_lock);
	if (!found)
		return -ENOENT;
	ended = syncmem_uring_end(found, SYNCMEM_W_CANCELLED, -ECANCELED, false, 0);
	syncmem_uring_put(found);
	return ended ? 0 : -ENOENT;
}

/*
 * SYNCMEM_IOC_NOTIFY as a command: the ioctl's checks and wake-up, and its
 * refusal of a read-only region fd. Its res is the number woken, at once.
 */
static int syncmem_uring_notify(struct syncmem_region *r, bool rdonly,
				struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	const struct syncmem_uring_notify *un = syncmem_uring_payload(cmd);
	struct syncmem_notify arg = {
		.offset = READ_ONCE(un->offset),
		.count = READ_ONCE(un->count),
		.flags = READ_ONCE(un->flags),
	};
	long ret;

	/* No timeout: NOTIFY never waits. */
	if (READ_ONCE(cmd->cmd_op) != SYNCMEM_URING_NOTIFY)
		return -EINVAL;
	if (rdonly)
		return -EBADF;
	ret = syncmem_notify_checked(r, &arg);
	return syncmem_uring_done_at_issue(cmd, min_t(long, ret, INT_MAX), issue_flags);
}

/* Issue @cmd (not a cancel), in its submitter's task. */
static int syncmem_uring_issue(struct syncmem_region *r, bool rdonly,
			       struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	switch (READ_ONCE(cmd->cmd_op) & SYNCMEM_URING_OP_MASK) {
	case SYNCMEM_URING_WAIT32:
	case SYNCMEM_URING_WAIT64:
		return syncmem_uring_wait(r, rdonly, cmd, issue_flags);
	case SYNCMEM_URING_LOCK:
		return syncmem_uring_lock_cmd(r, rdonly, cmd, issue_flags);
	case SYNCMEM_URING_CANCEL:
		return syncmem_uring_cancel(cmd);
	case SYNCMEM_URING_NOTIFY:
		return syncmem_uring_notify(r, rdonly, cmd, issue_flags);
	default:
		return -EINVAL;
	}
}

/* Task work: the issue of a command that came from an io-wq worker. */
static void syncmem_uring_issue_in_task(struct io_uring_cmd *cmd, unsigned int issue_flags)
{
	struct file *file = cmd->file;
	int ret = -ECANCELED;

	/* A fallback worker runs it if the submitter is exiting: nobody waits. */
	if (!(current->flags & PF_KTHREAD) && !syncmem_uring_abandoned(cmd))
		ret = syncmem_uring_issue(file->private_data, !(file->f_mode & FMODE_WRITE),
					  cmd, issue_flags);
	if (ret != -EIOCBQUEUED)
		io_uring_cmd_done(cmd, ret, 0, issue_flags);
}

/**
 * syncmem_uring_cmd - an io_uring command on a region file
 * @r:		The region of the file.
 * @rdonly:	The file is read-only: its waits observe.
 * @cmd:	The command.
 * @issue_flags: io_uring's IO_URING_F_*.
 *
 * Returns -EIOCBQUEUED for a parked wait or LOCK (its CQE comes later)
 * and for a NOTIFY, completed already, else the CQE's res: a
 * SYNCMEM_WAIT_* result of a wait that ended at once, 0 or -EOWNERDEAD
 * for a LOCK that took its word at once, 0 or -ENOENT for CANCEL, -EINVAL
 * for a malformed command, or another -errno.
 */
int syncmem_uring_cmd(struct syncmem_region *r, bool rdonly, struct io_uring_cmd *cmd,
		      unsigned int issue_flags)
{
	struct syncmem_uring *u;

	if (issue_flags & SYNCMEM_URING_F_CANCEL) {
		/* A parked wait of an ending ring or task; others complete it if claimed. */
		u = *(struct syncmem_uring **)cmd->pdu;
		syncmem_uring_end(u, SYNCMEM_W_CANCELLED, -ECANCELED, true, issue_flags);
		return 0;
	}
	/*
	 * From an io-wq worker (IOSQE_ASYNC), the submitter could run the
	 * command's completion while the worker still issues it, and io_uring
	 * could cancel it meanwhile: it is issued again by the submitter, as
	 * task work.
	 */
	if (issue_flags & IO_URING_F_UNLOCKED) {
		io_uring_cmd_complete_in_task(cmd, syncmem_uring_issue_in_task);
		return -EIOCBQUEUED;
	}
	return syncmem_uring_issue(r, rdonly, cmd, issue_flags);
}

/*
 * Under syncmem_uring_lock: from chain @*bkt on, take up to a batch of
 * parked commands whose ring or submitter ends into @batch (referenced),
 * looking at about SYNCMEM_URING_CHUNK commands. A chain the batch filled
 * is looked at again (what the batch ends leaves it; what a waker claimed
 * meanwhile is passed over); any other is done with.
 */
static unsigned int syncmem_uring_collect(unsigned int *bkt, struct syncmem_uring **batch)
{
	unsigned int n = 0, seen = 0;
	struct syncmem_uring *u;

	lockdep_assert_held(&syncmem_uring_lock);
	while (*bkt < HASH_SIZE(syncmem_uring_table) && seen < SYNCMEM_URING_CHUNK) {
		hlist_for_each_entry(u, &syncmem_uring_table[*bkt], hash_node) {
			seen++;
			if (READ_ONCE(u->w.state) != SYNCMEM_W_QUEUED ||
			    !syncmem_uring_abandoned(u->cmd))
				continue;
			refcount_inc(&u->ref);
			batch[n++] = u;
			if (n == SYNCMEM_URING_CHUNK)
				return n;
		}
		(*bkt)++;
	}
	return n;
}

/*
 * The check, where io_uring does not ask for parked commands of an ending
 * ring or task: one walk over the table, a chain or a chunk per hold of
 * the lock. Runs again while any command is pending.
 */
static void syncmem_uring_check(struct work_struct *work)
{
	struct syncmem_uring *batch[SYNCMEM_URING_CHUNK];
	unsigned int bkt = 0, n, i;

	do {
		spin_lock(&syncmem_uring_lock);
		n = syncmem_uring_collect(&bkt, batch);
		spin_unlock(&syncmem_uring_lock);
		for (i = 0; i < n; i++) {
			syncmem_uring_end(batch[i], SYNCMEM_W_CANCELLED, -ECANCELED, false, 0);
			syncmem_uring_put(batch[i]);
		}
		cond_resched();
	} while (bkt < HASH_SIZE(syncmem_uring_table));
	spin_lock(&syncmem_uring_lock);
	if (syncmem_uring_nr_pending)
		mod_delayed_work(system_wq, &syncmem_uring_check_work, SYNCMEM_URING_CHECK);
	spin_unlock(&syncmem_uring_lock);
}

int syncmem_uring_init(void)
{
	syncmem_uring_cache = KMEM_CACHE(syncmem_uring, SLAB_ACCOUNT);
	syncmem_uring_timed_cache = KMEM_CACHE(syncmem_uring_timed, SLAB_ACCOUNT);
	if (syncmem_uring_cache && syncmem_uring_timed_cache)
		return 0;
	kmem_cache_destroy(syncmem_uring_timed_cache);
	kmem_cache_destroy(syncmem_uring_cache);
	return -ENOMEM;
}

/* No region file is left, so no command either; work may still be in flight. */
void syncmem_uring_exit(void)
{
	wait_var_event(&syncmem_nr_uring, !atomic_read(&syncmem_nr_uring));
	cancel_delayed_work_sync(&syncmem_uring_check_work);
	flush_work(&syncmem_uring_expire_work);
	kmem_cache_destroy(syncmem_uring_timed_cache);
	kmem_cache_destroy(syncmem_uring_cache);
}
