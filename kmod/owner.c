// SPDX-License-Identifier: GPL-2.0
/*
 * syncmem owners: the ids that owner words name, and how the kernel learns
 * that the thread or process behind one died.
 *
 * An id is a 62-bit number from a counter, so it is never reused and never
 * depends on a PID namespace. It records the struct pid of its thread (or,
 * for a process id, of its thread group) and the mm it ran in: a thread id
 * is alive while that thread runs, is not exiting and has not exec'd; a
 * process id while its thread group has not exited. Lookups are RCU (they
 * run under bucket spinlocks); registration and removal take
 * syncmem_owner_mutex.
 *
 * Ends of programs: each program run of a process that holds ids or queued
 * async waits has a "life" (the process's thread group pid and the address
 * space it runs in). A life ends when the kernel tells one of these:
 *  - the thread group exited: its pidfd wait queue, which the kernel wakes
 *    then, has the life's hook on it;
 *  - its address space is torn down: exit_mmap() closes every mapping in
 *    it, and the close of a region mapping with no user left of the mm
 *    (mm_users is 0, which happens only there) calls syncmem_owner_mm_gone().
 *    That is the old address space of an execve, right in the execve, or
 *    the last thread's at exit;
 *  - the process registers again (an id, an async wait) from another program:
 *    it exec'd, and its old address space was torn down without telling.
 * The hooks (atomic context, or the mm's own locks held) only queue the
 * life's own work item, which drops the program's ids, cancels its async
 * waits and passes on what their unread records were given, on every handle
 * it waited on (syncmem_owner_watch_handle()) even if the handle lives on
 * in a forked child or in the next program, and then has wait.c look at
 * every owner word with waiters (syncmem_owner_words_scan()): waiters of a
 * dead or exec'd owner's lock are woken at once, not when a timeout expires.
 * Each life has its own work item, so that one program's clean-up (many
 * thousands of waits) runs beside, not in front of, another's; and the
 * mutex is held for a chunk of ids or handles at a time.
 *
 * Why the close of a region mapping tells of an execve: a module has no
 * exec hook, and looking at every process periodically costs in proportion
 * to all of them. An mmu_notifier's release would tell the same of every
 * address space, also of one that maps no region, but registering one
 * takes the mm's mmap_lock for writing and every lock of every mapping
 * (mm_take_all_locks(), the i_mmap locks of files other processes map too),
 * adds a notifier call to every invalidation in the process, and needs
 * CONFIG_MMU_NOTIFIER. A program that maps no region, or shares its address
 * space with another process (vfork(), CLONE_VM without CLONE_THREAD), is
 * told of at its exit or its process's next registration instead; until
 * then every lookup already calls its ids dead, and wakers take its async
 * waits out of their queues as they meet them (wait.c).
 *
 * The exit of one thread of a live process is not notified: its words are
 * taken over by the next LOCK_WAIT that meets them, or by the scan that the
 * next registration in that process runs when it finds dead thread ids.
 *
 * Why not a robust list walked at exit, as futexes do: the kernel walks it
 * from the exit path, which a module cannot hook, and keeping the list
 * costs the uncontended lock and unlock stores of their own. Naming the
 * owner in the word (as PI futexes do) costs nothing until there is
 * contention, and a process's exit is already notified to pidfd pollers.
 */
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "syncmem_compat.h"
#include "syncmem_core.h"

/*
 * One program run of one process: its ids and the handles it queued async
 * waits on. Ends (once) when the thread group exits, when its address space
 * is torn down (the old one of an execve, or at exit), or when the process
 * registers again from another program.
 */
struct syncmem_life {
	struct rhash_head node;		/* in syncmem_lives by @tgid, until it ends */
	struct rhlist_head mm_node;	/* in syncmem_lives_mm by @mm, until it ends */
	struct pid *tgid;		/* referenced */
	struct mm_struct *mm;		/* grabbed; compared only */
	u64 exec_id;			/* the program it ran (self_exec_id) */
	refcount_t ref;			/* its listing's, async waits', h->watched, work */
	bool ended;			/* set once, under syncmem_owner_mutex */
	bool finishing;			/* its end's clean-up began; under the mutex */
	bool mm_gone;			/* its address space was torn down */
	struct list_head owners;	/* its ids, under syncmem_owner_mutex */
	unsigned int nr_owners;
	struct syncmem_owner_entry *process_owner;
	wait_queue_entry_t exit_wait;	/* on tgid->wait_pidfd until it ends */
	struct work_struct end_work;
	struct list_head all_node;	/* in syncmem_all_lives until it ends */
	struct list_head watches;	/* of handles it waited on, under the mutex */
	struct rcu_head rcu;
};

/* A handle that a program queued async waits on, for its end. */
struct syncmem_watch_key {
	struct syncmem_handle *h;
	struct syncmem_life *life;
};

struct syncmem_watch {
	struct rhash_head node;		/* in syncmem_watches, by @key */
	struct syncmem_watch_key key;
	struct list_head life_node;	/* in life->watches */
	struct list_head handle_node;	/* in h->watches */
};

struct syncmem_owner_entry {
	struct rhash_head node;		/* in syncmem_owners, by @id */
	u64 id;
	struct pid *pid;		/* thread, or thread group; referenced */
	struct mm_struct *mm;		/* compared only; grabbed while listed */
	u64 exec_id;			/* the program it ran (self_exec_id) */
	bool process;
	struct syncmem_life *life;
	struct list_head life_node;
	struct rcu_head rcu;
};

static const struct rhashtable_params syncmem_owner_params = {
	.key_len = sizeof(u64),
	.key_offset = offsetof(struct syncmem_owner_entry, id),
	.head_offset = offsetof(struct syncmem_owner_entry, node),
	.automatic_shrinking = true,
};

static const struct rhashtable_params syncmem_life_params = {
	.key_len = sizeof(struct pid *),
	.key_offset = offsetof(struct syncmem_life, tgid),
	.head_offset = offsetof(struct syncmem_life, node),
	.automatic_shrinking = true,
};

static const struct rhashtable_params syncmem_life_mm_params = {
	.key_len = sizeof(struct mm_struct *),
	.key_offset = offsetof(struct syncmem_life, mm),
	.head_offset = offsetof(struct syncmem_life, mm_node),
	.automatic_shrinking = true,
};

static const struct rhashtable_params syncmem_watch_params = {
	.key_len = sizeof(struct syncmem_watch_key),
	.key_offset = offsetof(struct syncmem_watch, key),
	.head_offset = offsetof(struct syncmem_watch, node),
	.automatic_shrinking = true,
};

static DEFINE_MUTEX(syncmem_owner_mutex);
static struct rhashtable syncmem_owners;
static struct rhashtable syncmem_lives;
static struct rhltable syncmem_lives_mm;
static struct rhashtable syncmem_watches;
static LIST_HEAD(syncmem_all_lives);
static u64 syncmem_next_owner_id = 1;	/* under syncmem_owner_mutex */
/* Where lives end (syncmem_life_end_work()), each its own work item. */
static struct workqueue_struct *syncmem_owner_wq;

/* Ids, or watches, one hold of the mutex drops at most as a program ends. */
#define SYNCMEM_END_CHUNK	64

/**
 * syncmem_process_exec_id - the program a process runs, unless it exited
 * @tgid:	The process: its thread group's pid.
 * @exec_id:	Set to the self_exec_id of the program it runs.
 *
 * Under RCU. False once every thread of it has exited.
 */
static bool syncmem_process_exec_id(struct pid *tgid, u64 *exec_id)
{
	/* The group's leader, or the thread that took its place. */
	struct task_struct *t = pid_task(tgid, PIDTYPE_PID);

	if (!t || (READ_ONCE(t->exit_state) && thread_group_empty(t)))
		return false;
	*exec_id = READ_ONCE(t->self_exec_id);
	return true;
}

/* Under RCU: is the thread or process behind @o alive? */
static bool syncmem_owner_running(const struct syncmem_owner_entry *o)
{
	struct task_struct *t;
	u64 exec_id;

	/* An execve ended the program that had a process id. */
	if (o->process)
		return syncmem_process_exec_id(o->pid, &exec_id) &&
		       exec_id == o->exec_id;
	t = pid_task(o->pid, PIDTYPE_PID);
	return t && !(READ_ONCE(t->flags) & PF_EXITING) &&
	       READ_ONCE(t->mm) == o->mm;
}

/**
 * syncmem_owner_alive - does @id name a live owner?
 * @id:	An owner id (any value: a word may hold anything).
 *
 * False for an id never issued (but SYNCMEM_OWNER_NOBODY), one whose owner
 * died, and 0. Callable in atomic context.
 */
bool syncmem_owner_alive(u64 id)
{
	struct syncmem_owner_entry *o;
	bool alive = false;

	if (id == SYNCMEM_OWNER_NOBODY)
		return true;	/* held by nobody: never taken over */
	rcu_read_lock();
	o = rhashtable_lookup(&syncmem_owners, &id, syncmem_owner_params);
	if (o)
		alive = syncmem_owner_running(o);
	rcu_read_unlock();
	return alive;
}

/**
 * syncmem_owner_describe - the thread or process behind a live owner id
 * @id:		An owner id (any value).
 * @r:		The region the id was read from.
 * @ns:		The PID namespace to give ids in.
 * @pid:	Set to its process's id in @ns (0: not visible there).
 * @tid:	Set to its thread's id in @ns, 0 for a process's id.
 * @process:	Set when @id is a process's.
 *
 * Returns whether @id names a live owner; the outputs are set only then.
 * The ids are told only when that process maps @r, as every holder of a
 * lock word in it does: an id that someone wrote into a region of their
 * own tells nothing of a process that does not use it. The region answers
 * that from its own list of address spaces: nothing of the owner's process
 * is locked or walked, so no caller can slow it down.
 */
bool syncmem_owner_describe(u64 id, struct syncmem_region *r, struct pid_namespace *ns,
			    s32 *pid, s32 *tid, bool *process)
{
	struct syncmem_owner_entry *o;
	struct task_struct *t;
	bool alive = false;

	*pid = 0;
	*tid = 0;
	rcu_read_lock();
	o = rhashtable_lookup(&syncmem_owners, &id, syncmem_owner_params);
	if (o && syncmem_owner_running(o)) {
		alive = true;
		*process = o->process;
		/* A running owner still runs in @o->mm (see syncmem_owner_running()). */
		t = syncmem_region_mapped_by(r, o->mm) ?
		    pid_task(o->pid, o->process ? PIDTYPE_TGID : PIDTYPE_PID) : NULL;
		if (t) {
			*pid = task_tgid_nr_ns(t, ns);
			*tid = o->process ? 0 : task_pid_nr_ns(t, ns);
		}
	}
	rcu_read_unlock();
	return alive;
}

/* Is @id the calling thread's, or its process's, live id? */
bool syncmem_owner_is_current(u64 id)
{
	struct syncmem_owner_entry *o;
	bool mine = false;

	rcu_read_lock();
	o = rhashtable_lookup(&syncmem_owners, &id, syncmem_owner_params);
	if (o && o->mm == current->mm)
		mine = o->pid == (o->process ? task_tgid(current) : task_pid(current));
	rcu_read_unlock();
	return mine;
}

/* The calling process's process id, or 0 if it has none. */
u64 syncmem_owner_current_process(void)
{
	struct pid *tgid = task_tgid(current);
	struct syncmem_life *life;
	u64 id = 0;

	rcu_read_lock();
	life = rhashtable_lookup(&syncmem_lives, &tgid, syncmem_life_params);
	if (life) {
		struct syncmem_owner_entry *o = READ_ONCE(life->process_owner);

		if (o && o->mm == current->mm)
			id = o->id;
	}
	rcu_read_unlock();
	return id;
}

static void syncmem_owner_free_rcu(struct rcu_head *rcu)
{
	struct syncmem_owner_entry *o = container_of(rcu, struct syncmem_owner_entry, rcu);

	put_pid(o->pid);	/* lookups may have been dereferencing it */
	kfree(o);
}

/* Under syncmem_owner_mutex: forget @o; lookups in flight may still see it. */
static void syncmem_owner_remove(struct syncmem_owner_entry *o)
{
	struct syncmem_life *life = o->life;

	lockdep_assert_held(&syncmem_owner_mutex);
	rhashtable_remove_fast(&syncmem_owners, &o->node, syncmem_owner_params);
	list_del(&o->life_node);
	life->nr_owners--;
	if (life->process_owner == o)
		WRITE_ONCE(life->process_owner, NULL);
	mmdrop(o->mm);		/* lookups only compare the pointer */
	call_rcu(&o->rcu, syncmem_owner_free_rcu);
}

static void syncmem_life_free_rcu(struct rcu_head *rcu)
{
	struct syncmem_life *life = container_of(rcu, struct syncmem_life, rcu);

	put_pid(life->tgid);	/* lookups may have been comparing it */
	kfree(life);
}

/**
 * syncmem_life_put - drop a reference on a program's life
 * @life:	A life (NULL: nothing to do).
 *
 * Process context.
 */
void syncmem_life_put(struct syncmem_life *life)
{
	if (!life || !refcount_dec_and_test(&life->ref))
		return;
	/* Found by no lookup that could take a reference: they only compare it. */
	mmdrop(life->mm);
	call_rcu(&life->rcu, syncmem_life_free_rcu);
}

/*
 * Queue the end of @life, handing its work item a reference the caller
 * took: the work looks at whether the program ended and, once it has,
 * cleans up after it. Callable in atomic context.
 */
static void syncmem_life_queue_end_ref(struct syncmem_life *life)
{
	/* Still pending, so that run sees this event; it holds a reference. */
	if (!queue_work(syncmem_owner_wq, &life->end_work))
		refcount_dec(&life->ref);
}

/* The same, for a caller that holds a reference (or @life is listed). */
static void syncmem_life_queue_end(struct syncmem_life *life)
{
	refcount_inc(&life->ref);
	syncmem_life_queue_end_ref(life);
}

/**
 * syncmem_life_over - has the program of @life ended?
 * @life:	A life.
 *
 * True once its process exited or exec'd, or its address space was torn
 * down, and for good; callable in atomic context. Before its end is seen
 * to (syncmem_life_end_work()) the answer comes from the process itself.
 */
bool syncmem_life_over(const struct syncmem_life *life)
{
	u64 exec_id;
	bool over;

	if (READ_ONCE(life->ended) || READ_ONCE(life->mm_gone))
		return true;
	rcu_read_lock();
	over = !syncmem_process_exec_id(life->tgid, &exec_id) ||
	       exec_id != life->exec_id;
	rcu_read_unlock();
	return over;
}

/* The process of @life: its thread group's pid. */
struct pid *syncmem_life_tgid(const struct syncmem_life *life)
{
	return life->tgid;
}

/* The pidfd wait queue was woken: maybe the process has exited. */
static int syncmem_life_woken(wait_queue_entry_t *wq, unsigned int mode,
			      int sync, void *key)
{
	/* Hooked, so not yet ended: its listing's reference is held. */
	syncmem_life_queue_end(container_of(wq, struct syncmem_life, exit_wait));
	return 0;
}

/**
 * syncmem_owner_mm_gone - an address space is being torn down
 * @mm:	The address space (its last user is gone: mm_users is 0).
 *
 * Called as a region mapping in it is closed (exit_mmap() closes every
 * mapping): the program of every life in it has ended, at exit or at an
 * execve. Process context, with the mm's own locks held: only queues.
 */
void syncmem_owner_mm_gone(struct mm_struct *mm)
{
	struct syncmem_life *life;
	struct rhlist_head *list, *pos;

	rcu_read_lock();
	list = rhltable_lookup(&syncmem_lives_mm, &mm, syncmem_life_mm_params);
	rhl_for_each_entry_rcu(life, pos, list, mm_node) {
		if (READ_ONCE(life->mm_gone) || !refcount_inc_not_zero(&life->ref))
			continue;
		WRITE_ONCE(life->mm_gone, true);
		syncmem_life_queue_end_ref(life);
	}
	rcu_read_unlock();
}

/*
 * Under syncmem_owner_mutex: the program of @life ended. From now on it is
 * found by no lookup and no event queues it; its ids, async waits and
 * records are dropped by its work item (syncmem_life_finish()), which the
 * caller queues unless it is that work.
 */
static void syncmem_life_end(struct syncmem_life *life)
{
	lockdep_assert_held(&syncmem_owner_mutex);
	WRITE_ONCE(life->ended, true);
	rhashtable_remove_fast(&syncmem_lives, &life->node, syncmem_life_params);
	rhltable_remove(&syncmem_lives_mm, &life->mm_node, syncmem_life_mm_params);
	list_del(&life->all_node);
	/* Waits for a wake-up of the hook in flight: it holds no reference. */
	remove_wait_queue(&life->tgid->wait_pidfd, &life->exit_wait);
}

/* Under syncmem_owner_mutex: forget @wt; the caller frees it. */
static void syncmem_watch_remove(struct syncmem_watch *wt)
{
	lockdep_assert_held(&syncmem_owner_mutex);
	rhashtable_remove_fast(&syncmem_watches, &wt->node, syncmem_watch_params);
	list_del(&wt->life_node);
	list_del(&wt->handle_node);
}

/*
 * After syncmem_life_end(), once, in process context: drop the program's
 * ids, then cancel its async waits and pass on what its unread records
 * were given, on every handle it waited on (before the scan of owner
 * words, so that a hand-off it never read goes on as a hand-off), then
 * have every owner word looked at. The mutex is held for a chunk at a
 * time, never across all of a program's ids or handles.
 */
static void syncmem_life_finish(struct syncmem_life *life)
{
	struct syncmem_owner_entry *o, *otmp;
	struct syncmem_watch *wt;
	unsigned int n;
	bool more;

	do {
		n = 0;
		mutex_lock(&syncmem_owner_mutex);
		list_for_each_entry_safe(o, otmp, &life->owners, life_node) {
			if (n++ == SYNCMEM_END_CHUNK)
				break;
			syncmem_owner_remove(o);
		}
		more = !list_empty(&life->owners);
		mutex_unlock(&syncmem_owner_mutex);
		cond_resched();
	} while (more);
	for (;;) {
		mutex_lock(&syncmem_owner_mutex);
		wt = list_first_entry_or_null(&life->watches, struct syncmem_watch,
					      life_node);
		if (wt) {
			syncmem_watch_remove(wt);
			/*
			 * A release of the handle no longer finds it: keep
			 * the handle, and have its release wait for us.
			 */
			syncmem_handle_get(wt->key.h);
			atomic_inc(&wt->key.h->reaping);
		}
		mutex_unlock(&syncmem_owner_mutex);
		if (!wt)
			break;
		syncmem_async_reap(wt->key.h, life);
		if (atomic_dec_and_test(&wt->key.h->reaping))
			wake_up_all(&wt->key.h->settle_wq);
		syncmem_handle_put(wt->key.h);
		kfree(wt);
		cond_resched();
	}
	syncmem_away_poke();	/* its threads may have had waits away */
	syncmem_owner_words_scan();
	syncmem_life_put(life);	/* its listing's */
}

/*
 * A life's own work item: an event said its program may have ended. One
 * life's clean-up (however many waits it left) runs beside, not in front
 * of, another's.
 */
static void syncmem_life_end_work(struct work_struct *work)
{
	struct syncmem_life *life = container_of(work, struct syncmem_life, end_work);
	bool finish = false;

	mutex_lock(&syncmem_owner_mutex);
	if (!life->ended && (READ_ONCE(life->mm_gone) ||
			     syncmem_thread_group_exited(life->tgid)))
		syncmem_life_end(life);
	if (life->ended && !life->finishing) {
		life->finishing = true;
		finish = true;
	}
	mutex_unlock(&syncmem_owner_mutex);
	if (finish)
		syncmem_life_finish(life);
	syncmem_life_put(life);	/* the work's */
}

/*
 * Under syncmem_owner_mutex: the life of the calling process's program,
 * made if needed. The life of a program the process ran before (it
 * exec'd, and no event told yet) ends here.
 */
static struct syncmem_life *syncmem_life_current(void)
{
	struct pid *tgid = task_tgid(current);
	struct mm_struct *mm = current->mm;
	struct syncmem_life *life;
	int err;

	lockdep_assert_held(&syncmem_owner_mutex);
	life = rhashtable_lookup_fast(&syncmem_lives, &tgid, syncmem_life_params);
	if (life && life->mm == mm)
		return life;
	if (life) {
		syncmem_life_end(life);
		syncmem_life_queue_end(life);
	}
	life = kzalloc(sizeof(*life), GFP_KERNEL_ACCOUNT);
	if (!life)
		return ERR_PTR(-ENOMEM);
	life->tgid = get_pid(tgid);
	life->mm = mm;
	mmgrab(mm);
	life->exec_id = current->self_exec_id;
	refcount_set(&life->ref, 1);
	INIT_LIST_HEAD(&life->owners);
	INIT_LIST_HEAD(&life->watches);
	INIT_WORK(&life->end_work, syncmem_life_end_work);
	init_waitqueue_func_entry(&life->exit_wait, syncmem_life_woken);
	err = rhashtable_insert_fast(&syncmem_lives, &life->node,
				     syncmem_life_params);
	if (err)
		goto fail;
	err = rhltable_insert(&syncmem_lives_mm, &life->mm_node,
			      syncmem_life_mm_params);
	if (err) {
		rhashtable_remove_fast(&syncmem_lives, &life->node,
				       syncmem_life_params);
		goto fail;
	}
	/*
	 * The caller runs in the program, so neither its exit nor its
	 * address space's end can have been notified yet.
	 */
	add_wait_queue(&tgid->wait_pidfd, &life->exit_wait);
	list_add(&life->all_node, &syncmem_all_lives);
	return life;
fail:
	syncmem_life_put(life);	/* a lookup may have seen it */
	return ERR_PTR(err);
}

/*
 * Under syncmem_owner_mutex: drop the ids of the program's dead threads.
 * True if it dropped any: their words want a look.
 */
static bool syncmem_life_prune(struct syncmem_life *life)
{
	struct syncmem_owner_entry *o, *tmp;
	bool alive, pruned = false;

	lockdep_assert_held(&syncmem_owner_mutex);
	list_for_each_entry_safe(o, tmp, &life->owners, life_node) {
		rcu_read_lock();
		alive = syncmem_owner_running(o);
		rcu_read_unlock();
		if (!alive) {
			syncmem_owner_remove(o);
			pruned = true;
		}
	}
	return pruned;
}

/* Under syncmem_owner_mutex: the caller's live id of this kind, if any. */
static struct syncmem_owner_entry *
syncmem_life_find(struct syncmem_life *life, bool process)
{
	struct pid *pid = process ? task_tgid(current) : task_pid(current);
	struct syncmem_owner_entry *o;

	list_for_each_entry(o, &life->owners, life_node)
		if (o->process == process && o->pid == pid &&
		    o->mm == current->mm)
			return o;
	return NULL;
}

static s64 syncmem_owner_get(bool process)
{
	struct syncmem_life *life;
	struct syncmem_owner_entry *o;
	bool scan;
	s64 id;
	int err;

	mutex_lock(&syncmem_owner_mutex);
	life = syncmem_life_current();
	if (IS_ERR(life)) {
		mutex_unlock(&syncmem_owner_mutex);
		return PTR_ERR(life);
	}
	scan = syncmem_life_prune(life);
	o = syncmem_life_find(life, process);
	if (o) {
		id = o->id;
		goto out;
	}
	id = -EAGAIN;
	if (life->nr_owners >= SYNCMEM_OWNERS_MAX)
		goto out;
	id = -ENOMEM;
	o = kzalloc(sizeof(*o), GFP_KERNEL_ACCOUNT);
	if (!o)
		goto out;
	o->id = syncmem_next_owner_id;
	o->process = process;
	o->pid = get_pid(process ? task_tgid(current) : task_pid(current));
	o->mm = current->mm;
	mmgrab(o->mm);
	o->exec_id = current->self_exec_id;
	o->life = life;
	err = rhashtable_insert_fast(&syncmem_owners, &o->node,
				     syncmem_owner_params);
	if (err) {
		put_pid(o->pid);
		mmdrop(o->mm);
		kfree(o);
		id = err;
		goto out;
	}
	syncmem_next_owner_id++;
	list_add(&o->life_node, &life->owners);
	life->nr_owners++;
	if (process)
		WRITE_ONCE(life->process_owner, o);
	id = o->id;
out:
	mutex_unlock(&syncmem_owner_mutex);
	/* Dead thread ids were dropped: their words are looked at. */
	if (scan)
		syncmem_owner_words_scan();
	return id;
}

/**
 * syncmem_life_get_current - the life of the calling process's program
 *
 * A reference on it, or NULL if the program has none (it registered no id
 * and queued no async wait). One lookup, no lock.
 */
struct syncmem_life *syncmem_life_get_current(void)
{
	struct pid *tgid = task_tgid(current);
	struct syncmem_life *life;

	rcu_read_lock();
	life = rhashtable_lookup(&syncmem_lives, &tgid, syncmem_life_params);
	if (life && (life->mm != current->mm || !refcount_inc_not_zero(&life->ref)))
		life = NULL;
	rcu_read_unlock();
	return life;
}

/**
 * syncmem_owner_watch_handle - the calling process queues an async wait on @h
 * @h:	A handle (not closed).
 *
 * Returns a reference on the life of the caller's program (for the wait),
 * or ERR_PTR(-ENOMEM). When that program ends (exit or execve), its waits
 * on @h are cancelled and what they were given but never read is passed on
 * (syncmem_async_reap()), even if @h stays open in another process or in
 * the program the process runs next. One mutex hold the first time a
 * program waits on a handle; after that, while it is the last to have
 * waited there, a lookup.
 */
struct syncmem_life *syncmem_owner_watch_handle(struct syncmem_handle *h)
{
	struct syncmem_watch_key key = { .h = h };
	struct syncmem_life *life, *old;
	struct syncmem_watch *wt;
	int err;

	life = syncmem_life_get_current();
	if (life && READ_ONCE(h->watched) == life)
		return life;
	syncmem_life_put(life);
	mutex_lock(&syncmem_owner_mutex);
	life = syncmem_life_current();
	if (IS_ERR(life))
		goto out;
	key.life = life;
	if (rhashtable_lookup_fast(&syncmem_watches, &key, syncmem_watch_params))
		goto found;
	err = -ENOMEM;
	wt = kzalloc(sizeof(*wt), GFP_KERNEL_ACCOUNT);
	if (wt) {
		wt->key = key;
		err = rhashtable_insert_fast(&syncmem_watches, &wt->node,
					     syncmem_watch_params);
	}
	if (err) {
		kfree(wt);
		life = ERR_PTR(err);
		goto out;
	}
	list_add(&wt->life_node, &life->watches);
	list_add(&wt->handle_node, &h->watches);
found:
	/*
	 * Always referenced, so no other life can come to its address while
	 * the lockless check above compares with it.
	 */
	refcount_inc(&life->ref);
	old = h->watched;
	WRITE_ONCE(h->watched, life);
	syncmem_life_put(old);
	refcount_inc(&life->ref);	/* the wait's */
out:
	mutex_unlock(&syncmem_owner_mutex);
	return life;
}

/*
 * @h is being released: no program needs it watched any more. The mutex is
 * held for a chunk of its watches at a time.
 */
void syncmem_owner_unwatch_handle(struct syncmem_handle *h)
{
	struct syncmem_watch *wt, *tmp;
	unsigned int n;
	bool more;

	do {
		n = 0;
		/* Always under the mutex: a life's end may be taking one now. */
		mutex_lock(&syncmem_owner_mutex);
		list_for_each_entry_safe(wt, tmp, &h->watches, handle_node) {
			if (n++ == SYNCMEM_END_CHUNK)
				break;
			syncmem_watch_remove(wt);
			kfree(wt);
		}
		more = !list_empty(&h->watches);
		mutex_unlock(&syncmem_owner_mutex);
		cond_resched();
	} while (more);
	syncmem_life_put(h->watched);
	h->watched = NULL;
}

long syncmem_ioctl_owner(void __user *uarg)
{
	struct syncmem_owner arg;
	s64 id;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags == SYNCMEM_OWNER_QUERY)
		return arg.pad ? -EINVAL : syncmem_owner_alive(arg.id);
	if ((arg.flags & ~SYNCMEM_OWNER_PROCESS) || arg.pad || arg.id)
		return -EINVAL;
	if (!current->mm)
		return -EINVAL;
	id = syncmem_owner_get(arg.flags & SYNCMEM_OWNER_PROCESS);
	if (id < 0)
		return id;
	arg.id = id;
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

int syncmem_owner_init(void)
{
	int err;

	syncmem_owner_wq = alloc_workqueue("syncmem_owner", WQ_UNBOUND, 0);
	if (!syncmem_owner_wq)
		return -ENOMEM;
	err = rhashtable_init(&syncmem_owners, &syncmem_owner_params);
	if (err)
		goto out_wq;
	err = rhashtable_init(&syncmem_lives, &syncmem_life_params);
	if (err)
		goto out_owners;
	err = rhltable_init(&syncmem_lives_mm, &syncmem_life_mm_params);
	if (err)
		goto out_lives;
	err = rhashtable_init(&syncmem_watches, &syncmem_watch_params);
	if (err)
		goto out_lives_mm;
	return 0;

out_lives_mm:
	rhltable_destroy(&syncmem_lives_mm);
out_lives:
	rhashtable_destroy(&syncmem_lives);
out_owners:
	rhashtable_destroy(&syncmem_owners);
out_wq:
	destroy_workqueue(syncmem_owner_wq);
	return err;
}

/*
 * Module exit: no file is open, so nothing looks ids up any more and no
 * handle is watched; every life ends, and the work items in flight drain.
 */
void syncmem_owner_exit(void)
{
	struct syncmem_life *life;

	for (;;) {
		mutex_lock(&syncmem_owner_mutex);
		life = list_first_entry_or_null(&syncmem_all_lives,
						struct syncmem_life, all_node);
		if (life) {
			syncmem_life_end(life);
			syncmem_life_queue_end(life);
		}
		mutex_unlock(&syncmem_owner_mutex);
		if (!life)
			break;
	}
	destroy_workqueue(syncmem_owner_wq);
	rcu_barrier();
	rhashtable_destroy(&syncmem_watches);
	rhltable_destroy(&syncmem_lives_mm);
	rhashtable_destroy(&syncmem_lives);
	rhashtable_destroy(&syncmem_owners);
}
